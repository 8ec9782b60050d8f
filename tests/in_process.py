"""A command line's main run in this process, as a new process would start it: from gin's empty
state, its stdout and stderr captured (cheaper than a subprocess's start-up)."""
import contextlib
import io
import json
from typing import Callable, List, Sequence

import gin


def command(main: Callable[[Sequence[str]], int], argv: List[str],
            bindings: Sequence[str] = ()) -> str:
    """`python -m <module> ARGV --gin_param B ...`: its stdout (a failure shows its stderr)."""
    for binding in bindings:
        argv = argv + ["--gin_param", binding]
    out, err = io.StringIO(), io.StringIO()
    gin.clear_config()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        gin.clear_config()
    assert status == 0, f"{' '.join(argv)}\n{err.getvalue()[-3000:]}"
    return out.getvalue()


def printed_json(stdout: str) -> dict:
    """The JSON result a command prints last on stdout."""
    return json.loads(stdout.strip().splitlines()[-1])
