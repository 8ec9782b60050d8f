"""Text formats shared by task families: the T5 library's `benchmark field: value ...` input and
label <-> class id conversion."""
from __future__ import annotations

from typing import Sequence

from model.tasks.base import Example
from model.tasks.metrics import INVALID

UNKNOWN_LABEL = "<unk>"  # the target of an unlabelled (test) example, as in T5


def benchmark_inputs(benchmark: str, example: Example, fields: Sequence[str]) -> str:
    """`benchmark field1: value1 field2: value2 ...`, joined by single spaces (values kept as is)."""
    parts = [benchmark]
    for field in fields:
        parts += [f"{field}:", example[field]]
    return " ".join(parts)


def label_name(label: int, label_names: Sequence[str]) -> str:
    return UNKNOWN_LABEL if label == -1 else label_names[label]


def class_id(text: str, label_names: Sequence[str]) -> int:
    """The id of a label string; INVALID for anything else (it then counts as wrong)."""
    return label_names.index(text) if text in label_names else INVALID


def as_float(text: str) -> float:
    """A predicted number (STS-B); -1 for a string that is no number, as T5 does."""
    try:
        return float(text)
    except ValueError:
        return -1.0
