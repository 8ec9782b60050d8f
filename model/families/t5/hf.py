"""Export of a checkpoint to Hugging Face `transformers` (T5ForConditionalGeneration): config,
weights, generation config and a T5Tokenizer.

    python -m model export --model_dir DIR --export_dir OUT --gin_file sizes/base.gin \
        --gin_param "DataConfig.vocabulary = 'spm.model'" [--task cnn_dailymail]
    # then: T5ForConditionalGeneration.from_pretrained(OUT), T5Tokenizer.from_pretrained(OUT)

`generation_config.json` makes `model.generate(...)` decode as our evaluation does: greedy, or
the task's beam search when beam search is switched on (gin/beam_search.gin), up to the decode
length (the task's targets length with `--task`, else `TrainConfig.decode_length`). Transformers
counts the decoder's start token in `max_length`, so it is the decode length + 1. Its beam search
divides a beam's log-probability by length ** length_penalty where mtf's uses Wu et al.'s
((5 + length) / 6) ** alpha: alpha is written as length_penalty, and beams can rank differently.
The tokenizer's `model_max_length` is the inputs length (512 for every task, as T5's).

The embedding has more rows than the vocabulary has ids (a multiple of 128, `embedding_rows`):
no piece of the tokenizer is at the padding rows, and T5Tokenizer.decode raises on them, so
`generation_config.json` suppresses them (`suppress_tokens`, which `generate` applies to greedy
and beam search alike; the weights cannot mask them: T5's output layer has no bias). Ours
decodes such an id as UNK (model/data/vocabulary.py): where our decoder picks a padding row,
transformers' takes the best id of the vocabulary instead.

Our variables carry T5's Mesh TensorFlow names (model/families/t5/architectures.py), so transformers' own
converter for T5's checkpoints, `load_tf_weights_in_t5`, reads them (it skips the optimizer
slots and the global step). That converter skips any name it does not know without failing, so
every parameter of the PyTorch model is first set to NaN and must have been overwritten.

The tokenizer: our vocabulary is the SentencePiece model plus 100 sentinels appended in reverse
order, which is exactly what T5Tokenizer does with `extra_ids=100` over the same `spiece.model`,
so the trained model file is exported as `spiece.model` with the tokenizer's config
(model/convert/checkpoints.py's `sentencepiece_tokenizer`, written by `write_tokenizer` as
every family's export writes its vocabulary's).

Only the encoder-decoder (T5's own architecture, no adapters) has a Hugging Face counterpart. T5.1.0's
logits are tied to the embedding and scaled by d_model**-0.5 in both; T5.1.1's
(gin/architectures/t5.1.1.gin) come unscaled from `decoder/logits/kernel`, which the converter
reads as `lm_head`, and its gated-GELU `wi_0`/`wi_1` as `feed_forward_proj = "gated-gelu"`
(transformers' gelu_new: the tanh form, as mtf.gelu).

mT5 (`ModelConfig.hf_model_type = 'mt5'`: model/gin/sizes/mt5/*.gin, an mT5 import's gin file)
exports as MT5ForConditionalGeneration with MT5Tokenizer: transformers' mT5 classes are T5's
under mT5's names, so the weights, the generation config and the tokenizer's files are the same;
config.json says `model_type: "mt5"` and `architectures: ["MT5ForConditionalGeneration"]`, as
google/mt5-*'s, and AutoModelForSeq2SeqLM and AutoTokenizer build mT5's classes. The type is a
setting, not read from the vocabulary's size: a T5.1.1 of 250,112 rows is no mT5 unless said.

Without `DataConfig.vocabulary` (a checkpoint imported from transformers by model/convert/command.py,
say), the vocabulary's size is the checkpoint's embedding rows and no tokenizer is written.

Import (format `hf`, `HFFormat`: model/convert/checkpoints.py) reads a transformers folder
through `t5_state_dict`, our names for transformers' (the direction of `load_tf_weights_in_t5`),
and `gin_bindings`, the inverse of `hf_config` (a folder of model_type "mt5", google/mt5-*'s,
through mT5's classes, recorded as `ModelConfig.hf_model_type`), a vocabulary of other than a
multiple of 128 rows padded to one (`pad_vocabulary`); export is `export` above.
"""
from __future__ import annotations

import functools
import json
import math
import pathlib
from typing import Any, Dict, List, Mapping, NamedTuple, Optional

import numpy as np
import tensorflow.compat.v1 as tf

from model import tasks
from model.data.vocabulary import EOS_ID, PAD_ID
from model.tasks import text_to_text
from model.families.t5.architectures import LAYER_NORM_EPSILON, VOCAB_DIVISOR, Architecture
from model.trainer import runs, warm_start
from model.convert import card
from model.convert.checkpoints import (CONFIG_FILE, Conversion, TransformersFormat,
                                       import_state, read_transformers_folder,
                                       sentencepiece_tokenizer, write_tokenizer)
from model.tasks.evaluation import EVAL_DIR
from model.trainer.decoding import DecodingConfig
from model.trainer.model_config import ModelConfig
from model.trainer.model_fn import import_features
from model.trainer.mtf_compat import mtf

# The one distance that mtf's `_relative_position_bucket` reaches (fixed in the library).
RELATIVE_ATTENTION_MAX_DISTANCE = 128
# The `model_type` of T5Config (a transformers folder's config.json).
MODEL_TYPE = "t5"
EMBEDDING = "shared/embedding"


class TransformersClasses(NamedTuple):
    """The config, model and tokenizer classes of one transformers model_type (their names)."""

    config: str
    model: str
    tokenizer: str


# By ModelConfig.hf_model_type. transformers' mT5 classes are T5's under mT5's names (the same
# modeling code, its config.json saying `model_type: "mt5"`; MT5Tokenizer a T5Tokenizer), so
# one mapping of the weights serves both, and AutoModelForSeq2SeqLM / AutoTokenizer build mT5's.
TRANSFORMERS_CLASSES = {
    "t5": TransformersClasses("T5Config", "T5ForConditionalGeneration", "T5Tokenizer"),
    "mt5": TransformersClasses("MT5Config", "MT5ForConditionalGeneration", "MT5Tokenizer")}


def embedding_rows(vocab_size: int) -> int:
    """Our embedding's rows for a vocabulary of `vocab_size` ids: padded to a multiple of 128."""
    return VOCAB_DIVISOR * math.ceil(vocab_size / VOCAB_DIVISOR)


# T5ForConditionalGeneration's tensors with a row per id (a folder may hold the tied copies).
VOCABULARY_TENSORS = ("shared.weight", "encoder.embed_tokens.weight",
                      "decoder.embed_tokens.weight", "lm_head.weight")


def pad_vocabulary(hf: Any, state: Dict[str, np.ndarray], source: str) -> List[str]:
    """Pads a folder's vocabulary to our embedding's rows (`embedding_rows`) in place: config's
    vocab_size and the rows of VOCABULARY_TENSORS, zero (each id's logit is its row's alone, so
    the real ids' logits stay the source's; the padding ids' are 0, and no input holds them).
    The t5 library pads its vocabularies so (mtf's `vocab_divisor`), its padding rows drawn at
    random as the others and trained only by the softmax; a folder saved with
    `vocab_size=len(tokenizer)` has none. Says so on stderr; returns the note for the gin file
    (none when nothing was padded)."""
    rows = embedding_rows(hf.vocab_size)
    if rows == hf.vocab_size:
        return []
    note = (f"padded the vocabulary from {hf.vocab_size} to {rows} rows (a multiple of "
            f"{VOCAB_DIVISOR}, as the t5 library's): {source}'s config.json says vocab_size "
            f"{hf.vocab_size}; the {rows - hf.vocab_size} new rows of the embedding and LM head "
            f"are zero")
    runs.progress(note)
    for name in VOCABULARY_TENSORS:
        if name in state and state[name].shape[0] == hf.vocab_size:
            state[name] = np.pad(state[name], [(0, rows - hf.vocab_size), (0, 0)])
    hf.vocab_size = rows
    return [note]


def padding_rows(vocab_size: int) -> List[int]:
    """The ids of the embedding's rows past a vocabulary of `vocab_size` ids."""
    return list(range(vocab_size, embedding_rows(vocab_size)))


def transformers_classes(config: ModelConfig) -> TransformersClasses:
    """The transformers classes that `config.hf_model_type` names."""
    return TRANSFORMERS_CLASSES[config.hf_model_type]


def hf_config(config: ModelConfig, vocab_size: int):
    """The T5Config (MT5Config for `hf_model_type` "mt5") of a model config over a vocabulary
    of `vocab_size` ids (the embedding is padded, `embedding_rows`, as ours)."""
    import transformers
    if config.architecture != Architecture.ENCODER_DECODER.value:
        raise ValueError(f"only the encoder_decoder architecture has a Hugging Face T5 "
                         f"counterpart, not {config.architecture}")
    if config.adapter_size:
        raise ValueError("adapter layers have no Hugging Face T5 counterpart")
    return getattr(transformers, transformers_classes(config).config)(
        vocab_size=embedding_rows(vocab_size),
        d_model=config.d_model, d_kv=config.d_kv, d_ff=config.d_ff,
        num_layers=config.num_layers, num_decoder_layers=config.num_layers,
        num_heads=config.num_heads,
        relative_attention_num_buckets=config.relative_attention_num_buckets,
        relative_attention_max_distance=RELATIVE_ATTENTION_MAX_DISTANCE,
        dropout_rate=config.dropout_rate, layer_norm_epsilon=LAYER_NORM_EPSILON,
        feed_forward_proj=config.feed_forward_proj,
        tie_word_embeddings=config.tie_word_embeddings, is_encoder_decoder=True,
        pad_token_id=PAD_ID, eos_token_id=EOS_ID, decoder_start_token_id=PAD_ID)


def load_checkpoint(config: ModelConfig, vocab_size: int, checkpoint: str):
    """A T5ForConditionalGeneration (MT5ForConditionalGeneration for `hf_model_type` "mt5")
    holding the weights of `checkpoint` (path or directory)."""
    import torch
    import transformers
    from transformers.models.t5.modeling_t5 import load_tf_weights_in_t5

    model_class = getattr(transformers, transformers_classes(config).model)
    model = model_class(hf_config(config, vocab_size))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    load_tf_weights_in_t5(model, model.config, warm_start.checkpoint_path(checkpoint))
    model.tie_weights()
    missing = [name for name, p in model.named_parameters() if torch.isnan(p).any()]
    if missing:
        raise ValueError(f"the checkpoint did not provide {len(missing)} Hugging Face parameter(s): "
                         f"{missing[:10]}")
    return model.eval()


def generation_config(decode_length: int, decoding: tasks.Decoding, vocab_size: int):
    """The GenerationConfig that decodes as our evaluation over a vocabulary of `vocab_size` ids,
    never to a padding row (see the module's docstring)."""
    from transformers import GenerationConfig
    return GenerationConfig(
        decoder_start_token_id=PAD_ID, pad_token_id=PAD_ID, eos_token_id=EOS_ID, do_sample=False,
        max_length=decode_length + 1, num_beams=decoding.beam_size,
        length_penalty=decoding.alpha if decoding.is_beam_search else 1.0,
        suppress_tokens=padding_rows(vocab_size) or None)


# The snippet's input where the run's evaluation recorded none (a pre-training task's text).
DEFAULT_INPUT = "The cat sat on the mat. It was a sunny day."


def usage(export_dir: str, text: str) -> str:
    """Python that loads T5's export from `export_dir` and decodes `text` (its model card's):
    AutoModelForSeq2SeqLM builds T5 or mT5 as config.json says; `generate` decodes as our
    evaluation (generation_config.json)."""
    return f"""\
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

folder = {export_dir!r}
tokenizer = AutoTokenizer.from_pretrained(folder)  # over spiece.model: the run's ids
model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
inputs = tokenizer({text!r}, return_tensors="pt")
print(tokenizer.decode(model.generate(**inputs)[0], skip_special_tokens=True))
"""


def evaluated_input(model_dir: str, checkpoint: str) -> str:
    """The first input the run's evaluation decoded with `checkpoint` (a task's text as the
    model was fine-tuned on it), else DEFAULT_INPUT."""
    step = card.checkpoint_step(checkpoint)
    for path in sorted(pathlib.Path(model_dir, EVAL_DIR).glob(f"*/*/predictions-{step}.jsonl")):
        with path.open() as lines:
            first = lines.readline()
        if first.strip():
            return json.loads(first)["inputs"]
    return DEFAULT_INPUT


def export(run: runs.Run, export_dir: str, checkpoint: str = "",
           task: Optional[str] = None) -> Dict[str, str]:
    """Writes config, weights (safetensors), generation config and tokenizer of `checkpoint`
    (default: the run's newest) to `export_dir`; with `task`, the generation config and the
    tokenizer take the task's lengths and decoding. Returns what was written."""
    decoding = tasks.GREEDY
    if task:
        run = text_to_text.with_task_lengths(run, tasks.get(task).lengths)
        decoding = tasks.get(task).decoding(DecodingConfig().beam_search)
    source = warm_start.checkpoint_path(checkpoint or run.model_dir)
    vocab_size = (run.vocabulary.vocab_size if run.data_config.vocabulary
                  else warm_start.checkpoint_variables(source)[EMBEDDING][0][0])
    model = load_checkpoint(run.model_config, vocab_size, source)
    model.generation_config = generation_config(run.train_config.decode_length, decoding,
                                                vocab_size)
    out = pathlib.Path(export_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer_class = transformers_classes(run.model_config).tokenizer
    write_tokenizer(functools.partial(sentencepiece_tokenizer, tokenizer_class=tokenizer_class),
                    run, out, run.data_config.inputs_length)
    snippet = usage(export_dir, evaluated_input(run.model_dir, source))
    written = card.finish_export(run, out, source, transformers_classes(run.model_config).model,
                                 snippet, task)
    return {"checkpoint": source, "export_dir": str(out), **written}


def gin_bindings(hf: Any) -> Dict[str, Any]:
    """Our gin bindings for the sizes of a T5Config (the inverse of `hf_config`); a ValueError
    names a field that ours cannot compute alike."""
    fixed = {"num_decoder_layers": hf.num_layers,
             "relative_attention_max_distance": RELATIVE_ATTENTION_MAX_DISTANCE,
             "layer_norm_epsilon": LAYER_NORM_EPSILON}
    for field, ours in fixed.items():
        if getattr(hf, field) != ours:
            raise ValueError(f"config field {field} = {getattr(hf, field)!r}: ours is {ours!r}")
    if hf.vocab_size % VOCAB_DIVISOR:
        raise ValueError(f"config field vocab_size = {hf.vocab_size}: our embedding has a "
                         f"multiple of {VOCAB_DIVISOR} rows")
    return {"ModelConfig.architecture": Architecture.ENCODER_DECODER.value,
            "ModelConfig.d_model": hf.d_model, "ModelConfig.d_ff": hf.d_ff,
            "ModelConfig.num_heads": hf.num_heads, "ModelConfig.d_kv": hf.d_kv,
            "ModelConfig.num_layers": hf.num_layers,
            "ModelConfig.relative_attention_num_buckets": hf.relative_attention_num_buckets,
            "ModelConfig.dropout_rate": hf.dropout_rate,
            "ModelConfig.feed_forward_proj": hf.feed_forward_proj,
            "ModelConfig.tie_word_embeddings": bool(hf.tie_word_embeddings),
            "ModelConfig.hf_model_type": hf.model_type}


def t5_state_dict(variables: Mapping[str, np.ndarray], config: ModelConfig
                  ) -> Dict[str, np.ndarray]:
    """T5ForConditionalGeneration's parameters (name -> array) from our variables by name:
    kernels [in, out] are torch's [out, in] transposed, the relative attention bias [heads,
    buckets] is [buckets, heads], embeddings and norms as they are."""
    state = {"shared.weight": variables[EMBEDDING],
             "encoder.embed_tokens.weight": variables[EMBEDDING],
             "decoder.embed_tokens.weight": variables[EMBEDDING],
             "lm_head.weight": (variables[EMBEDDING] if config.tie_word_embeddings
                                else variables["decoder/logits/kernel"].T)}
    wi = ["wi"] if config.feed_forward_proj == "relu" else ["wi_0", "wi_1"]
    for stack, attentions in (("encoder", ["SelfAttention"]),
                              ("decoder", ["SelfAttention", "EncDecAttention"])):
        state[f"{stack}.final_layer_norm.weight"] = variables[f"{stack}/final_layer_norm/scale"]
        for block in range(config.num_layers):
            ours, theirs = f"{stack}/block_{block:03d}", f"{stack}.block.{block}"
            for layer, attention in enumerate(attentions):
                for p in "qkvo":
                    state[f"{theirs}.layer.{layer}.{attention}.{p}.weight"] = \
                        variables[f"{ours}/layer_{layer:03d}/{attention}/{p}"].T
            if block == 0:  # one relative position table per stack, in its first layer
                state[f"{theirs}.layer.0.SelfAttention.relative_attention_bias.weight"] = \
                    variables[f"{ours}/layer_000/SelfAttention/relative_attention_bias"].T
            dense = len(attentions)
            for p in wi + ["wo"]:
                state[f"{theirs}.layer.{dense}.DenseReluDense.{p}.weight"] = \
                    variables[f"{ours}/layer_{dense:03d}/DenseReluDense/{p}/kernel"].T
            for layer in range(dense + 1):
                state[f"{theirs}.layer.{layer}.layer_norm.weight"] = \
                    variables[f"{ours}/layer_{layer:03d}/layer_norm/scale"]
    return state


def mtf_outputs(family, mesh: mtf.Mesh, inputs: Mapping[str, np.ndarray]
                ) -> Dict[str, mtf.Tensor]:
    """Our encoder-decoder's teacher-forced {"logits": [batch, targets length, vocab]} for
    `inputs["encoder_tokens"]` (id 0 is padding) and `inputs["decoder_targets"]` (the decoder
    reads them shifted right behind a 0), one example a row, without dropout."""
    encoder = np.asarray(inputs["encoder_tokens"], np.int32)
    targets = np.asarray(inputs["decoder_targets"], np.int32)
    features = {
        "encoder_input_tokens": encoder, "encoder_segment_ids": (encoder > 0).astype(np.int32),
        "encoder_positions": np.tile(np.arange(encoder.shape[1], dtype=np.int32),
                                     (len(encoder), 1)),
        "decoder_target_tokens": targets, "decoder_segment_ids": np.ones_like(targets),
        "decoder_input_tokens": np.pad(targets[:, :-1], [(0, 0), (1, 0)]),
        "decoder_positions": np.tile(np.arange(targets.shape[1], dtype=np.int32),
                                     (len(targets), 1)),
        "decoder_loss_weights": np.ones_like(targets)}
    batch = import_features({key: tf.constant(value) for key, value in features.items()},
                            family.feature_keys, mesh)
    return {"logits": family.logits(family.build(training=False), batch,
                                    tf.estimator.ModeKeys.EVAL)}


def conversion(family: type, hf_model_type: str = MODEL_TYPE) -> Conversion:
    """T5's link to T5ForConditionalGeneration (T5.1.0 and T5.1.1), or with `hf_model_type`
    "mt5" to MT5ForConditionalGeneration."""
    return Conversion(
        "t5", family, hf_model_type, TRANSFORMERS_CLASSES[hf_model_type].model, EMBEDDING,
        hf_config, gin_bindings, t5_state_dict, mtf_outputs,
        {"encoder_tokens": np.ones([1, 4], np.int32), "decoder_targets": np.ones([1, 2], np.int32)},
        # T5Tokenizer's SentencePiece model plus its 100 extra ids is our Vocabulary.
        tokenizer_file="spiece.model",
        embedding_rows=embedding_rows)


class HFFormat(TransformersFormat):
    """T5's format `hf`: import through the shared machinery, export as a run's export (with
    the generation config and, given the vocabulary, the tokenizer)."""

    def __init__(self, family: type):
        super().__init__(lambda: conversion(family))
        self.family = family

    def import_checkpoint(self, source, model_dir):
        # A folder of mT5's (google/mt5-*: config.json's model_type "mt5") is read by mT5's
        # classes; any other model_type is T5's to check (and refuse).
        config = pathlib.Path(source) / CONFIG_FILE
        model_type = json.loads(config.read_text()).get("model_type") if config.is_file() else None
        conv = conversion(self.family,
                          model_type if model_type in TRANSFORMERS_CLASSES else MODEL_TYPE)
        hf_folder, state = read_transformers_folder(source, conv)
        notes = pad_vocabulary(hf_folder, state, source)
        return import_state(conv, hf_folder, state, source, model_dir, notes=notes)

    def export_checkpoint(self, run, output, checkpoint):
        return export(run, output, checkpoint)


__all__ = ["EMBEDDING", "HFFormat", "MODEL_TYPE", "TRANSFORMERS_CLASSES", "conversion",
           "embedding_rows", "export", "generation_config", "gin_bindings", "hf_config",
           "load_checkpoint", "mtf_outputs", "pad_vocabulary", "padding_rows", "t5_state_dict",
           "transformers_classes"]
