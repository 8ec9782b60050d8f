"""BERT's activations by transformers' names (BertConfig.hidden_act): "gelu_new" is mtf.gelu, the
tanh approximation of Google's modeling.py; "gelu" the exact erf form (transformers' "gelu",
which the hub's BERT configs name). The model (model/families/bert/model.py) computes them and
the checkpoint formats (model/families/bert/hf.py) check a source's activation against them.
"""
from __future__ import annotations

import math

import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import mtf


def erf_gelu(x: mtf.Tensor) -> mtf.Tensor:
    """GELU's exact form x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))), transformers' "gelu";
    erf's gradient is 2 / sqrt(pi) * exp(-z^2)."""
    def erf_gradient(op, dy):
        return [dy * (2.0 / math.sqrt(math.pi)) * mtf.exp(-mtf.square(op.inputs[0]))]
    erf = mtf.cwise(tf.math.erf, [x * math.sqrt(0.5)], grad_function=erf_gradient, name="erf")
    return x * 0.5 * (1.0 + erf)


# BertConfig.hidden_act: transformers' name -> our function.
ACTIVATIONS = {"gelu_new": mtf.gelu, "gelu": erf_gelu}
