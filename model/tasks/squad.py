"""SQuAD v1.1 as the T5 library casts it: `question: ... context: ...` -> the first answer.

Like T5, question, context and answers get a space on each side of every character that is not an
ASCII letter, digit or underscore, then single spaces (so `U.S.` reads `U . S .`); references are
all answers in that form, and a prediction scores the best over them.
"""
from __future__ import annotations

import json
import re
from typing import Iterator

from model.tasks import metrics, sources
from model.tasks.base import Example, LocalFormat, ReleaseText, SequenceLengths, Task, TfdsSplit

# T5 ran these as TensorFlow (RE2) regular expressions: \W and \s are ASCII-only there.
_NON_WORD = re.compile(r"(\W)", re.ASCII)
_WHITESPACE = re.compile(r"[\t\n\f\r ]+")


def pad_punctuation(text: str) -> str:
    return _WHITESPACE.sub(" ", _NON_WORD.sub(r" \1 ", text))


def _preprocess(example: Example) -> dict[str, str]:
    joined = " ".join(["question:", pad_punctuation(example["question"]),
                       "context:", pad_punctuation(example["context"])])
    return {"inputs": _WHITESPACE.sub(" ", joined),
            "targets": pad_punctuation(example["answers"]["text"][0])}


def read_v1_1(path: str) -> Iterator[dict]:
    """The questions of a SQuAD v1.1 file; a SQuAD 2.0 file (questions marked `is_impossible`,
    which v1.1 has not) is refused: its unanswerable questions are no v1.1 examples."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    if any("is_impossible" in qa for article in data for paragraph in article["paragraphs"]
           for qa in paragraph["qas"]):
        raise ValueError(f"{path} is SQuAD 2.0 (its questions have is_impossible), not v1.1")
    yield from sources.read_squad_json(path)


def _references(example: Example) -> list[str]:
    return [pad_punctuation(answer) for answer in example["answers"]["text"]]


SQUAD = Task(
    name="squad",
    splits={split: TfdsSplit("squad/v1.1", split) for split in ("train", "validation")},
    local_format=LocalFormat("SQuAD v1.1 JSON (train-v1.1.json, dev-v1.1.json)", read_v1_1),
    preprocess=_preprocess, postprocess=lambda text: text,
    metric_names=("em", "f1"), score_postprocessed=metrics.squad, num_train_examples=87_599,
    reference_of=_references, target_to_reference=lambda target: [target],
    lengths=SequenceLengths(inputs=512, targets=97),  # sequence_lengths/squad_v010_allanswers.gin
    # v1.1's files (train-v1.1.json, dev-v1.1.json; a sample squad_v1_*.json), not 2.0's beside.
    text=ReleaseText("squad", ("**/*v1.1.json", "**/*v1_*.json"), ("context", "question")))

TASKS: tuple[Task, ...] = (SQUAD,)
