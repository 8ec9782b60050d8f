"""The paper's five architectures (Section 3.2) on Mesh TensorFlow's transformer layers.

Every T5 detail comes from `mesh_tensorflow.transformer`, chosen explicitly here rather than through
its gin defaults:
- pre-norm, scale-only RMS norm (epsilon 1e-6) before every sub-layer and after each stack, and a
  residual around each sub-layer: `LayerStack(dropout_rate=..., norm_epsilon=...)` (the layout that
  T5's released checkpoints use);
- feed-forward `DenseReluDense`: ReLU, no biases (T5.1.0); T5.1.1's gated GELU,
  gelu(x wi_0) * (x wi_1), is mtf's `activation=["gelu", "linear"]` (`feed_forward_proj`);
- dropout on the embeddings, after every sub-layer, inside the feed-forward hidden layer and on the
  attention weights;
- relative position biases: one scalar per head per bucket, 32 log-spaced buckets reaching 128 tokens
  (the library's `_relative_position_bucket` fixes max_distance at 128), created once per stack and
  shared by all its self-attention layers (`relative_attention_type="bias_shared"`); encoder-decoder
  attention has none; no absolute position embedding;
- output logits from the input embedding matrix (tied), scaled by d_model**-0.5, with one embedding
  shared by encoder and decoder; vocabulary padded to a multiple of 128 (32100 -> 32128);
  T5.1.1 unties them (`tie_word_embeddings = False`): the logits come unscaled from their own
  matrix `decoder/logits/kernel`, as mtf's Unitransformer makes it;
- variable names as in T5's released checkpoints, which mtf's `make_layer_stack` gives the layers
  of T5's gin configs: `block_NNN/layer_NNN` in the order of the block (encoder: self-attention,
  feed-forward; decoder: self-attention, encoder-decoder attention, feed-forward), so that
  `encoder/block_000/layer_000/SelfAttention/q`, `decoder/block_000/layer_001/EncDecAttention/k`,
  `encoder/block_000/layer_001/layer_norm/scale`, `encoder/final_layer_norm/scale` and
  `shared/embedding` load from those checkpoints. The shared encoder-decoder (no released
  checkpoint) numbers its encoder layers as the decoder's (feed-forward at layer_002), so the
  two stacks share self-attention and feed-forward weights by name.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Union

import tensorflow.compat.v1 as tf

from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf, transformer, transformer_layers

LAYER_NORM_EPSILON = 1e-6
VOCAB_DIVISOR = 128
# ModelConfig.feed_forward_proj -> mtf's DenseReluDense activation (a list: a gated product of
# one projection per entry, variables wi_0, wi_1). mtf.gelu is the tanh approximation, as the
# "gelu_new" that transformers' "gated-gelu" uses.
FEED_FORWARD_ACTIVATIONS = {"relu": "relu", "gated-gelu": ["gelu", "linear"]}


class Architecture(str, enum.Enum):
    ENCODER_DECODER = "encoder_decoder"
    # Encoder and decoder share every parameter they have in common (P instead of 2P parameters).
    ENCODER_DECODER_SHARED = "encoder_decoder_shared"
    # The paper's "6 layers each": half of `num_layers` in each stack, at the same layer size.
    ENCODER_DECODER_HALF_LAYERS = "encoder_decoder_half_layers"
    DECODER_ONLY_LM = "decoder_only_lm"
    # Decoder-only with full (bidirectional) attention over the prefix.
    PREFIX_LM = "prefix_lm"

    @property
    def is_encoder_decoder(self) -> bool:
        return self.value.startswith("encoder_decoder")


Model = Union[transformer.Bitransformer, transformer.Unitransformer]


def _self_attention(config: ModelConfig, name: str) -> transformer_layers.SelfAttention:
    layer = transformer_layers.SelfAttention(
        num_heads=config.num_heads,
        key_value_size=config.d_kv,
        dropout_rate=config.dropout_rate,
        relative_attention_type="bias_shared",
        relative_attention_num_buckets=config.relative_attention_num_buckets)
    layer.set_name(name)
    return layer


def _enc_dec_attention(config: ModelConfig, name: str) -> transformer_layers.EncDecAttention:
    layer = transformer_layers.EncDecAttention(
        num_heads=config.num_heads,
        key_value_size=config.d_kv,
        dropout_rate=config.dropout_rate)
    layer.set_name(name)
    return layer


def _feed_forward(config: ModelConfig, name: str, hidden_size: int = 0
                  ) -> transformer_layers.DenseReluDense:
    """The block's feed-forward layer, or with `hidden_size` an adapter (always ReLU: the
    paper's dense-ReLU-dense adapter)."""
    activation = "relu" if hidden_size else FEED_FORWARD_ACTIVATIONS[config.feed_forward_proj]
    layer = transformer_layers.DenseReluDense(
        hidden_size=hidden_size or config.d_ff, dropout_rate=config.dropout_rate,
        activation=activation, use_bias=False)
    layer.set_name(name)
    return layer


def _layer_stack(config: ModelConfig, num_layers: int, with_enc_dec_attention: bool,
                 decoder_numbering: bool = False) -> transformer.LayerStack:
    """A pre-norm residual stack named as T5's checkpoints (`block_NNN/layer_NNN`).

    `decoder_numbering` numbers a stack without encoder-decoder attention as the decoder's
    blocks (feed-forward at layer_002), so that two stacks built under one variable scope share
    their self-attention and feed-forward weights."""
    ffn_index = 2 if with_enc_dec_attention or decoder_numbering else 1
    layers = []
    for block in range(num_layers):
        layers.append(_self_attention(config, f"block_{block:03d}/layer_000"))
        if with_enc_dec_attention:
            layers.append(_enc_dec_attention(config, f"block_{block:03d}/layer_001"))
        layers.append(_feed_forward(config, f"block_{block:03d}/layer_{ffn_index:03d}"))
        if config.adapter_size:
            layers.append(_feed_forward(config, f"block_{block:03d}/adapter", config.adapter_size))
    return transformer.LayerStack(
        layers, dropout_rate=config.dropout_rate, norm_epsilon=LAYER_NORM_EPSILON)


def _unitransformer(config: ModelConfig, vocab_size: int, num_layers: int, name: str, *,
                    has_output: bool, autoregressive: bool, with_enc_dec_attention: bool,
                    input_full_attention: bool = False, decoder_numbering: bool = False
                    ) -> transformer.Unitransformer:
    return transformer.Unitransformer(
        layer_stack=_layer_stack(config, num_layers, with_enc_dec_attention, decoder_numbering),
        d_model=config.d_model,
        input_vocab_size=vocab_size,
        output_vocab_size=vocab_size if has_output else None,
        autoregressive=autoregressive,
        max_length=None,
        shared_embedding_and_softmax_weights=config.tie_word_embeddings,
        label_smoothing=0.0,
        # The loss (with its z-loss) comes from model/trainer/losses.py, with the features' loss weights.
        z_loss=0.0,
        name=name,
        vocab_divisor=VOCAB_DIVISOR,
        positional_embedding=False,
        input_full_attention=input_full_attention)


def build_model(config: ModelConfig, vocab_size: int) -> Model:
    """The Mesh TensorFlow model for `config` over a vocabulary of `vocab_size` ids."""
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be at least 4, got {vocab_size}")
    kind = Architecture(config.architecture)
    if kind.is_encoder_decoder:
        layers = config.num_layers
        if kind is Architecture.ENCODER_DECODER_HALF_LAYERS:
            if layers < 2:
                raise ValueError("encoder_decoder_half_layers needs num_layers >= 2")
            layers = layers // 2
        # One scope name for both stacks makes them share all common weights.
        shared = kind is Architecture.ENCODER_DECODER_SHARED
        encoder = _unitransformer(
            config, vocab_size, layers, "encoder_decoder" if shared else "encoder",
            has_output=False, autoregressive=False, with_enc_dec_attention=False,
            decoder_numbering=shared)
        decoder = _unitransformer(
            config, vocab_size, layers, "encoder_decoder" if shared else "decoder",
            has_output=True, autoregressive=True, with_enc_dec_attention=True)
        return transformer.Bitransformer(encoder, decoder, shared_embedding=True)
    return _unitransformer(
        config, vocab_size, config.num_layers, "decoder", has_output=True, autoregressive=True,
        with_enc_dec_attention=False, input_full_attention=kind is Architecture.PREFIX_LM)


def count_parameters(config: ModelConfig, vocab_size: int) -> int:
    """Trainable parameters, from the variable shapes of an mtf graph that is never lowered, so no
    TensorFlow variable is created or initialised (cheap even for 11B). In a TensorFlow graph of
    its own: executed eagerly, mtf would compute every variable's initial value."""
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "parameter_count_mesh")
        batch, length = mtf.Dimension("batch", 1), mtf.Dimension("length", 4)
        tokens = mtf.ones(mesh, mtf.Shape([batch, length]), dtype=tf.int32)
        model = build_model(dataclasses.replace(config, dropout_rate=0.0), vocab_size)
        model.call_simple(inputs=tokens, targets=tokens, compute_loss=False, mode="eval")
        return sum(variable.outputs[0].shape.size for variable in graph.trainable_variables)
