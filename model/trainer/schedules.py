"""Learning-rate schedules of the global step, bound in gin as `lr.inverse_sqrt` and `lr.constant`
(T5), `lr.warmup_cosine` and `lr.warmup_linear` (GPT-1; SegaBERT's pre-training) and
`lr.bert_linear` (BERT).

T5's two are Mesh TensorFlow's own (`learning_rate_schedules.truncated_rsqrt` and `.constant`, the
schedules of T5's pre-training and fine-tuning gin files), called with the global step before its
increment, as `mesh_tensorflow.transformer.utils` does. We differ only in the signature: T5 passes
`total_train_steps`, which neither schedule reads, so ours take the step alone. GPT-1's take
their total steps from gin (`model/gin/gpt1/*.gin` bind it with TrainConfig.train_steps).
BERT's differs from `warmup_linear` after the warm-up: it decays over all the steps, the warm-up
included (google-research/bert's `optimization.create_optimizer`), so after a 10% warm-up its
rate is 0.9x `warmup_linear`'s at every step.
"""
from __future__ import annotations

import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import learning_rate_schedules


@gin.configurable(module="lr")
def inverse_sqrt(step: tf.Tensor, warmup_steps: int = 10000) -> tf.Tensor:
    """The pre-training schedule: 1 / sqrt(max(step, warmup_steps)), constant 0.01 at first."""
    return learning_rate_schedules.truncated_rsqrt(step, None, warmup_steps=warmup_steps)


@gin.configurable(module="lr")
def constant(step: tf.Tensor, value: float = 0.001) -> tf.Tensor:
    """The fine-tuning schedule."""
    return tf.cast(learning_rate_schedules.constant(step, None, value=value), tf.float32)


def _warmup_then(step: tf.Tensor, peak: float, warmup_steps: float, total_steps: int,
                 decay) -> tf.Tensor:
    """peak * step / warmup_steps during the warm-up, then peak * decay(fraction of the rest
    done), 0 from `total_steps` on. (Fine-tuning runs of GPT-1, BERT and SegaBERT start at
    step 0: model/trainer/warm_start.py.)"""
    if total_steps <= warmup_steps:
        raise ValueError(f"total_steps {total_steps} must exceed the warm-up ({warmup_steps})")
    step = tf.cast(step, tf.float32)
    warmup = step / max(float(warmup_steps), 1.0)
    done = tf.clip_by_value((step - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0)
    return peak * tf.where(step < warmup_steps, warmup, decay(done))


@gin.configurable(module="lr")
def warmup_cosine(step: tf.Tensor, peak: float = 2.5e-4, warmup_steps: int = 2000,
                  total_steps: int = gin.REQUIRED) -> tf.Tensor:
    """GPT-1's pre-training schedule: linear warm-up to `peak` over `warmup_steps`, then cosine
    decay to 0 at `total_steps` (half a cosine period over the steps after the warm-up)."""
    return _warmup_then(step, peak, warmup_steps, total_steps,
                        lambda done: 0.5 * (1.0 + tf.cos(np.pi * done)))


@gin.configurable(module="lr")
def warmup_linear(step: tf.Tensor, peak: float = 6.25e-5, warmup_fraction: float = 0.002,
                  total_steps: int = gin.REQUIRED) -> tf.Tensor:
    """GPT-1's fine-tuning schedule: linear warm-up over `warmup_fraction` of `total_steps`,
    then linear decay to 0 at `total_steps`."""
    return _warmup_then(step, peak, warmup_fraction * total_steps, total_steps,
                        lambda done: 1.0 - done)


@gin.configurable(module="lr")
def bert_linear(step: tf.Tensor, peak: float = 1e-4, warmup_fraction: float = 0.01,
                total_steps: int = gin.REQUIRED) -> tf.Tensor:
    """BERT's schedule (google-research/bert `optimization.create_optimizer`): the linear decay
    `polynomial_decay(peak, step, total_steps, end_learning_rate=0, power=1)`, i.e.
    peak * (1 - min(step, total_steps) / total_steps) over all the steps, with the linear warm-up
    peak * step / w in its place on the first w = int(warmup_fraction * total_steps) steps
    (`run_classifier.py`'s `int(num_train_steps * warmup_proportion)`; BERT's pre-training runs
    10,000 of 1M)."""
    warmup_steps = int(warmup_fraction * total_steps)
    step = tf.cast(step, tf.float32)
    decayed = peak * (1.0 - tf.minimum(step, float(total_steps)) / float(total_steps))
    if not warmup_steps:
        return decayed
    return tf.where(step < warmup_steps, peak * step / float(warmup_steps), decayed)
