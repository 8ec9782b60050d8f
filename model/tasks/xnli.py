"""XNLI as multilingual-t5 casts it (its `process_mnli` and `process_xnli` preprocessors):
`xnli: premise: <premise> hypothesis: <hypothesis>` -> the class id as a digit ("0"
entailment, "1" neutral, "2" contradiction), scored by accuracy.

Tasks, named as multilingual-t5 registers them:
  mt5_xnli_train                  MultiNLI's English training set (TFDS multi_nli; locally the
                                  English file of XNLI-MT, the same rows)
  mt5_xnli_dev_test.<lang>        XNLI 1.0 validation and test in one language (15 languages)
  mt5_xnli_translate_train.<lang> MultiNLI machine-translated into one language (XNLI-MT 1.0;
                                  TFDS xtreme_xnli), 14 languages
"""
from __future__ import annotations

import functools
from typing import Iterator

from model.tasks import metrics, multilingual_sources
from model.tasks.base import (Example, LocalFormat, ReleaseLayout, SequenceLengths, Task,
                              TfdsSplit, training_of)
from model.tasks.text_format import class_id

LANGUAGES = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")
LABELS = multilingual_sources.XNLI_LABELS
_DIGITS = tuple(str(label) for label in range(len(LABELS)))
MULTINLI_TRAIN_EXAMPLES = 392_702  # multi_nli's train split; XNLI-MT translates every row
# multilingual-t5's gin/sequence_lengths/xnli.gin (and xnli_zeroshot.gin).
LENGTHS = SequenceLengths(inputs=1024, targets=128)


def pair(premise: str, hypothesis: str, label: int) -> dict[str, str]:
    return {"inputs": f"xnli: premise: {premise} hypothesis: {hypothesis}", "targets": str(label)}


def _mnli_pair(example: Example) -> dict[str, str]:
    return pair(example["premise"], example["hypothesis"], example["label"])


def _xnli_pair(language: str, example: Example) -> dict[str, str]:
    """One language of an XNLI example (premises by language; hypotheses as TFDS's
    TranslationVariableLanguages gives them: parallel lists of languages and translations)."""
    hypotheses = example["hypothesis"]
    try:
        hypothesis = hypotheses["translation"][hypotheses["language"].index(language)]
    except ValueError:
        raise ValueError(f"an XNLI example without a {language} hypothesis "
                         f"(it has {hypotheses['language']})") from None
    return pair(example["premise"][language], hypothesis, example["label"])


def _read_mnli_from_xnli_mt(path: str) -> Iterator[dict]:
    """The English XNLI-MT file's rows as multi_nli gives them."""
    for example in multilingual_sources.read_xnli_mt_tsv(path, language="en"):
        yield {"premise": example["premise"]["en"],
               "hypothesis": example["hypothesis"]["translation"][0], "label": example["label"]}


def _task(name: str, splits: dict[str, TfdsSplit], description: str, read, preprocess,
          release: ReleaseLayout, language: str = "", num_train_examples: int | None = None,
          eval_splits: tuple[str, ...] = ()) -> Task:
    return Task(
        name=name, splits=splits, local_format=LocalFormat(description, read),
        preprocess=preprocess, postprocess=functools.partial(class_id, label_names=_DIGITS),
        metric_names=("accuracy",), score_postprocessed=metrics.accuracy,
        num_train_examples=num_train_examples,
        **training_of(splits, "a mixture such as mt5_xnli_zeroshot"),
        lengths=LENGTHS, label_names=_DIGITS, eval_splits=eval_splits, release=release,
        language=language)


TRAIN = _task("mt5_xnli_train", {"train": TfdsSplit("multi_nli", "train")},
              "XNLI-MT TSV (XNLI-MT-1.0/multinli/multinli.train.en.tsv)", _read_mnli_from_xnli_mt,
              _mnli_pair, ReleaseLayout("xnli", {"train": "XNLI-MT-1.0/multinli/multinli.train.en.tsv"}),
              language="en", num_train_examples=MULTINLI_TRAIN_EXAMPLES)

DEV_TEST = {language: _task(
    f"mt5_xnli_dev_test.{language}",
    {"validation": TfdsSplit("xnli", "validation"), "test": TfdsSplit("xnli", "test")},
    "XNLI 1.0 TSV (XNLI-1.0/xnli.dev.tsv, xnli.test.tsv)", multilingual_sources.read_xnli_tsv,
    functools.partial(_xnli_pair, language),
    ReleaseLayout("xnli", {"validation": "XNLI-1.0/xnli.dev.tsv", "test": "XNLI-1.0/xnli.test.tsv"}),
    language=language, eval_splits=("validation", "test")) for language in LANGUAGES}

TRANSLATE_TRAIN = {language: _task(
    f"mt5_xnli_translate_train.{language}", {"train": TfdsSplit("xtreme_xnli", "train")},
    f"XNLI-MT TSV (XNLI-MT-1.0/multinli/multinli.train.{language}.tsv)",
    functools.partial(multilingual_sources.read_xnli_mt_tsv, language=language),
    functools.partial(_xnli_pair, language),
    ReleaseLayout("xnli", {"train": f"XNLI-MT-1.0/multinli/multinli.train.{language}.tsv"}),
    language=language, num_train_examples=MULTINLI_TRAIN_EXAMPLES)
    for language in LANGUAGES if language != "en"}

TASKS: tuple[Task, ...] = (TRAIN, *DEV_TEST.values(), *TRANSLATE_TRAIN.values())
