"""The thin bridge to TensorFlow: a task's text pairs as a tf.data.Dataset of
{"inputs": tf.string, "targets": tf.string}, for tokenization by model.data.inputs."""
from __future__ import annotations

from typing import Iterable, Iterator

import tensorflow as tf

from model.tasks.base import Task

PAIR_SIGNATURE = {"inputs": tf.TensorSpec([], tf.string), "targets": tf.TensorSpec([], tf.string)}


def text_pairs(task: Task, examples: Iterable[dict], *, training: bool) -> Iterator[dict[str, str]]:
    """The pairs of raw examples: fine-tuning pairs (`training`) or one evaluation pair each."""
    for example in examples:
        if training:
            yield from task.training_pairs(example)
        else:
            yield task.preprocess(example)


def dataset(task: Task, examples: Iterable[dict], *, training: bool) -> tf.data.Dataset:
    """The text pairs as a tf.data.Dataset (examples are read again on each iteration if they are
    a re-iterable collection; pass a list to iterate more than once)."""
    return tf.data.Dataset.from_generator(lambda: text_pairs(task, examples, training=training),
                                          output_signature=PAIR_SIGNATURE)
