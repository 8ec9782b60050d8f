"""BERT's variables as transformers' `BertForPreTraining` names them: the one mapping between our
checkpoints (model/families/bert.py) and Hugging Face's BERT, used to check our forward pass
against theirs (tests/test_bert_hf.py) and to convert checkpoints.

Our dense kernels are [inputs..., outputs...] (attention's query/key/value [d_model, heads,
d_kv], its output [heads, d_kv, d_model]); a torch `Linear` weight is [outputs, inputs] with the
heads flattened head-major, as transformers splits them. Layer norms' scale/bias are `LayerNorm`
weight/bias. The MLM decoder is the word embedding (tied) with `cls.predictions.bias`.
Our GELU is the tanh approximation (mtf.gelu, as Google's modeling.py): transformers' "gelu_new".
"""
from __future__ import annotations

from typing import Dict, Mapping

import numpy as np

from model.architectures import ModelConfig
from model.families.bert import BertConfig

# transformers' name for our GELU (mtf.gelu: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))).
HIDDEN_ACT = "gelu_new"


def transformers_config(model_config: ModelConfig, bert_config: BertConfig, vocab_size: int):
    """transformers.BertConfig of our BERT's sizes (dropout 0: inference)."""
    import transformers

    return transformers.BertConfig(
        vocab_size=vocab_size, hidden_size=model_config.d_model,
        num_hidden_layers=model_config.num_layers, num_attention_heads=model_config.num_heads,
        intermediate_size=model_config.d_ff, hidden_act=HIDDEN_ACT,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=bert_config.max_positions,
        type_vocab_size=bert_config.type_vocab_size,
        layer_norm_eps=bert_config.layer_norm_epsilon,
        initializer_range=bert_config.initializer_range)


def _linear(kernel: np.ndarray, inputs_rank: int) -> np.ndarray:
    """A [inputs..., outputs...] kernel as a torch Linear weight [outputs, inputs]."""
    inputs = int(np.prod(kernel.shape[:inputs_rank]))
    return kernel.reshape(inputs, -1).T


def _layer_norm(variables: Mapping[str, np.ndarray], ours: str, theirs: str
                ) -> Dict[str, np.ndarray]:
    return {f"{theirs}.weight": variables[f"{ours}/scale"],
            f"{theirs}.bias": variables[f"{ours}/bias"]}


def _dense(variables: Mapping[str, np.ndarray], ours: str, theirs: str, inputs_rank: int = 1
           ) -> Dict[str, np.ndarray]:
    return {f"{theirs}.weight": _linear(variables[f"{ours}/kernel"], inputs_rank),
            f"{theirs}.bias": variables[f"{ours}/bias"].reshape(-1)}


def transformers_state(variables: Mapping[str, np.ndarray], num_layers: int
                       ) -> Dict[str, np.ndarray]:
    """BertForPreTraining's state dict (numpy) from our variables by name (the pre-training
    head: MLM and NSP)."""
    state = {
        "bert.embeddings.word_embeddings.weight": variables["bert/embeddings/word_embeddings"],
        "bert.embeddings.position_embeddings.weight":
            variables["bert/embeddings/position_embeddings"],
        "bert.embeddings.token_type_embeddings.weight":
            variables["bert/embeddings/token_type_embeddings"],
        **_layer_norm(variables, "bert/embeddings/layer_norm", "bert.embeddings.LayerNorm"),
        **_dense(variables, "bert/pooler/dense", "bert.pooler.dense"),
        **_dense(variables, "cls/predictions/transform/dense",
                 "cls.predictions.transform.dense"),
        **_layer_norm(variables, "cls/predictions/transform/layer_norm",
                      "cls.predictions.transform.LayerNorm"),
        "cls.predictions.bias": variables["cls/predictions/output_bias"],
        "cls.predictions.decoder.weight": variables["bert/embeddings/word_embeddings"],
        "cls.predictions.decoder.bias": variables["cls/predictions/output_bias"],
        **_dense(variables, "cls/seq_relationship", "cls.seq_relationship"),
    }
    for layer in range(num_layers):
        ours, theirs = f"bert/encoder/block_{layer:03d}", f"bert.encoder.layer.{layer}"
        for name in ("query", "key", "value"):
            state.update(_dense(variables, f"{ours}/attention/{name}",
                                f"{theirs}.attention.self.{name}"))
        state.update(_dense(variables, f"{ours}/attention/output",
                            f"{theirs}.attention.output.dense", inputs_rank=2))
        state.update(_layer_norm(variables, f"{ours}/attention/layer_norm",
                                 f"{theirs}.attention.output.LayerNorm"))
        state.update(_dense(variables, f"{ours}/feedforward/intermediate",
                            f"{theirs}.intermediate.dense"))
        state.update(_dense(variables, f"{ours}/feedforward/output", f"{theirs}.output.dense"))
        state.update(_layer_norm(variables, f"{ours}/feedforward/layer_norm",
                                 f"{theirs}.output.LayerNorm"))
    return state
