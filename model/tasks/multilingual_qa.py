"""SQuAD-format reading comprehension in many languages (XQuAD, MLQA, TyDi QA GoldP, and
SQuAD as their English training data) as multilingual-t5 casts it (its `xquad` preprocessor):
`question: <question> context: <context>` -> the first answer, with a space on each side of
every character that is not a letter, mark, number, underscore or whitespace (Unicode-aware,
unlike T5's English SQuAD, which splits `François` into `Fran ç ois`), whitespace runs made one
space. References are all answers so padded; predictions are scored by exact match and F1 after
the MLQA evaluation's normalisation for the task's language (model/tasks/multilingual_metrics.py).

Tasks, named as multilingual-t5 registers them:
  mt5_squad_train_dev                     SQuAD v1.1 train and validation (English)
  mt5_xquad_test.<lang>                   XQuAD (11 languages; a test split only)
  mt5_xquad_translate_train_dev.<lang>    XTREME's SQuAD translations (train, validation), 10
  mt5_mlqa_dev_test.<lang>                MLQA validation and test, question and context in
                                          the same language (7 languages)
  mt5_tydiqa_train_dev                    TyDi QA GoldP train (every language) and validation
  mt5_tydiqa_train.en                     its English training questions (the zero-shot data)
  mt5_tydiqa_dev.<lang>                   its validation questions of one language (9)
  mt5_tydiqa_translate_train.<lang>       XTREME's translations of the English training set (8)
"""
from __future__ import annotations

import functools
import re
import unicodedata
from typing import Callable, Iterator

from model.tasks import multilingual_metrics, sources
from model.tasks.base import (Example, LocalFormat, ReleaseLayout, ReleaseText, SequenceLengths,
                              Task, TfdsSplit, training_of)

XQUAD_LANGUAGES = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")
MLQA_LANGUAGES = ("ar", "de", "en", "es", "hi", "vi", "zh")
TYDIQA_LANGUAGES = ("ar", "bn", "en", "fi", "id", "ko", "ru", "sw", "te")
# TyDi QA ids start with the language's English name (`finnish--7633091408814529542-0`).
TYDIQA_ID_PREFIXES = {"ar": "arabic", "bn": "bengali", "en": "english", "fi": "finnish",
                      "id": "indonesian", "ko": "korean", "ru": "russian", "sw": "swahili",
                      "te": "telugu"}
SQUAD_TRAIN_EXAMPLES = 87_599
TYDIQA_TRAIN_EXAMPLES = 49_881  # tydi_qa/goldp's train split, all languages
TYDIQA_ENGLISH_TRAIN_EXAMPLES = 3_696
# multilingual-t5's gin/sequence_lengths/xquad.gin.
LENGTHS = SequenceLengths(inputs=1024, targets=512)

# TensorFlow's (RE2's) \s, which multilingual-t5's regular expressions use: ASCII whitespace only.
_WHITESPACE = re.compile(r"[\t\n\f\r ]+")
_KEPT_CATEGORIES = ("L", "M", "N")


def _padded_character(character: str) -> str:
    if character == "_" or character in "\t\n\f\r " or unicodedata.category(character)[0] in _KEPT_CATEGORIES:
        return character
    return f" {character} "


def pad_punctuation(text: str) -> str:
    """A space on each side of every character but letters, marks, numbers, `_` and whitespace,
    then one space for each whitespace run (not stripped: `Some context . ` keeps its end)."""
    return _WHITESPACE.sub(" ", "".join(_padded_character(c) for c in text))


def _preprocess(example: Example) -> dict[str, str]:
    joined = " ".join(["question:", pad_punctuation(example["question"]), "context:",
                       pad_punctuation(example["context"])])
    return {"inputs": _WHITESPACE.sub(" ", joined),
            "targets": pad_punctuation(example["answers"]["text"][0])}


def _references(example: Example) -> list[str]:
    return [pad_punctuation(answer) for answer in example["answers"]["text"]]


def _tydiqa_questions(language: str, *paths: str) -> Iterator[dict]:
    """The questions of one language of TyDi QA GoldP files (which hold every language)."""
    prefix = TYDIQA_ID_PREFIXES[language] + "-"
    for path in paths:
        yield from (q for q in sources.read_squad_json(path) if q["id"].startswith(prefix))


def _read_all(*paths: str) -> Iterator[dict]:
    for path in paths:
        yield from sources.read_squad_json(path)


def _task(name: str, language: str, splits: dict[str, TfdsSplit], files: dict[str, str], folder: str,
          read: Callable[..., Iterator[dict]] = _read_all, eval_splits: tuple[str, ...] | None = None,
          num_train_examples: int | None = None, measured: bool = False) -> Task:
    """`measured`: the contamination study reads its files' contexts and questions (the
    benchmarks' evaluation sets: XQuAD's, MLQA's)."""
    return Task(
        name=name, splits=splits,
        local_format=LocalFormat(f"SQuAD v1.1 JSON ({', '.join(files.values())})", read),
        preprocess=_preprocess, postprocess=lambda text: text,
        metric_names=("em", "f1"), score_postprocessed=multilingual_metrics.qa_metric(language),
        num_train_examples=num_train_examples, reference_of=_references,
        target_to_reference=lambda target: [target],
        **training_of(splits, "each mixture of its benchmark"),
        lengths=LENGTHS,
        eval_splits=tuple(s for s in splits if s != "train") if eval_splits is None else eval_splits,
        release=ReleaseLayout(folder, files), language=language,
        text=ReleaseText(folder, tuple(f"**/{path.rpartition('/')[2]}" for path in files.values()),
                         ("context", "question")) if measured else None)


SQUAD_TRAIN_DEV = _task(
    "mt5_squad_train_dev", "en",
    {"train": TfdsSplit("squad/v1.1", "train"), "validation": TfdsSplit("squad/v1.1", "validation")},
    {"train": "train-v1.1.json", "validation": "dev-v1.1.json"}, "squad",
    num_train_examples=SQUAD_TRAIN_EXAMPLES)

XQUAD_TEST = {language: _task(
    f"mt5_xquad_test.{language}", language, {"test": TfdsSplit(f"xquad/{language}", "test")},
    {"test": f"xquad.{language}.json"}, "xquad", measured=True) for language in XQUAD_LANGUAGES}

XQUAD_TRANSLATE_TRAIN_DEV = {language: _task(
    f"mt5_xquad_translate_train_dev.{language}", language,
    {"train": TfdsSplit(f"xquad/{language}", "translate-train"),
     "validation": TfdsSplit(f"xquad/{language}", "translate-dev")},
    {"train": f"translate-train/squad.translate.train.en-{language}.json",
     "validation": f"translate-dev/squad.translate.dev.en-{language}.json"}, "xquad")
    for language in XQUAD_LANGUAGES if language != "en"}

MLQA_DEV_TEST = {language: _task(
    f"mt5_mlqa_dev_test.{language}", language,
    {"validation": TfdsSplit(f"mlqa/{language}", "validation"),
     "test": TfdsSplit(f"mlqa/{language}", "test")},
    {"validation": f"MLQA_V1/dev/dev-context-{language}-question-{language}.json",
     "test": f"MLQA_V1/test/test-context-{language}-question-{language}.json"}, "mlqa",
    measured=True) for language in MLQA_LANGUAGES}

_TYDIQA_FILES = {"train": "tydiqa-goldp-v1.1-train.json", "validation": "tydiqa-goldp-v1.1-dev.json"}
# Its validation split mixes nine languages, each normalised its own way: the per-language
# tasks (mt5_tydiqa_dev.<lang>) score it.
TYDIQA_TRAIN_DEV = _task(
    "mt5_tydiqa_train_dev", "",
    {split: TfdsSplit("tydi_qa/goldp", split) for split in ("train", "validation")},
    _TYDIQA_FILES, "tydiqa_goldp", eval_splits=(), num_train_examples=TYDIQA_TRAIN_EXAMPLES)
TYDIQA_ENGLISH_TRAIN = _task(
    "mt5_tydiqa_train.en", "en", {"train": TfdsSplit("tydi_qa/goldp", "train")},
    {"train": _TYDIQA_FILES["train"]}, "tydiqa_goldp", functools.partial(_tydiqa_questions, "en"),
    num_train_examples=TYDIQA_ENGLISH_TRAIN_EXAMPLES)
TYDIQA_DEV = {language: _task(
    f"mt5_tydiqa_dev.{language}", language,
    {"validation": TfdsSplit("tydi_qa/goldp", f"validation-{language}")},
    {"validation": _TYDIQA_FILES["validation"]}, "tydiqa_goldp",
    functools.partial(_tydiqa_questions, language)) for language in TYDIQA_LANGUAGES}
TYDIQA_TRANSLATE_TRAIN = {language: _task(
    f"mt5_tydiqa_translate_train.{language}", language,
    {"train": TfdsSplit("tydi_qa/goldp", f"translate-train-{language}")},
    {"train": f"tydiqa.translate.train.en-{language}.json"}, "tydiqa_goldp")
    for language in TYDIQA_LANGUAGES if language != "en"}

TASKS: tuple[Task, ...] = (SQUAD_TRAIN_DEV, *XQUAD_TEST.values(), *XQUAD_TRANSLATE_TRAIN_DEV.values(),
                           *MLQA_DEV_TEST.values(), TYDIQA_TRAIN_DEV, TYDIQA_ENGLISH_TRAIN,
                           *TYDIQA_DEV.values(), *TYDIQA_TRANSLATE_TRAIN.values())
