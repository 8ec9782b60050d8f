"""Killing a job's process (SIGKILL, as a lost machine would) at a point it reaches."""
import os
import pathlib
import signal
import subprocess
import time
from typing import Callable, Mapping, Optional, Sequence


def run_killed(command: Sequence[str], cwd: pathlib.Path, when: Callable[[], bool],
               environ: Optional[Mapping[str, str]] = None, timeout: float = 240) -> bool:
    """Runs `command`, and SIGKILLs it and the processes it started (its session) once
    `when()` holds; whether it was killed (False: it ended first, or the timeout passed)."""
    process = subprocess.Popen(command, cwd=cwd, env=environ, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if when():
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return True
            time.sleep(0.01)
        return False
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
