"""`python -m model COMMAND ...`: the one command line of model/.

    pretrain | finetune | eval | decode | export   a run, its gin and flags (model/train.py):
        python -m model pretrain --model_dir DIR --gin_file sizes/base.gin ...
        python -m model finetune --task glue_rte --model_dir DIR ...
      export with --format (and --family) writes a family's other formats, as `import` reads
      them (model/convert_command.py): python -m model export --family t5 --format hf ...
    import      a released or transformers checkpoint into a run (--family --format --source)
    vocab       a SentencePiece vocabulary (model/train_vocab.py)
    wordpiece   BERT's WordPiece vocabulary (model/wordpiece.py)
    tasks       the downstream tasks and mixtures, with their sources and metrics

`python -m model COMMAND --help` gives a command's flags. The former command lines
(`python -m model.train --mode M`, `model.convert`, `model.train_vocab`, `model.wordpiece`,
`model.tasks`) still work, with a one-line notice, until the next release (model/renamed.py).
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional, Sequence

from model.trainer.verbosity import quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow reads its C++ log level when it is imported: set before the commands load it.
    quiet_libraries(verbosity_in(sys.argv[1:]))

RUN_COMMANDS = ("pretrain", "finetune", "eval", "decode", "export")


def _run(mode: str) -> Callable[[List[str]], int]:
    def command(argv: List[str]) -> int:
        from model import train
        return train.main(["--mode", mode, *argv], prog=f"python -m model {mode}")
    return command


def _export(argv: List[str]) -> int:
    """A run's export (model/train.py), or with --format a family's format (convert_command)."""
    if any(arg == "--format" or arg.startswith("--format=") for arg in argv):
        from model import convert_command
        return convert_command.main(["export", *argv])
    if "-h" in argv or "--help" in argv:
        from model import convert_command
        try:
            _run("export")(argv)
        except SystemExit:  # argparse's, after the help
            pass
        print("\nWith --format, a family's formats (python -m model export --family F --format X):")
        return convert_command.main(["export", "--help"])
    return _run("export")(argv)


def _import(argv: List[str]) -> int:
    from model import convert_command
    return convert_command.main(["import", *argv])


def _vocab(argv: List[str]) -> int:
    from model import train_vocab
    return train_vocab.main(argv)


def _wordpiece(argv: List[str]) -> int:
    from model import wordpiece
    return wordpiece.main(argv)


def _tasks(argv: List[str]) -> int:
    from model.tasks import __main__ as task_list
    task_list.main(argv)
    return 0


COMMANDS: Dict[str, Callable[[List[str]], int]] = {
    **{mode: _run(mode) for mode in RUN_COMMANDS[:-1]}, "export": _export, "import": _import,
    "vocab": _vocab, "wordpiece": _wordpiece, "tasks": _tasks}


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m model COMMAND [FLAGS]\n\n{__doc__}")
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"error: no command {argv[0]!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return command(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
