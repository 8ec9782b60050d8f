"""GLUE: the nine tasks as the T5 library casts them (its `glue` and `stsb` preprocessors).

Inputs: `<benchmark> <field>: <value> ...` with the fields in sorted order (T5's default), e.g.
`mnli hypothesis: ... premise: ...`; targets: the TFDS label name (`entailment`), or for STS-B the
score rounded to the nearest 0.2 and written with one decimal (`3.8`).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Mapping

import numpy as np

from model.tasks import metrics, sources
from model.tasks.base import Example, LocalFormat, ReleaseText, SequenceLengths, Task, TfdsSplit
from model.tasks.text_format import as_float, benchmark_inputs, class_id, label_name


@dataclasses.dataclass(frozen=True)
class GlueConfig:
    """One GLUE task: its TFDS config and the layout of its TSV files."""
    config: str  # TFDS glue/<config>
    benchmark: str  # the name that starts the inputs
    text_columns: Mapping[str, str]  # TFDS feature -> TSV column
    label_column: str
    label_names: tuple[str, ...] | None  # None: a float score (STS-B)
    metric: Callable
    metric_names: tuple[str, ...]
    num_train_examples: int  # glue/<config> train split (T5's GLUE mixing weights)
    validation_splits: Mapping[str, str] = dataclasses.field(default_factory=lambda: {"validation": "validation"})
    headerless_columns: Mapping[str, int] | None = None
    local_files: str = "train.tsv, dev.tsv, test.tsv"


_TWO_SENTENCES = {"sentence1": "sentence1", "sentence2": "sentence2"}
_F1_ACCURACY = ("f1", "accuracy")

CONFIGS = (
    GlueConfig("cola", "cola", {"sentence": "sentence"}, "is_acceptable", ("unacceptable", "acceptable"),
               metrics.matthews_corrcoef, ("matthews_corrcoef",), 8_551,
               headerless_columns={"sentence": 3, "is_acceptable": 1},
               local_files="train.tsv, dev.tsv (or in_domain_dev.tsv), test.tsv"),
    GlueConfig("sst2", "sst2", {"sentence": "sentence"}, "label", ("negative", "positive"),
               metrics.accuracy, ("accuracy",), 67_349),
    GlueConfig("mrpc", "mrpc", {"sentence1": "#1 String", "sentence2": "#2 String"}, "Quality",
               ("not_equivalent", "equivalent"), None, _F1_ACCURACY, 3_668,
               # idx: the row in the file read (TFDS numbers rows of msr_paraphrase_train.txt).
               local_files="msr_paraphrase_train.txt, msr_paraphrase_test.txt, GLUE's MRPC dev.tsv"),
    GlueConfig("stsb", "stsb", _TWO_SENTENCES, "score", None, metrics.pearson_spearman,
               ("pearson_corrcoef", "spearman_corrcoef"), 5_749),
    GlueConfig("qqp", "qqp", {"question1": "question1", "question2": "question2"}, "is_duplicate",
               ("not_duplicate", "duplicate"), None, _F1_ACCURACY, 363_849),
    GlueConfig("mnli", "mnli", {"premise": "sentence1", "hypothesis": "sentence2"}, "gold_label",
               ("entailment", "neutral", "contradiction"), metrics.accuracy, ("accuracy",), 392_702,
               validation_splits={"validation_matched": "validation_matched",
                                  "validation_mismatched": "validation_mismatched"},
               local_files="train.tsv, dev_matched.tsv, dev_mismatched.tsv, test_*.tsv"),
    GlueConfig("qnli", "qnli", {"question": "question", "sentence": "sentence"}, "label",
               ("entailment", "not_entailment"), metrics.accuracy, ("accuracy",), 104_743),
    GlueConfig("rte", "rte", _TWO_SENTENCES, "label", ("entailment", "not_entailment"),
               metrics.accuracy, ("accuracy",), 2_490),
    GlueConfig("wnli", "wnli", _TWO_SENTENCES, "label", ("not_entailment", "entailment"),
               metrics.accuracy, ("accuracy",), 635),
)


def _f1_and_accuracy(targets, predictions) -> dict[str, float]:
    return {**metrics.f1_with_invalid(targets, predictions), **metrics.accuracy(targets, predictions)}


def stsb_target(score: float) -> str:
    """The score rounded to the nearest 0.2 (half to even, in float32 as TF does), one decimal."""
    rounded = np.round(np.float32(score) * np.float32(5)) / np.float32(5)
    return f"{rounded:.1f}"


def _preprocess(config: GlueConfig, example: Example) -> dict[str, str]:
    fields = sorted(config.text_columns)
    inputs = benchmark_inputs(config.benchmark, example, fields)
    if config.label_names is None:
        targets = stsb_target(example["label"])
    else:
        targets = label_name(example["label"], config.label_names)
    return {"inputs": inputs, "targets": targets}


def _task(config: GlueConfig) -> Task:
    splits = {"train": TfdsSplit(f"glue/{config.config}", "train")}
    splits.update({ours: TfdsSplit(f"glue/{config.config}", theirs)
                   for ours, theirs in config.validation_splits.items()})
    if config.label_names is None:
        postprocess: Callable = as_float
    else:
        postprocess = functools.partial(class_id, label_names=config.label_names)
    read = functools.partial(sources.read_glue_tsv, text_columns=config.text_columns,
                             label_column=config.label_column, label_names=config.label_names,
                             headerless_columns=config.headerless_columns)
    return Task(
        name=f"glue_{config.config}",
        splits=splits,
        local_format=LocalFormat(f"GLUE TSV ({config.local_files})", read),
        preprocess=functools.partial(_preprocess, config),
        postprocess=postprocess,
        metric_names=config.metric_names,
        score_postprocessed=config.metric or _f1_and_accuracy,
        num_train_examples=config.num_train_examples,
        # The paper never trains on WNLI (its train and validation sets are adversarial to each other).
        trained_on=config.config != "wnli",
        untrained_reason=("as in the paper: GLUE's WNLI and its training set are adversarial"
                          if config.config == "wnli" else ""),
        benchmark="glue" if config.config != "wnli" else "",
        lengths=GLUE_LENGTHS,
        label_names=config.label_names,
        text=ReleaseText(f"glue_{config.config}", ("**/*.tsv",), tuple(config.text_columns)),
    )


# t5/models/gin/sequence_lengths/glue_v002_proportional.gin
GLUE_LENGTHS = SequenceLengths(inputs=512, targets=84)
TASKS: tuple[Task, ...] = tuple(_task(config) for config in CONFIGS)
