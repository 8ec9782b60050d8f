"""Adam with decoupled weight decay, the optimizer of the BERT, SegaBERT and GPT-1 families.

One class keeps the slots and the moment updates; the families differ only in where the bias
correction goes and which variables decay, the hooks a family's subclass overrides:
- `adam_step`: the update from the new moments, before the decay (BERT's `m / (sqrt(v) +
  epsilon)`, no bias correction; SegaBERT corrects the moments);
- `step_size`: what scales the update and its decay (the learning rate; GPT-1 folds the bias
  correction into it);
- `decays`: whether a variable's weights decay (`weight_decay * param` added to the update,
  outside the moments).

The slots are `VAR/adam_m` and `VAR/adam_v`, the names of BERT's TensorFlow checkpoints and of
mtf's AdamWeightDecayOptimizer: the checkpoints every run writes hold them by these names, so a
run that resumes or warm-starts finds them only while they stay so. The weights are read in
float32 for the decay: mtf's own optimizer adds the weights in the activation dtype to a float32
update, which fails with bfloat16 activations (mtf's Adafactor reads `to_float(var.value)` too).
"""
from __future__ import annotations

from typing import Any, List

import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import mtf

SLOTS = ("adam_m", "adam_v")


def bias_correction_step() -> tf.Tensor:
    """Adam's t for the bias correction: the global step + 1 (the step being taken), float32."""
    return tf.cast(tf.train.get_or_create_global_step(), tf.float32) + 1.0


class DecoupledAdam(mtf.optimize.Optimizer):
    """Adam (beta1, beta2, epsilon) with `weight_decay * param` added to the update where
    `decays`, the sum scaled by `step_size` (see the module docstring for the hooks)."""

    def __init__(self, learning_rate: Any, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, weight_decay: float = 0.0):
        self.learning_rate = learning_rate
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.weight_decay = weight_decay

    def apply_grad(self, grad: mtf.Tensor, var: mtf.Variable) -> List[mtf.Operation]:
        if grad is None:
            return []
        grad = mtf.to_float(grad)
        m, v = (mtf.get_variable(var.mesh, f"{var.name}/{slot}", var.shape,
                                 initializer=tf.zeros_initializer(), trainable=False)
                for slot in SLOTS)
        next_m = self.beta1 * m + (1.0 - self.beta1) * grad
        next_v = self.beta2 * v + (1.0 - self.beta2) * mtf.square(grad)
        update = self.adam_step(next_m, next_v)
        if self.weight_decay and self.decays(var.name):
            update += self.weight_decay * mtf.to_float(var.value)
        return [mtf.assign_sub(var, self.step_size() * update),
                mtf.assign(m, next_m), mtf.assign(v, next_v)]

    def adam_step(self, m: mtf.Tensor, v: mtf.Tensor) -> mtf.Tensor:
        """The update before the decay, from the new moments: `m / (sqrt(v) + epsilon)`, no
        bias correction (BERT's)."""
        return m / (mtf.sqrt(v) + self.epsilon)

    def step_size(self) -> Any:
        """What the update, decay included, is scaled by: the learning rate."""
        return self.learning_rate

    def decays(self, variable_name: str) -> bool:
        """Whether the variable's weights decay: all of them."""
        return True


__all__ = ["DecoupledAdam", "SLOTS", "bias_correction_step"]
