"""BERT's released TensorFlow checkpoints (format `google`, import only): the folders of
google-research/bert's README ("Pre-trained models": BERT-Base/Large, uncased and cased, whole
word masking, multilingual, and the 24 smaller BERTs), each holding

    bert_model.ckpt.index, bert_model.ckpt.data-00000-of-00001   the weights (TF checkpoint)
    bert_config.json                                             modeling.py's BertConfig
    vocab.txt                                                    the WordPiece vocabulary

    python -m model import --family bert --format google \
        --source uncased_L-12_H-768_A-12 --model_dir DIR

Names: Google's variables are the ones transformers' `load_tf_weights_in_bert` reads.
`google_state` gives them from ours through transformers' names (model/families/bert/hf.py
`transformers_state`): a torch Linear weight [out, in] is Google's dense `kernel` [in, out];
LayerNorm's weight and bias its `gamma` and `beta`; `cls.predictions.bias` its
`cls/predictions/output_bias`; `cls.seq_relationship.weight` [2, hidden] its `output_weights`
as it is (modeling.py multiplies by its transpose); the MLM decoder is the word embedding, tied,
and not stored. Adam's slots and the global step that a pre-training checkpoint may hold are
skipped, as `load_tf_weights_in_bert` skips them; anything else our model would not read is an
error, as a variable of ours the checkpoint lacks.

The activation: bert_config.json's hidden_act "gelu" is modeling.py's `gelu`, the tanh
approximation, which is transformers' "gelu_new" (its "gelu" is the erf form) and our
BertConfig.hidden_act default; the import binds it and the written gin file says so. Other
activations are refused (our BERT computes GELU). Layer norms use modeling.py's epsilon, 1e-12.

The vocabulary: vocab.txt comes along as DataConfig.vocabulary, its special ids read from it
([PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103), cased or uncased as the file says
(model/families/bert/wordpiece.py: a vocabulary with an upper-case piece is cased); a folder
named cased/uncased (Google's names) must agree, as modeling's
`tokenization.validate_case_matches_checkpoint` checks. The gin file says which.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Callable, Dict, Mapping, Tuple

import numpy as np
import tensorflow.compat.v1 as tf

from model.families.bert import hf
from model.families.bert.config import BertConfig
from model.families.bert.wordpiece import WordPieceVocabulary
from model.convert.checkpoints import CheckpointFormat, Conversion, ConversionError, import_state


CHECKPOINT = "bert_model.ckpt"
CONFIG = "bert_config.json"
VOCABULARY = hf.VOCABULARY
# modeling.py's activations (get_activation) that ours computes, by transformers' names.
ACTIVATIONS = {"gelu": "gelu_new"}
LAYER_NORM_EPSILON = 1e-12  # modeling.py's layer_norm (tf.contrib.layers.layer_norm's default)
# bert_config.json's fields that size the model (modeling.py's BertConfig).
CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "hidden_act", "hidden_dropout_prob",
                 "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
                 "initializer_range")
# Optimizer state in a pre-training checkpoint (load_tf_weights_in_bert skips the same).
OPTIMIZER_STATE = re.compile(r"(^|/)(adam_m|adam_v|AdamWeightDecayOptimizer(_1)?|global_step)"
                             r"(/|$)")
# Transformers' names that Google's checkpoints do not store: the MLM decoder is tied to the
# word embedding and its bias is cls.predictions.bias.
TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
NAMED = {"cls.predictions.bias": "cls/predictions/output_bias",
         "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
         "cls.seq_relationship.bias": "cls/seq_relationship/output_bias"}


def google_name(name: str) -> Tuple[str, bool]:
    """Google's name for a tensor of BertForPreTraining (transformers' `name`), and whether
    Google stores it transposed (a dense kernel)."""
    if name in NAMED:
        return NAMED[name], False
    module, _, kind = re.sub(r"\.layer\.(\d+)\.", r".layer_\1.", name).rpartition(".")
    path = module.replace(".", "/")
    if path.endswith("LayerNorm"):
        return f"{path}/{'gamma' if kind == 'weight' else 'beta'}", False
    if path.endswith("_embeddings"):
        return path, False
    return f"{path}/{'kernel' if kind == 'weight' else 'bias'}", kind == "weight"


def google_state(variables: Mapping[str, np.ndarray], num_layers: int) -> Dict[str, np.ndarray]:
    """Google's variables (name -> array) of a pre-training BERT from ours."""
    state = {}
    for name, value in hf.transformers_state(variables, num_layers).items():
        if name in TIED:
            continue
        google, transposed = google_name(name)
        state[google] = value.T if transposed else value
    return state


def conversion(family: type, bert_config: "BertConfig") -> Conversion:
    """BERT's link to Google's names: BertForPreTraining's (hf.conversion) renamed."""
    if bert_config.head != "pretraining":
        raise ConversionError(f"Google's checkpoints are pre-trained with MLM and NSP: import "
                              f"with BertConfig.head = 'pretraining' (gin binds "
                              f"{bert_config.head!r})")
    return dataclasses.replace(
        hf.conversion(family, bert_config),
        state=lambda variables, config: google_state(variables, config.num_layers))


def read_config(folder: pathlib.Path):
    """transformers' BertConfig of the folder's bert_config.json (the activation by
    transformers' name)."""
    import transformers
    fields = json.loads((folder / CONFIG).read_text())
    missing = [field for field in CONFIG_FIELDS if field not in fields]
    if missing:
        raise ConversionError(f"{folder / CONFIG} lacks {missing} (modeling.py's BertConfig "
                              f"fields)")
    if fields["hidden_act"] not in ACTIVATIONS:
        raise ConversionError(f"{folder / CONFIG}: hidden_act = {fields['hidden_act']!r}; our "
                              f"BERT computes modeling.py's {sorted(ACTIVATIONS)} (GELU, its "
                              f"tanh form)")
    sizes = {field: fields[field] for field in CONFIG_FIELDS}
    return transformers.BertConfig(**{**sizes, "hidden_act": ACTIVATIONS[fields["hidden_act"]]},
                                   layer_norm_eps=LAYER_NORM_EPSILON)


def read_variables(folder: pathlib.Path) -> Dict[str, np.ndarray]:
    """The checkpoint's variables as float32 arrays, but optimizer state."""
    reader = tf.train.load_checkpoint(str(folder / CHECKPOINT))
    names = sorted(reader.get_variable_to_shape_map())
    if not any(name.startswith("bert/") for name in names):
        scopes = sorted({name.split("/")[0] for name in names})
        raise ConversionError(f"{folder / CHECKPOINT} is not a BERT checkpoint: none of its "
                              f"{len(names)} variables is under bert/ (they are under "
                              f"{scopes})")
    return {name: np.asarray(reader.get_tensor(name), np.float32) for name in names
            if not OPTIMIZER_STATE.search(name)}


def check_files(folder: pathlib.Path) -> None:
    """The folder holds Google's four files."""
    expected = [f"{CHECKPOINT}.index", f"{CHECKPOINT}.data-*", CONFIG, VOCABULARY]
    missing = [name for name in expected if not list(folder.glob(name))]
    if missing:
        hint = (f"; it holds {hf.MODEL_TYPE!r} transformers files (config.json): --format hf"
                if (folder / "config.json").is_file() else "")
        raise FileNotFoundError(f"{folder} lacks {missing} (Google's BERT folder holds "
                                f"{expected}){hint}")


def read_vocabulary(folder: pathlib.Path) -> WordPieceVocabulary:
    """vocab.txt, its case checked against a folder name that says one (Google's
    uncased_L-12_H-768_A-12, cased_L-12_H-768_A-12, multi_cased_L-12_H-768_A-12)."""
    vocabulary = WordPieceVocabulary(str(folder / VOCABULARY))
    named = re.search(r"(?:^|_)(un)?cased(?:_|$)", folder.resolve().name)
    if named and bool(named.group(1)) != vocabulary.lower_case:
        said = "uncased" if vocabulary.lower_case else "cased"
        raise ConversionError(f"{folder / VOCABULARY} is {said} (it has "
                              f"{'no' if vocabulary.lower_case else ''} upper-case pieces) but "
                              f"the folder's name says {named.group(0).strip('_')}")
    return vocabulary


def gin_notes(vocabulary: WordPieceVocabulary) -> Tuple[str, ...]:
    """What the written gin file says of the activation and the vocabulary."""
    case = ("uncased: text is lower-cased and its accents stripped" if vocabulary.lower_case
            else "cased: text is kept as written")
    return (f"BertConfig.hidden_act: {CONFIG}'s 'gelu' is modeling.py's tanh approximation, "
            f"transformers' 'gelu_new' ('gelu' there is the erf form).",
            f"{VOCABULARY} is {case} (BertTokenizer's do_lower_case={vocabulary.lower_case}); "
            f"special ids {dataclasses.asdict(vocabulary.special)}.")


class GoogleFormat(CheckpointFormat):
    """Format `google`: the module's docstring."""

    directions = ("import",)

    def __init__(self, family: type, bert_config: Callable[[], "BertConfig"]):
        self.family = family
        self.bert_config = bert_config  # BertConfig as gin binds it when the import runs

    def import_checkpoint(self, source, model_dir):
        conv = conversion(self.family, self.bert_config())
        folder = pathlib.Path(source)
        check_files(folder)
        variables = read_variables(folder)
        hf_config = read_config(folder)
        vocabulary = read_vocabulary(folder)
        return import_state(conv, hf_config, variables, source, model_dir,
                            [folder / VOCABULARY], notes=gin_notes(vocabulary))


__all__ = ["CHECKPOINT", "CONFIG", "GoogleFormat", "VOCABULARY", "conversion", "google_name",
           "google_state"]
