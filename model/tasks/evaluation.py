"""Task evaluation of checkpoints for every family: predict a task's validation examples, score
the predictions with the task's metrics, record everything, and pick the best checkpoint per
task, as the paper reports (the best validation score over the checkpoints of a fine-tuning
run). T5 decodes text, scored as text (`task.score`: the task's postprocessing, then its
metrics; `decoded`); GPT-1's and BERT's heads answer in the task's label space (class ids,
values, answer texts), scored by the same metrics as they are (`answered`). A family's task run
(model/tasks/task_runs.py: fine-tune keeping every checkpoint, score here, keep the best) and
the checkpoint a command names are not this module's: it scores, records and selects.

Beside the checkpoints, per task and split (`MODEL_DIR/eval/<task>/<split>/`):
  predictions-<step>.jsonl   {"inputs", "targets", "prediction"} per example, in input order
  scores.jsonl               {"step", "data", "decoding", <metric>: percent, ...} per evaluated
                             checkpoint ("data": which data and version was scored, "decoding":
                             {"beam_size": 1} for greedy decoding, with "alpha" for beam search;
                             null for a head's answers, which are not decoded)
  events.out.tfevents.*      the same scores for TensorBoard (tag `<task>/<split>/<metric>`)
and in `MODEL_DIR/eval/`:
  best.json        for each task and split, the step, checkpoint, scores, data and decoding of
                   the best checkpoint: one step per task (the highest mean of its metrics over
                   all its validation splits, the earliest on ties), as the t5 library's
                   `eval_utils.metric_group_max` picks one step for MNLI matched and mismatched;
                   a test split (mT5's tasks score one) is reported but picks no step beside
                   another split
  benchmarks.json  the GLUE and SuperGLUE averages of the best scores, as the paper's tables
                   report them, for each benchmark whose tasks were all evaluated
  table2.json      for a mixture of mT5's settings, its row of the mT5 paper's Table 2: one
                   step for the setting, each language's score and their mean (model/tasks/mt5.py)
"""
from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf2

from model import tasks
from model.tasks import Decoding, Mixture, Task, discriminative, metrics, mt5
from model.tasks.selection import TaskData
from model.trainer import checkpoint_state, runs
from model.trainer.decoding import DecodingConfig

EVAL_DIR = "eval"
BEST_NAME = "best.json"
BENCHMARKS_NAME = "benchmarks.json"
SCORES_NAME = "scores.jsonl"


@dataclasses.dataclass(frozen=True)
class Metrics:
    """The name and metrics of a task that the task registry does not hold (a registry `Task`
    has the same three attributes): what scores a fine-tuning head's answers on it."""

    name: str
    metric_names: Tuple[str, ...]
    score_postprocessed: Callable[[Sequence[Any], Sequence[Any]], Dict[str, float]]


def head_metrics(name: str) -> Union[Task, Metrics]:
    """What scores a fine-tuning head's answers on task `name`: the task registry's metrics
    (MRPC's F1 and accuracy, CB's mean 3-class F1 and accuracy, STS-B's correlations, SQuAD's
    EM and F1, ...); for the multiple-choice sets outside the registry (GPT-1's Story Cloze and
    RACE), accuracy, as the GPT-1 paper reports them."""
    if name in tasks.names():
        return tasks.get(name)
    if name in discriminative.VIEWS and discriminative.view(name).kind == discriminative.MULTIPLE_CHOICE:
        return Metrics(name, ("accuracy",), metrics.accuracy)
    raise KeyError(f"no metrics for task {name!r}: it is neither in the task registry nor a "
                   "multiple-choice view")


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """One split of one task, ready to predict and score."""

    task: Union[Task, Metrics]
    split: str
    inputs: Tuple[Any, ...]  # the input texts (a head's: its example's segments), for the file
    targets: Tuple[Any, ...]  # the target strings (a head's: its labels), for the predictions file
    references: Tuple[Any, ...]  # what task.score compares predictions with
    # Which data was scored, with its version (e.g. "tfds cnn_dailymail:3.4.0"): a score depends
    # on it (cnn_dailymail's highlights are joined by " . " before TFDS 2.0, by newlines since).
    data: str

    @property
    def name(self) -> str:
        return f"{self.task.name}/{self.split}"


def eval_set(task: Task, split: str, examples: Iterable[dict], data: str) -> EvalSet:
    """`data`: which data the examples are, with its version (recorded with every score)."""
    examples = list(examples)
    if not examples:
        raise ValueError(f"{task.name} {split}: no examples to evaluate")
    pairs = [task.preprocess(example) for example in examples]
    return EvalSet(task, split, tuple(p["inputs"] for p in pairs), tuple(p["targets"] for p in pairs),
                   tuple(task.reference(example) for example in examples), data)


def head_eval_set(task: Union[Task, Metrics], split: str,
                  examples: Sequence[discriminative.Example], data: str) -> EvalSet:
    """A split of a task's discriminative view (model/tasks/discriminative.py) for a head: the
    examples' labels (class ids, values, the right choices) are both targets and references,
    as the task's metrics take them; the inputs recorded are each example's segments (and
    choices). `examples` are the labelled ones the head's features were made of, in order."""
    if not examples:
        raise ValueError(f"{task.name} {split}: no labelled examples to evaluate")
    labels = tuple(example.label for example in examples)
    inputs = tuple({"segments": list(e.segments), **({"choices": list(e.choices)} if e.choices else {})}
                   for e in examples)
    return EvalSet(task, split, inputs, labels, labels, data)


def data_description(task: str, split: str, files: Mapping[Tuple[str, str], Tuple[str, ...]],
                     data_dir: Optional[str] = None) -> str:
    """Which data a head's task split is read from, with its version (`TaskData.describe`;
    release files of a task outside the registry by their paths)."""
    if task in tasks.names():
        return TaskData(files, data_dir).describe(tasks.get(task), split)
    return f"local files {', '.join(files.get((task, split), ()))}"


def decode_texts(run: runs.Run, checkpoint: str, texts: Sequence[str], decoding: Decoding) -> List[str]:
    """Decodes of `texts` by one checkpoint, greedy or by beam search as `decoding` says."""
    return runs.decode(run, texts, run.data_config.inputs_length, checkpoint, decoding.beam_size,
                       decoding.alpha)


@dataclasses.dataclass(frozen=True)
class Scored:
    """One checkpoint's predictions on an eval set and their scores."""

    predictions: Tuple[Any, ...]  # one per example, as the predictions file records them
    scores: Dict[str, float]  # {metric: percent}
    decoding: Optional[Decoding]  # how the predictions were decoded; None for a head's answers


# How one checkpoint (its path) is scored on an eval set.
ScoreCheckpoint = Callable[[str, EvalSet], Scored]


def decoded(run: runs.Run, decoding: DecodingConfig, eval_sets: Sequence[EvalSet] = ()) -> ScoreCheckpoint:
    """T5's scoring: the inputs decoded (greedily, or with the task's final decoding when
    `decoding` switches beam search on), the texts scored by the task (`task.score`). With
    `eval_sets`, a checkpoint's first decode takes the inputs of all of them that decode alike,
    in one pass (a graph and a checkpoint read per pass: mT5's 15 languages by 2 splits are one
    pass, not 30)."""
    passes: Dict[Tuple[str, Decoding], Dict[str, str]] = {}

    def predictions(checkpoint: str, eval_set_: EvalSet, task_decoding: Decoding) -> List[str]:
        key = (checkpoint, task_decoding)
        if key not in passes or any(text not in passes[key] for text in eval_set_.inputs):
            alike = [e for e in eval_sets if e.task.decoding(decoding.beam_search) == task_decoding]
            texts = list(dict.fromkeys(text for e in (*alike, eval_set_) for text in e.inputs))
            passes.clear()  # one checkpoint's predictions at a time
            passes[key] = dict(zip(texts, decode_texts(run, checkpoint, texts, task_decoding)))
        return [passes[key][text] for text in eval_set_.inputs]

    def score(checkpoint: str, eval_set_: EvalSet) -> Scored:
        task_decoding = eval_set_.task.decoding(decoding.beam_search)
        texts = predictions(checkpoint, eval_set_, task_decoding)
        return Scored(tuple(texts), eval_set_.task.score(list(eval_set_.references), texts), task_decoding)
    return score


# A head's answers to one eval set by one checkpoint (its path), in the task's label space.
Answers = Callable[[str], Sequence[Any]]


def answered(answers: Mapping[str, Answers]) -> ScoreCheckpoint:
    """A fine-tuning head's scoring: `answers[eval set name](checkpoint)` gives one answer per
    example in the task's label space (class ids, values, answer texts), scored by the task's
    metrics as they are (`score_postprocessed`: no text to postprocess)."""
    def score(checkpoint: str, eval_set_: EvalSet) -> Scored:
        predictions = list(answers[eval_set_.name](checkpoint))
        if len(predictions) != len(eval_set_.references):
            raise ValueError(f"{eval_set_.name}: {len(predictions)} answers for "
                             f"{len(eval_set_.references)} examples")
        return Scored(tuple(predictions),
                      eval_set_.task.score_postprocessed(list(eval_set_.references), predictions), None)
    return score


def _directory(model_dir: str, eval_set_: EvalSet) -> pathlib.Path:
    return pathlib.Path(model_dir) / EVAL_DIR / eval_set_.task.name / eval_set_.split


def _recorded_entries(model_dir: str, eval_set_: EvalSet) -> Dict[int, dict]:
    """{step: the scores.jsonl entry} recorded for an eval set."""
    path = _directory(model_dir, eval_set_) / SCORES_NAME
    if not path.is_file():
        return {}
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {entry["step"]: entry for entry in entries}


def _scores_of(eval_set_: EvalSet, entries: Mapping[int, dict]) -> Dict[int, Dict[str, float]]:
    """{step: {metric: percent}} of an eval set's recorded entries."""
    return {step: {name: entry[name] for name in eval_set_.task.metric_names}
            for step, entry in entries.items()}


def recorded_scores(model_dir: str, eval_set_: EvalSet) -> Dict[int, Dict[str, float]]:
    """{step: {metric: percent}} already recorded for an eval set (a resumed evaluation skips
    them)."""
    return _scores_of(eval_set_, _recorded_entries(model_dir, eval_set_))


def _write_scores(model_dir: str, eval_set_: EvalSet, step: int, scored: Scored) -> None:
    directory = _directory(model_dir, eval_set_)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"predictions-{step}.jsonl").open("w") as out:
        for inputs, targets, prediction in zip(eval_set_.inputs, eval_set_.targets, scored.predictions):
            out.write(json.dumps({"inputs": inputs, "targets": targets, "prediction": prediction},
                                 ensure_ascii=False) + "\n")
    decoding = scored.decoding.settings() if scored.decoding else None
    with (directory / SCORES_NAME).open("a") as out:
        out.write(json.dumps({"step": step, "data": eval_set_.data, "decoding": decoding,
                              **scored.scores}) + "\n")
    writer = tf2.summary.create_file_writer(str(directory))
    with writer.as_default():
        for metric, value in scored.scores.items():
            tf2.summary.scalar(f"{eval_set_.name}/{metric}", value, step=step)
    writer.close()


def selection_score(*split_scores: Mapping[str, float]) -> float:
    """What picks a task's best checkpoint: the mean of all its metrics on all its validation
    splits at one step (T5's metric group: MNLI matched and mismatched accuracies together)."""
    return float(np.mean([value for scores in split_scores for value in scores.values()]))


def best_checkpoints(model_dir: str, eval_sets: Sequence[EvalSet]) -> Dict[str, dict]:
    """{"<task>/<split>": {"step", "checkpoint", "scores", "data", "decoding"}} of the best
    recorded checkpoints: one step per task, the best by `selection_score` over all the task's
    splits among the steps scored on all of them (the earliest on ties), as the t5 library's
    `eval_utils.metric_group_max`."""
    by_task: Dict[str, List[EvalSet]] = collections.defaultdict(list)
    for eval_set_ in eval_sets:
        by_task[eval_set_.task.name].append(eval_set_)
    best = {}
    for splits in by_task.values():
        entries = [_recorded_entries(model_dir, eval_set_) for eval_set_ in splits]
        recorded = [_scores_of(eval_set_, steps) for eval_set_, steps in zip(splits, entries)]
        common = sorted(set.intersection(*(set(scores) for scores in recorded)))
        if not common:
            continue
        # A test split is scored and reported, but picks no checkpoint beside another split.
        choosing = [scores for eval_set_, scores in zip(splits, recorded) if eval_set_.split != "test"]
        choosing = choosing or recorded
        step = max(common, key=lambda s: selection_score(*(scores[s] for scores in choosing)))
        for eval_set_, scores, steps in zip(splits, recorded, entries):
            entry = steps[step]
            best[eval_set_.name] = {"step": step, "checkpoint": f"model.ckpt-{step}",
                                    "scores": scores[step], "data": entry.get("data"),
                                    "decoding": entry.get("decoding")}
    return best


def benchmark_averages(best: Mapping[str, dict]) -> Dict[str, float]:
    """{"glue_average", "super_glue_average"} as the paper's tables report them, from the best
    checkpoints' scores, for each benchmark all of whose tasks are in `best`: each task's
    metrics averaged (MNLI's two validation splits as one task), then the tasks; WNLI (and DPR)
    are left out (`tasks.benchmark_average`)."""
    task_scores: Dict[str, Dict[str, float]] = collections.defaultdict(dict)
    for name, entry in best.items():
        task, split = name.split("/")
        task_scores[task].update({f"{split}/{metric}": value for metric, value in entry["scores"].items()})
    return {f"{benchmark}_average": tasks.benchmark_average(benchmark, task_scores)
            for benchmark in tasks.BENCHMARKS
            if set(tasks.benchmark_tasks(benchmark)) <= set(task_scores)}


def evaluated_tasks(model_dir: str) -> List[str]:
    """The tasks a run's eval/best.json scores (none where it has no such file)."""
    best_file = pathlib.Path(model_dir) / EVAL_DIR / BEST_NAME
    if not best_file.is_file():
        return []
    return sorted({key.split("/")[0] for key in json.loads(best_file.read_text())})


def evaluate_checkpoints(run: runs.Run, eval_sets: Sequence[EvalSet], score: ScoreCheckpoint,
                         steps: Optional[Sequence[int]] = None,
                         mixture: Optional[Mixture] = None) -> Dict[str, dict]:
    """Scores (`score`) every checkpoint of the model directory (or those of `steps`) not yet
    evaluated on each eval set; writes the records above; returns the best and writes it with
    the benchmark averages (also printed); for a `mixture` of mT5's settings, its row of the
    mT5 paper's Table 2 too (model/tasks/mt5.py; written and printed)."""
    checkpoint_state.require_checkpoints(run.model_dir)
    available = checkpoint_state.checkpoint_steps(run.model_dir)
    for step, checkpoint in available.items():
        if steps is not None and step not in steps:
            continue
        for eval_set_ in eval_sets:
            if step in recorded_scores(run.model_dir, eval_set_):
                continue
            runs.progress(f"evaluating {eval_set_.name} at step {step}")
            _write_scores(run.model_dir, eval_set_, step, score(checkpoint, eval_set_))
    best = best_checkpoints(run.model_dir, eval_sets)
    directory = pathlib.Path(run.model_dir) / EVAL_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / BEST_NAME).write_text(json.dumps(best, indent=1, sort_keys=True) + "\n")
    averages = benchmark_averages(best)
    if averages:
        (directory / BENCHMARKS_NAME).write_text(json.dumps(averages, indent=1, sort_keys=True) + "\n")
        runs.progress(", ".join(f"{name} {value:.2f}" for name, value in sorted(averages.items())))
    if mixture is not None and mixture.table_cell is not None:
        row = mt5.table_row(mixture, {(e.task.name, e.split): recorded_scores(run.model_dir, e)
                                      for e in eval_sets})
        if row is not None:
            runs.progress(f"wrote {mt5.write_table(run.model_dir, row)}\n"
                          + "\n".join(mt5.table_lines(row)))
    return best
