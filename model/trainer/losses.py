"""Token-level losses and metrics from logits, for families that predict tokens.

What `mesh_tensorflow.transformer.Unitransformer._compute_loss` does for T5, computed by us from
the logits because the features carry their own loss weights (`decoder_loss_weights`: targets
only for the prefix LM, whole stream for the LM, no padding) where mtf weighs every non-zero
target: softmax cross entropy (mtf's), averaged over the tokens that carry loss whatever the
packing; T5's auxiliary z-loss, `z_loss * log(sum(exp(logits)))^2` per token (mtf's formula),
added to the minimised objective only. Evaluation reports per-token loss and accuracy.

The cross entropy is computed as `log_z - logit of the target`, with one `log_z` shared by the
cross entropy and the z-loss: mtf's `softmax_cross_entropy_with_logits` materialises
`log_softmax` over the whole [batch, length, vocab] tensor, and a separate z-loss would take a
second log-sum-exp over it, the two largest element-wise passes of a step. Equal to mtf's
formula up to float rounding (tests/model/test_speed_paths.py).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Tuple

import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import mtf


@dataclasses.dataclass(frozen=True)
class Losses:
    """What a family's `losses` returns for one batch."""

    # The scalar the run reports and evaluates (for token families: NLL per loss-bearing token).
    loss: mtf.Tensor
    # The scalar that is minimised: `loss` plus any auxiliary terms (z-loss, NSP, heads, ...).
    objective: mtf.Tensor
    # Evaluation metrics: name -> ([batch] per-example sums, [batch] per-example weights); the
    # metric is sum(sums) / sum(weights) over the validation set.
    metrics: Mapping[str, Tuple[mtf.Tensor, mtf.Tensor]]


def token_losses(logits: mtf.Tensor, targets: mtf.Tensor, loss_weights: mtf.Tensor,
                 z_loss: float) -> Losses:
    """Cross entropy and accuracy over [batch, length] tokens weighted by `loss_weights`."""
    vocab_dim = logits.shape.dims[-1]
    length_dim = targets.shape.dims[-1]
    logits = mtf.cast(logits, tf.float32)
    weights = mtf.cast(loss_weights, tf.float32)
    log_z = mtf.reduce_logsumexp(logits, vocab_dim)
    target_logits = mtf.reduce_sum(logits * mtf.one_hot(targets, vocab_dim, dtype=tf.float32),
                                   reduced_dim=vocab_dim)
    cross_entropy = (log_z - target_logits) * weights
    predictions = mtf.cast(mtf.argmax(logits, vocab_dim), tf.int32)
    correct = mtf.cast(mtf.equal(predictions, targets), tf.float32) * weights
    num_tokens = mtf.maximum(mtf.reduce_sum(weights), 1.0)
    loss = mtf.reduce_sum(cross_entropy) / num_tokens
    objective = loss + z_loss * mtf.reduce_sum(mtf.square(log_z) * weights) / num_tokens
    per_example = {name: mtf.reduce_sum(t, reduced_dim=length_dim)
                   for name, t in (("loss", cross_entropy), ("correct", correct),
                                   ("weights", weights))}
    return Losses(loss=loss, objective=objective, metrics={
        "token_loss": (per_example["loss"], per_example["weights"]),
        "token_accuracy": (per_example["correct"], per_example["weights"]),
    })
