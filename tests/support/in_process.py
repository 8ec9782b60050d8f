"""A command line's main run in this process, as a new process would start it: from gin's empty
state, its stdout and stderr captured (cheaper than a subprocess's start-up)."""
import contextlib
import importlib
import inspect
import io
import json
import sys
import traceback
from typing import Callable, List, Optional, Sequence, TextIO

import gin


def run_main(main: Callable, argv: List[str], out: TextIO, err: TextIO,
             program: Optional[str] = None) -> int:
    """`main(argv)` with stdout and stderr sent to `out` and `err`: its exit status, as a process
    would end (an exception is status 1 with its traceback on `err`). A main that takes no
    arguments reads `sys.argv`, which is `[program] + argv` for the call."""
    gin.clear_config()
    saved_argv = sys.argv
    sys.argv = [program or getattr(main, "__module__", "main")] + list(argv)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                returned = main(argv) if inspect.signature(main).parameters else main()
            except SystemExit as stop:
                if stop.code is None or isinstance(stop.code, int):
                    return stop.code or 0
                print(stop.code, file=err)
                return 1
            except Exception:  # noqa: BLE001: reported as a process would report it
                traceback.print_exc(file=err)
                return 1
    finally:
        sys.argv = saved_argv
        gin.clear_config()
    return returned if isinstance(returned, int) else 0


def module_main(module: str) -> Callable:
    """The `main` that `python -m MODULE` calls (a package's is in its __main__)."""
    loaded = importlib.import_module(module)
    if not hasattr(loaded, "main") and hasattr(loaded, "__path__"):
        loaded = importlib.import_module(f"{module}.__main__")
    return loaded.main


def command(main: Callable[[Sequence[str]], int], argv: List[str],
            bindings: Sequence[str] = ()) -> str:
    """`python -m <module> ARGV --gin_param B ...`: its stdout (a failure shows its stderr)."""
    for binding in bindings:
        argv = argv + ["--gin_param", binding]
    out, err = io.StringIO(), io.StringIO()
    status = run_main(main, argv, out, err)
    assert status == 0, f"{' '.join(argv)}\n{err.getvalue()[-3000:]}"
    return out.getvalue()


def printed_json(stdout: str) -> dict:
    """The JSON result a command prints last on stdout."""
    return json.loads(stdout.strip().splitlines()[-1])
