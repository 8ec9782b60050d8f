"""mT5's fine-tuning settings (Xue et al. 2021, Table 2) as mixtures, and their results in
Table 2's layout.

The settings, named as multilingual-t5 registers its mixtures (every member at one rate, as
its `default_rate=1.0`):
  zero-shot        train on English, evaluate every language:
                   mt5_xnli_zeroshot, mt5_pawsx_zeroshot, mt5_ner_zeroshot, mt5_xquad_zeroshot,
                   mt5_mlqa_zeroshot, mt5_tydiqa_zeroshot
  translate-train  English plus its machine translations into the other languages:
                   mt5_xnli_translate_train, mt5_pawsx_translate_train, mt5_xquad_translate_train,
                   mt5_mlqa_translate_train, mt5_tydiqa_translate_train
  in-language      every language's own training data: mt5_ner_multilingual, mt5_tydiqa

The table: one checkpoint for the whole setting (the step with the best mean over the
mixture's selection splits: every validation split it evaluates, SQuAD's English one for
XQuAD's zero-shot, whose test split is its only one), then each language's score on the split
the paper reports (test; TyDi QA GoldP's validation, its test set being hidden) and their mean:
the row the paper's Table 2 prints for the benchmark and setting. Written to
`MODEL_DIR/eval/table2.json` and printed beside the paper's mT5 rows where they are on record.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from statistics import fmean
from typing import Dict, Mapping, Optional, Sequence, Tuple

from model.data.mixing import Mixing
from model.tasks import multilingual_qa as qa
from model.tasks import paws_x, wikiann, xnli
from model.tasks.base import Task
from model.tasks.mixtures import Mixture

ZERO_SHOT, TRANSLATE_TRAIN, IN_LANGUAGE = "zero-shot", "translate-train", "in-language"
SETTINGS = (ZERO_SHOT, TRANSLATE_TRAIN, IN_LANGUAGE)


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One column of Table 2: its heading, metrics as the paper prints them, and the task of
    each language that is scored."""
    heading: str
    metrics: Tuple[str, ...]
    scored: Mapping[str, Task]  # language -> its evaluation task

    @property
    def languages(self) -> Tuple[str, ...]:
        return tuple(self.scored)


BENCHMARKS: Dict[str, Benchmark] = {
    "xnli": Benchmark("XNLI (accuracy)", ("accuracy",), xnli.DEV_TEST),
    "paws_x": Benchmark("PAWS-X (accuracy)", ("accuracy",), paws_x.DEV_TEST),
    "wikiann": Benchmark("WikiAnn NER (F1)", ("span_f1",), wikiann.EVAL),
    "xquad": Benchmark("XQuAD (F1 / EM)", ("f1", "em"), qa.XQUAD_TEST),
    "mlqa": Benchmark("MLQA (F1 / EM)", ("f1", "em"), qa.MLQA_DEV_TEST),
    "tydiqa_goldp": Benchmark("TyDi QA GoldP (F1 / EM)", ("f1", "em"), qa.TYDIQA_DEV),
}

# The paper's mT5 rows where two independent sources agree on them: the zero-shot accuracies
# and F1 of XNLI, PAWS-X and WikiAnn, from multilingual-t5's README (commit 319bb80) and the
# ByT5 paper's Table 4, which quotes them. The other cells are not on record here: no source
# of Table 2's v3 text was at hand to check them against (the closing note of issue 42).
PAPER_ROWS: Dict[Tuple[str, str], Dict[str, Tuple[float, ...]]] = {
    ("xnli", ZERO_SHOT): {"mT5-Small": (67.5,), "mT5-Base": (75.4,), "mT5-Large": (81.1,),
                          "mT5-XL": (82.9,), "mT5-XXL": (85.0,)},
    ("paws_x", ZERO_SHOT): {"mT5-Small": (82.4,), "mT5-Base": (86.4,), "mT5-Large": (88.9,),
                            "mT5-XL": (89.6,), "mT5-XXL": (90.0,)},
    ("wikiann", ZERO_SHOT): {"mT5-Small": (50.5,), "mT5-Base": (55.7,), "mT5-Large": (58.5,),
                             "mT5-XL": (65.5,), "mT5-XXL": (69.2,)},
}


def _mixture(name: str, benchmark: str, setting: str, *tasks: Task) -> Mixture:
    return Mixture(name, tuple(tasks), mixing=Mixing.EQUAL, table_cell=(benchmark, setting))


_XQUAD_TRANSLATIONS = tuple(qa.XQUAD_TRANSLATE_TRAIN_DEV.values())
MIXTURES: Tuple[Mixture, ...] = (
    _mixture("mt5_xnli_zeroshot", "xnli", ZERO_SHOT, xnli.TRAIN, *xnli.DEV_TEST.values()),
    _mixture("mt5_xnli_translate_train", "xnli", TRANSLATE_TRAIN, xnli.TRAIN,
             *xnli.TRANSLATE_TRAIN.values(), *xnli.DEV_TEST.values()),
    _mixture("mt5_pawsx_zeroshot", "paws_x", ZERO_SHOT, paws_x.ENGLISH_TRAIN, *paws_x.DEV_TEST.values()),
    _mixture("mt5_pawsx_translate_train", "paws_x", TRANSLATE_TRAIN, paws_x.ENGLISH_TRAIN,
             *paws_x.TRANSLATE_TRAIN.values(), *paws_x.DEV_TEST.values()),
    _mixture("mt5_ner_zeroshot", "wikiann", ZERO_SHOT, wikiann.TRAIN["en"], *wikiann.EVAL.values()),
    _mixture("mt5_ner_multilingual", "wikiann", IN_LANGUAGE, *wikiann.TRAIN.values(),
             *wikiann.EVAL.values()),
    _mixture("mt5_xquad_zeroshot", "xquad", ZERO_SHOT, qa.SQUAD_TRAIN_DEV, *qa.XQUAD_TEST.values()),
    _mixture("mt5_xquad_translate_train", "xquad", TRANSLATE_TRAIN, *_XQUAD_TRANSLATIONS,
             qa.SQUAD_TRAIN_DEV, *qa.XQUAD_TEST.values()),
    _mixture("mt5_mlqa_zeroshot", "mlqa", ZERO_SHOT, qa.SQUAD_TRAIN_DEV, *qa.MLQA_DEV_TEST.values()),
    # MLQA has no translations of its own: XTREME's SQuAD translations into its languages.
    _mixture("mt5_mlqa_translate_train", "mlqa", TRANSLATE_TRAIN,
             *(t for t in _XQUAD_TRANSLATIONS if t.language in qa.MLQA_LANGUAGES),
             qa.SQUAD_TRAIN_DEV, *qa.MLQA_DEV_TEST.values()),
    _mixture("mt5_tydiqa_zeroshot", "tydiqa_goldp", ZERO_SHOT, qa.TYDIQA_ENGLISH_TRAIN,
             *qa.TYDIQA_DEV.values()),
    _mixture("mt5_tydiqa_translate_train", "tydiqa_goldp", TRANSLATE_TRAIN, qa.TYDIQA_ENGLISH_TRAIN,
             *qa.TYDIQA_TRANSLATE_TRAIN.values(), *qa.TYDIQA_DEV.values()),
    _mixture("mt5_tydiqa", "tydiqa_goldp", IN_LANGUAGE, qa.TYDIQA_TRAIN_DEV, *qa.TYDIQA_DEV.values()),
)

TABLE_NAME = "table2.json"


def reported_split(task: Task) -> str:
    """The split the paper reports: test where the task is scored on one, else validation."""
    splits = task.eval_splits or ()
    return "test" if "test" in splits else "validation"


def _selection_splits(scored: Mapping[Tuple[str, str], Mapping[int, Mapping[str, float]]]
                      ) -> Sequence[Tuple[str, str]]:
    """The (task, split) pairs that choose the setting's step: every split but test, unless test
    is all there is."""
    chosen = [key for key in scored if key[1] != "test"]
    return chosen or list(scored)


def table_row(mixture: Mixture, scored: Mapping[Tuple[str, str], Mapping[int, Mapping[str, float]]]
              ) -> Optional[dict]:
    """The Table 2 record of a mixture's evaluation. `scored`: {(task name, split): {step:
    {metric: percent}}} of every eval set. None where no step is scored on all of them."""
    if mixture.table_cell is None:
        raise ValueError(f"{mixture.name} is no mT5 setting of Table 2")
    benchmark_name, setting = mixture.table_cell
    benchmark = BENCHMARKS[benchmark_name]
    common = set.intersection(*(set(steps) for steps in scored.values())) if scored else set()
    if not common:
        return None
    selecting = _selection_splits(scored)
    step = max(sorted(common), key=lambda s: fmean(fmean(scored[key][s].values()) for key in selecting))
    languages = {}
    for language, task in benchmark.scored.items():
        key = (task.name, reported_split(task))
        if key in scored:
            languages[language] = {metric: scored[key][step][metric] for metric in benchmark.metrics}
    average = ({metric: fmean(scores[metric] for scores in languages.values())
                for metric in benchmark.metrics} if languages else {})
    return {"mixture": mixture.name, "benchmark": benchmark_name, "setting": setting, "step": step,
            "checkpoint": f"model.ckpt-{step}", "chosen_by": [f"{t}/{s}" for t, s in selecting],
            "languages": languages, "average": average,
            "languages_missing": [lang for lang in benchmark.languages if lang not in languages]}


def _cells(values: Sequence[float]) -> str:
    return " / ".join(f"{value:.1f}" for value in values)


def table_lines(row: Mapping) -> list[str]:
    """The row in Table 2's layout, under the paper's mT5 rows for the same cell where they are
    on record; then every language's scores."""
    benchmark = BENCHMARKS[row["benchmark"]]
    count = len(row["languages"])
    ours = f"this run (step {row['step']}" + (
        f"; {count} of {len(benchmark.languages)} languages" if row["languages_missing"] else "") + ")"
    lines = [f"Table 2, {row['setting']}: {benchmark.heading}", "",
             f"| model | {benchmark.heading} |", "|---|---|"]
    for model, values in PAPER_ROWS.get((row["benchmark"], row["setting"]), {}).items():
        lines.append(f"| {model} (paper) | {_cells(values)} |")
    average = row["average"]
    lines.append(f"| {ours} | {_cells([average[m] for m in benchmark.metrics]) if average else '-'} |")
    lines += ["", "| " + " | ".join(row["languages"]) + " | avg |",
              "|" + "---|" * (count + 1),
              "| " + " | ".join(_cells([scores[m] for m in benchmark.metrics])
                                for scores in row["languages"].values())
              + f" | {_cells([average[m] for m in benchmark.metrics]) if average else '-'} |"]
    return lines


def write_table(model_dir: str, row: Mapping) -> pathlib.Path:
    path = pathlib.Path(model_dir) / "eval" / TABLE_NAME
    path.write_text(json.dumps(row, indent=1, ensure_ascii=False) + "\n")
    return path
