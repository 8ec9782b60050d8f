"""GPT-1's weights by the names of transformers' OpenAIGPTLMHeadModel (and, fine-tuned for
multiple choice, OpenAIGPTDoubleHeadsModel): the one mapping from our variables
(model/families/gpt1/model.py) to Hugging Face's OpenAI GPT, for checks of the forward pass and
for exporting checkpoints.

    config = openai_gpt_config(model_config, GPT1Config(), vocab_size)
    model = openai_gpt_model(variables, config)   # variables: our name -> numpy array

Name by name (layer i, d = d_model = heads * d_kv):
  gpt1/token_embedding [vocab, d]               transformer.tokens_embed.weight (and lm_head.weight,
                                                tied, as ours)
  gpt1/position_embedding [max_positions, d]    transformer.positions_embed.weight
  gpt1/block_i/attention/{q,k,v}/kernel         transformer.h.i.attn.c_attn.weight [d, 3d]: q, k
      [d, heads, d_kv] and bias [heads, d_kv]   and v side by side, each head's d_kv columns in
                                                head order (its `split_heads`); bias [3d] alike
  gpt1/block_i/attention/output/kernel          transformer.h.i.attn.c_proj.weight [d, d] (rows
      [heads, d_kv, d], bias [d]                head-major, its `merge_heads`), bias
  gpt1/block_i/attention_norm/{g,b}             transformer.h.i.ln_1.{weight,bias}
  gpt1/block_i/mlp/fc/kernel [d, d_ff], bias    transformer.h.i.mlp.c_fc.{weight,bias}
  gpt1/block_i/mlp/projection/kernel [d_ff, d]  transformer.h.i.mlp.c_proj.{weight,bias}
  gpt1/block_i/mlp_norm/{g,b}                   transformer.h.i.ln_2.{weight,bias}
transformers' Conv1D weights are [in, out], as our kernels, so nothing is transposed.

The activation: OpenAI's GELU is the tanh form (their train.py `gelu`), as ours (mtf.gelu).
OpenAIGPTConfig's default `afn`, "gelu", is that form too in OpenAI GPT's own table
(modeling_openai's `ACT_FNS` maps it to `gelu_new`), although "gelu" means the exact erf form
elsewhere in transformers; the config here names it explicitly.

A model fine-tuned with a multiple-choice head (GPT1Config.head, recorded in the run's
operative_config.gin) is OpenAIGPTDoubleHeadsModel, the LM head and a multiple-choice head on
one body, as OpenAI's fine-tuning model: the special tokens' fresh rows
(`gpt1/head/special_embedding` [3, d]) are the last three rows of its token embedding (ours
replaces those rows with them, in and out), and `gpt1/head/classifier/{kernel [d, 1], bias}`
its `multiple_choice_head.summary` Linear(d, 1) (weight transposed), read at each choice's
extract token (`mc_token_ids`; its config's summary type "cls_index", first dropout our
classifier dropout). Our other heads have no transformers model: OpenAIGPTForSequenceClassification
reads one sequence's last token through a Linear without bias, where ours has a bias and sums
a symmetric pair's two orders.

`gin_bindings` reads an OpenAIGPTConfig back into our gin bindings, `mtf_outputs` runs our
model, and `conversion` ties them together for format `hf` (model/convert/checkpoints.py).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np
import tensorflow.compat.v1 as tf

from model.tasks import discriminative
from model.families.gpt1.bpe import SPECIAL_TOKENS, UNKNOWN_PIECE_ID, BpeVocabulary
from model.families.gpt1.config import GPT1Config
from model.convert.checkpoints import Conversion, ConversionError, sentencepiece_tokenizer
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf


# OpenAI GPT's name (modeling_openai.ACT_FNS) for the tanh form of GELU, OpenAI's and mtf's.
TANH_GELU = "gelu"
# The `model_type` of OpenAIGPTConfig (a transformers folder's config.json).
MODEL_TYPE = "openai-gpt"


def openai_gpt_config(config: ModelConfig, gpt1: "GPT1Config", vocab_size: int):
    """The OpenAIGPTConfig of our sizes (the vocabulary is not padded, as ours), with a
    multiple-choice head OpenAIGPTDoubleHeadsModel's."""
    from transformers import OpenAIGPTConfig
    if config.num_heads * config.d_kv != config.d_model:
        raise ValueError(f"OpenAI GPT needs heads x d_kv = d_model, got {config.num_heads} x "
                         f"{config.d_kv} != {config.d_model}")
    if config.d_ff != 4 * config.d_model:
        raise ValueError(f"OpenAI GPT's MLP is 4 x d_model wide, got d_ff {config.d_ff}")
    # The multiple-choice head: one score from the state at the extract token
    # (SequenceSummary "cls_index"), after the classifier's dropout.
    head = dict(summary_type="cls_index", summary_use_proj=True, summary_proj_to_labels=True,
                num_labels=1, summary_activation=None,
                summary_first_dropout=gpt1.classifier_dropout) if gpt1.head else {}
    return OpenAIGPTConfig(
        vocab_size=vocab_size, n_positions=gpt1.max_positions, n_embd=config.d_model,
        n_layer=config.num_layers, n_head=config.num_heads, afn=TANH_GELU,
        resid_pdrop=config.dropout_rate, embd_pdrop=config.dropout_rate,
        attn_pdrop=config.dropout_rate, layer_norm_epsilon=gpt1.layer_norm_epsilon, **head)


def openai_gpt_state_dict(variables: Mapping[str, np.ndarray], num_layers: int,
                          head: str = "") -> Dict[str, np.ndarray]:
    """OpenAIGPTLMHeadModel's parameters (name -> array) from our variables (name -> array, as
    a checkpoint reader or a session gives them; optimizer slots are not read); with a
    multiple-choice `head`, OpenAIGPTDoubleHeadsModel's."""
    def flat(name: str) -> np.ndarray:  # [..., heads, d_kv] -> [..., heads * d_kv]
        value = variables[name]
        return value.reshape(*value.shape[:-2], -1)

    embedding = variables["gpt1/token_embedding"]
    state = {}
    if head:
        special = variables["gpt1/head/special_embedding"]
        embedding = np.concatenate([embedding[:-len(special)], special])
        state["multiple_choice_head.summary.weight"] = variables["gpt1/head/classifier/kernel"].T
        state["multiple_choice_head.summary.bias"] = variables["gpt1/head/classifier/bias"]
    state |= {"transformer.tokens_embed.weight": embedding, "lm_head.weight": embedding,
             "transformer.positions_embed.weight": variables["gpt1/position_embedding"]}
    for layer in range(num_layers):
        ours, theirs = f"gpt1/block_{layer:03d}", f"transformer.h.{layer}"
        attention = f"{ours}/attention"
        state[f"{theirs}.attn.c_attn.weight"] = np.concatenate(
            [flat(f"{attention}/{p}/kernel") for p in "qkv"], axis=-1)
        state[f"{theirs}.attn.c_attn.bias"] = np.concatenate(
            [flat(f"{attention}/{p}/bias") for p in "qkv"], axis=-1)
        output = variables[f"{attention}/output/kernel"]
        state[f"{theirs}.attn.c_proj.weight"] = output.reshape(-1, output.shape[-1])
        state[f"{theirs}.attn.c_proj.bias"] = variables[f"{attention}/output/bias"]
        for norm, hf_norm in (("attention_norm", "ln_1"), ("mlp_norm", "ln_2")):
            state[f"{theirs}.{hf_norm}.weight"] = variables[f"{ours}/{norm}/g"]
            state[f"{theirs}.{hf_norm}.bias"] = variables[f"{ours}/{norm}/b"]
        for dense, hf_dense in (("fc", "c_fc"), ("projection", "c_proj")):
            for kind, hf_kind in (("kernel", "weight"), ("bias", "bias")):
                state[f"{theirs}.mlp.{hf_dense}.{hf_kind}"] = \
                    variables[f"{ours}/mlp/{dense}/{kind}"]
    return state


def openai_gpt_model(variables: Mapping[str, np.ndarray], config):
    """An OpenAIGPTLMHeadModel (eval mode) holding our variables; `config` from
    `openai_gpt_config`. Every parameter must be given, with its shape (strict loading)."""
    import torch
    from transformers import OpenAIGPTLMHeadModel
    model = OpenAIGPTLMHeadModel(config)
    state = openai_gpt_state_dict(variables, config.n_layer)
    model.load_state_dict({name: torch.from_numpy(np.asarray(value, np.float32))
                           for name, value in state.items()}, strict=True)
    return model.eval()


def gin_bindings(hf_config) -> Dict[str, Any]:
    """Our gin bindings for the sizes of an OpenAIGPTConfig (the inverse of
    `openai_gpt_config`); a ValueError names a field that ours cannot compute alike."""
    from transformers.models.openai.modeling_openai import ACT_FNS
    if type(ACT_FNS.get(hf_config.afn)) is not type(ACT_FNS[TANH_GELU]):
        raise ValueError(f"config field afn = {hf_config.afn!r}: our GPT-1 computes the tanh "
                         f"GELU (OpenAI GPT's {TANH_GELU!r})")
    if hf_config.n_embd % hf_config.n_head:
        raise ValueError(f"config fields n_embd = {hf_config.n_embd} and n_head = "
                         f"{hf_config.n_head}: n_embd must be a multiple of n_head")
    return {"ModelConfig.architecture": "gpt1", "ModelConfig.d_model": hf_config.n_embd,
            "ModelConfig.d_ff": 4 * hf_config.n_embd, "ModelConfig.num_heads": hf_config.n_head,
            "ModelConfig.d_kv": hf_config.n_embd // hf_config.n_head,
            "ModelConfig.num_layers": hf_config.n_layer,
            "ModelConfig.dropout_rate": hf_config.resid_pdrop,
            "GPT1Config.max_positions": hf_config.n_positions,
            "GPT1Config.layer_norm_epsilon": hf_config.layer_norm_epsilon}


def mtf_outputs(family, mesh: mtf.Mesh, inputs: Mapping[str, np.ndarray]
                ) -> Dict[str, mtf.Tensor]:
    """Our GPT-1's {"logits": [batch, length, vocab]} for `inputs["tokens"]` [batch, length]
    (one sequence a row, positions from 0), without dropout. With a multiple-choice head:
    {"logits": [batch, choices, length, vocab], "mc_logits": [batch, choices]} for
    `inputs["head_tokens"]` [batch, choices * length] (model/families/gpt1/inputs.py)."""
    model = family.build(training=False)
    if family.gpt1.head:
        flat = np.asarray(inputs["head_tokens"], np.int32)
        head_tokens = mtf.import_tf_tensor(mesh, tf.constant(flat), mtf.Shape(
            [mtf.Dimension("batch", flat.shape[0]), mtf.Dimension("head_length", flat.shape[1])]))
        scores, hidden, _ = family._head_outputs(model, head_tokens)
        return {"logits": model.logits(hidden), "mc_logits": scores}
    tokens = np.asarray(inputs["tokens"], np.int32)
    shape = mtf.Shape([mtf.Dimension("batch", tokens.shape[0]),
                       mtf.Dimension("length", tokens.shape[1])])
    ids = mtf.import_tf_tensor(mesh, tf.constant(tokens), shape)
    positions = mtf.broadcast(mtf.range(mesh, shape.dims[-1], tf.int32), shape)
    return {"logits": model.logits(model.hidden_states(ids, positions,
                                                        mtf.ones(mesh, shape, tf.int32)))}


def conversion(family: type, gpt1: "GPT1Config") -> Conversion:
    """GPT-1's link to OpenAIGPTLMHeadModel, or fine-tuned for multiple choice to
    OpenAIGPTDoubleHeadsModel (our other heads have no place in a transformers model)."""
    if gpt1.head not in ("", discriminative.MULTIPLE_CHOICE):
        raise ConversionError(f"GPT-1's {gpt1.head} head (GPT1Config.head) has no "
                              f"transformers model here: OpenAIGPTDoubleHeadsModel scores multiple "
                              f"choice, OpenAIGPTForSequenceClassification has no bias")
    examples = ({"head_tokens": np.ones([1, gpt1.sequences_per_example * 4], np.int32)}
                if gpt1.head else {"tokens": np.ones([1, 4], np.int32)})
    return Conversion(
        "gpt1", family, MODEL_TYPE,
        "OpenAIGPTDoubleHeadsModel" if gpt1.head else "OpenAIGPTLMHeadModel",
        "gpt1/token_embedding",
        lambda config, vocab: openai_gpt_config(config, gpt1, vocab), gin_bindings,
        lambda variables, config: openai_gpt_state_dict(variables, config.num_layers, gpt1.head),
        mtf_outputs, examples, tokenizer=tokenizer,
        usage=lambda export_dir, run: usage(gpt1, export_dir, run))


# A COPA example as GPT-1's multiple-choice head reads it: the view's context is the premise
# and the question word (model/tasks/discriminative.py).
COPA_CONTEXT = "The man broke his toe. cause"
COPA_CHOICES = ("He dropped a hammer on his foot.", "He got a hole in his sock.")
# The start, delimiter and extract tokens by name (model/families/gpt1/inputs.py): our
# SentencePiece vocabularies' sentinels, counting down from the last id, or OpenAI's BPE's own.
SENTINEL_SPECIALS = ("<extra_id_0>", "<extra_id_1>", "<extra_id_2>")


def usage(gpt1: "GPT1Config", export_dir: str, run) -> str:
    """Python that loads GPT-1's export from `export_dir` and runs it once (its model card's):
    a multiple-choice head's scores of a COPA example in the fine-tuning's layout, one sequence
    `start context delimiter choice extract` per choice, each scored at its extract token; the
    language model's next tokens without a head."""
    model_class = "OpenAIGPTDoubleHeadsModel" if gpt1.head else "OpenAIGPTLMHeadModel"
    bpe = run.data_config.vocabulary and isinstance(run.vocabulary, BpeVocabulary)
    specials = SPECIAL_TOKENS if bpe else SENTINEL_SPECIALS
    tokenizer_class = "OpenAIGPTTokenizerFast" if bpe else "T5TokenizerFast"
    head = f"""\
import torch
from transformers import AutoTokenizer, {model_class}

folder = {export_dir!r}
tokenizer = AutoTokenizer.from_pretrained(folder)  # {tokenizer_class}: the run's ids
model = {model_class}.from_pretrained(folder).eval()
"""
    if not gpt1.head:
        return head + """\
inputs = tokenizer("The cat sat on the", add_special_tokens=False, return_tensors="pt")
print(tokenizer.decode(model.generate(**inputs, max_new_tokens=5, do_sample=False)[0]))
"""
    return head + f"""\
# GPT-1's multiple-choice layout, one sequence per choice:
#   {specials[0]} context {specials[1]} choice {specials[2]}   (start, delimiter, extract)
specials = {list(specials)!r}
start, delimiter, extract = tokenizer.convert_tokens_to_ids(specials)


def encode(text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


context = {COPA_CONTEXT!r}
choices = {list(COPA_CHOICES)!r}
sequences = [[start] + encode(context) + [delimiter] + encode(choice) + [extract]
             for choice in choices]
length = max(map(len, sequences))
input_ids = torch.tensor([[s + [0] * (length - len(s)) for s in sequences]])
mc_token_ids = torch.tensor([[len(s) - 1 for s in sequences]])  # each extract token
with torch.no_grad():
    scores = model(input_ids=input_ids, mc_token_ids=mc_token_ids).mc_logits[0]
print(scores.tolist())
print(choices[int(scores.argmax())])
"""


def tokenizer(vocabulary, model_max_length: int):
    """transformers' tokenizer of GPT-1's vocabulary, ids alike: a SentencePiece model's
    T5Tokenizer (`sentencepiece_tokenizer`), or OpenAI's BPE (gpt1/bpe.py) as an
    OpenAIGPTTokenizerFast: its BERT basic tokenization, as ours (whether or not ftfy and spaCy
    are installed), the special tokens after the pieces in our order, and a piece outside the
    encoder id 0, as ours (transformers' own `<unk>` is no piece: it would take an id and move
    the special tokens' up by one)."""
    if not isinstance(vocabulary, BpeVocabulary):
        return sentencepiece_tokenizer(vocabulary, model_max_length)
    from transformers import OpenAIGPTTokenizer, OpenAIGPTTokenizerFast
    from transformers.convert_slow_tokenizer import OpenAIGPTConverter
    backend = OpenAIGPTConverter(
        OpenAIGPTTokenizer(str(vocabulary.path), str(vocabulary.merges_path))).converted()
    backend.model.unk_token = vocabulary.pieces[UNKNOWN_PIECE_ID]
    return OpenAIGPTTokenizerFast(tokenizer_object=backend, unk_token=None,
                                  additional_special_tokens=list(SPECIAL_TOKENS),
                                  model_max_length=model_max_length)


__all__ = ["MODEL_TYPE", "TANH_GELU", "conversion", "gin_bindings", "mtf_outputs", "tokenizer",
           "openai_gpt_config", "openai_gpt_model", "openai_gpt_state_dict"]
