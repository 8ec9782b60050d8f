"""Trains BERT's WordPiece vocabulary on our C4 (model/families/bert/wordpiece.py: the learner,
the reserved tokens, how a vocabulary is read).

    python -m model wordpiece --output vocab/c4_wordpiece.txt --size 30522 \
        --sample_size 1000000 --source tfds:t5_c4/en@DATA_DIR

Writes PATH (one piece per line, BERT's vocab.txt format: the id of a piece is its line number)
and PATH.json (the settings and how many texts were read). Sources are those of
`model.data.inputs.text_dataset_from_source` (the first `--sample_size` texts over all of them,
in order). `--size` is a target: a smaller result is padded with BERT's `[unusedN]` pieces up
to it (so a model-parallel mesh can split it), a larger one is kept. `--cased` keeps case and
accents (a vocabulary with an upper-case piece is read cased).

`python -m model.wordpiece` is its former name, until the next release: run so, this module runs
`python -m model.renamed model.wordpiece ...` (model/renamed.py: the notice, then the new name)
in a new process before it imports anything.
"""
from __future__ import annotations

import sys

if __name__ == "__main__":
    import subprocess
    sys.exit(subprocess.call([sys.executable, "-m", "model.renamed", "model.wordpiece",
                              *sys.argv[1:]]))

import argparse  # noqa: E402  (a former name's run above imports nothing)
import json  # noqa: E402
from typing import Sequence  # noqa: E402

from model.data.inputs import source_texts  # noqa: E402
from model.families.bert.wordpiece import WordPieceSettings, train_vocabulary  # noqa: E402
from model.trainer.verbosity import add_verbosity_flag, quiet_libraries  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model wordpiece", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, help="the vocab.txt to write (and .json)")
    parser.add_argument("--size", type=int, default=WordPieceSettings.size,
                        help="target number of pieces, reserved tokens included")
    parser.add_argument("--sample_size", type=int, default=WordPieceSettings.sample_size,
                        help="texts read, over all sources in order")
    parser.add_argument("--source", action="append", required=True,
                        help="a text source (model/data/inputs.py forms); repeatable")
    parser.add_argument("--cased", action="store_true", help="keep case and accents")
    add_verbosity_flag(parser)
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    settings = WordPieceSettings(size=args.size, sample_size=args.sample_size,
                                 lower_case=not args.cased)
    try:
        vocabulary = train_vocabulary(source_texts(args.source), args.output, settings)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"output": args.output, "pieces": vocabulary.vocab_size}))
    return 0
