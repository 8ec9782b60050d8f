"""The former command lines of model/, which still run until the next release: each runs its
new name, `python -m model COMMAND` (model/__main__.py), after a one-line notice.

    python -m model.renamed FORMER [ARGS ...]      e.g. model.convert import --help

A former name's own module (model/convert/__main__.py, model/tasks/__main__.py, model/train.py,
model/train_vocab.py, model/wordpiece.py) runs this command line in a new process with its
arguments and imports nothing to do so: a module inside a package below never imports the
command line above it, and no library module imports a command line.
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from model.trainer.verbosity import quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow reads its C++ log level when it is imported: set before the commands load it.
    quiet_libraries(verbosity_in(sys.argv[2:]))

# The former name as the notice says it, the new name, and the new command line's arguments.
Renaming = Tuple[str, str, List[str]]


def _train(argv: List[str]) -> Renaming:
    """`model.train --mode M ...` is `model M ...`."""
    for position, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        if flag == "--mode" and (equals or position + 1 < len(argv)):
            mode = value if equals else argv[position + 1]
            rest = argv[:position] + argv[position + (1 if equals else 2):]
            return f"model.train --mode {mode}", mode, [mode, *rest]
    return "model.train --mode MODE", "MODE", argv


def _convert(argv: List[str]) -> Renaming:
    """`model.convert import|export ...` is `model import ...` and `model export --format ...`."""
    direction = argv[0] if argv and argv[0] in ("import", "export") else "import|export"
    new = f"{direction} --format ..." if direction == "export" else direction
    return f"model.convert {direction}", new, argv


def _same_arguments(old: str, new: str) -> Callable[[List[str]], Renaming]:
    return lambda argv: (old, new, [new, *argv])


FORMER: Dict[str, Callable[[List[str]], Renaming]] = {
    "model.train": _train,
    "model.convert": _convert,
    "model.train_vocab": _same_arguments("model.train_vocab", "vocab"),
    "model.wordpiece": _same_arguments("model.wordpiece", "wordpiece"),
    "model.tasks": _same_arguments("model.tasks", "tasks"),
}


def notice(old: str, new: str) -> str:
    return (f"note: `python -m {old}` is now `python -m model {new}`; the old name goes in the "
            "next release")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in FORMER:
        print(f"usage: python -m model.renamed FORMER [ARGS ...]; FORMER: {', '.join(FORMER)}",
              file=sys.stderr)
        return 2
    old, new, new_argv = FORMER[argv[0]](argv[1:])
    print(notice(old, new), file=sys.stderr)
    from model import __main__ as command_line
    return command_line.main(new_argv)


if __name__ == "__main__":
    sys.exit(main())
