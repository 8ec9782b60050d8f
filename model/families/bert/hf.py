"""BERT's variables as transformers' `BertForPreTraining` names them: the one mapping between our
checkpoints (model/families/bert/model.py) and Hugging Face's BERT, used to check our forward pass
against theirs (tests/model/test_bert_hf.py) and to convert checkpoints.

Our dense kernels are [inputs..., outputs...] (attention's query/key/value [d_model, heads,
d_kv], its output [heads, d_kv, d_model]); a torch `Linear` weight is [outputs, inputs] with the
heads flattened head-major, as transformers splits them. Layer norms' scale/bias are `LayerNorm`
weight/bias. The MLM decoder is the word embedding (tied) with `cls.predictions.bias`.
Our GELU is BertConfig.hidden_act by transformers' own name: by default "gelu_new", the tanh
approximation (mtf.gelu, as Google's modeling.py); "gelu" is the exact erf form.
`gin_bindings` reads a transformers BertConfig back into our gin bindings, `mtf_outputs` runs
our model, and `conversion` ties them together for format `hf` (model/convert/checkpoints.py);
its import carries the folder's vocab.txt as DataConfig.vocabulary, as T5's its spiece.model.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np
import tensorflow.compat.v1 as tf

from model.families.bert.activations import ACTIVATIONS
from model.families.bert.config import BertConfig
from model.families.bert.wordpiece import CLS, MASK, PAD, SEP, UNK
from model.convert.checkpoints import Conversion
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf


# The `model_type` of transformers' BertConfig (a transformers folder's config.json).
MODEL_TYPE = "bert"
# transformers' model for each of our heads (BertConfig.head) that has one.
HEAD_CLASSES = {"pretraining": "BertForPreTraining",
                "classification": "BertForSequenceClassification",
                "regression": "BertForSequenceClassification",
                "multiple_choice": "BertForMultipleChoice",
                "span": "BertForQuestionAnswering"}
# The WordPiece vocabulary's file in a transformers folder (BertTokenizer's) and Google's.
VOCABULARY = "vocab.txt"
# BERT's position table, ours -> transformers'.
POSITION_TABLES = {"bert/embeddings/position_embeddings":
                   "bert.embeddings.position_embeddings.weight"}


def transformers_config(model_config: ModelConfig, bert_config: "BertConfig", vocab_size: int):
    """transformers.BertConfig of our BERT's sizes (our one dropout rate for both of theirs)
    and head: a classifier's labels, a regression's one value."""
    import transformers

    labels = {"classification": {"num_labels": bert_config.num_classes},
              "regression": {"num_labels": 1, "problem_type": "regression"}}
    return transformers.BertConfig(
        **labels.get(bert_config.head, {}),
        vocab_size=vocab_size, hidden_size=model_config.d_model,
        num_hidden_layers=model_config.num_layers, num_attention_heads=model_config.num_heads,
        intermediate_size=model_config.d_ff, hidden_act=bert_config.hidden_act,
        hidden_dropout_prob=model_config.dropout_rate,
        attention_probs_dropout_prob=model_config.dropout_rate,
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


def head_class(head: str) -> str:
    """transformers' model for our BERT's `head` (a ValueError for one that has none here)."""
    if head not in HEAD_CLASSES:
        raise ValueError(f"BERT's {head!r} head (BertConfig.head) has no transformers model "
                         f"here; {sorted(HEAD_CLASSES)} have")
    return HEAD_CLASSES[head]


def transformers_state(variables: Mapping[str, np.ndarray], num_layers: int,
                       head: str = "pretraining") -> Dict[str, np.ndarray]:
    """The state dict (numpy) of `HEAD_CLASSES[head]` from our variables by name: the encoder,
    and the pre-training heads (MLM and NSP) with the pooler, a fine-tuned classifier
    (`classifier`: a class's, a regression's or a choice's scores) with the pooler, or the span
    head (`qa_outputs`, start then end; no pooler: BertForQuestionAnswering has none)."""
    head_class(head)
    state = encoder_state(variables, num_layers)
    if head == "span":
        return {**state, **_dense(variables, "cls/squad", "qa_outputs")}
    state.update(pooler_state(variables))
    if head != "pretraining":
        return {**state, **_dense(variables, "cls/classifier", "classifier")}
    return {**state, **mlm_state(variables),
            **_dense(variables, "cls/seq_relationship", "cls.seq_relationship")}


def pooler_state(variables: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    return _dense(variables, "bert/pooler/dense", "bert.pooler.dense")


def mlm_state(variables: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The masked-LM head: the transform, the output bias, the decoder (tied to the word
    embedding; its bias is the output bias)."""
    return {
        **_dense(variables, "cls/predictions/transform/dense",
                 "cls.predictions.transform.dense"),
        **_layer_norm(variables, "cls/predictions/transform/layer_norm",
                      "cls.predictions.transform.LayerNorm"),
        "cls.predictions.bias": variables["cls/predictions/output_bias"],
        "cls.predictions.decoder.weight": variables["bert/embeddings/word_embeddings"],
        "cls.predictions.decoder.bias": variables["cls/predictions/output_bias"],
    }


def encoder_state(variables: Mapping[str, np.ndarray], num_layers: int,
                  position_tables: Mapping[str, str] = POSITION_TABLES
                  ) -> Dict[str, np.ndarray]:
    """The embeddings (their position tables by `position_tables`, ours -> theirs) and the
    encoder's layers."""
    state = {
        "bert.embeddings.word_embeddings.weight": variables["bert/embeddings/word_embeddings"],
        **{theirs: variables[ours] for ours, theirs in position_tables.items()},
        "bert.embeddings.token_type_embeddings.weight":
            variables["bert/embeddings/token_type_embeddings"],
        **_layer_norm(variables, "bert/embeddings/layer_norm", "bert.embeddings.LayerNorm"),
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


def gin_bindings(hf_config) -> Dict[str, Any]:
    """Our gin bindings for the sizes of a transformers BertConfig (the inverse of
    `transformers_config`); a ValueError names a field that ours cannot compute alike."""
    if hf_config.hidden_act not in ACTIVATIONS:
        raise ValueError(f"config field hidden_act = {hf_config.hidden_act!r}: our BERT computes "
                         f"{sorted(ACTIVATIONS)} (BertConfig.hidden_act)")
    position_type = getattr(hf_config, "position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(f"config field position_embedding_type = {position_type!r}: ours are "
                         f"learned absolute positions ('absolute')")
    if hf_config.hidden_size % hf_config.num_attention_heads:
        raise ValueError(f"config fields hidden_size = {hf_config.hidden_size} and "
                         f"num_attention_heads = {hf_config.num_attention_heads}: hidden_size "
                         f"must be a multiple of num_attention_heads")
    return {"ModelConfig.architecture": "bert", "ModelConfig.d_model": hf_config.hidden_size,
            "ModelConfig.d_ff": hf_config.intermediate_size,
            "ModelConfig.num_heads": hf_config.num_attention_heads,
            "ModelConfig.d_kv": hf_config.hidden_size // hf_config.num_attention_heads,
            "ModelConfig.num_layers": hf_config.num_hidden_layers,
            "ModelConfig.dropout_rate": hf_config.hidden_dropout_prob,
            "BertConfig.max_positions": hf_config.max_position_embeddings,
            "BertConfig.type_vocab_size": hf_config.type_vocab_size,
            "BertConfig.layer_norm_epsilon": hf_config.layer_norm_eps,
            "BertConfig.initializer_range": hf_config.initializer_range,
            "BertConfig.hidden_act": hf_config.hidden_act}


def mtf_outputs(family, mesh: mtf.Mesh, inputs: Mapping[str, np.ndarray]
                ) -> Dict[str, mtf.Tensor]:
    """Our BERT's outputs for `inputs["tokens"]` and `inputs["token_types"]` ([batch, length];
    id 0 is padding; multiple choice: [batch, choices * length], the choices' sequences one after
    the other), without dropout, by its head: pre-training {"mlm_logits": [batch, length,
    vocab], "nsp_logits": [batch, 2]}; classification {"logits": [batch, classes]}; multiple
    choice {"logits": [batch, choices]}; regression {"logits": [batch]}; span {"start_logits",
    "end_logits": [batch, length]}."""
    tokens = np.asarray(inputs["tokens"], np.int32)
    shape = mtf.Shape([mtf.Dimension("batch", tokens.shape[0]),
                       mtf.Dimension("length", tokens.shape[1])])
    batch = {key: mtf.import_tf_tensor(mesh, tf.constant(np.asarray(inputs[name], np.int32)),
                                       shape)
             for key, name in (("bert_input_tokens", "tokens"),
                               ("bert_token_types", "token_types"))}
    batch = family.head.per_example(batch)
    return family.head.outputs(family.encode(batch, training=False), training=False)


def conversion(family: type, bert_config: "BertConfig") -> Conversion:
    """BERT's link to BertForPreTraining, or to the model of the fine-tuning head that
    `bert_config.head` names (a fine-tuned run's recorded config)."""
    head = bert_config.head
    # A multiple-choice input is each choice's sequence in turn.
    width = 4 * (bert_config.num_classes if head == "multiple_choice" else 1)
    return Conversion(
        "bert", family, MODEL_TYPE, head_class(head), "bert/embeddings/word_embeddings",
        lambda config, vocab: transformers_config(config, bert_config, vocab),
        gin_bindings, lambda variables, config: transformers_state(variables, config.num_layers,
                                                                  head),
        mtf_outputs,
        {"tokens": np.ones([1, width], np.int32), "token_types": np.zeros([1, width], np.int32)},
        # BertTokenizer's vocab.txt, beside a save_pretrained folder's weights, is our
        # WordPiece vocabulary (bert/wordpiece.py): the import carries it.
        tokenizer_file=VOCABULARY, tokenizer=tokenizer,
        usage=lambda export_dir, run: usage(head, export_dir))


# A COPA example as BERT's multiple-choice head reads it: the view's context is the premise
# and the question word (model/tasks/discriminative.py), each choice the second segment.
COPA_CONTEXT = "The man broke his toe. cause"
COPA_CHOICES = ("He dropped a hammer on his foot.", "He got a hole in his sock.")
# What each head's snippet runs on the loaded `model` and `tokenizer` (its export's model card).
HEAD_USAGE = {
    "pretraining": """\
inputs = tokenizer(f"the cat sat on the {tokenizer.mask_token} .", return_tensors="pt")
with torch.no_grad():
    logits = model(**inputs).prediction_logits
masked = int((inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
print(tokenizer.decode(logits[0, masked].argmax()))
""",
    "classification": """\
inputs = tokenizer("The cat sat on the mat.", "A cat was sitting on the mat.",
                   return_tensors="pt")
with torch.no_grad():
    logits = model(**inputs).logits
print(model.config.id2label[int(logits.argmax())])
""",
    "regression": """\
inputs = tokenizer("The cat sat on the mat.", "A cat was sitting on the mat.",
                   return_tensors="pt")
with torch.no_grad():
    print(float(model(**inputs).logits[0, 0]))
""",
    "multiple_choice": f"""\
# [CLS] context [SEP] choice [SEP] per choice, as the fine-tuning read them.
context = {COPA_CONTEXT!r}
choices = {list(COPA_CHOICES)!r}
inputs = tokenizer([context] * len(choices), choices, return_tensors="pt", padding=True)
with torch.no_grad():
    logits = model(**{{name: value[None] for name, value in inputs.items()}}).logits
print(choices[int(logits.argmax())])
""",
    "span": """\
question, context = "Where did the cat sit?", "The cat sat on the mat."
inputs = tokenizer(question, context, return_tensors="pt")
with torch.no_grad():
    out = model(**inputs)
start, end = int(out.start_logits.argmax()), int(out.end_logits.argmax())
print(tokenizer.decode(inputs["input_ids"][0, start:end + 1]))
"""}


def usage(head: str, export_dir: str) -> str:
    """Python that loads the export of a BERT with `head` from `export_dir` and runs the head
    once (its model card's)."""
    return (f"import torch\nfrom transformers import AutoTokenizer, {HEAD_CLASSES[head]}\n\n"
            f"folder = {export_dir!r}\ntokenizer = AutoTokenizer.from_pretrained(folder)\n"
            f"model = {HEAD_CLASSES[head]}.from_pretrained(folder).eval()\n"
            + HEAD_USAGE[head])


def tokenizer(vocabulary, model_max_length: int):
    """transformers' BertTokenizer of a WordPiece vocab.txt (bert/wordpiece.py), ids alike: our
    reserved tokens by name (their ids the file's), lower case and accents stripped where we
    strip them."""
    from transformers import BertTokenizer
    return BertTokenizer(str(vocabulary.path), do_lower_case=vocabulary.lower_case,
                         pad_token=PAD, unk_token=UNK, cls_token=CLS, sep_token=SEP,
                         mask_token=MASK, model_max_length=model_max_length)
