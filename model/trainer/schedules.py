"""Learning-rate schedules, bound in gin as `lr.inverse_sqrt` and `lr.constant` (T5),
`lr.warmup_cosine` and `lr.warmup_linear` (GPT-1; SegaBERT's pre-training) and `lr.bert_linear`
(BERT).

A schedule is called as Mesh TensorFlow's `learning_rate_schedules` are, `schedule(step,
total_train_steps)`: the step before its increment, and the step at which the run's schedule
ends, which the trainer computes from the run (`span`: its first step and TrainConfig.train_steps,
placed by OptimizationConfig.schedule_part). So setting TrainConfig.train_steps is enough for
every family: the decays end at the run's last step and a warm-up given as a fraction follows it;
a gin binding of a schedule's `total_steps` wins over the run's.

T5's two are Mesh TensorFlow's own (`truncated_rsqrt` and `constant`, the schedules of T5's
pre-training and fine-tuning gin files), which read no total. GPT-1's warm-up is 2,000 steps
(`warmup_steps`), the others' a fraction of the total (`warmup_fraction`); either can be given to
any of the three. A warm-up in steps that does not end before the schedule (a short run) is
scaled to SHORT_RUN_WARMUP_FRACTION of it, with a progress line saying so.
BERT's differs from `warmup_linear` after the warm-up: it decays over all the steps, the warm-up
included (google-research/bert's `optimization.create_optimizer`), so after a 10% warm-up its
rate is 0.9x `warmup_linear`'s at every step.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import learning_rate_schedules
from model.trainer.verbosity import progress

# A short run's warm-up, when the one given in steps would fill the run: the share of the steps
# that BERT's fine-tuning warms up over (run_classifier.py's warmup_proportion).
SHORT_RUN_WARMUP_FRACTION = 0.1


@dataclasses.dataclass(frozen=True)
class Span:
    """Where a run lies on its schedule: the schedule reads the global step + `shift` and ends
    at `total_steps`."""

    total_steps: int
    shift: int = 0


def span(first_step: int, train_steps: int, part: Tuple[float, float] = (0.0, 1.0)) -> Span:
    """The schedule of a run that trains `train_steps` steps from `first_step` (0, or the
    warm-start checkpoint's step where training continues) over the `part` (start, end) of its
    schedule, as fractions: (0, 1) ends the schedule at the run's last step; BERT's pre-training
    phases (0, 0.9) then (0.9, 1) run 900k then 100k of one 1M-step schedule."""
    start, end = part
    if not 0.0 <= start < end <= 1.0:
        raise ValueError(f"OptimizationConfig.schedule_part {part} must be (start, end) with "
                         f"0 <= start < end <= 1")
    steps = round(train_steps / (end - start))
    return Span(total_steps=first_step + steps, shift=round(start * steps))


@gin.configurable(module="lr")
def inverse_sqrt(step: tf.Tensor, total_train_steps: Optional[int] = None,
                 warmup_steps: int = 10000) -> tf.Tensor:
    """The pre-training schedule: 1 / sqrt(max(step, warmup_steps)), constant 0.01 at first."""
    return learning_rate_schedules.truncated_rsqrt(step, total_train_steps,
                                                   warmup_steps=warmup_steps)


@gin.configurable(module="lr")
def constant(step: tf.Tensor, total_train_steps: Optional[int] = None,
             value: float = 0.001) -> tf.Tensor:
    """The fine-tuning schedule."""
    return tf.cast(learning_rate_schedules.constant(step, total_train_steps, value=value),
                   tf.float32)


def total_steps_of(name: str, total_train_steps: Optional[int], total_steps: Optional[int]
                   ) -> int:
    """The step at which schedule `name` ends: its gin-bound `total_steps`, else the run's."""
    total = total_steps or total_train_steps
    if not total or total < 1:
        raise ValueError(f"lr.{name} needs the run's total steps (TrainConfig.train_steps, "
                         f"given by the trainer) or lr.{name}.total_steps; got {total}")
    return total


def warmup_length(name: str, total_steps: int, warmup_steps: Optional[int],
                  warmup_fraction: Optional[float]) -> float:
    """The warm-up of schedule `name`, in steps, from one of `warmup_steps` and
    `warmup_fraction` (of `total_steps`). A warm-up in steps that would not end before the
    schedule does is scaled to SHORT_RUN_WARMUP_FRACTION of it, and says so."""
    if (warmup_steps is None) == (warmup_fraction is None):
        raise ValueError(f"lr.{name}: give one of warmup_steps ({warmup_steps}) and "
                         f"warmup_fraction ({warmup_fraction})")
    if warmup_fraction is not None:
        if not 0.0 <= warmup_fraction < 1.0:
            raise ValueError(f"lr.{name}.warmup_fraction {warmup_fraction} must be in [0, 1)")
        return warmup_fraction * total_steps
    if warmup_steps < total_steps:
        return float(warmup_steps)
    scaled = SHORT_RUN_WARMUP_FRACTION * total_steps
    progress(f"lr.{name}: the warm-up of {warmup_steps} steps does not fit the schedule's "
             f"{total_steps}: scaled to {scaled:g} steps ({SHORT_RUN_WARMUP_FRACTION:.0%} of them)")
    return scaled


def _warmup_then(step: tf.Tensor, peak: float, warmup_steps: float, total_steps: int,
                 decay) -> tf.Tensor:
    """peak * step / warmup_steps during the warm-up, then peak * decay(fraction of the rest
    done), 0 from `total_steps` on."""
    step = tf.cast(step, tf.float32)
    warmup = step / max(float(warmup_steps), 1.0)
    done = tf.clip_by_value((step - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0)
    return peak * tf.where(step < warmup_steps, warmup, decay(done))


@gin.configurable(module="lr")
def warmup_cosine(step: tf.Tensor, total_train_steps: Optional[int] = None, peak: float = 2.5e-4,
                  warmup_steps: Optional[int] = None, warmup_fraction: Optional[float] = None,
                  total_steps: Optional[int] = None) -> tf.Tensor:
    """GPT-1's pre-training schedule: linear warm-up to `peak` (over 2,000 steps unless a
    warm-up is given), then cosine decay to 0 at the total steps (half a cosine period over the
    steps after the warm-up)."""
    total = total_steps_of("warmup_cosine", total_train_steps, total_steps)
    if warmup_steps is None and warmup_fraction is None:
        warmup_steps = 2000
    warmup = warmup_length("warmup_cosine", total, warmup_steps, warmup_fraction)
    return _warmup_then(step, peak, warmup, total,
                        lambda done: 0.5 * (1.0 + tf.cos(np.pi * done)))


@gin.configurable(module="lr")
def warmup_linear(step: tf.Tensor, total_train_steps: Optional[int] = None, peak: float = 6.25e-5,
                  warmup_steps: Optional[int] = None, warmup_fraction: Optional[float] = None,
                  total_steps: Optional[int] = None) -> tf.Tensor:
    """GPT-1's fine-tuning schedule: linear warm-up (over 0.2% of the total steps unless a
    warm-up is given), then linear decay to 0 at the total steps."""
    total = total_steps_of("warmup_linear", total_train_steps, total_steps)
    if warmup_steps is None and warmup_fraction is None:
        warmup_fraction = 0.002
    warmup = warmup_length("warmup_linear", total, warmup_steps, warmup_fraction)
    return _warmup_then(step, peak, warmup, total, lambda done: 1.0 - done)


@gin.configurable(module="lr")
def bert_linear(step: tf.Tensor, total_train_steps: Optional[int] = None, peak: float = 1e-4,
                warmup_steps: Optional[int] = None, warmup_fraction: Optional[float] = None,
                total_steps: Optional[int] = None) -> tf.Tensor:
    """BERT's schedule (google-research/bert `optimization.create_optimizer`): the linear decay
    `polynomial_decay(peak, step, total_steps, end_learning_rate=0, power=1)`, i.e.
    peak * (1 - min(step, total_steps) / total_steps) over all the steps, with the linear warm-up
    peak * step / w in its place on the first w steps: int(warmup_fraction * total_steps)
    (`run_classifier.py`'s `int(num_train_steps * warmup_proportion)`; 1% unless a warm-up is
    given: BERT's pre-training runs 10,000 of 1M)."""
    total = total_steps_of("bert_linear", total_train_steps, total_steps)
    if warmup_steps is None and warmup_fraction is None:
        warmup_fraction = 0.01
    warmup = int(warmup_length("bert_linear", total, warmup_steps, warmup_fraction))
    step = tf.cast(step, tf.float32)
    decayed = peak * (1.0 - tf.minimum(step, float(total)) / float(total))
    if not warmup:
        return decayed
    return tf.where(step < warmup, peak * step / float(warmup), decayed)
