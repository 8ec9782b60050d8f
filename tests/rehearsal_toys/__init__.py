"""Toy Beam jobs for tests/deploy/test_rehearsal.py, each breaking one rule of remote workers (but
one):

    python -c "import sys; from tests import rehearsal_toys; rehearsal_toys.main(sys.argv[1:])" \
        CASE --output DIR [Beam options]

run from the checkout with shipped/ on PYTHONPATH. Writes the sorted results to DIR/words.txt.
"""
import argparse
from typing import Callable, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

import toy_fns  # shipped/: the workers have it

WORDS = ("c4", "beam", "worker", "shard")


class LauncherOnly(beam.DoFn):
    """Pickled by reference to this module, which the workers lack (as they lack tests/,
    bench/ and deploy/: setup.py installs none of them)."""
    def process(self, word: str):
        yield word[::-1]


class HoldsAGenerator(beam.DoFn):
    """Holds what cannot be pickled at all."""
    def __init__(self):
        self.pending = (word for word in WORDS)

    def process(self, word: str):
        yield word


CASES: dict[str, Callable[[], beam.DoFn]] = {
    "clean": toy_fns.Upper,
    "missing_package": toy_fns.NeedsGin,
    "module_state": toy_fns.Lookup,
    "launcher_only": LauncherOnly,
    "unpicklable": HoldsAGenerator,
}


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--output", required=True)
    args, beam_args = parser.parse_known_args(argv)
    toy_fns.TABLE.update({word: len(word) for word in WORDS})
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        _ = (pipeline
             | beam.Create(WORDS)
             | beam.ParDo(CASES[args.case]())
             | beam.combiners.ToList()
             | beam.Map(lambda words: "\n".join(sorted(words)))
             | beam.io.WriteToText(f"{args.output}/words", ".txt", shard_name_template=""))
