"""SegaBERT's released checkpoints (format `pytorch`, in and out): the PyTorch folders of the
authors' repository (rsvp-ai/segatron_aaai, README "Download Checkpoints": segabert-base-500k
and segabert-large on the Hugging Face hub), in the layout of their modeling code
(transformers/transformers/modeling_segabert.py, whose state dict is their Megatron-LM
pre-training model's, segabert/model/modeling.py, saved by convert_segatron_to_huggingface.py):

    config.json        their BertConfig (configuration_bert.py): BERT's fields plus
                       max_token_position_embeddings (default 512), max_sent_position_embeddings
                       (100) and max_para_position_embeddings (50)
    pytorch_model.bin  the weights (or model.safetensors)
    vocab.txt          BERT's uncased WordPiece vocabulary ([CLS] 101, [SEP] 102)

    python -m model import --family segabert --format pytorch \
        --source segabert-uncased-base-50k --model_dir DIR

Their names are BERT's in transformers (model/families/bert/hf.py) but for
- the position embedding: `bert.embeddings.token_position_embeddings`,
  `sent_position_embeddings`, `para_position_embeddings` (the token's index in its sentence,
  the sentence's in its paragraph, the paragraph's in the document; ours token_index_,
  sentence_index_, paragraph_index_embeddings), summed in place of BERT's position table;
- attention: one `attention.self.query_key_value` Linear [3 * hidden, hidden], the query, key and
  value outputs one after the other (their forward splits the output in three).
`authors_state` gives their names from ours; the import inverts it (model/convert/checkpoints.py).

Two tensors of theirs have no place in our SegaBERT and are left out, as the written gin file
says: `bert.embeddings.position_embeddings` (their forward reads it only when an input has no
structure indices; every input of ours has them, or derives them: model/families/segabert/
model.py) and `cls.seq_relationship` (their Megatron BertForPreTraining always builds the NSP
layer; SegaBERT pre-trains with masked LM alone: BertConfig.head = 'mlm'). The MLM decoder is
the word embedding; a stored copy must equal it.

The activation: their ACT2FN's "gelu" is the erf form, transformers' "gelu" (theirs
"gelu_new" the tanh form, as transformers'): BertConfig.hidden_act takes the config's name.

Export (`python -m model export --family segabert --format pytorch --model_dir DIR
--export_dir OUT`) writes the same three files from a masked-LM run (BertConfig.head 'mlm': an
import, a pre-training): `authors_state`'s tensors, their config.json of our sizes
(`authors_config`, the tables' rows StructureLimits') and the run's vocab.txt, which the import
reads back to the same variables. The two LEFT_OUT tensors are not written (their loading code
leaves such a tensor at its initial value; their forward reads neither when it is given the
structure indices). A fine-tuned head has no place in their masked-LM model and is refused.
"""
from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any, Callable, Dict, Mapping, Tuple

import numpy as np
import tensorflow.compat.v1 as tf

from model.families.bert import hf as bert_hf
from model.families.bert.config import BertConfig
from model.families.segabert import structure
from model.trainer import runs
from model.convert.checkpoints import (CheckpointFormat, Conversion, ConversionError,
                                       checkpoint_values, import_state, read_weights)
from model.convert.card import finish_export
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf


CONFIG = "config.json"
WEIGHTS = "pytorch_model.bin"
VOCABULARY = "vocab.txt"
# The model their config.json names: masked LM over their BertModel with the three tables.
MODEL_CLASS = "BertForMaskedLM"
# Ours -> theirs: the three index tables in place of BERT's position table.
POSITION_TABLES = {"bert/embeddings/token_index_embeddings":
                   "bert.embeddings.token_position_embeddings.weight",
                   "bert/embeddings/sentence_index_embeddings":
                   "bert.embeddings.sent_position_embeddings.weight",
                   "bert/embeddings/paragraph_index_embeddings":
                   "bert.embeddings.para_position_embeddings.weight"}
# Their config's table sizes (configuration_bert.py's defaults) and our StructureLimits'.
TABLE_SIZES = {"max_token_position_embeddings": (512, "StructureLimits.tokens_per_sentence"),
               "max_sent_position_embeddings": (100, "StructureLimits.sentences_per_paragraph"),
               "max_para_position_embeddings": (50, "StructureLimits.paragraphs_per_document")}
CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "hidden_act", "hidden_dropout_prob", "type_vocab_size",
                 "initializer_range")
# Their tensors that our SegaBERT has no place for (the module's docstring).
LEFT_OUT = ("bert.embeddings.position_embeddings.weight", "cls.seq_relationship.weight",
            "cls.seq_relationship.bias")
LAYER_NORM_EPSILON = 1e-12  # their BertConfig's layer_norm_eps default


def authors_state(variables: Mapping[str, np.ndarray], num_layers: int
                  ) -> Dict[str, np.ndarray]:
    """Their SegaBERT's tensors (name -> array) from our variables (head 'mlm')."""
    state = {**bert_hf.encoder_state(variables, num_layers, POSITION_TABLES),
             **bert_hf.pooler_state(variables), **bert_hf.mlm_state(variables)}
    del state["cls.predictions.decoder.bias"]  # their decoder has none: the output bias is it
    for layer in range(num_layers):
        attention = f"bert.encoder.layer.{layer}.attention.self"
        for kind in ("weight", "bias"):
            state[f"{attention}.query_key_value.{kind}"] = np.concatenate(
                [state.pop(f"{attention}.{name}.{kind}") for name in ("query", "key", "value")])
    return state


def mtf_outputs(family, mesh: mtf.Mesh, inputs: Mapping[str, np.ndarray]
                ) -> Dict[str, mtf.Tensor]:
    """Our SegaBERT's {"mlm_logits": [batch, length, vocab]} for `inputs` "tokens",
    "token_types" and the three structure indices (structure.INDEX_KEYS), [batch, length] each,
    without dropout."""
    tokens = np.asarray(inputs["tokens"], np.int32)
    shape = mtf.Shape([mtf.Dimension("batch", tokens.shape[0]),
                       mtf.Dimension("length", tokens.shape[1])])
    names = {"bert_input_tokens": "tokens", "bert_token_types": "token_types",
             **{key: key for key in structure.INDEX_KEYS}}
    batch = {key: mtf.import_tf_tensor(mesh, tf.constant(np.asarray(inputs[name], np.int32)),
                                       shape)
             for key, name in names.items()}
    return family.head.outputs(family.encode(batch, training=False), training=False)


def conversion(family: type, bert_config: Callable[[], "BertConfig"], direction: str
               ) -> Conversion:
    """SegaBERT's link to the authors' names (the import binds BertConfig.head = 'mlm'; the
    export writes a masked-LM run's)."""
    head = runs.gin_value("BertConfig.head")
    if head not in (None, "mlm"):
        raise ConversionError(f"SegaBERT's released checkpoints are pre-trained with masked LM "
                              f"alone: {direction} with BertConfig.head = 'mlm' (gin binds "
                              f"{head!r}: the authors' layout has no place for that head)")
    example = np.ones([1, 4], np.int32)
    return Conversion(
        "segabert", family, "bert", MODEL_CLASS, "bert/embeddings/word_embeddings",
        lambda config, vocab: bert_hf.transformers_config(config, bert_config(), vocab),
        gin_bindings, lambda variables, config: authors_state(variables, config.num_layers),
        mtf_outputs,
        {"tokens": example, "token_types": 0 * example,
         **{key: 0 * example for key in structure.INDEX_KEYS}},
        tokenizer_file=VOCABULARY)


def authors_config(config: ModelConfig, bert_config: "BertConfig",
                   limits: structure.StructureLimits, vocab_size: int) -> Dict[str, Any]:
    """Their config.json of our sizes (what `read_config` and `gin_bindings` read back)."""
    tables = {"tokens_per_sentence": limits.tokens_per_sentence,
              "sentences_per_paragraph": limits.sentences_per_paragraph,
              "paragraphs_per_document": limits.paragraphs_per_document}
    return {"architectures": [MODEL_CLASS], "vocab_size": vocab_size,
            "hidden_size": config.d_model, "num_hidden_layers": config.num_layers,
            "num_attention_heads": config.num_heads, "intermediate_size": config.d_ff,
            "hidden_act": bert_config.hidden_act, "hidden_dropout_prob": config.dropout_rate,
            "attention_probs_dropout_prob": config.dropout_rate,
            "type_vocab_size": bert_config.type_vocab_size,
            "initializer_range": bert_config.initializer_range,
            "layer_norm_eps": bert_config.layer_norm_epsilon,
            **{field: tables[name.split(".")[1]] for field, (_, name) in TABLE_SIZES.items()}}


def read_config(folder: pathlib.Path):
    """transformers' BertConfig of their config.json, the three table sizes beside it."""
    import transformers
    fields = json.loads((folder / CONFIG).read_text())
    missing = [field for field in CONFIG_FIELDS if field not in fields]
    if missing:
        raise ConversionError(f"{folder / CONFIG} lacks {missing} (their BertConfig's fields)")
    if "max_token_position_embeddings" not in fields and "max_para_position_embeddings" not in \
            fields:
        raise ConversionError(f"{folder / CONFIG} names no structure tables "
                              f"(max_token_position_embeddings, max_para_position_embeddings): "
                              f"not a SegaBERT config (BERT's: --family bert --format hf)")
    config = transformers.BertConfig(
        **{field: fields[field] for field in CONFIG_FIELDS},
        attention_probs_dropout_prob=fields.get("attention_probs_dropout_prob", 0.1),
        max_position_embeddings=fields.get("max_position_embeddings", 512),
        layer_norm_eps=fields.get("layer_norm_eps", LAYER_NORM_EPSILON),
        **{field: fields.get(field, default) for field, (default, _) in TABLE_SIZES.items()})
    return config


def gin_bindings(hf_config) -> Dict[str, Any]:
    """Our gin bindings for their config: BERT's sizes (bert_hf.gin_bindings) but the position
    table's, and the three tables' rows."""
    bindings = {**bert_hf.gin_bindings(hf_config), "ModelConfig.architecture": "segabert",
                "BertConfig.head": "mlm"}
    del bindings["BertConfig.max_positions"]
    bindings.update({name: getattr(hf_config, field)
                     for field, (_, name) in TABLE_SIZES.items()})
    return bindings


def check_files(folder: pathlib.Path) -> None:
    missing = [name for name in (CONFIG, VOCABULARY) if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {missing} (the authors' SegaBERT folder holds "
                                f"{CONFIG}, pytorch_model.bin and {VOCABULARY})")


def read_state(folder: pathlib.Path) -> Tuple[Dict[str, np.ndarray], Tuple[str, ...]]:
    """Their tensors but LEFT_OUT, and the LEFT_OUT ones the folder held."""
    state = read_weights(folder)
    if POSITION_TABLES["bert/embeddings/token_index_embeddings"] not in state:
        raise ConversionError(f"{folder} is not a SegaBERT checkpoint: it has no "
                              f"{POSITION_TABLES['bert/embeddings/token_index_embeddings']}")
    left_out = tuple(name for name in LEFT_OUT if name in state)
    return {name: value for name, value in state.items() if name not in LEFT_OUT}, left_out


class PytorchFormat(CheckpointFormat):
    """Format `pytorch`: the module's docstring."""

    def __init__(self, family: type, bert_config: Callable[[], "BertConfig"]):
        self.family = family
        self.bert_config = bert_config  # BertConfig as gin binds it when the import runs

    def conversion(self, direction: str = "import") -> Conversion:
        return conversion(self.family, self.bert_config, direction)

    def import_checkpoint(self, source, model_dir):
        conv = self.conversion()
        folder = pathlib.Path(source)
        check_files(folder)
        hf_config = read_config(folder)
        state, left_out = read_state(folder)
        notes = (f"Left out of the authors' checkpoint: {list(left_out)} (SegaBERT reads the "
                 f"three structure tables, without next-sentence prediction).",
                 f"BertConfig.hidden_act {hf_config.hidden_act!r} as their modeling code "
                 f"computes it ('gelu': the erf form).")
        return import_state(conv, hf_config, state, source, model_dir, [folder / VOCABULARY],
                            notes=notes)

    def export_checkpoint(self, run, output, checkpoint):
        """The authors' folder of a masked-LM run's checkpoint: config.json, pytorch_model.bin
        (their tensors, `authors_state`, but LEFT_OUT) and the run's vocab.txt."""
        import torch
        conv = self.conversion("export")
        if not run.data_config.vocabulary:
            raise ConversionError(f"the authors' folder holds {VOCABULARY}: export a run with "
                                  f"DataConfig.vocabulary (a WordPiece vocab.txt) set")
        vocab_size, values = checkpoint_values(conv, run, checkpoint)
        out = pathlib.Path(output)
        out.mkdir(parents=True, exist_ok=True)
        state = authors_state(values, run.model_config.num_layers)
        torch.save({name: torch.from_numpy(np.ascontiguousarray(value))
                    for name, value in state.items()}, out / WEIGHTS)
        config = authors_config(run.model_config, self.bert_config(),
                                structure.StructureLimits(), vocab_size)
        (out / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        shutil.copyfile(run.vocabulary.path, out / VOCABULARY)
        written = finish_export(run, out, checkpoint, MODEL_CLASS, usage(output))
        return {"checkpoint": checkpoint, "export_dir": str(out), **written}


def usage(export_dir: str) -> str:
    """Python that reads the authors' folder at `export_dir` (its model card's): their modeling
    code is not in transformers, so the tensors and the vocabulary, and where the model is."""
    return f"""\
import json

import torch
from transformers import BertTokenizer

folder = {export_dir!r}
config = json.load(open(f"{{folder}}/{CONFIG}"))
state = torch.load(f"{{folder}}/{WEIGHTS}", weights_only=True)
tokenizer = BertTokenizer(f"{{folder}}/{VOCABULARY}")
print(tokenizer.tokenize("The cat sat on the mat."))
print({{name: tuple(value.shape) for name, value in state.items() if "position" in name}})
# The model: the authors' modeling_segabert.py (github.com/rsvp-ai/segatron_aaai),
# BertForMaskedLM.from_pretrained(folder) with each token's index in its sentence, its
# sentence's in the paragraph and its paragraph's in the document.
"""


__all__ = ["PytorchFormat", "authors_config", "authors_state", "conversion", "mtf_outputs"]
