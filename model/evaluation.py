"""Task evaluation of checkpoints: decode a task's validation inputs, score them with the task's
metrics (`task.score`), record everything, and pick the best checkpoint per task, as the paper
reports (the best validation score over the checkpoints of a fine-tuning run).

Beside the checkpoints, per task and split (`MODEL_DIR/eval/<task>/<split>/`):
  predictions-<step>.jsonl   {"inputs", "targets", "prediction"} per example, in input order
  scores.jsonl               {"step", <metric>: percent, ...} per evaluated checkpoint
  events.out.tfevents.*      the same scores for TensorBoard (tag `<task>/<split>/<metric>`)
and `MODEL_DIR/eval/best.json`: for each task and split, the step, checkpoint and scores of the
best checkpoint (highest mean of the task's metrics, the earliest on ties).
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from model import train
from model.decoding import strip_after_eos
from model.tasks import Decoding, Task

EVAL_DIR = "eval"
BEST_NAME = "best.json"
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

    @property
    def name(self) -> str:
        return f"{self.task.name}/{self.split}"


def eval_set(task: Task, split: str, examples: Iterable[dict]) -> EvalSet:
    examples = list(examples)
    if not examples:
        raise ValueError(f"{task.name} {split}: no examples to evaluate")
    pairs = [task.preprocess(example) for example in examples]
    return EvalSet(task, split, tuple(p["inputs"] for p in pairs), tuple(p["targets"] for p in pairs),
                   tuple(task.reference(example) for example in examples))


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


def decode_texts(run: train.Run, checkpoint: str, texts: Sequence[str], decoding: Decoding) -> List[str]:
    """Decodes of `texts` by one checkpoint, greedy or by beam search as `decoding` says."""
    vocabulary = run.vocabulary
    length = run.data_config.inputs_length
    ids = train.encode_inputs(texts, vocabulary, length)
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


def recorded_scores(model_dir: str, eval_set_: EvalSet) -> Dict[int, Dict[str, float]]:
    """{step: scores} already recorded for an eval set (a resumed evaluation skips them)."""
    path = _directory(model_dir, eval_set_) / SCORES_NAME
    if not path.is_file():
        return {}
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {entry.pop("step"): entry for entry in entries}


def _write_scores(model_dir: str, eval_set_: EvalSet, step: int, predictions: Sequence[str],
                  scores: Mapping[str, float]) -> None:
    directory = _directory(model_dir, eval_set_)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"predictions-{step}.jsonl").open("w") as out:
        for inputs, targets, prediction in zip(eval_set_.inputs, eval_set_.targets, predictions):
            out.write(json.dumps({"inputs": inputs, "targets": targets, "prediction": prediction},
                                 ensure_ascii=False) + "\n")
    with (directory / SCORES_NAME).open("a") as out:
        out.write(json.dumps({"step": step, **scores}) + "\n")
    writer = tf2.summary.create_file_writer(str(directory))
    with writer.as_default():
        for metric, value in scores.items():
            tf2.summary.scalar(f"{eval_set_.name}/{metric}", value, step=step)
    writer.close()


def selection_score(scores: Mapping[str, float]) -> float:
    """What picks the best checkpoint: the mean of the task's metrics (one number per task, as the
    paper's benchmark averages count a task)."""
    return float(np.mean(list(scores.values())))


def best_checkpoints(model_dir: str, eval_sets: Sequence[EvalSet]) -> Dict[str, dict]:
    """{"<task>/<split>": {"step", "checkpoint", "scores"}} of the best recorded checkpoints."""
    best = {}
    for eval_set_ in eval_sets:
        recorded = recorded_scores(model_dir, eval_set_)
        if not recorded:
            continue
        step = max(sorted(recorded), key=lambda s: selection_score(recorded[s]))  # earliest on ties
        best[eval_set_.name] = {"step": step, "checkpoint": f"model.ckpt-{step}",
                                "scores": recorded[step]}
    return best


def evaluate_checkpoints(run: train.Run, eval_sets: Sequence[EvalSet],
                         steps: Optional[Sequence[int]] = None) -> Dict[str, dict]:
    """Decodes and scores every checkpoint of the model directory (or those of `steps`) not yet
    evaluated on each eval set; writes the records above; returns and writes the best."""
    available = checkpoint_steps(run.model_dir)
    if not available:
        raise FileNotFoundError(f"no checkpoint to evaluate in {run.model_dir}")
    for step, checkpoint in available.items():
        if steps is not None and step not in steps:
            continue
        for eval_set_ in eval_sets:
            if step in recorded_scores(run.model_dir, eval_set_):
                continue
            train.progress(f"evaluating {eval_set_.name} at step {step}")
            predictions = decode_texts(run, checkpoint, eval_set_.inputs, eval_set_.task.decoding)
            scores = eval_set_.task.score(list(eval_set_.references), predictions)
            _write_scores(run.model_dir, eval_set_, step, predictions, scores)
    best = best_checkpoints(run.model_dir, eval_sets)
    path = pathlib.Path(run.model_dir) / EVAL_DIR / BEST_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(best, indent=1, sort_keys=True) + "\n")
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
