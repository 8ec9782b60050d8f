"""Task evaluation of checkpoints: decode a task's validation inputs, score them with the task's
metrics (`task.score`), record everything, and pick the best checkpoint per task, as the paper
reports (the best validation score over the checkpoints of a fine-tuning run).

Beside the checkpoints, per task and split (`MODEL_DIR/eval/<task>/<split>/`):
  predictions-<step>.jsonl   {"inputs", "targets", "prediction"} per example, in input order
  scores.jsonl               {"step", "data", "decoding", <metric>: percent, ...} per evaluated
                             checkpoint ("data": which data and version was scored, "decoding":
                             beam size and alpha)
  events.out.tfevents.*      the same scores for TensorBoard (tag `<task>/<split>/<metric>`)
and in `MODEL_DIR/eval/`:
  best.json        for each task and split, the step, checkpoint, scores, data and decoding of
                   the best checkpoint: one step per task (the highest mean of its metrics over
                   all its validation splits, the earliest on ties), as the t5 library's
                   `eval_utils.metric_group_max` picks one step for MNLI matched and mismatched
  benchmarks.json  the GLUE and SuperGLUE averages of the best scores, as the paper's tables
                   report them, for each benchmark whose tasks were all evaluated
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import pathlib
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from model import tasks
from model.trainer import runs
from model.trainer.decoding import DecodingConfig, strip_after_eos
from model.tasks import Decoding, Task

EVAL_DIR = "eval"
BEST_NAME = "best.json"
BENCHMARKS_NAME = "benchmarks.json"
SCORES_NAME = "scores.jsonl"
_CHECKPOINT_STEP = re.compile(r"model\.ckpt-(\d+)$")


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """One split of one task, ready to decode and score."""

    task: Task
    split: str
    inputs: Tuple[str, ...]
    targets: Tuple[str, ...]  # the target strings, for the predictions file
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


def checkpoint_steps(model_dir: str) -> Dict[int, str]:
    """{global step: checkpoint path} of the checkpoints in the model directory (all of them:
    a fine-tuning run keeps every checkpoint, which the checkpoint state file does not list)."""
    found = {}
    for index in tf.io.gfile.glob(f"{model_dir}/model.ckpt-*.index"):
        path = index[:-len(".index")]
        match = _CHECKPOINT_STEP.search(path)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def decode_texts(run: runs.Run, checkpoint: str, texts: Sequence[str], decoding: Decoding) -> List[str]:
    """Decodes of `texts` by one checkpoint, greedy or by beam search as `decoding` says."""
    vocabulary = run.vocabulary
    length = run.data_config.inputs_length
    ids = runs.encode_inputs(texts, vocabulary, length)
    batch_size = min(len(texts), run.train_config.eval_batch_size)
    padded = np.concatenate([ids, np.zeros([-len(ids) % batch_size, length], np.int32)])
    estimator = run.estimator(batch_size, decoding.beam_size, decoding.alpha)
    predictions = estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"inputs": padded}).batch(
            params["batch_size"], drop_remainder=True),
        checkpoint_path=checkpoint, yield_single_examples=True)
    return [vocabulary.decode(strip_after_eos(p["outputs"])) for p in predictions][:len(texts)]


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


def _write_scores(model_dir: str, eval_set_: EvalSet, step: int, predictions: Sequence[str],
                  scores: Mapping[str, float], decoding: Decoding) -> None:
    directory = _directory(model_dir, eval_set_)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"predictions-{step}.jsonl").open("w") as out:
        for inputs, targets, prediction in zip(eval_set_.inputs, eval_set_.targets, predictions):
            out.write(json.dumps({"inputs": inputs, "targets": targets, "prediction": prediction},
                                 ensure_ascii=False) + "\n")
    with (directory / SCORES_NAME).open("a") as out:
        out.write(json.dumps({"step": step, "data": eval_set_.data,
                              "decoding": dataclasses.asdict(decoding), **scores}) + "\n")
    writer = tf2.summary.create_file_writer(str(directory))
    with writer.as_default():
        for metric, value in scores.items():
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
        step = max(common, key=lambda s: selection_score(*(scores[s] for scores in recorded)))
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


def evaluate_checkpoints(run: runs.Run, eval_sets: Sequence[EvalSet], decoding: DecodingConfig,
                         steps: Optional[Sequence[int]] = None) -> Dict[str, dict]:
    """Decodes (greedily, or as `decoding` says) and scores every checkpoint of the model
    directory (or those of `steps`) not yet evaluated on each eval set; writes the records
    above; returns the best and writes it with the benchmark averages (also printed)."""
    available = checkpoint_steps(run.model_dir)
    if not available:
        raise FileNotFoundError(f"no checkpoint to evaluate in {run.model_dir}")
    for step, checkpoint in available.items():
        if steps is not None and step not in steps:
            continue
        for eval_set_ in eval_sets:
            if step in recorded_scores(run.model_dir, eval_set_):
                continue
            runs.progress(f"evaluating {eval_set_.name} at step {step}")
            task_decoding = eval_set_.task.decoding(decoding.beam_search)
            predictions = decode_texts(run, checkpoint, eval_set_.inputs, task_decoding)
            scores = eval_set_.task.score(list(eval_set_.references), predictions)
            _write_scores(run.model_dir, eval_set_, step, predictions, scores, task_decoding)
    best = best_checkpoints(run.model_dir, eval_sets)
    directory = pathlib.Path(run.model_dir) / EVAL_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / BEST_NAME).write_text(json.dumps(best, indent=1, sort_keys=True) + "\n")
    averages = benchmark_averages(best)
    if averages:
        (directory / BENCHMARKS_NAME).write_text(json.dumps(averages, indent=1, sort_keys=True) + "\n")
        runs.progress(", ".join(f"{name} {value:.2f}" for name, value in sorted(averages.items())))
    return best


def keep_only(model_dir: str, steps: Iterable[int]) -> List[int]:
    """Deletes the checkpoints of other steps and lists the kept ones in the checkpoint state
    (the newest stays the latest). Returns the kept steps."""
    available = checkpoint_steps(model_dir)
    kept = sorted(set(steps) & set(available))
    for step, path in available.items():
        if step not in kept:
            for name in tf.io.gfile.glob(path + ".*"):
                tf.io.gfile.remove(name)
    if kept:
        # Relative to the model directory, as the trainer's saver writes them (the directory can move).
        tf.train.update_checkpoint_state(
            model_dir, pathlib.Path(available[kept[-1]]).name,
            all_model_checkpoint_paths=[pathlib.Path(available[s]).name for s in kept])
    return kept


def resolve_checkpoint(model_dir: str, name: str, task: Optional[str] = None) -> str:
    """The checkpoint `--checkpoint NAME` means: "" the newest of `model_dir`; "best" the one
    `model_dir`/eval/best.json names (for `task` where it names several); a path, or a name as
    best.json and the progress lines print it (`model.ckpt-360`) relative to `model_dir`."""
    if not name:
        newest = tf.train.latest_checkpoint(model_dir)
        if not newest:
            raise FileNotFoundError(f"no checkpoint in {model_dir}")
        return newest
    if name == "best":
        best_file = pathlib.Path(model_dir) / EVAL_DIR / BEST_NAME
        if not best_file.is_file():
            raise FileNotFoundError(f"--checkpoint best: no {best_file} (--mode eval --task T "
                                    "writes it)")
        best = json.loads(best_file.read_text())
        named = {entry["checkpoint"] for key, entry in best.items()
                 if not task or key.split("/")[0] == task}
        if len(named) != 1:
            raise ValueError(f"--checkpoint best: {best_file} names {sorted(named) or 'none'}"
                             + (f" for {task}" if task else "; choose one with --task"))
        name = named.pop()
    for candidate in (name, os.path.join(model_dir, name)):
        if tf.io.gfile.exists(candidate + ".index"):
            return candidate
    raise FileNotFoundError(f"--checkpoint {name}: no checkpoint {name} (nor in {model_dir})")
