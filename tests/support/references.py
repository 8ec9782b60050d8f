"""The one-job references of the byte-for-byte tests ("a run in stages, in parts, or with a
format writes the one-job run's bytes").

A reference is built as users build it: `python -m pipelines.c4 ... --no-staged` in a
subprocess, with the environment the test session started with, never inside a test that
patches anything (a reference built under a patched `c4.machine_memory_bytes` was itself a staged
run, issue 52). Each is built once a session and shared by the pytest workers: the first worker
to ask builds it under a file lock, the others wait and read it. A build is checked to be a
one-job run (`check_one_job`) before anyone compares with it, and its command line, hash seed and
log are kept beside it (`<folder>.json`), outside the folder the comparisons read.
"""
import dataclasses
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Mapping, Optional, Sequence

REPO = pathlib.Path(__file__).resolve().parents[2]
# The environment of the session as it started: a test's monkeypatch.setenv never reaches a
# reference built while it runs.
SESSION_ENVIRON = dict(os.environ)
BUILD_TIMEOUT_S = 600
# The log line of a staged run's start (pipelines/c4.py); a one-job run's has no "in stages".
STAGED_LOG_WORDS = " in stages"
LOG_TAIL_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class Reference:
    """A reference's folder and how it was built (its build record, `<folder>.json`)."""
    folder: pathlib.Path
    argv: Sequence[str]
    hash_seed: Optional[str]
    log_tail: str



def record_path(folder: pathlib.Path) -> pathlib.Path:
    """Where the build record of the reference in `folder` is kept (outside the folder)."""
    return folder.with_name(folder.name + ".json")


def build_record(folder: pathlib.Path) -> Optional[dict]:
    """How the reference in `folder` was built, or None for a folder that is no reference."""
    path = record_path(folder)
    return json.loads(path.read_text()) if path.is_file() else None


def reference_name(args: Sequence[str]) -> str:
    """A folder name that differs for each command line (the sample paths included)."""
    return "one-job-" + hashlib.sha256("\0".join(args).encode("utf-8")).hexdigest()[:16]


def check_one_job(folder: pathlib.Path, log: str) -> None:
    """Fails unless `folder` was written by one uninterrupted job: a staged run or a run in parts
    leaves OUT/parts/ (their tasks' or groups' files), and a staged run says so when it starts.
    (run_config.json cannot say how a run was executed: it is one of the bytes every executor must
    write alike.)"""
    if (folder / "parts").exists():
        raise AssertionError(f"the reference {folder} has a parts/ folder: it was run in stages "
                             "or in parts, not as one job")
    if STAGED_LOG_WORDS in log:
        raise AssertionError(f"the reference {folder} says it ran in stages:\n{log[-1000:]}")
    stats = folder / "stats.json"
    if not stats.is_file() or {"progress", "error"} & set(json.loads(stats.read_text())):
        raise AssertionError(f"the reference {folder} has no finished stats.json: it did not "
                             "finish")


def reference_command(args: Sequence[str], folder: pathlib.Path) -> list:
    """The command line users run for one job: `--no-staged` said, whatever the memory check
    would choose."""
    return [sys.executable, "-m", "pipelines.c4", *args, "--no-staged", "--output", str(folder)]


def build_reference(root: pathlib.Path, args: Sequence[str],
                    environ: Mapping[str, str] = SESSION_ENVIRON) -> Reference:
    """The one-job run of `args` (the c4 command line without --output) under `root`: built
    here unless a worker of this session built it already; waits while another builds it."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / reference_name(args)
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = build_record(folder)
        if built is not None:
            return Reference(folder=folder, **built)
        shutil.rmtree(folder, ignore_errors=True)
        argv = reference_command(args, folder)
        finished = subprocess.run(argv, cwd=REPO, env=dict(environ), capture_output=True,
                                  text=True, timeout=BUILD_TIMEOUT_S)
        log = finished.stdout + finished.stderr
        if finished.returncode != 0:
            raise AssertionError(f"the reference {' '.join(args)} failed:\n"
                                 f"{log[-LOG_TAIL_CHARS:]}")
        check_one_job(folder, log)
        reference = Reference(folder, argv, environ.get("PYTHONHASHSEED"),
                              log[-LOG_TAIL_CHARS:])
        record_path(folder).write_text(json.dumps({"argv": reference.argv, "hash_seed": reference.hash_seed,
                                      "log_tail": reference.log_tail}, indent=2))
        return reference
