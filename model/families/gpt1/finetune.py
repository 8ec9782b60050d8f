"""GPT-1's discriminative fine-tuning on a task, from the command line (`--task` with a `gpt1`
architecture):

    python -m model finetune --task super_glue_copa --model_dir DIR \
        --gin_file gpt1/base.gin --gin_file gpt1/finetune.gin \
        --gin_param "TrainConfig.init_checkpoint = 'PRETRAINED_DIR'" \
        --gin_param "DataConfig.vocabulary = 'spm.model'" \
        --task_files super_glue_copa:train=train.jsonl \
        --task_files super_glue_copa:validation=val.jsonl
    python -m model eval --task super_glue_copa ...   (the checkpoints not yet scored)

The task's discriminative view (model/tasks/discriminative.py) gives its segments and labels; the
family's input transformation (`gpt1_inputs.head_features`) makes the token sequences, padded to
the longest sequence of the split and at most DataConfig.targets_length (`unpadded`: OpenAI's
train.py sizes its n_ctx the same way, by the longest input of the data, at most 512; padding
every COPA sequence to 512 tokens, where at most 64 are used, made a tiny run hold 4.6 GB of
memory instead of 0.9: bench/bench_finetune_memory.py);
the head's kind, classes and sequences per example are bound from the view (`GPT1Config`).
Training runs `GPT1FinetuneConfig.epochs` passes over the labelled training examples in batches
of `batch_size` examples (shuffled each epoch, seeded by DataConfig.seed), with the schedule of
gpt1/finetune.gin (`lr.warmup_linear`) over the run's steps. Then, as for every family
(model/tasks/task_runs.py `task_run`), every checkpoint the run trained is scored on every
validation split given by the task's metrics (the task registry's: MRPC's F1 and accuracy,
STS-B's Pearson and Spearman correlations, ...; accuracy for Story Cloze and RACE) of the head's
answers (the class, the right choice or the value, in the task's label space), recorded under
MODEL_DIR/eval/, and the best reported.

Data: `--task_files TASK:SPLIT=PATH[,PATH]` (release files, read by the view's or the task's
local reader), else TFDS (`--tfds_data_dir`) for the registry's tasks and their validation splits.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, Mapping, Sequence, Tuple

import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model.families.gpt1 import inputs as gpt1_inputs
from model.tasks import discriminative, evaluation
from model.tasks.selection import TaskRequest, validation_splits
from model.tasks.sources import TaskFiles
from model.tasks.task_runs import TaskPlan, Training
from model.trainer import runs


@gin.configurable
@dataclasses.dataclass(frozen=True)
class GPT1FinetuneConfig:
    """GPT-1's fine-tuning: 3 epochs of 32 examples per batch (the paper's Section 4.1)."""

    epochs: float = 3.0
    batch_size: int = 32


def with_head(run: runs.Run, view: discriminative.View) -> runs.Run:
    """The run with the head the view needs: its family config derived (recorded with the
    run's checkpoints)."""
    return run.with_family_config(head=view.kind, num_classes=view.num_classes,
                                  sequences_per_example=gpt1_inputs.sequences_per_example(view))


def task_files(files: TaskFiles) -> TaskFiles:
    """--task_files for GPT-1's heads: every named task must have a discriminative view."""
    for name, _ in files:
        discriminative.view(name)  # a task without a view fails here
    return files


def unpadded(rows: Dict[str, np.ndarray], sequences: int) -> Dict[str, np.ndarray]:
    """`rows` with every sequence cut to the longest of them (`head_tokens` [n, sequences *
    length]: the sequences of each example one after the other). What is cut is zero padding
    after each sequence's extract token, which changes nothing the head or the loss sees:
    attention looks back only, and the LM loss leaves padding out."""
    tokens = rows["head_tokens"]
    blocks = tokens.reshape(len(tokens), sequences, -1)
    length = int(np.flatnonzero(blocks.any(axis=(0, 1)))[-1]) + 1
    return {**rows, "head_tokens": blocks[:, :, :length].reshape(len(tokens), sequences * length)}


def features(run: runs.Run, view: discriminative.View,
             examples: Sequence[discriminative.Example]) -> Dict[str, np.ndarray]:
    """The head's features of (labelled, at least one) examples, `unpadded`."""
    rows = gpt1_inputs.head_features(examples, view, run.vocabulary, run.data_config.targets_length)
    return unpadded(rows, gpt1_inputs.sequences_per_example(view))


def batch_and_steps(config: GPT1FinetuneConfig, count: int) -> Tuple[int, int]:
    """Examples per batch and the steps that make `config.epochs` passes over `count` examples:
    a task smaller than the batch size trains on batches of all its examples, so the steps
    follow the batch actually used (at least one)."""
    batch = min(config.batch_size, count)
    return batch, max(1, math.ceil(config.epochs * count / batch))


def head_training(run: runs.Run, task: str, view: discriminative.View,
                  examples: Sequence[discriminative.Example], config: GPT1FinetuneConfig
                  ) -> Tuple[Training, int]:
    """What the head (and the whole model) trains on: the task's labelled training `examples`,
    `config.epochs` passes in batches of `config.batch_size` (the schedule spans those steps:
    the trainer gives it the run's); and the tokens per batch that make those batches."""
    if not examples:
        raise ValueError(f"{task}: no labelled training examples")
    rows = features(run, view, examples)
    count = len(examples)
    batch, steps = batch_and_steps(config, count)
    seed = run.data_config.seed
    runs.progress(f"fine-tuning GPT-1 on {task}: {count} examples, {config.epochs:g} epochs, "
                  f"{steps} steps of {batch}")

    def examples_dataset():
        return tf.data.Dataset.from_tensor_slices(rows).shuffle(
            count, seed=seed, reshuffle_each_iteration=True)
    return Training(examples_dataset, steps), batch * rows["head_tokens"].shape[1]


def answers(run: runs.Run, rows: Mapping[str, np.ndarray]) -> evaluation.Answers:
    """A checkpoint's answer to each row: the chosen class or choice, or a regression head's
    value (the family's PREDICT output)."""
    return lambda checkpoint: runs.predict(
        run, {"inputs": rows["head_tokens"]}, checkpoint)[:, 0].tolist()


def task_plan(run: runs.Run, request: TaskRequest, training: bool) -> TaskPlan:
    """GPT-1's part of a task run (model/tasks/task_runs.py's one loop): the head derived from
    the task's view, each checkpoint's answers on the validation splits that have labelled
    examples (in batches of GPT1FinetuneConfig.batch_size) and, when `training`, the head and
    the model trained on the task's labelled training examples."""
    if request.mixture:
        raise ValueError("GPT-1 fine-tunes on one task at a time (--task)")
    task, data_dir = request.task, request.tfds_data_dir
    files = task_files(request.task_files)
    view = discriminative.view(task)
    run = with_head(run, view)
    config = GPT1FinetuneConfig()
    run = dataclasses.replace(run, train_config=dataclasses.replace(
        run.train_config, eval_batch_size=config.batch_size))
    metrics = evaluation.head_metrics(task)
    sets, split_answers = [], {}
    for split in validation_splits(task, files):
        examples = discriminative.labelled_examples(task, split, files.get((task, split)), data_dir)
        if examples:
            sets.append(evaluation.head_eval_set(metrics, split, examples,
                                                 evaluation.data_description(task, split, files, data_dir)))
            split_answers[sets[-1].name] = answers(run, features(run, view, examples))
    if not sets:
        raise ValueError(f"{task}: no labelled validation examples to score; give --task_files "
                         f"{task}:validation=PATH")
    trained_on = None
    if training:
        trained_on, tokens_per_batch = head_training(run, task, view, discriminative.labelled_examples(
            task, "train", files.get((task, "train")), data_dir), config)
        run = dataclasses.replace(run, train_config=dataclasses.replace(
            run.train_config, tokens_per_batch=tokens_per_batch))
    return TaskPlan(run, sets, evaluation.answered(split_answers), trained_on)
