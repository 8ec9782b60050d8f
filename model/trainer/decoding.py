"""Greedy decoding (temperature 0, as the paper's Section 3 experiments decode) with Mesh
TensorFlow's decoders, and the encoder-decoder's beam search (the paper's final models' decoding
for WMT and CNN/DM, switched on by `DecodingConfig.beam_search`).

- Encoder-decoder: `Bitransformer.decode(beam_size=1, temperature=0)`, as the PREDICT mode of
  `mesh_tensorflow.transformer.utils` decodes, with the output length fixed to `decode_length`.
- Decoder-only and prefix LM: `Unitransformer.sample_autoregressive` continues each prompt in
  place. As mtf utils does, the prompt is padded with `decode_length` zeros and
  `remove_partial_sequences=True` asks mtf to shift every row left by its own prompt length, so
  the continuation starts at position 0 whatever the prompt's length; we keep positions
  [0, decode_length). (Slicing after the padded prompt instead, as this module once did, returns
  padding or the continuation's tail.) We also stop after `decode_length` new tokens
  (`max_steps`), where mtf utils runs to the end of the padded row.
"""
from __future__ import annotations

import dataclasses
from typing import List

import gin
import numpy as np

from model.data.vocabulary import EOS_ID
from model.trainer.mtf_compat import mtf, transformer


@gin.configurable
@dataclasses.dataclass(frozen=True)
class DecodingConfig:
    """How task evaluation decodes. By default every task greedily, as the paper's Section 3
    experiments (its baseline and all comparisons); `beam_search = True` (gin/beam_search.gin)
    decodes as its final models (Section 3.7): beam 4, alpha 0.6 for WMT and CNN/DM, greedy for
    the others (`Task.final_decoding`)."""
    beam_search: bool = False


def greedy_decode(model: transformer.Bitransformer, inputs: mtf.Tensor, decode_length: int,
                  variable_dtype: mtf.VariableDType) -> mtf.Tensor:
    """[batch, decode_length] ids decoded from `inputs` (ids ending in EOS, zero padded)."""
    return model.decode(inputs, variable_dtype=variable_dtype, beam_size=1, temperature=0.0,
                        max_decode_length=decode_length)


def beam_search_decode(model: transformer.Bitransformer, inputs: mtf.Tensor, decode_length: int,
                       variable_dtype: mtf.VariableDType, beam_size: int, alpha: float) -> mtf.Tensor:
    """[batch, decode_length] ids of the best beam: `Bitransformer.decode(beam_size, alpha)`,
    the beam search with length penalty that T5 decodes WMT and CNN/DM with."""
    return model.decode(inputs, variable_dtype=variable_dtype, beam_size=beam_size, alpha=alpha,
                        temperature=0.0, max_decode_length=decode_length)


def greedy_continue(model: transformer.Unitransformer, prompt: mtf.Tensor, decode_length: int,
                    variable_dtype: mtf.VariableDType) -> mtf.Tensor:
    """[batch, decode_length] ids that continue `prompt` (ids ending in EOS, zero padded)."""
    length_dim = prompt.shape.dims[-1]
    padded = mtf.pad(prompt, [0, decode_length], length_dim.name)
    samples = model.sample_autoregressive(
        padded, max_steps=decode_length, temperature=0.0, variable_dtype=variable_dtype,
        remove_partial_sequences=True)
    return mtf.slice(samples, 0, decode_length, length_dim.name)


def strip_after_eos(ids: np.ndarray, eos_id: int = EOS_ID) -> List[int]:
    """Token ids up to (not including) the first EOS and without padding."""
    out = []
    for token in ids.tolist():
        if token == eos_id:
            break
        if token > 0:
            out.append(token)
    return out
