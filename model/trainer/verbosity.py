"""What reaches the terminal: our progress lines, and how much of the libraries' own logging (set
before TensorFlow is imported). Light on purpose (no TensorFlow import): the command lines call it
first."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

VERBOSITY_FLAG = "--verbosity"


def quiet_libraries(verbosity: int) -> None:
    """Keeps TensorFlow's start-up and deprecation messages off stderr unless `verbosity` asks:
    0 errors only, 1 also library warnings, 2 also library info. Must run before TensorFlow is
    imported for its C++ log level to apply."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = {0: "3", 1: "1"}.get(verbosity, "0")
    import logging
    import warnings
    level = {0: logging.ERROR, 1: logging.WARNING}.get(verbosity, logging.INFO)
    logging.getLogger("tensorflow").setLevel(level)
    logging.getLogger("absl").setLevel(level)
    if verbosity == 0:
        warnings.simplefilter("ignore")


def add_verbosity_flag(parser: argparse.ArgumentParser) -> None:
    """The command lines' `--verbosity`, read again by argparse after `verbosity_in`."""
    parser.add_argument(VERBOSITY_FLAG, type=int, default=0, choices=(0, 1, 2),
                        help="library messages on stderr: 0 errors only (default), 1 also "
                             "warnings, 2 also TensorFlow's info log")


def verbosity_in(argv: Sequence[str]) -> int:
    """The `--verbosity N` that `argv` gives (0 without one): read before argparse runs, as
    TensorFlow must not be imported yet."""
    for i, word in enumerate(argv):
        if word == VERBOSITY_FLAG and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if word.startswith(VERBOSITY_FLAG + "=") and word.split("=", 1)[1].isdigit():
            return int(word.split("=", 1)[1])
    return 0


def progress(message: str) -> None:
    """A progress line for the person at the terminal (stderr; results go to stdout)."""
    print(message, file=sys.stderr, flush=True)
