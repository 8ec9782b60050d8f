"""Trains the shared SentencePiece vocabulary on a weighted mixture of languages.

  python -m model.train_vocab --output vocab/c4_mix.32k --size 32000 --sample_size 2000000 \
      --source en=tfds:t5_c4/en@DATA_DIR --source de=out/de --source fr=out/fr --source ro=out/ro \
      --weights en=10,de=1,fr=1,ro=1

Writes PREFIX.model, PREFIX.vocab and PREFIX.json (the settings, how many lines each source gave
and how many it put in the sample). A source with fewer lines than its share gives what it has and
a warning says how far the mixture falls short; --repeat_short_sources repeats its lines up to its
share instead. Source forms are those of `model.data.inputs.text_dataset_from_source`; a language may be given
several --source flags, read one after the other. Without --weights the languages given take
T5's weights (en 10, de, fr and ro 1; any other language 1). `--model_type bpe` trains SentencePiece BPE
instead of the unigram model (GPT-1's vocabulary was 40,000 BPE merges, 40,478 ids; ours is
SentencePiece BPE on C4, and `--size 40378` gives 40,478 ids with the sentinels).
"""
from __future__ import annotations

import sys

from model.trainer.verbosity import add_verbosity_flag, quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow (imported by tensorflow_text below) reads its C++ log level when it is
    # imported, as model/train.py's command line says.
    quiet_libraries(verbosity_in(sys.argv[1:]))

import argparse  # noqa: E402  (after the log levels above)
import itertools  # noqa: E402
import warnings  # noqa: E402
from typing import Iterable, Sequence  # noqa: E402

from model.data.inputs import source_texts  # noqa: E402
from model.data.vocabulary import (  # noqa: E402
    MixtureShortfallWarning, VocabularySettings, train_vocabulary)


def parse_pairs(text: str, flag: str) -> list[tuple[str, str]]:
    pairs = []
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ValueError(f"{flag}: expected NAME=VALUE, got {item!r}")
        pairs.append((name.strip(), value.strip()))
    return pairs


def parse_weights(text: str) -> dict[str, float]:
    weights = {}
    for name, value in parse_pairs(text, "--weights"):
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {value!r} for {name} is not a number") from None
    return weights


def default_weights(languages: Iterable[str]) -> dict[str, float]:
    """T5's mixture weights (VocabularySettings' default) for the languages given, 1 for others."""
    t5_weights = VocabularySettings().weights
    return {name: float(t5_weights.get(name, 1.0)) for name in languages}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.train_vocab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, help="output prefix (PREFIX.model, .vocab, .json)")
    parser.add_argument("--size", type=int, default=VocabularySettings.size, help="SentencePiece pieces")
    parser.add_argument("--sample_size", type=int, default=VocabularySettings.sample_size,
                        help="text lines sampled over all sources, split by the weights")
    parser.add_argument("--source", action="append", required=True, metavar="LANG=SOURCE",
                        help="text source of a language; repeatable")
    parser.add_argument("--character_coverage", type=float, default=VocabularySettings.character_coverage,
                        help="share of characters covered by pieces; the rarest others become unk")
    parser.add_argument("--weights", help="mixture weights, LANG=W,... (default: T5's, en=10, de, fr "
                                           "and ro 1, for the languages given; 1 for others)")
    parser.add_argument("--model_type", choices=("unigram", "bpe"),
                        default=VocabularySettings.model_type,
                        help="SentencePiece algorithm: unigram (T5's) or bpe (for GPT-1: "
                             "--size 40378 gives its 40,478 ids with the 100 sentinels)")
    parser.add_argument("--repeat_short_sources", action="store_true",
                        help="repeat the lines of a source shorter than its share up to that share "
                             "(default: use what it has, and warn that the mixture falls short)")
    add_verbosity_flag(parser)
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        specs: dict[str, list[str]] = {}
        for name, spec in itertools.chain.from_iterable(parse_pairs(s, "--source") for s in args.source):
            specs.setdefault(name, []).append(spec)
        weights = parse_weights(args.weights) if args.weights else default_weights(specs)
        unweighted = set(specs) - set(weights)
        if unweighted:
            raise ValueError(f"sources without a weight: {sorted(unweighted)} (see --weights)")
        settings = VocabularySettings(size=args.size, sample_size=args.sample_size, weights=weights,
                                      character_coverage=args.character_coverage,
                                      model_type=args.model_type,
                                      repeat_short_sources=args.repeat_short_sources)
        with warnings.catch_warnings(record=True) as caught_warnings:
            warnings.simplefilter("always", MixtureShortfallWarning)
            vocabulary = train_vocabulary({name: source_texts(s) for name, s in specs.items()}, settings,
                                          args.output)
        for caught in caught_warnings:
            if issubclass(caught.category, MixtureShortfallWarning):
                print(f"train_vocab: warning: {caught.message}", file=sys.stderr)
            else:
                warnings.showwarning(caught.message, caught.category, caught.filename, caught.lineno)
    except (ValueError, OSError, RuntimeError) as error:  # SentencePiece reports errors as OSError
        print(f"train_vocab: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}.model ({vocabulary.num_pieces} pieces + sentinels = "
          f"{vocabulary.vocab_size} ids), {args.output}.vocab, {args.output}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
