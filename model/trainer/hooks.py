"""What runs on the host around training steps: the loss log and check, the progress lines,
summaries, checkpoints, the operative gin config.

On a TPU, tensors computed inside the TPU program cannot be fetched by a SessionRunHook: each
step's values reach the host only through TPUEstimator's `host_call` (an outfeed). So the
per-step work on values (append {"step", "loss"} to `train_loss.jsonl`, TensorBoard scalars, stop
on a non-finite loss) is one host call, which TPUEstimator also runs on CPU (every step, with
that step's tensors), so CPU tests exercise the TPU code path. The hooks keep to what lives on
the host: copying variables between master and slices (mtf's restore hook and saver listener),
saving checkpoints, writing the operative gin config.

As T5's `utils.tpu_estimator_model_fn`, except: T5 logs the loss with `tf.Print` on CPU only and
never checks it; T5's `GinConfigSaverHook` also summarises the config to TensorBoard.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from typing import List, Optional, Tuple

import gin.tf
import numpy as np
import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import mtf
from model.trainer.verbosity import progress
from text.durations import duration

LOSS_LOG_NAME = "train_loss.jsonl"
# Marks the error that the host call raises on a non-finite loss, so the driver can tell it apart.
NON_FINITE_LOSS_MARKER = "non-finite training loss"


class NonFiniteLossError(RuntimeError):
    """Training stopped because the loss became NaN or infinite."""


def non_finite_loss_error(loss: float, step: int, model_dir: str) -> NonFiniteLossError:
    last = tf.train.latest_checkpoint(model_dir)
    return NonFiniteLossError(
        f"training loss is {loss} at step {step}: stopping. The last checkpoint is "
        f"{last or 'none'}. Lower the learning rate or check the inputs, then resume.")


def logged_losses(model_dir: str) -> List[dict]:
    log = pathlib.Path(model_dir) / LOSS_LOG_NAME
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def error_for_failed_step(model_dir: str) -> NonFiniteLossError:
    """The error for a step the host call stopped: its step and loss are the last logged."""
    entries = logged_losses(model_dir)
    last = entries[-1] if entries else {"step": 0, "loss": float("nan")}
    return non_finite_loss_error(last["loss"], last["step"], model_dir)


@dataclasses.dataclass(frozen=True)
class CheckpointSteps:
    """The steps after which a training session saves a checkpoint, as the saver hook
    (tf.train.CheckpointSaverHook, below) saves them: every `every` steps counted from the
    global step the session starts at (`start`: a resumed run's newest checkpoint, else the
    run's first step), and the run's last step (`last`). The progress lines and the input
    position records (model/data/input_position.py) come at these steps too. (On a TPU the saver
    runs between loops of TrainConfig.iterations_per_loop steps: `every` must be a multiple of
    it for the two to agree, as T5's 5,000 is of 100.)"""

    every: int
    start: int = 0
    last: Optional[int] = None

    def __contains__(self, step: int) -> bool:
        return step > self.start and ((step - self.start) % self.every == 0 or step == self.last)


class StepRate:
    """The progress line of a training session, every `every` steps of the global step (0:
    none): steps per second since the previous line (the first: since the session's first
    step, after the graph is built and the checkpoint restored) and the time left to the run's
    last step at that rate. (On a TPU the host sees the steps of a loop of
    TrainConfig.iterations_per_loop at once: `every` a multiple of it gives even rates.)"""

    def __init__(self, every: int, last: int):
        self.every = every
        self.last = last
        self._mark: Optional[Tuple[int, float]] = None  # (step, time) the rate counts from

    def line(self, step: int, now: float) -> Optional[str]:
        """The progress line for `step`, done at time `now` (seconds), or None."""
        if self._mark is None:
            self._mark = (step, now)
            return None
        if not self.every or step % self.every or now <= self._mark[1]:
            return None
        rate = (step - self._mark[0]) / (now - self._mark[1])
        self._mark = (step, now)
        return (f"steps: {step:,} of {self.last:,} done; {rate:.2f} steps/s; "
                f"about {duration((self.last - step) / rate)} left")


def append_loss(model_dir: str, checkpoints: CheckpointSteps, rate: StepRate, step: np.ndarray,
                loss: np.ndarray) -> np.int64:
    """Logs the step's loss; at each checkpoint also tells the person at the terminal, and
    every `rate.every` steps how fast the run goes and the time it has left."""
    with (pathlib.Path(model_dir) / LOSS_LOG_NAME).open("a") as log:
        log.write(json.dumps({"step": int(step), "loss": float(loss)}) + "\n")
    if int(step) in checkpoints:
        progress(f"step {int(step)}: loss {float(loss):.4f}")
    line = rate.line(int(step), time.monotonic())
    if line:
        progress(line)
    return np.int64(step)


def training_host_call(model_dir: str, step: tf.Tensor, loss: tf.Tensor,
                       learning_rate: tf.Tensor, checkpoints: CheckpointSteps, rate: StepRate):
    """(host_fn, tensors) for TPUEstimatorSpec.host_call: log, summarise, then check the loss
    (after logging it, so the failing step is in the log; the step's checkpoint is never
    written, as the check fails the step)."""

    def host_fn(step, loss, learning_rate):
        step, loss, learning_rate = step[0], loss[0], learning_rate[0]
        logged = tf.numpy_function(lambda s, l: append_loss(model_dir, checkpoints, rate, s, l),
                                   [step, loss], tf.int64, stateful=True)
        with tf.compat.v2.summary.create_file_writer(model_dir).as_default():
            with tf.compat.v2.summary.record_if(True):
                tf.compat.v2.summary.scalar("loss", loss, step=step)
                tf.compat.v2.summary.scalar("learning_rate", learning_rate, step=step)
                summaries = tf.summary.all_v2_summary_ops()
        with tf.control_dependencies([logged]):
            if_finite = tf.debugging.check_numerics(loss, NON_FINITE_LOSS_MARKER)
        return summaries + [if_finite]

    return host_fn, [tf.reshape(tf.cast(step, tf.int64), [1]),
                     tf.reshape(tf.cast(loss, tf.float32), [1]),
                     tf.reshape(tf.cast(learning_rate, tf.float32), [1])]


def training_hooks(lowering: mtf.Lowering, model_dir: str, checkpoints: CheckpointSteps
                   ) -> list:
    """Host-side hooks of a training run. The saver is the one the scaffold registers."""
    with mtf.utils.outside_all_rewrites():
        return [
            # Copies master variables to their mesh slices after restore or initialisation.
            mtf.MtfRestoreHook(lowering),
            # Saves at the session's start, every `every` steps from it and at its end: the
            # steps of `checkpoints` (the session ends at the run's last step).
            tf.train.CheckpointSaverHook(
                model_dir, save_steps=checkpoints.every,
                listeners=[mtf.MtfCheckpointSaverListener(lowering)]),
            # Written once the graph is built: it holds every binding the run used.
            gin.tf.GinConfigSaverHook(model_dir, summarize_config=False,
                                      include_step_in_filename=False),
        ]


def is_non_finite_loss(error: Exception) -> bool:
    return isinstance(error, tf.errors.InvalidArgumentError) and (
        NON_FINITE_LOSS_MARKER in str(error))
