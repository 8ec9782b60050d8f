"""Trains the shared SentencePiece vocabulary on a weighted mixture of languages.

  python -m model vocab --output vocab/c4_mix.32k --size 32000 --sample_size 2000000 \
      --source en=tfds:t5_c4/en@DATA_DIR --source de=out/de --source fr=out/fr --source ro=out/ro \
      --weights en=10,de=1,fr=1,ro=1

Writes PREFIX.model, PREFIX.vocab and PREFIX.json (the settings, the sources, how many lines
each source gave and how many it put in the sample). A source with fewer lines than its share gives what it has and
a warning says how far the mixture falls short; --repeat_short_sources repeats its lines up to its
share instead. Source forms are those of `model.data.inputs.text_dataset_from_source`; a language may be given
several --source flags, read one after the other. Without --weights the languages given take
T5's weights (en 10, de, fr and ro 1; any other language 1). `--model_type bpe` trains SentencePiece BPE
instead of the unigram model (GPT-1's vocabulary was 40,000 BPE merges, 40,478 ids; ours is
SentencePiece BPE on C4, and `--size 40378` gives 40,478 ids with the sentinels).

A multilingual corpus instead of sources (model/data/languages.py): `--languages ROOT`, the C4
pipeline's output folder of a variant with a folder per language (`--variant multilingual`: mC4)
or `tfds:t5_c4/multilingual@DATA_DIR`, learns over each language's train split, weighted by
mT5's sampling rates p(L) proportional to |L|^--language_exponent (default 0.3), |L| the
language's training pages; `--only de,fr` keeps those languages, `--include_und` adds `und`.
PREFIX.json's `corpus` records the root, the exponent and each language's pages.

`--recipe mt5` is mT5's vocabulary (Xue et al., 2021, "mT5: A massively multilingual pre-trained
text-to-text transformer", Section 3.2): 250,000 pieces, SentencePiece unigram trained with the
language sampling rates of pre-training (exponent 0.3), character coverage 0.99999 and
SentencePiece's byte fallback, so that any string can be encoded. Flags given override it:

  python -m model vocab --recipe mt5 --languages out/mc4 --output vocab/mc4 \
      --sample_size 10000000
"""
from __future__ import annotations

import sys

if __name__ == "__main__":
    # `python -m model.train_vocab`, the former name, until the next release (model/renamed.py:
    # the notice, then the new name), run in a new process before anything is imported.
    import subprocess
    sys.exit(subprocess.call([sys.executable, "-m", "model.renamed", "model.train_vocab",
                              *sys.argv[1:]]))

import argparse  # noqa: E402  (a former name's run above imports nothing)
import itertools  # noqa: E402
import warnings  # noqa: E402
from typing import Iterable, Sequence  # noqa: E402

from model.data.inputs import source_texts  # noqa: E402
from model.data.languages import MT5_EXPONENT, language_rates, languages_of  # noqa: E402
from model.data.vocabulary import (  # noqa: E402
    MixtureShortfallWarning, VocabularySettings, train_vocabulary)
from model.trainer.verbosity import add_verbosity_flag, quiet_libraries  # noqa: E402

# The settings a recipe presets; each flag given overrides its recipe's value.
RECIPES: dict[str, dict[str, object]] = {
    # mT5, Section 3.2: 250,000 pieces of SentencePiece unigram at the sampling rates of
    # pre-training (|L|^0.3), coverage 0.99999 and byte fallback for large character sets.
    "mt5": {"size": 250_000, "model_type": "unigram", "character_coverage": 0.99999,
            "byte_fallback": True, "language_exponent": MT5_EXPONENT},
}
# Without a recipe (or for what it leaves): VocabularySettings' own defaults, mT5's exponent.
PLAIN_SETTINGS: dict[str, object] = {
    "size": VocabularySettings.size, "model_type": VocabularySettings.model_type,
    "character_coverage": VocabularySettings.character_coverage,
    "byte_fallback": VocabularySettings.byte_fallback, "language_exponent": MT5_EXPONENT,
}


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


def recipe_settings(args: argparse.Namespace) -> dict[str, object]:
    """The recipe's settings (or the plain ones), each overridden by its flag where given."""
    preset = PLAIN_SETTINGS | RECIPES.get(args.recipe, {})
    return {name: value if getattr(args, name) is None else getattr(args, name)
            for name, value in preset.items()}


def corpus_sources(args: argparse.Namespace, exponent: float
                   ) -> tuple[dict[str, Iterable[str]], dict[str, float], dict[str, object]]:
    """(texts by language, their weights, the record of where they came from) of the flags."""
    if args.languages and args.source:
        raise ValueError("--languages and --source are alternatives: give one")
    if args.languages:
        if args.weights:
            raise ValueError("--weights goes with --source: the languages of --languages take "
                             "mT5's rates (see --language_exponent)")
        only = [name.strip() for name in (args.only or "").split(",") if name.strip()]
        languages = languages_of(args.languages, only, include_und=args.include_und)
        weights = language_rates({name: text.num_examples for name, text in languages.items()},
                                 exponent)
        corpus = {"root": args.languages, "language_exponent": exponent,
                  "include_und": args.include_und, "only": only,
                  "languages": {name: {"source": text.source, "split": text.train_split,
                                       "num_examples": text.num_examples}
                                for name, text in languages.items()}}
        return ({name: source_texts([text.source], text.train_split) for name, text in languages.items()},
                weights, corpus)
    if not args.source:
        raise ValueError("no text: give --languages ROOT (a multilingual corpus) or "
                         "--source LANG=SOURCE")
    misplaced = [flag for flag, given in (("--only", args.only), ("--include_und", args.include_und),
                                          ("--language_exponent", args.language_exponent is not None))
                 if given]
    if misplaced:
        raise ValueError(f"{', '.join(misplaced)} go with --languages, not --source")
    specs: dict[str, list[str]] = {}
    for name, spec in itertools.chain.from_iterable(parse_pairs(s, "--source") for s in args.source):
        specs.setdefault(name, []).append(spec)
    weights = parse_weights(args.weights) if args.weights else default_weights(specs)
    unweighted = set(specs) - set(weights)
    if unweighted:
        raise ValueError(f"sources without a weight: {sorted(unweighted)} (see --weights)")
    return {name: source_texts(s) for name, s in specs.items()}, weights, {"sources": specs}


def parser() -> argparse.ArgumentParser:
    command_line = argparse.ArgumentParser(prog="python -m model vocab", description=__doc__,
                                           formatter_class=argparse.RawDescriptionHelpFormatter)
    flag = command_line.add_argument
    flag("--output", required=True, help="output prefix (PREFIX.model, .vocab, .json)")
    flag("--recipe", choices=sorted(RECIPES),
         help="preset settings: mt5 is mT5's vocabulary (--size 250000 --character_coverage "
              "0.99999 --byte_fallback, unigram, --language_exponent 0.3); flags given override it")
    flag("--size", type=int,
         help=f"SentencePiece pieces (default {PLAIN_SETTINGS['size']}; mt5: 250000)")
    flag("--sample_size", type=int, default=VocabularySettings.sample_size,
         help="text lines sampled over all sources, split by the weights")
    flag("--source", action="append", metavar="LANG=SOURCE",
         help="text source of a language; repeatable (the alternative to --languages)")
    flag("--languages", metavar="ROOT",
         help="a multilingual corpus, each language's train split weighted by mT5's rates: the "
              "C4 pipeline's output folder with a folder per language (mC4), or "
              "tfds:t5_c4/multilingual@DATA_DIR")
    flag("--language_exponent", type=float,
         help="alpha of the --languages rates p(L) ~ |L|^alpha, |L| a language's training pages "
              f"(default {MT5_EXPONENT}, mT5's)")
    flag("--only", metavar="LANG,LANG",
         help="the languages of --languages to learn over (default: all but und)")
    flag("--include_und", action="store_true",
         help="--languages: learn over the undetermined pages (und) too")
    flag("--character_coverage", type=float,
         help="share of characters covered by pieces; the rarest others become unk, or bytes "
              f"with --byte_fallback (default {PLAIN_SETTINGS['character_coverage']}; mt5: "
              f"0.99999)")
    flag("--byte_fallback", action=argparse.BooleanOptionalAction,
         help="characters without a piece become the pieces of their UTF-8 bytes, not unk "
              "(default off; mt5: on)")
    flag("--weights", help="mixture weights of --source, LANG=W,... (default: T5's, en=10, de, "
                           "fr and ro 1, for the languages given; 1 for others)")
    flag("--model_type", choices=("unigram", "bpe"),
         help="SentencePiece algorithm: unigram (T5's and mT5's; the default) or bpe (for "
              "GPT-1: --size 40378 gives its 40,478 ids with the 100 sentinels)")
    flag("--repeat_short_sources", action="store_true",
         help="repeat the lines of a source shorter than its share up to that share (default: "
              "use what it has, and warn that the mixture falls short)")
    add_verbosity_flag(command_line)
    return command_line


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        chosen = recipe_settings(args)
        sources, weights, corpus = corpus_sources(args, chosen.pop("language_exponent"))
        settings = VocabularySettings(sample_size=args.sample_size, weights=weights,
                                      repeat_short_sources=args.repeat_short_sources, **chosen)
        with warnings.catch_warnings(record=True) as caught_warnings:
            warnings.simplefilter("always", MixtureShortfallWarning)
            vocabulary = train_vocabulary(sources, settings, args.output, corpus)
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

