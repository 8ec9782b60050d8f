"""What GPT-1 has beyond `ModelConfig`'s sizes: `GPT1Config` (bound in gin as `GPT1Config.*`),
OpenAI's Adam settings and the fine-tuning head. Its own module so that the model
(model/families/gpt1/model.py) and the checkpoint formats it declares (hf.py) import it without
importing each other.
"""
from __future__ import annotations

import dataclasses

import gin

from model.tasks import discriminative

# Heads: none (pre-training), one class score vector per example, one value per example
# (regression), or one score per sequence (multiple choice).
HEADS = ("", discriminative.CLASSIFICATION, discriminative.REGRESSION,
         discriminative.MULTIPLE_CHOICE)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class GPT1Config:
    """What GPT-1 has beyond ModelConfig's sizes (those are ModelConfig's: d_model, d_ff,
    num_heads, d_kv, num_layers, dropout_rate)."""

    max_positions: int = 512
    layer_norm_epsilon: float = 1e-5
    # OpenAI's Adam and modified L2.
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    weight_decay: float = 0.01
    # Fine-tuning head ("" when pre-training): its kind, classes (or choices; 1 for regression)
    # and sequences per example (1, 2 for a symmetric pair, the number of choices).
    head: str = ""
    num_classes: int = 0
    sequences_per_example: int = 1
    classifier_dropout: float = 0.1
    lm_loss_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"GPT1Config.head must be one of {HEADS}, got {self.head!r}")
        if self.head and (self.num_classes < 1 or self.sequences_per_example < 1):
            raise ValueError(f"a {self.head} head needs num_classes and sequences_per_example "
                             f"(got {self.num_classes}, {self.sequences_per_example})")
        if self.head == discriminative.MULTIPLE_CHOICE and \
                self.num_classes != self.sequences_per_example:
            raise ValueError("a multiple-choice head scores one sequence per choice: "
                             "num_classes must equal sequences_per_example")
        if self.head == discriminative.REGRESSION and self.num_classes != 1:
            raise ValueError(f"a regression head predicts one value: num_classes must be 1, got "
                             f"{self.num_classes}")
