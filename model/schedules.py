"""Learning-rate schedules of the global step, bound in gin as `lr.inverse_sqrt` and `lr.constant`.

Both are Mesh TensorFlow's own (`learning_rate_schedules.truncated_rsqrt` and `.constant`, the
schedules of T5's pre-training and fine-tuning gin files), called with the global step before its
increment, as `mesh_tensorflow.transformer.utils` does. We differ only in the signature: T5 passes
`total_train_steps`, which neither schedule reads, so ours take the step alone.
"""
from __future__ import annotations

import gin
import tensorflow.compat.v1 as tf

from model.mtf_compat import learning_rate_schedules


@gin.configurable(module="lr")
def inverse_sqrt(step: tf.Tensor, warmup_steps: int = 10000) -> tf.Tensor:
    """The pre-training schedule: 1 / sqrt(max(step, warmup_steps)), constant 0.01 at first."""
    return learning_rate_schedules.truncated_rsqrt(step, None, warmup_steps=warmup_steps)


@gin.configurable(module="lr")
def constant(step: tf.Tensor, value: float = 0.001) -> tf.Tensor:
    """The fine-tuning schedule."""
    return tf.cast(learning_rate_schedules.constant(step, None, value=value), tf.float32)
