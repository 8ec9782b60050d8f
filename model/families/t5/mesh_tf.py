"""Format `t5`: the Mesh TensorFlow checkpoints that the t5 library writes, the released T5
checkpoints among them.

    python -m model import --family t5 --format t5 --source gs-copy/t5.1.1.base \
        --model_dir DIR [--gin_param "DataConfig.vocabulary = 'sentencepiece.model'"]

`--source` is a checkpoint (`.../model.ckpt-1000000`) or a folder (its newest). The layouts:
- T5.1.0, as released: mtf's legacy layer stacks name the norms `.../layer_norm/scale` and
  `{encoder,decoder}/final_layer_norm/scale`; ReLU feed-forward (`DenseReluDense/wi`); logits
  tied to `shared/embedding`;
- today's `rms_norm` names: the same model from today's t5 gin files with mtf's current
  defaults (`sublayer_rms_norm`), every norm `.../rms_norm/scale`;
- T5.1.1 (and the checkpoints of its architecture): gated GELU (`wi_0`, `wi_1`), untied logits
  `decoder/logits/kernel`, `rms_norm` names.
Weights in bfloat16 (the released checkpoints store their slices so) or float32.

Our variables carry T5's names (model/families/t5/architectures.py), so the import is a checked
copy: the sizes come from the variables' shapes (`gin_bindings`; the dropout rate is not in a
checkpoint and stays gin's), every variable of ours must be there under its name or the
`rms_norm` one (the warm start's aliases, `_T5Family.checkpoint_aliases`) with its shape, and
the source must hold nothing ours would drop. The weights, Adafactor's slots (zero if the
source has none) and the global step are written in float32: T5 continues training from a
checkpoint, its step and its optimizer's statistics (model/trainer/warm_start.py).

The slots are read as the source's Adafactor wrote them: which variables it factored
(`_slot_vr`/`_slot_vc`, else `_slot_v`) says the range of `min_dim_size_to_factor` it ran with
(model/trainer/adafactor_slots.py). A gin binding in that range is written into the gin file;
without one, where mtf's default 128 would factor others, the import binds the value of the
range nearest it, saying so in the gin file; a gin binding outside it, or slots that no value
gives, are refused naming the setting.

mT5's checkpoints (T5.1.1's layout over 250,112 rows) are T5.1.1's to the import: nothing in
them says mT5. `ModelConfig.hf_model_type = 'mt5'`, given (sizes/mt5/*.gin, --gin_param), is
written into the gin file, so that the export is MT5ForConditionalGeneration (hf.py).
"""
from __future__ import annotations

import pathlib
import re
from typing import Any, Dict, Mapping

import numpy as np
import tensorflow.compat.v1 as tf

from model.families.t5 import hf
from model.families.t5.architectures import VOCAB_DIVISOR, Architecture
from model.convert import checkpoints
from model.trainer import adafactor_slots, runs, warm_start
from model.trainer.model_config import ModelConfig
from model.trainer.warm_start import VariableSpec

EMBEDDING = hf.EMBEDDING
GLOBAL_STEP = tf.GraphKeys.GLOBAL_STEP
UNTIED_LOGITS = "decoder/logits/kernel"
_SELF_ATTENTION = "encoder/block_000/layer_000/SelfAttention"
_FEED_FORWARD = "encoder/block_000/layer_001/DenseReluDense"
# Adafactor's slots of a variable: its factored row and column statistics or its full one.
SLOT = r".*_slot_(vr|vc|v)"
# A T5 folder may keep its SentencePiece model beside the checkpoint, as a transformers one.
VOCABULARY_FILE = "spiece.model"
# The transformers model an export writes (mT5's or T5's): the command line's, recorded.
HF_MODEL_TYPE = "ModelConfig.hf_model_type"


class LayoutError(ValueError):
    """The checkpoint is not one of T5's encoder-decoders."""


def _shape(variables: Mapping[str, VariableSpec], name: str, path: str):
    if name not in variables:
        raise LayoutError(f"{path} has no {name}: not a T5 encoder-decoder checkpoint of the t5 "
                          f"library")
    return variables[name][0]


def _blocks(variables: Mapping[str, VariableSpec], stack: str) -> int:
    found = {int(m.group(1)) for name in variables
             for m in [re.match(rf"{stack}/block_(\d+)/", name)] if m}
    return max(found) + 1 if found else 0


def gin_bindings(variables: Mapping[str, VariableSpec], path: str) -> Dict[str, Any]:
    """Our gin bindings for the sizes that a T5 checkpoint's variable shapes give (the
    dropout rate is none of them)."""
    rows, d_model = _shape(variables, EMBEDDING, path)
    num_heads, buckets = _shape(variables, f"{_SELF_ATTENTION}/relative_attention_bias", path)
    q = _shape(variables, f"{_SELF_ATTENTION}/q", path)
    gated = f"{_FEED_FORWARD}/wi_0/kernel" in variables
    d_ff = _shape(variables, f"{_FEED_FORWARD}/{'wi_0' if gated else 'wi'}/kernel", path)[1]
    encoder, decoder = _blocks(variables, "encoder"), _blocks(variables, "decoder")
    if encoder != decoder:
        raise LayoutError(f"{path} has {encoder} encoder and {decoder} decoder blocks; ours "
                          f"has as many of each")
    if rows % VOCAB_DIVISOR:
        raise LayoutError(f"{path}: {EMBEDDING} has {rows} rows; ours has a multiple of "
                          f"{VOCAB_DIVISOR}")
    if q[1] % num_heads:
        raise LayoutError(f"{path}: {_SELF_ATTENTION}/q {list(q)} is no whole number of "
                          f"{num_heads} heads")
    return {"ModelConfig.architecture": Architecture.ENCODER_DECODER.value,
            "ModelConfig.d_model": d_model, "ModelConfig.d_ff": d_ff,
            "ModelConfig.num_heads": num_heads, "ModelConfig.d_kv": q[1] // num_heads,
            "ModelConfig.num_layers": encoder,
            "ModelConfig.relative_attention_num_buckets": buckets,
            "ModelConfig.feed_forward_proj": "gated-gelu" if gated else "relu",
            "ModelConfig.tie_word_embeddings": UNTIED_LOGITS not in variables}


def read_plan(path: str, stored: Mapping[str, VariableSpec], ours: Mapping[str, tuple],
              aliases) -> Dict[str, str]:
    """{the checkpoint's name: ours} of every variable of ours (`ours`: name -> shape, the
    global step aside), floating-point weights of either precision; Adafactor's slots may all
    be missing (they start at zero), else each one must be there. A ConversionError lists what
    is missing or of another shape, and what ours would drop."""
    floating = {name: (shape, "float32" if dtype in ("bfloat16", "float16", "float32") else dtype)
                for name, (shape, dtype) in stored.items() if name != GLOBAL_STEP}
    fresh = [] if any(re.fullmatch(SLOT, name) for name in stored) else [SLOT]
    try:
        plan = warm_start.restore_plan({name: (shape, "float32") for name, shape in ours.items()},
                                       floating, fresh, aliases)
    except warm_start.WarmStartError as error:
        raise checkpoints.ConversionError(f"{path}: {error}") from None
    unread = sorted(set(floating) - set(plan))
    if unread:
        raise checkpoints.ConversionError(f"{path} holds {len(unread)} variable(s) that ours "
                                          f"would drop:\n  " + "\n  ".join(unread))
    return plan


class MeshTFFormat(checkpoints.CheckpointFormat):
    """T5's format `t5` (import only): a checkpoint of the t5 library's Mesh TF code."""

    directions = ("import",)

    def __init__(self, family: type):
        self.family = family

    def import_checkpoint(self, source, model_dir):
        conv = hf.conversion(self.family)
        path = warm_start.checkpoint_path(source)
        stored = warm_start.checkpoint_variables(path)
        bindings = gin_bindings(stored, path)
        notes = []
        try:
            factoring = adafactor_slots.source_binding(stored)
        except adafactor_slots.FactoringError as error:
            raise checkpoints.ConversionError(f"{path}: {error}") from None
        if factoring and runs.gin_value(adafactor_slots.SETTING) is None:
            notes.append(f"{adafactor_slots.SETTING}: read from the source's Adafactor slots "
                         f"(it was written with {adafactor_slots.slots_range(stored)}; mtf's "
                         f"default {adafactor_slots.MTF_DEFAULT} would factor others).")
        bindings.update(factoring)  # fine-tuning with the gin file makes the source's slots
        if runs.gin_value(HF_MODEL_TYPE) is not None:
            # A checkpoint does not say it is mT5 (the command line does): kept for the export.
            bindings[HF_MODEL_TYPE] = runs.gin_value(HF_MODEL_TYPE)
        reader = tf.train.load_checkpoint(path)

        def values(config: ModelConfig, vocab_size: int) -> Dict[str, np.ndarray]:
            ours = checkpoints.model_shapes(conv, config, vocab_size, with_optimizer=True)
            ours.pop(GLOBAL_STEP)
            plan = read_plan(path, stored, ours, self.family.checkpoint_aliases)
            return {name: np.asarray(reader.get_tensor(theirs), np.float32)
                    for theirs, name in plan.items()}

        step = int(reader.get_tensor(GLOBAL_STEP)) if GLOBAL_STEP in stored else 0
        return checkpoints.import_values(
            conv, bindings, stored[EMBEDDING][0][0], values, source, model_dir,
            [pathlib.Path(path).parent / VOCABULARY_FILE], step, notes)
