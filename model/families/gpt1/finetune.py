"""GPT-1's discriminative fine-tuning on a task, from the command line (`--task` with a `gpt1`
architecture):

    python -m model.train --mode finetune --task super_glue_copa --model_dir DIR \
        --gin_file gpt1/base.gin --gin_file gpt1/finetune.gin \
        --gin_param "TrainConfig.init_checkpoint = 'PRETRAINED_DIR'" \
        --gin_param "DataConfig.vocabulary = 'spm.model'" \
        --task_files super_glue_copa:train=train.jsonl \
        --task_files super_glue_copa:validation=val.jsonl
    python -m model.train --mode eval --task super_glue_copa ...   (the newest checkpoint)

The task's discriminative view (model/tasks/discriminative.py) gives its segments and labels; the
family's input transformation (`gpt1_inputs.head_features`) makes the token sequences; the head's kind,
classes and sequences per example are bound from the view (`GPT1Config`). Training runs
`GPT1FinetuneConfig.epochs` passes over the labelled training examples in batches of
`batch_size` examples (shuffled each epoch, seeded by DataConfig.seed), with the schedule of
gpt1/finetune.gin (`lr.warmup_linear`) told the run's total steps and first step. Then the
newest checkpoint is evaluated on every validation split given: accuracy and classification loss,
or for a regression task (STS-B) the task's own metrics (`model.tasks`: Pearson and Spearman
correlation, in percent) of the predicted values, and their mean squared error.

Data: `--task_files TASK:SPLIT=PATH[,PATH]` (release files, read by the view's or the task's
local reader), else TFDS (`--tfds_data_dir`) for the registry's tasks and their validation splits.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Dict, List, Mapping, Sequence, Tuple

import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model.trainer import runs
from model.families.gpt1 import inputs as gpt1_inputs
from model.tasks import discriminative
from model.tasks.selection import validation_splits
from model.tasks.sources import TaskFiles, parse_task_files


@gin.configurable
@dataclasses.dataclass(frozen=True)
class GPT1FinetuneConfig:
    """GPT-1's fine-tuning: 3 epochs of 32 examples per batch (the paper's Section 4.1)."""

    epochs: float = 3.0
    batch_size: int = 32


def bind_head(view: discriminative.View) -> None:
    """The head the view needs, bound in gin (so the operative config records it)."""
    gin.bind_parameter("GPT1Config.head", view.kind)
    gin.bind_parameter("GPT1Config.num_classes", view.num_classes)
    gin.bind_parameter("GPT1Config.sequences_per_example", gpt1_inputs.sequences_per_example(view))


def task_files(specs: Sequence[str]) -> TaskFiles:
    """--task_files for GPT-1's heads: every named task must have a discriminative view."""
    files = parse_task_files(specs)
    for name, _ in files:
        discriminative.view(name)  # a task without a view fails here
    return files


def labelled(task: str, split: str, files: Mapping[Tuple[str, str], Tuple[str, ...]],
             data_dir: str | None = None) -> List[discriminative.Example]:
    """The split's examples that have a label (test files have none)."""
    return [e for e in discriminative.examples(task, split, files.get((task, split)), data_dir)
            if e.label != -1]


def features(run: runs.Run, view: discriminative.View,
             examples: Sequence[discriminative.Example]) -> Dict[str, np.ndarray]:
    return gpt1_inputs.head_features(examples, view, run.vocabulary, run.data_config.targets_length)


def _with_batch(run: runs.Run, examples_per_batch: int, row_length: int) -> runs.Run:
    """The run with a token budget of `examples_per_batch` rows of `row_length` tokens."""
    return dataclasses.replace(run, train_config=dataclasses.replace(
        run.train_config, tokens_per_batch=examples_per_batch * row_length,
        eval_batch_size=examples_per_batch))


def batch_and_steps(config: GPT1FinetuneConfig, count: int) -> Tuple[int, int]:
    """Examples per batch and the steps that make `config.epochs` passes over `count` examples:
    a task smaller than the batch size trains on batches of all its examples, so the steps
    follow the batch actually used (at least one)."""
    batch = min(config.batch_size, count)
    return batch, max(1, math.ceil(config.epochs * count / batch))


def finetune(run: runs.Run, task: str, files: Mapping[Tuple[str, str], Tuple[str, ...]],
             data_dir: str | None = None, config: GPT1FinetuneConfig = None) -> Dict[str, dict]:
    """Trains the head (and the whole model) on the task, then evaluates the newest checkpoint."""
    config = config or GPT1FinetuneConfig()
    view = discriminative.view(task)
    bind_head(view)
    rows = features(run, view, labelled(task, "train", files, data_dir))
    count = len(rows["label"])
    if not count:
        raise ValueError(f"{task}: no labelled training examples")
    batch, steps = batch_and_steps(config, count)
    gin.bind_parameter("lr.warmup_linear.total_steps", steps)
    run = _with_batch(run, batch, rows["head_tokens"].shape[1])
    seed = run.data_config.seed

    def examples():
        return tf.data.Dataset.from_tensor_slices(rows).shuffle(
            count, seed=seed, reshuffle_each_iteration=True)

    runs.progress(f"fine-tuning GPT-1 on {task}: {count} examples, {config.epochs:g} epochs, "
                   f"{steps} steps of {batch}")
    runs.train(run, examples, run.vocabulary.vocab_size, max_steps=steps)
    return evaluate(run, task, files, data_dir, batch)


def evaluate(run: runs.Run, task: str, files: Mapping[Tuple[str, str], Tuple[str, ...]],
             data_dir: str | None = None, batch_size: int | None = None) -> Dict[str, dict]:
    """{"task/split": {"step", "examples", "accuracy", "classification_loss"}} of the newest
    checkpoint on every validation split, every example counted once (batches of the largest
    divisor of the split's size within the batch size); a regression task has its metrics
    (`regression_scores`) in place of accuracy and classification loss."""
    view = discriminative.view(task)
    bind_head(view)
    results = {}
    for split in validation_splits(task, files):
        rows = features(run, view, labelled(task, split, files, data_dir))
        count = len(rows["label"])
        if not count:
            continue
        cap = batch_size or run.train_config.eval_batch_size
        batch = max(d for d in range(1, min(cap, count) + 1) if count % d == 0)
        evaluated = _with_batch(run, batch, rows["head_tokens"].shape[1])
        estimator = evaluated.estimator(batch)
        if view.kind == discriminative.REGRESSION:
            results[f"{task}/{split}"] = regression_scores(task, estimator, rows)
            continue
        scores = estimator.evaluate(
            lambda params: tf.data.Dataset.from_tensor_slices(rows).batch(
                params["batch_size"], drop_remainder=True),
            steps=count // batch, name=f"{task}_{split}")
        results[f"{task}/{split}"] = {
            "step": int(scores["global_step"]), "examples": count,
            "accuracy": 100 * float(scores["accuracy"]),
            "classification_loss": float(scores["classification_loss"])}
    return results


def regression_scores(task: str, estimator, rows: Mapping[str, np.ndarray]) -> dict:
    """The newest checkpoint's predicted values for `rows` scored by the task's metrics (the
    task registry's: STS-B's Pearson and Spearman correlation), and their mean squared error."""
    from model import tasks
    predictions = estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"inputs": rows["head_tokens"]}).batch(
            params["batch_size"], drop_remainder=True),
        yield_single_examples=True)
    values = np.array([float(p["outputs"][0]) for p in predictions])
    labels = rows["label"][:, 0].astype(np.float64)
    step = estimator.get_variable_value("global_step")
    return {"step": int(step), "examples": len(labels),
            **tasks.get(task).score_postprocessed(labels.tolist(), values.tolist()),
            "squared_error": float(np.mean((values - labels) ** 2))}


def run_mode(mode: str, run: runs.Run, args: argparse.Namespace) -> Dict[str, dict]:
    """finetune: train and evaluate; eval: evaluate the newest checkpoint."""
    if args.mixture:
        raise ValueError("GPT-1 fine-tunes on one task at a time (--task)")
    files = task_files(args.task_files)
    if mode == "finetune":
        return finetune(run, args.task, files, args.tfds_data_dir)
    if mode == "eval":
        return evaluate(run, args.task, files, args.tfds_data_dir)
    raise ValueError(f"GPT-1 has no --mode {mode} with a task (finetune or eval)")
