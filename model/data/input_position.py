"""Where the training input stands at a checkpoint, so that a resumed run starts there.

A training stream (model.data.inputs.PretrainingStream) reads its source epoch after epoch, in a fixed
order, and packs windows of consecutive examples into rows. Every row carries the position of
the window it came from; after each batch that ends at a checkpointing step, the position of the
next row is written beside the checkpoints as `MODEL_DIR/input_positions/step-NNNNNNNNN.json`.
A run resumed at step N reads the newest record at or before N, seeks the source to it (one
shard: one file, or TFDS's own slicing), rebuilds one packing window and skips the rows of it
already used, then the batches between the record and N (none when a record exists for N).
The batches are exactly those an uninterrupted run would have seen.

Records are written by the input pipeline when it produces the batch, which may be ahead of
training: that is harmless, as a record for step N only describes the stream, whatever happened
to the run. A record whose stream identity (source, vocabulary, objective, lengths, seed, batch
size, ...) differs from the run's is not used: the run falls back to skipping from an earlier
record, or from the start, and says so.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import Callable, Mapping, Protocol

import numpy as np
import tensorflow as tf

RECORD_DIR = "input_positions"
_RECORD_NAME = re.compile(r"^step-(\d+)\.json$")


@dataclasses.dataclass(frozen=True)
class InputPosition:
    """The next row of a training stream: row `row` of the packing window whose first example is
    chunk `chunk` of document `document` of shard `shard` (a file; TFDS sources have one) in pass
    `epoch` over the data; `example` is that example's index in the epoch (it seeds its noise).
    In a stream that shuffles blocks of windows, the window is the block's first and `row`
    counts rows of the block, in its shuffled order."""

    epoch: int = 0
    shard: int = 0
    document: int = 0
    chunk: int = 0
    example: int = 0
    row: int = 0

    def __post_init__(self) -> None:
        negative = {k: v for k, v in dataclasses.asdict(self).items() if v < 0}
        if negative:
            raise ValueError(f"input position fields must be >= 0: {negative}")

    def to_record(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping) -> "InputPosition":
        return cls(**record)

    @classmethod
    def after_row(cls, row: Mapping[str, np.ndarray]) -> "InputPosition":
        """The position of the row after the one whose position features are `row`."""
        position = cls(**{key: int(value) for key, value in row.items()})
        return dataclasses.replace(position, row=position.row + 1)


class Position(Protocol):
    """What a resumable stream's position offers the records (InputPosition's methods)."""

    def to_record(self) -> dict:
        """The position as JSON values."""

    @classmethod
    def from_record(cls, record: Mapping) -> "Position":
        """The position `to_record` wrote."""

    @classmethod
    def after_row(cls, row: Mapping[str, np.ndarray]) -> "Position":
        """The next position after a row, from the row's position features."""


def record_path(model_dir: str, step: int) -> str:
    return f"{model_dir}/{RECORD_DIR}/step-{step:09d}.json"


def write_record(model_dir: str, step: int, position: Position, identity: Mapping) -> None:
    """Writes the record of `step` atomically (a reader never sees half a file)."""
    path = record_path(model_dir, step)
    tf.io.gfile.makedirs(f"{model_dir}/{RECORD_DIR}")
    record = {"step": step, "position": position.to_record(), "stream": dict(identity)}
    with tf.io.gfile.GFile(f"{path}.tmp", "w") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")
    tf.io.gfile.rename(f"{path}.tmp", path, overwrite=True)


def read_start(model_dir: str, step: int, identity: Mapping,
               position_type: type[Position] = InputPosition) -> tuple[int, Position]:
    """The newest record at or before `step` made for the same stream: (its step, position);
    (0, the stream's start) when there is none."""
    directory = f"{model_dir}/{RECORD_DIR}"
    steps = []
    if tf.io.gfile.isdir(directory):
        steps = sorted((int(m.group(1)) for m in map(_RECORD_NAME.match, tf.io.gfile.listdir(directory)) if m),
                       reverse=True)
    for recorded in steps:
        if recorded > step:
            continue
        with tf.io.gfile.GFile(record_path(model_dir, recorded)) as record_file:
            record = json.loads(record_file.read())
        if record["stream"] != json.loads(json.dumps(dict(identity))):
            logging.warning("input position of step %d is for another input stream; not used", recorded)
            continue
        return recorded, position_type.from_record(record["position"])
    return 0, position_type()


class ResumableExamples(Protocol):
    """Training examples that can start at a position (model.data.inputs.PretrainingStream)."""

    position_type: type[Position]  # InputPosition, or a mixture's position of its members

    def __call__(self) -> tf.data.Dataset:
        """One pass of the model features (what a batch size is computed from)."""

    def rows(self, start: Position) -> tf.data.Dataset:
        """(model features, position) pairs from `start` on, without end."""

    def identity(self) -> dict:
        """What determines the stream, as JSON values."""


def training_batches(examples: ResumableExamples | Callable[[], tf.data.Dataset], batch_size: int,
                     start_step: int, model_dir: str, is_checkpoint_step: Callable[[int], bool]
                     ) -> tf.data.Dataset:
    """Batches of model features for steps start_step + 1, start_step + 2, ... (steps of this
    stream, counted from its first batch).

    Resumable examples start at the newest position recorded at or before `start_step` and
    record the position after the batch of every step for which `is_checkpoint_step` holds.
    Other examples (a plain dataset function) are repeated, batched, and the first `start_step`
    batches regenerated and skipped."""
    if not hasattr(examples, "rows"):
        return examples().repeat().batch(batch_size, drop_remainder=True).skip(start_step)
    identity = {**examples.identity(), "batch_size": batch_size}
    recorded_step, position = read_start(model_dir, start_step, identity, examples.position_type)
    if start_step - recorded_step:
        logging.warning("no input position recorded for step %d: regenerating and skipping %d batches "
                        "from step %d", start_step, start_step - recorded_step, recorded_step)
    batches = examples.rows(position).batch(batch_size, drop_remainder=True).skip(start_step - recorded_step)

    def record(step: int, last_row: Mapping[str, np.ndarray]) -> None:
        if is_checkpoint_step(step):
            write_record(model_dir, step, examples.position_type.after_row(last_row), identity)

    def features_only(step, batch):
        batch_features, positions = batch
        keys = sorted(positions)
        done = tf.py_function(
            lambda step, *values: record(int(step), {k: v.numpy() for k, v in zip(keys, values)}) or step,
            [step] + [positions[key][-1] for key in keys], tf.int64)
        with tf.control_dependencies([done]):
            return {key: tf.identity(value) for key, value in batch_features.items()}

    return batches.enumerate(start=start_step + 1).map(features_only)
