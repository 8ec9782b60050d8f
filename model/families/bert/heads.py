"""BERT's heads: one small class per head over the one body (model/families/bert/model.py's
encoder), transformers' `BertFor...` shape. Each head owns the features it reads beside the
body's, its losses, its PREDICT output and its outputs by name (the logits a checkpoint
conversion compares); the family picks one class, once, from `BertConfig.head` (`HEADS`).

  pretraining       PreTrainingHead       masked LM + next-sentence prediction (BertForPreTraining)
  mlm               MaskedLMHead          masked LM alone (SegaBERT's pre-training; BertForMaskedLM)
  classification    ClassificationHead    `num_classes` classes on the pooled [CLS]
                                          (BertForSequenceClassification)
  regression        RegressionHead        one value on it (STS-B; the same, num_labels 1)
  multiple_choice   MultipleChoiceHead    a score per choice's [CLS] (SWAG; BertForMultipleChoice)
  span              SpanHead              an answer's start and end (SQuAD;
                                          BertForQuestionAnswering)

A head's variables are named as they always were (`cls/predictions/...`, `cls/seq_relationship`,
`cls/classifier`, `cls/squad`), so every checkpoint written before loads. The body's layers
(`dense`, `dropout`, `layer_norm`, `variable`) are the family's, so a head's weights get its
initializer and dtype.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, Tuple

import tensorflow.compat.v1 as tf

from model.trainer.losses import Losses
from model.trainer.mtf_compat import mtf

OUTPUT_LENGTH = "outputs_length"  # the dimension of PREDICT's [batch, decode_length] ids


@dataclasses.dataclass(frozen=True)
class Encoded:
    """What the body gives every head."""

    sequence: mtf.Tensor         # [batch, length, d_model] final hidden states
    pooled: mtf.Tensor           # [batch, d_model] the tanh pooler on [CLS]
    word_embeddings: mtf.Tensor  # [vocab, d_model], the MLM's tied output


class Head:
    """One head over BERT's body (`body`: the configured family, whose layers it calls)."""

    name: ClassVar[str]
    # The features this head reads beside the body's (bert_input_tokens, bert_token_types).
    feature_keys: ClassVar[Tuple[str, ...]] = ()
    # Those of `feature_keys` that are float values (the model function imports them float32).
    float_feature_keys: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, body: Any):
        self.body = body

    def per_example(self, batch: Dict[str, mtf.Tensor]) -> Dict[str, mtf.Tensor]:
        """The body's inputs as this head reads them (multiple choice: per choice)."""
        return batch

    def outputs(self, encoded: Encoded, training: bool) -> Dict[str, mtf.Tensor]:
        """The head's logits by name."""
        raise NotImplementedError

    def losses(self, encoded: Encoded, batch: Dict[str, mtf.Tensor], training: bool) -> Losses:
        raise NotImplementedError

    def predict(self, encoded: Encoded, inputs: mtf.Tensor, decode_length: int) -> mtf.Tensor:
        raise NotImplementedError


class MaskedLMHead(Head):
    """Masked LM: dense + GELU + layer norm, then the word embedding (tied) and an output bias.
    PREDICT: the most likely piece at every input position."""

    name = "mlm"
    feature_keys = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")

    def mlm_logits(self, hidden: mtf.Tensor, word_embeddings: mtf.Tensor) -> mtf.Tensor:
        """[..., vocab] logits of `hidden` [..., d_model]."""
        body = self.body
        with tf.variable_scope("cls/predictions"):
            with tf.variable_scope("transform"):
                hidden = body.dense(hidden, [body.d_model], [body.d_model], "dense",
                                    activation=body.activation)
                hidden = body.layer_norm(hidden)
            bias = body.variable(hidden.mesh, "output_bias", [body.vocab_dim],
                                 tf.zeros_initializer())
            return mtf.einsum([hidden, word_embeddings], reduced_dims=[body.d_model]) + bias

    def outputs(self, encoded, training):
        return {"mlm_logits": self.mlm_logits(encoded.sequence, encoded.word_embeddings)}

    def terms(self, encoded: Encoded, batch: Dict[str, mtf.Tensor]) -> Dict[str, "Term"]:
        """{loss name: Term} of the pre-training objective."""
        positions = batch["masked_lm_positions"]
        predictions_dim = mtf.Dimension("predictions", positions.shape.dims[-1].size)
        rename = lambda t: mtf.rename_dimension(t, t.shape.dims[-1].name, predictions_dim.name)
        positions, ids, weights = map(rename, (positions, batch["masked_lm_ids"],
                                               batch["masked_lm_weights"]))
        sequence = encoded.sequence
        picked = mtf.gather(sequence, positions, sequence.shape.dims[-2])
        logits = mtf.cast(self.mlm_logits(picked, encoded.word_embeddings), tf.float32)
        return {"masked_lm": weighted_cross_entropy(logits, ids, mtf.cast(weights, tf.float32))}

    def losses(self, encoded, batch, training):
        terms = self.terms(encoded, batch)
        # BERT's total loss: mean MLM loss over masked pieces (+ mean NSP loss over examples).
        loss = mtf.add_n([term.loss for term in terms.values()])
        metrics = {}
        for name, term in terms.items():
            metrics[f"{name}_loss"] = term.per_example_loss
            metrics[f"{name}_accuracy"] = term.per_example_correct
        return Losses(loss=loss, objective=loss, metrics=metrics)

    def predict(self, encoded, inputs, decode_length):
        logits = self.mlm_logits(encoded.sequence, encoded.word_embeddings)
        pieces = mtf.argmax(logits, logits.shape.dims[-1])
        return fit_length(pieces, inputs.shape.dims[-1], decode_length)


class PreTrainingHead(MaskedLMHead):
    """BERT's pre-training: masked LM and next-sentence prediction (0: B follows A) on the
    pooled [CLS]."""

    name = "pretraining"
    feature_keys = MaskedLMHead.feature_keys + ("next_sentence_labels",)

    def next_sentence_logits(self, pooled: mtf.Tensor) -> mtf.Tensor:
        """[batch, 2] next-sentence logits from the pooled [CLS]."""
        body = self.body
        class_dim = mtf.Dimension("classes", 2)
        return mtf.cast(body.dense(pooled, [body.d_model], [class_dim], "cls/seq_relationship"),
                        tf.float32)

    def outputs(self, encoded, training):
        return {**super().outputs(encoded, training),
                "nsp_logits": self.next_sentence_logits(encoded.pooled)}

    def terms(self, encoded, batch):
        terms = super().terms(encoded, batch)
        pooled = encoded.pooled
        labels = batch["next_sentence_labels"]
        labels = mtf.reshape(labels, labels.shape.dims[:-1])
        terms["next_sentence"] = weighted_cross_entropy(
            self.next_sentence_logits(pooled), labels,
            mtf.ones(pooled.mesh, labels.shape, tf.float32))
        return terms


class ClassHead(Head):
    """A head that picks one of `num_classes` for each example: PREDICT gives [answer, 0, ...]
    ([batch, decode_length])."""

    feature_keys = ("labels",)

    def logits(self, encoded: Encoded, training: bool) -> mtf.Tensor:
        """[batch, classes] float32."""
        raise NotImplementedError

    def outputs(self, encoded, training):
        return {"logits": self.logits(encoded, training)}

    def losses(self, encoded, batch, training):
        return classification_losses({self.name: (self.logits(encoded, training),
                                                  batch["labels"])})

    def predict(self, encoded, inputs, decode_length):
        logits = self.logits(encoded, False)
        answer = mtf.cast(mtf.argmax(logits, logits.shape.dims[-1]), tf.int32)
        slots = mtf.range(inputs.mesh, mtf.Dimension(OUTPUT_LENGTH, decode_length), tf.int32)
        # [batch, decode_length]: the batch dimension first.
        return answer * mtf.cast(mtf.equal(slots, 0), tf.int32)


class ClassificationHead(ClassHead):
    """BERT's run_classifier: dropout on the pooled [CLS], then a linear layer."""

    name = "classification"

    def logits(self, encoded, training):
        body = self.body
        class_dim = mtf.Dimension("classes", body.bert.num_classes)
        return mtf.cast(body.dense(body.dropout(encoded.pooled, training), [body.d_model],
                                   [class_dim], "cls/classifier"), tf.float32)


class MultipleChoiceHead(ClassHead):
    """[batch, choices] scores: a learned vector (and bias) dotted with each choice's pooled
    [CLS] after dropout (the paper's SWAG head; transformers' BertForMultipleChoice), for a
    softmax over the choices. Its inputs are [batch, choices * length], each choice's
    `[CLS] context [SEP] choice [SEP]` one after the other."""

    name = "multiple_choice"

    def per_choice(self, flat: mtf.Tensor) -> mtf.Tensor:
        """[batch, choices * length] as [batch, choices, length], `num_classes` choices."""
        batch_dim, flat_dim = flat.shape.dims
        choices = self.body.bert.num_classes
        return mtf.reshape(flat, mtf.Shape([batch_dim, mtf.Dimension("choices", choices),
                                            mtf.Dimension("length", flat_dim.size // choices)]))

    def per_example(self, batch):
        return {key: value if key in self.feature_keys else self.per_choice(value)
                for key, value in batch.items()}

    def logits(self, encoded, training):
        body = self.body
        pooled = encoded.pooled
        choices_dim = pooled.shape.dims[1]
        scores = body.dense(body.dropout(pooled, training), [body.d_model],
                            [mtf.Dimension("score", 1)], "cls/classifier")
        scores = mtf.reshape(scores, mtf.Shape([pooled.shape.dims[0], choices_dim]))
        return mtf.cast(mtf.rename_dimension(scores, choices_dim.name, "classes"), tf.float32)


class RegressionHead(Head):
    """One value: a linear layer with one output on the pooled [CLS] after dropout (the
    paper's STS-B head; transformers' BertForSequenceClassification, num_labels 1), the mean
    squared error against a float label. PREDICT: [batch, 1] float32 values."""

    name = "regression"
    feature_keys = ("labels",)
    float_feature_keys = ("labels",)

    def values(self, encoded: Encoded, training: bool) -> mtf.Tensor:
        """[batch] float32 values."""
        body = self.body
        pooled = encoded.pooled
        value = body.dense(body.dropout(pooled, training), [body.d_model],
                           [mtf.Dimension("value", 1)], "cls/classifier")
        return mtf.cast(mtf.reshape(value, pooled.shape.dims[:1]), tf.float32)

    def outputs(self, encoded, training):
        return {"logits": self.values(encoded, training)}

    def losses(self, encoded, batch, training):
        return regression_losses(self.values(encoded, training), batch["labels"])

    def predict(self, encoded, inputs, decode_length):
        values = self.values(encoded, False)
        return mtf.reshape(values, values.shape.dims[:1] + [mtf.Dimension(OUTPUT_LENGTH, 1)])


class SpanHead(Head):
    """An answer's start and end (BERT's SQuAD head): one learned start vector and one end
    vector, dotted with each final hidden state; position 0 ([CLS]) is no answer. PREDICT:
    [batch, 2, length] float32 start and end logits (the answer is chosen over all windows of a
    question: model/families/bert/finetune.py best_answer)."""

    name = "span"
    feature_keys = ("start_positions", "end_positions")

    def span_logits(self, sequence: mtf.Tensor) -> Tuple[mtf.Tensor, mtf.Tensor]:
        """[batch, length] start and end logits."""
        body = self.body
        ends_dim = mtf.Dimension("span_ends", 2)
        logits = mtf.cast(body.dense(sequence, [body.d_model], [ends_dim], "cls/squad"),
                          tf.float32)
        return (mtf.gather(logits, 0, ends_dim), mtf.gather(logits, 1, ends_dim))

    def outputs(self, encoded, training):
        start, end = self.span_logits(encoded.sequence)
        return {"start_logits": start, "end_logits": end}

    def losses(self, encoded, batch, training):
        start, end = self.span_logits(encoded.sequence)
        return classification_losses({"start": (start, batch["start_positions"]),
                                      "end": (end, batch["end_positions"])})

    def predict(self, encoded, inputs, decode_length):
        start, end = self.span_logits(encoded.sequence)
        return mtf.stack([start, end], "span_ends", axis=1)


# BertConfig.head -> its class (BertConfig refuses any other name).
HEADS: Dict[str, type] = {head.name: head for head in (
    PreTrainingHead, MaskedLMHead, ClassificationHead, RegressionHead, MultipleChoiceHead,
    SpanHead)}


# --- Losses ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Term:
    loss: mtf.Tensor  # scalar mean over weighted items
    per_example_loss: Tuple[mtf.Tensor, mtf.Tensor]  # ([batch] sums, [batch] weights)
    per_example_correct: Tuple[mtf.Tensor, mtf.Tensor]


def weighted_cross_entropy(logits: mtf.Tensor, labels: mtf.Tensor, weights: mtf.Tensor) -> Term:
    """Softmax cross entropy of `labels` under `logits` ([..., classes]) averaged over
    `weights`; per-example sums for evaluation."""
    class_dim = logits.shape.dims[-1]
    labels = mtf.cast(labels, tf.int32)
    cross_entropy = mtf.layers.softmax_cross_entropy_with_logits(
        logits, mtf.one_hot(labels, class_dim, dtype=tf.float32), class_dim) * weights
    correct = mtf.cast(mtf.equal(mtf.cast(mtf.argmax(logits, class_dim), tf.int32), labels),
                       tf.float32) * weights
    loss = mtf.reduce_sum(cross_entropy) / mtf.maximum(mtf.reduce_sum(weights), 1e-5)
    batch_dim = labels.shape.dims[0]
    per_example = lambda t: mtf.reduce_sum(t, output_shape=mtf.Shape([batch_dim]))
    return Term(loss, (per_example(cross_entropy), per_example(weights)),
                (per_example(correct), per_example(weights)))


def regression_losses(values: mtf.Tensor, labels: mtf.Tensor) -> Losses:
    """Mean squared error of [batch] `values` against [batch, 1] float labels (transformers'
    BertForSequenceClassification with one label: MSELoss)."""
    labels = mtf.reshape(mtf.cast(labels, tf.float32), values.shape)
    squared_error = mtf.square(values - labels)
    loss = mtf.reduce_mean(squared_error)
    ones = mtf.ones(values.mesh, values.shape, tf.float32)
    return Losses(loss=loss, objective=loss, metrics={"squared_error": (squared_error, ones)})


def classification_losses(heads: Dict[str, Tuple[mtf.Tensor, mtf.Tensor]]) -> Losses:
    """Mean over heads of each head's mean cross entropy ([batch, 1] labels); accuracy counts an
    example correct only when every head is."""
    terms = {}
    for name, (logits, labels) in heads.items():
        labels = mtf.reshape(labels, labels.shape.dims[:-1])
        terms[name] = weighted_cross_entropy(logits, labels,
                                             mtf.ones(logits.mesh, labels.shape, tf.float32))
    loss = mtf.add_n([t.loss for t in terms.values()]) / float(len(terms))
    first = next(iter(terms.values()))
    all_correct = first.per_example_correct[0]
    for term in list(terms.values())[1:]:
        all_correct *= term.per_example_correct[0]
    per_example_loss = (mtf.add_n([t.per_example_loss[0] for t in terms.values()])
                        / float(len(terms)))
    return Losses(loss=loss, objective=loss, metrics={
        "loss": (per_example_loss, first.per_example_loss[1]),
        "accuracy": (all_correct, first.per_example_correct[1])})


def fit_length(ids: mtf.Tensor, length_dim: mtf.Dimension, decode_length: int) -> mtf.Tensor:
    """[batch, length] ids as [batch, decode_length]: cut or zero padded."""
    ids = mtf.cast(ids, tf.int32)
    if length_dim.size >= decode_length:
        ids = mtf.slice(ids, 0, decode_length, length_dim.name)
    else:
        ids = mtf.pad(ids, [0, decode_length - length_dim.size], length_dim.name)
    return mtf.rename_dimension(ids, length_dim.name, OUTPUT_LENGTH)
