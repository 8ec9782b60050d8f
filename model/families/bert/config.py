"""What BERT adds to `ModelConfig`'s sizes: `BertConfig` (bound in gin as `BertConfig.*`), the
head a run trains and BERT's optimizer settings. Its own module so that the model
(model/families/bert/model.py) and the checkpoint formats it declares (google.py, hf.py, and
SegaBERT's pytorch.py) import it without importing each other.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import gin

from model.families.bert.activations import ACTIVATIONS
from model.families.bert.heads import HEADS
from model.trainer.family import config_parts, default_family_config


@gin.configurable
@dataclasses.dataclass(frozen=True)
class BertConfig:
    """What BERT adds to `ModelConfig`'s sizes (d_model, d_ff, num_heads, d_kv, num_layers,
    dropout_rate)."""

    # The head (model/families/bert/heads.py's HEADS): pretraining: masked LM +
    # next-sentence prediction; mlm: masked LM alone (SegaBERT);
    # classification: `num_classes` classes from the pooled [CLS]; regression: one value from
    # it (STS-B); multiple_choice: one score per choice from each choice's pooled [CLS], a
    # softmax over the `num_classes` choices (SWAG); span: start/end of an answer (SQuAD).
    head: str = "pretraining"
    num_classes: int = 2
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    # The GELU of the feed-forward and MLM transform, by transformers' names (ACTIVATIONS).
    hidden_act: str = "gelu_new"
    # BERT's AdamWeightDecay: Adam without bias correction, decoupled L2 on all weights but
    # layer norms and biases.
    weight_decay_rate: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"unknown BERT head {self.head!r}; choose one of {tuple(HEADS)}")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"BertConfig.hidden_act must be one of {sorted(ACTIVATIONS)}, got "
                             f"{self.hidden_act!r}")


def bert_part(family_config: Any) -> BertConfig:
    """BERT's config in a run's family config: the config itself, or its BERT part (SegaBERT's
    holds more); the defaults where the run has none."""
    parts = config_parts(family_config) or [default_family_config(BertConfig)]
    return next(part for part in parts if isinstance(part, BertConfig))
