"""The sizes and architecture every family reads (`ModelConfig`, bound in gin as `ModelConfig.*`).

A family adds what only it has in its own config (GPT1Config, BertConfig); the fields here that
only T5 reads (relative attention buckets, z-loss, adapters, T5.1.1's feed-forward and untied
logits) keep T5's gin names, under which released gin configs and recorded runs bind them.
"""
from __future__ import annotations

import dataclasses

import gin

# ModelConfig.feed_forward_proj: T5.1.0's ReLU or T5.1.1's gated GELU (transformers' names); T5's
# layers map each onto mtf's activations (model/families/t5/architectures.py).
FEED_FORWARD_PROJECTIONS = ("relu", "gated-gelu")
# ModelConfig.hf_model_type: the transformers model a T5 exports as, T5ForConditionalGeneration or
# mT5's MT5ForConditionalGeneration (the same model under mT5's name: model/families/t5/hf.py).
HF_MODEL_TYPES = ("t5", "mt5")


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Sizes and architecture. `num_layers` is per stack (T5-Base: 12 encoder + 12 decoder)."""

    # A name of model/families/'s registry, which owns the map of architectures to families.
    architecture: str = "encoder_decoder"
    d_model: int = 768
    d_ff: int = 3072
    num_heads: int = 12
    d_kv: int = 64
    num_layers: int = 12
    dropout_rate: float = 0.1
    relative_attention_num_buckets: int = 32
    # T5's auxiliary loss that keeps log(sum(exp(logits))) near zero (training objective only).
    z_loss: float = 1e-4
    # The paper's adapter layers (Section 3.5.1): a dense-ReLU-dense block of this inner size
    # after each feed-forward block, as its own pre-norm residual sub-layer `block_NNN/adapter`;
    # 0: none. Trained alone by FineTuningMethod 'adapters' (model/trainer/finetune_methods.py).
    adapter_size: int = 0
    # T5.1.0 (the paper's models): "relu", logits tied to the embedding. T5.1.1 (the t5
    # library's models/t5.1.1.*.gin and the T5.1.1, LM-adapted, mT5 and Flan-T5 checkpoints):
    # "gated-gelu" and untied logits (gin/architectures/t5.1.1.gin). Named as transformers'
    # T5Config fields, which carry the same meaning.
    feed_forward_proj: str = "relu"
    tie_word_embeddings: bool = True
    # T5's config.json `model_type` on export: "t5", or "mt5" for mT5 (sizes/mt5/*.gin bind it,
    # an import of an mT5 checkpoint records it). Nothing in a checkpoint tells mT5 from a T5.1.1
    # of another vocabulary, so it is said, and kept here: every run's operative config records
    # ModelConfig, so a fine-tuned mT5 exports as one.
    hf_model_type: str = "t5"

    def __post_init__(self) -> None:
        if self.feed_forward_proj not in FEED_FORWARD_PROJECTIONS:
            raise ValueError(f"ModelConfig.feed_forward_proj must be one of "
                             f"{sorted(FEED_FORWARD_PROJECTIONS)}, got {self.feed_forward_proj!r}")
        if self.hf_model_type not in HF_MODEL_TYPES:
            raise ValueError(f"ModelConfig.hf_model_type must be one of {list(HF_MODEL_TYPES)}, "
                             f"got {self.hf_model_type!r}")
        for name in ("d_model", "d_ff", "num_heads", "d_kv", "num_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name} must be positive, got {getattr(self, name)}")
        if self.adapter_size < 0:
            raise ValueError(f"ModelConfig.adapter_size must be >= 0, got {self.adapter_size}")
        if not 0.0 <= self.dropout_rate < 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {self.dropout_rate}")
