"""The notice of a former command line of model/, which still runs until the next release
(`python -m model COMMAND` is the command line: model/__main__.py)."""
import sys


def renamed(old: str, new: str) -> None:
    print(f"note: `python -m {old}` is now `python -m model {new}`; the old name goes in the "
          "next release", file=sys.stderr)
