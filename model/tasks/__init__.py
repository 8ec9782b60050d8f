"""The paper's downstream tasks as text to text, and mT5's (named as multilingual-t5 names them,
`mt5_...`): a registry of tasks and mixtures.

    from model import tasks
    task = tasks.get("glue_mnli")
    pair = task.preprocess(example)        # {"inputs": "mnli hypothesis: ... premise: ...", "targets": "entailment"}
    task.score(targets, predictions)       # {"accuracy": 84.2}
    tasks.get_mixture("glue").rates("temperature", temperature=2)

Plain Python; TensorFlow is imported only to read TFDS (`task.examples`) or to build a
tf.data.Dataset (`model.tasks.tf_data`).
"""
from __future__ import annotations

from typing import Mapping

from model.tasks import (cnn_dailymail, glue, metrics, mt5, multilingual_qa, paws_x, squad,
                         super_glue, wikiann, wmt, xnli)
from model.tasks.base import (BEAM_SEARCH, DEFAULT_LENGTHS, GREEDY, Decoding, LocalFormat,
                              ReleaseLayout, ReleaseText, SequenceLengths, Task, TfdsSplit)
from model.tasks.mixtures import Mixing, Mixture

_T5_PAPER_TASKS = tuple(task for family in (glue, super_glue, squad, cnn_dailymail, wmt)
                        for task in family.TASKS)
_MT5_TASKS = tuple(task for family in (xnli, paws_x, wikiann, multilingual_qa) for task in family.TASKS)
_TASKS: dict[str, Task] = {task.name: task for task in _T5_PAPER_TASKS + _MT5_TASKS}

_GLUE = tuple(t for t in _TASKS.values() if t.name.startswith("glue_"))
_SUPER_GLUE = tuple(t for t in _TASKS.values() if t.name.startswith("super_glue_") or t.name == "dpr")
_MIXTURES: dict[str, Mixture] = {
    "glue": Mixture("glue", _GLUE),
    "super_glue": Mixture("super_glue", _SUPER_GLUE),
    # The t5 library's `all` mixtures halve both RTE tasks (`_dedupe`: SuperGLUE's RTE is GLUE's).
    "all": Mixture("all", _T5_PAPER_TASKS, scales={"glue_rte": 0.5, "super_glue_rte": 0.5}),
    **{mixture.name: mixture for mixture in mt5.MIXTURES},
}


def names() -> list[str]:
    """Every task name, in the registry's order (GLUE, SuperGLUE, DPR, SQuAD, CNN/DM, WMT; then
    mT5's: XNLI, PAWS-X, WikiAnn, the QA tasks)."""
    return list(_TASKS)


def get(name: str) -> Task:
    try:
        return _TASKS[name]
    except KeyError:
        pass
    family, dot, language = name.rpartition(".")
    has = sorted(known.rpartition(".")[2] for known in _TASKS if known.startswith(family + ".")) if dot else []
    if has:
        raise KeyError(f"{family} has no language {language!r}; it has {', '.join(has)}")
    raise KeyError(f"no task {name!r}; tasks: {', '.join(_TASKS)}"
                   + (f" (and mixture {name!r}: use get_mixture)" if name in _MIXTURES else ""))


def mixture_names() -> list[str]:
    return list(_MIXTURES)


def get_mixture(name: str) -> Mixture:
    try:
        return _MIXTURES[name]
    except KeyError:
        raise KeyError(f"no mixture {name!r}; mixtures: {', '.join(_MIXTURES)}") from None


BENCHMARKS = ("glue", "super_glue")


def benchmark_tasks(benchmark: str) -> list[str]:
    """The tasks whose scores the benchmark's average counts (GLUE without WNLI; SuperGLUE
    without DPR, as the paper's tables)."""
    if benchmark not in BENCHMARKS:
        raise KeyError(f"no benchmark {benchmark!r}; benchmarks: {', '.join(BENCHMARKS)}")
    return [task.name for task in _TASKS.values() if task.benchmark == benchmark]


def benchmark_average(benchmark: str, scores: Mapping[str, Mapping[str, float]]) -> float:
    """The GLUE or SuperGLUE score as the paper computes it from {task name: its scores}: each
    task's metrics averaged, then the tasks (GLUE without WNLI; SuperGLUE without DPR). For
    glue_mnli give both accuracies, e.g. {"matched": 84.2, "mismatched": 84.6}."""
    members = benchmark_tasks(benchmark)
    missing = [name for name in members if name not in scores]
    if missing:
        raise ValueError(f"the {benchmark} average needs every task's scores; missing {missing}")
    return metrics.benchmark_average({name: dict(scores[name]) for name in members})


__all__ = ["BEAM_SEARCH", "BENCHMARKS", "DEFAULT_LENGTHS", "Decoding", "GREEDY",
           "LocalFormat", "Mixing", "Mixture", "ReleaseLayout", "ReleaseText", "SequenceLengths",
           "Task", "TfdsSplit",
           "benchmark_average", "benchmark_tasks", "get", "get_mixture", "mixture_names", "names"]
