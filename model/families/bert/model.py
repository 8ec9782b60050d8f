"""BERT (Devlin et al. 2019) as a model family: a post-layer-norm Transformer encoder with learned
positions and segment (token type) embeddings, and its heads: masked LM + next-sentence
prediction (pre-training), sentence (pair) classification and regression on [CLS], multiple
choice (a score per choice's [CLS]), span question answering.

Follows `mesh_tensorflow.bert.bert.BertModel` (the library's BERT) layer by layer: embeddings of
word pieces + token types + positions, layer norm, dropout; per block self-attention and a GELU
feed-forward, each with a residual and a layer norm after it (post-LN), dropout on each
sub-layer's output; a tanh pooler on the first token; the MLM head (dense + GELU + layer norm,
output tied to the word embedding, one output bias per piece) and the NSP classifier on the
pooled output. Where we differ, and why:
- the vocabulary is not padded to a multiple of 128, and there are 2 token types (mtf: 16), so
  the parameters are exactly BERT's (and transformers' BertModel's: tests/test_bert.py);
- layer-norm epsilon 1e-12 (BERT's; mtf: 1e-6), and no z-loss on the MLM and NSP losses
  (mtf adds 1e-4), as BERT;
- attention dropout runs when training (mtf's `is_training=(prob == 0.0)` drops only when the
  rate is zero, i.e. never);
- dimension names are the model core's (`d_model`, `heads`, `d_kv`, `d_ff`, `vocab`), so the
  default layout splits heads, d_ff and vocabulary over a `model` mesh axis, as for T5;
- PREDICT reads token types from the inputs (everything after the first [SEP] is segment B),
  so the one-feature predict path of model_fn.py serves every head;
- the optimizer is mtf's AdamWeightDecay (BERT's) with the weights read in float32, so that
  bfloat16 activations work; ModelConfig.z_loss is not used.
GELU is mtf's (the tanh approximation, as BERT's TensorFlow code; transformers' "gelu_new") by
default; `BertConfig.hidden_act = 'gelu'` computes the exact erf form, transformers' "gelu", which
the hub's BERT configs name (a model imported from one computes what it computed there).
The forward pass equals transformers' BertForPreTraining on the same weights (mapped by
model/families/bert/hf.py; tests/test_bert_hf.py).
`BertConfig` is read from gin when the family is made (each estimator call), as the model
function's other settings are bound once per process.

Special ids are the vocabulary's (model/families/bert/wordpiece.py): ours [PAD] 0, [UNK] 1,
[CLS] 2, [SEP] 3, [MASK] 4; Google's [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103. The
data path reads them from the vocabulary it tokenises with; the model, which PREDICT's token
types (and SegaBERT's indices) need, from the run's vocabulary file (DataConfig.vocabulary, read
from gin when the family is made, as BertConfig; without one, the learner's ids). Padding is
[PAD], id 0 in every vocabulary; attention never looks at it.

Features, each [batch, length] int32 (`feature_keys` per head):
  bert_input_tokens, bert_token_types     every head
  masked_lm_positions, masked_lm_ids, masked_lm_weights   (pretraining, mlm; length = the
                                          most predictions per sequence)
  next_sentence_labels [batch, 1]         (pretraining; 0 = B follows A, 1 = B is random)
  labels [batch, 1]                       (classification, multiple_choice: int32;
                                          regression: float32)
  start_positions, end_positions [batch, 1]   (span; 0 = [CLS] = no answer)
A multiple-choice head's bert_input_tokens and bert_token_types are [batch, choices * length]:
each choice's `[CLS] context [SEP] choice [SEP]` one after the other.

SegaBERT subclasses this family and replaces `position_embedding` (and `feature_keys`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Tuple

import tensorflow.compat.v1 as tf

from model.families.base import ModelFamily
from model.families.bert import finetune, google, hf, inputs as bert_inputs
from model.families.bert.activations import ACTIVATIONS
from model.families.bert.config import BertConfig
from model.trainer.checkpoints import TransformersFormat
from model.trainer.losses import Losses
from model.trainer.mtf_compat import mtf
from model.families.bert.wordpiece import (LEARNED_IDS, PAD_ID, SpecialIds, WordPieceVocabulary,
                                           special_ids)
from model.trainer.runs import DataConfig

OUTPUT_LENGTH = "outputs_length"  # the dimension of PREDICT's [batch, decode_length] ids
_ATTENTION_MASK_BIAS = -10000.0  # BERT's additive bias on padding keys


class AdamWeightDecay(mtf.optimize.AdamWeightDecayOptimizer):
    """BERT's optimizer, mtf's `AdamWeightDecayOptimizer` (Adam without bias correction, the
    decay added to the update, not to the loss), with the weights read in float32: mtf adds
    `weight_decay_rate * var.value`, the weights in the activation dtype, to a float32 update,
    which fails with bfloat16 activations (mtf's Adafactor reads `to_float(var.value)`)."""

    def apply_grad(self, grad, var):
        if grad is None:
            return []
        grad = mtf.to_float(grad)
        m = mtf.get_variable(var.mesh, var.name + "/adam_m", var.shape,
                             initializer=tf.zeros_initializer(), trainable=False)
        v = mtf.get_variable(var.mesh, var.name + "/adam_v", var.shape,
                             initializer=tf.zeros_initializer(), trainable=False)
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * mtf.square(grad)
        update = self.adam_step(next_m, next_v)
        if self._do_use_weight_decay(var.name):
            update += self.weight_decay_rate * mtf.to_float(var.value)
        return [mtf.assign_sub(var, self.learning_rate * update),
                mtf.assign(m, next_m), mtf.assign(v, next_v)]

    def adam_step(self, m: mtf.Tensor, v: mtf.Tensor) -> mtf.Tensor:
        """The update before the decay, from the new moments: BERT's m / (sqrt(v) + epsilon),
        no bias correction (SegaBERT's FusedAdam overrides this)."""
        return m / (mtf.sqrt(v) + self.epsilon)


@dataclasses.dataclass(frozen=True)
class Built:
    """What `build` returns: BERT's variables are created as its graph is built, in `losses` /
    `predict`; this records whether dropout applies."""

    training: bool


def configured_special_ids() -> SpecialIds:
    """The reserved ids of the run's vocabulary (DataConfig.vocabulary as gin binds it; none
    bound: the learner's)."""
    path = DataConfig().vocabulary
    return special_ids(path) if path else LEARNED_IDS


def token_types_from_inputs(tokens: mtf.Tensor, sep_id: int) -> mtf.Tensor:
    """Segment B (type 1) is every token after the first [SEP] (`sep_id`); A (0) up to it."""
    length_dim = tokens.shape.dims[-1]
    seps_before = mtf.cumsum(mtf.cast(mtf.equal(tokens, sep_id), tf.int32), length_dim,
                             exclusive=True)
    return mtf.cast(mtf.greater(seps_before, 0), tf.int32) * mtf.cast(
        mtf.not_equal(tokens, PAD_ID), tf.int32)


class Bert(ModelFamily):
    name = "bert"
    # BERT's examples are built from documents by model/families/bert/inputs.py, not from T5's
    # {"inputs", "targets"} examples by a converter of model/data/features.py.
    converter = "bert"
    architectures = ("bert",)
    # Heads that pre-training does not have (patterns match whole names).
    fresh_on_warm_start = (r"cls/classifier/.*", r"cls/squad/.*")
    gradient_clip_norm = 1.0
    # Fine-tuning starts from the weights only, at step 0 (ModelFamily).
    warm_start_continues_training = False

    def __init__(self, config, vocab_size, variable_dtype=mtf.VariableDType()):
        super().__init__(config, vocab_size, variable_dtype)
        self.bert = BertConfig()
        self.special = configured_special_ids()

    # ----------------------------------------------------------------------------------------
    # The run's side: WordPiece, documents made into NSP pairs, heads fine-tuned on one task.

    @classmethod
    def vocabulary(cls, path: str) -> WordPieceVocabulary:
        return WordPieceVocabulary(path)

    @classmethod
    def checkpoint_formats(cls):
        # hf: transformers' BertForPreTraining, or the fine-tuned head's model (BertConfig.head).
        return {"hf": TransformersFormat(lambda: hf.conversion(cls, BertConfig())),
                # google: google-research/bert's released checkpoints (import).
                "google": google.GoogleFormat(cls, BertConfig)}

    @classmethod
    def pretraining_stream(cls, run: Any, source: str) -> bert_inputs.BertPretrainingStream:
        return bert_inputs.BertPretrainingStream(
            source, run.vocabulary, run.data_config.inputs_length, run.data_config.seed,
            bert_inputs.BertDataConfig())

    @classmethod
    def training_stream(cls, run):
        return cls.pretraining_stream(run, run.data_config.source)

    @classmethod
    def validation_examples(cls, run):
        if not run.data_config.eval_source:
            raise ValueError(f"{cls.name} evaluates on DataConfig.eval_source; it is not set")
        return cls.pretraining_stream(run, run.data_config.eval_source)()

    @classmethod
    def run_tasks(cls, mode, run, args):
        return finetune.run_mode(mode, run, args, BertConfig().head)

    # ----------------------------------------------------------------------------------------
    # Contract with the model core.

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        head_keys = {
            "pretraining": ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                            "next_sentence_labels"),
            "mlm": ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"),
            "classification": ("labels",),
            "regression": ("labels",),
            "multiple_choice": ("labels",),
            "span": ("start_positions", "end_positions"),
        }[self.bert.head]
        return ("bert_input_tokens", "bert_token_types") + head_keys

    @property
    def float_feature_keys(self) -> Tuple[str, ...]:
        """A regression head's label is a float value (STS-B's scores from 0 to 5)."""
        return ("labels",) if self.bert.head == "regression" else ()

    def convert_features(self, dataset, sequence_lengths, pack=True):
        raise NotImplementedError(
            "BERT's features come from documents (model/families/bert/inputs.py), not from "
            "{inputs, targets} examples")

    def build(self, training: bool) -> Built:
        return Built(training=training)

    def optimizer(self, learning_rate):
        return AdamWeightDecay(
            learning_rate=learning_rate, weight_decay_rate=self.bert.weight_decay_rate,
            beta_1=self.bert.adam_beta1, beta_2=self.bert.adam_beta2,
            epsilon=self.bert.adam_epsilon, exclude_from_weight_decay=["layer_norm", "bias"])

    def losses(self, model: Built, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        if self.bert.head == "multiple_choice":
            batch = {key: value if key == "labels" else self.per_choice(value)
                     for key, value in batch.items()}
        sequence, pooled = self.encode(batch, model.training)
        if self.bert.head in ("pretraining", "mlm"):
            return self._pretraining_losses(sequence, pooled, batch, model.training)
        if self.bert.head == "classification":
            logits = self.classification_logits(pooled, model.training)
            return _classification_losses({"classification": (logits, batch["labels"])})
        if self.bert.head == "multiple_choice":
            return _classification_losses(
                {"multiple_choice": (self.choice_logits(pooled, model.training), batch["labels"])})
        if self.bert.head == "regression":
            return regression_losses(self.regression_values(pooled, model.training),
                                     batch["labels"])
        start, end = self.span_logits(sequence)
        return _classification_losses({"start": (start, batch["start_positions"]),
                                       "end": (end, batch["end_positions"])})

    def predict(self, model: Built, inputs: mtf.Tensor, decode_length: int, beam_size: int = 1,
                alpha: float = 0.6, **features: mtf.Tensor) -> mtf.Tensor:
        """classification: [class, 0, ...]; multiple_choice: [choice, 0, ...] (`inputs` the
        choices' sequences one after the other); regression: [batch, 1] float32 values; span:
        [batch, 2, length] float32 start and end logits (the answer is chosen over all windows
        of a question: bert_tasks.best_answer); pretraining / mlm: the most likely piece at
        every input position. `features`: those of `predict_feature_keys` the input has
        (SegaBERT's indices), read as in training."""
        del beam_size, alpha
        if self.bert.head == "multiple_choice":
            inputs = self.per_choice(inputs)
            features = {key: self.per_choice(value) for key, value in features.items()}
        batch = {"bert_input_tokens": inputs,
                 "bert_token_types": token_types_from_inputs(inputs, self.special.sep),
                 **features}
        sequence, pooled = self.encode(batch, model.training)
        if self.bert.head == "regression":
            values = self.regression_values(pooled, False)
            return mtf.reshape(values, values.shape.dims[:1] + [mtf.Dimension(OUTPUT_LENGTH, 1)])
        if self.bert.head == "span":
            start, end = self.span_logits(sequence)
            return mtf.stack([start, end], "span_ends", axis=1)
        if self.bert.head in ("pretraining", "mlm"):
            logits = self.mlm_logits(sequence)
            pieces = mtf.argmax(logits, logits.shape.dims[-1])
            return _fit_length(pieces, inputs.shape.dims[-1], decode_length)
        logits = (self.classification_logits(pooled, False)
                  if self.bert.head == "classification" else self.choice_logits(pooled, False))
        answer = mtf.cast(mtf.argmax(logits, logits.shape.dims[-1]), tf.int32)
        slots = mtf.range(inputs.mesh, mtf.Dimension(OUTPUT_LENGTH, decode_length), tf.int32)
        # [batch, decode_length]: the batch dimension first.
        return answer * mtf.cast(mtf.equal(slots, 0), tf.int32)

    # ----------------------------------------------------------------------------------------
    # The encoder.

    @property
    def d_model(self) -> mtf.Dimension:
        return mtf.Dimension("d_model", self.config.d_model)

    @property
    def vocab_dim(self) -> mtf.Dimension:
        return mtf.Dimension("vocab", self.vocab_size)

    def _initializer(self):
        return tf.truncated_normal_initializer(stddev=self.bert.initializer_range)

    def _variable(self, mesh, name, dims, initializer=None):
        return mtf.get_variable(mesh, name, mtf.Shape(dims),
                                initializer=initializer or self._initializer(),
                                dtype=self.variable_dtype)

    def _dense(self, x, reduced_dims, new_dims, name, activation=None):
        return mtf.layers.dense(x, new_dims=new_dims, reduced_dims=reduced_dims, use_bias=True,
                                activation=activation, variable_dtype=self.variable_dtype,
                                kernel_initializer=self._initializer(), name=name)

    def _layer_norm(self, x, name="layer_norm"):
        """LayerNorm over d_model with scale and bias (BERT's, epsilon 1e-12)."""
        with tf.variable_scope(name):
            mean = mtf.reduce_mean(x, reduced_dim=self.d_model)
            centred = x - mean
            variance = mtf.reduce_mean(mtf.square(centred), reduced_dim=self.d_model)
            normed = centred * mtf.rsqrt(variance + self.bert.layer_norm_epsilon)
            scale = self._variable(x.mesh, "scale", [self.d_model], tf.ones_initializer())
            bias = self._variable(x.mesh, "bias", [self.d_model], tf.zeros_initializer())
            return normed * scale + bias

    def _dropout(self, x, training):
        if not training or self.config.dropout_rate == 0.0:
            return x
        return mtf.dropout(x, True, keep_prob=1.0 - self.config.dropout_rate)

    def position_embedding(self, batch: Dict[str, mtf.Tensor]) -> mtf.Tensor:
        """The position signal added to each token's embedding, [length, d_model] or
        [batch, length, d_model]: BERT's learned absolute positions 0..length-1 (one example
        per row, so the row index is the position). SegaBERT overrides this."""
        tokens = batch["bert_input_tokens"]
        length_dim = tokens.shape.dims[-1]
        if length_dim.size > self.bert.max_positions:
            raise ValueError(f"sequences of {length_dim.size} tokens exceed BERT's "
                             f"{self.bert.max_positions} positions")
        positions_dim = mtf.Dimension("positions", self.bert.max_positions)
        table = self._variable(tokens.mesh, "position_embeddings", [positions_dim, self.d_model])
        return mtf.gather(table, mtf.range(tokens.mesh, length_dim, tf.int32), positions_dim)

    def embed(self, batch: Dict[str, mtf.Tensor], training: bool) -> mtf.Tensor:
        tokens = batch["bert_input_tokens"]
        mesh = tokens.mesh
        with tf.variable_scope("embeddings"):
            self.word_embeddings = self._variable(mesh, "word_embeddings",
                                                  [self.vocab_dim, self.d_model])
            types_dim = mtf.Dimension("token_types", self.bert.type_vocab_size)
            type_table = self._variable(mesh, "token_type_embeddings", [types_dim, self.d_model])
            x = (mtf.gather(self.word_embeddings, tokens, self.vocab_dim)
                 + mtf.gather(type_table, batch["bert_token_types"], types_dim)
                 + self.position_embedding(batch))
            x = self._layer_norm(x)
        return self._dropout(x, training)

    def _self_attention(self, x, key_bias, training):
        length_dim = x.shape.dims[-2]
        memory_dim = mtf.Dimension("memory_length", length_dim.size)
        heads = mtf.Dimension("heads", self.config.num_heads)
        d_kv = mtf.Dimension("d_kv", self.config.d_kv)
        memory = mtf.rename_dimension(x, length_dim.name, memory_dim.name)
        q = self._dense(x, [self.d_model], [heads, d_kv], "query")
        k = self._dense(memory, [self.d_model], [heads, d_kv], "key")
        v = self._dense(memory, [self.d_model], [heads, d_kv], "value")
        scores = mtf.einsum([q, k], reduced_dims=[d_kv]) * d_kv.size ** -0.5
        scores += mtf.rename_dimension(key_bias, length_dim.name, memory_dim.name)
        weights = self._dropout(mtf.softmax(scores, memory_dim), training)
        context = mtf.einsum([weights, v], reduced_dims=[memory_dim])
        return self._dense(context, [heads, d_kv], [self.d_model], "output")

    def _feedforward(self, x):
        d_ff = mtf.Dimension("d_ff", self.config.d_ff)
        hidden = self._dense(x, [self.d_model], [d_ff], "intermediate",
                             activation=ACTIVATIONS[self.bert.hidden_act])
        return self._dense(hidden, [d_ff], [self.d_model], "output")

    def encode(self, batch: Dict[str, mtf.Tensor], training: bool
               ) -> Tuple[mtf.Tensor, mtf.Tensor]:
        """[batch, length, d_model] final hidden states and [batch, d_model] pooled [CLS]."""
        tokens = batch["bert_input_tokens"]
        key_bias = mtf.cast(mtf.cast(mtf.equal(tokens, PAD_ID), tf.float32) * _ATTENTION_MASK_BIAS,
                            self.variable_dtype.activation_dtype)
        with tf.variable_scope("bert"):
            x = self.embed(batch, training)
            with tf.variable_scope("encoder"):
                for block in range(self.config.num_layers):
                    with tf.variable_scope(f"block_{block:03d}"):
                        with tf.variable_scope("attention"):
                            attended = self._self_attention(x, key_bias, training)
                            x = self._layer_norm(x + self._dropout(attended, training))
                        with tf.variable_scope("feedforward"):
                            x = self._layer_norm(x + self._dropout(self._feedforward(x), training))
            with tf.variable_scope("pooler"):
                first = mtf.gather(x, 0, tokens.shape.dims[-1])
                pooled = self._dense(first, [self.d_model], [self.d_model], "dense",
                                     activation=mtf.tanh)
        return x, pooled

    # ----------------------------------------------------------------------------------------
    # Heads.

    def mlm_logits(self, hidden: mtf.Tensor) -> mtf.Tensor:
        """[..., vocab] logits: dense + GELU + layer norm, then the word embedding (tied) and an
        output bias."""
        with tf.variable_scope("cls/predictions"):
            with tf.variable_scope("transform"):
                hidden = self._dense(hidden, [self.d_model], [self.d_model], "dense",
                                     activation=ACTIVATIONS[self.bert.hidden_act])
                hidden = self._layer_norm(hidden)
            bias = self._variable(hidden.mesh, "output_bias", [self.vocab_dim],
                                  tf.zeros_initializer())
            return mtf.einsum([hidden, self.word_embeddings], reduced_dims=[self.d_model]) + bias

    def _pretraining_losses(self, sequence, pooled, batch, training) -> Losses:
        positions = batch["masked_lm_positions"]
        predictions_dim = mtf.Dimension("predictions", positions.shape.dims[-1].size)
        rename = lambda t: mtf.rename_dimension(t, t.shape.dims[-1].name, predictions_dim.name)
        positions, ids, weights = map(rename, (positions, batch["masked_lm_ids"],
                                               batch["masked_lm_weights"]))
        picked = mtf.gather(sequence, positions, sequence.shape.dims[-2])
        logits = mtf.cast(self.mlm_logits(picked), tf.float32)
        weights = mtf.cast(weights, tf.float32)
        mlm = _weighted_cross_entropy(logits, ids, weights)
        terms = {"masked_lm": mlm}
        if self.bert.head == "pretraining":
            nsp_logits = self.next_sentence_logits(pooled)
            labels = batch["next_sentence_labels"]
            labels = mtf.reshape(labels, labels.shape.dims[:-1])
            terms["next_sentence"] = _weighted_cross_entropy(
                nsp_logits, labels, mtf.ones(pooled.mesh, labels.shape, tf.float32))
        # BERT's total loss: mean MLM loss over masked pieces + mean NSP loss over examples.
        loss = mtf.add_n([term.loss for term in terms.values()])
        metrics = {}
        for name, term in terms.items():
            metrics[f"{name}_loss"] = term.per_example_loss
            metrics[f"{name}_accuracy"] = term.per_example_correct
        return Losses(loss=loss, objective=loss, metrics=metrics)

    def per_choice(self, flat: mtf.Tensor) -> mtf.Tensor:
        """[batch, choices * length] (the choices' sequences one after the other) as [batch,
        choices, length], `num_classes` choices."""
        batch_dim, flat_dim = flat.shape.dims
        choices = self.bert.num_classes
        return mtf.reshape(flat, mtf.Shape([batch_dim, mtf.Dimension("choices", choices),
                                            mtf.Dimension("length", flat_dim.size // choices)]))

    def choice_logits(self, pooled: mtf.Tensor, training: bool) -> mtf.Tensor:
        """[batch, choices] scores: a learned vector (and bias) dotted with each choice's
        pooled [CLS] after dropout (the paper's SWAG head; transformers'
        BertForMultipleChoice), for a softmax over the choices."""
        choices_dim = pooled.shape.dims[1]
        scores = self._dense(self._dropout(pooled, training), [self.d_model],
                             [mtf.Dimension("score", 1)], "cls/classifier")
        scores = mtf.reshape(scores, mtf.Shape([pooled.shape.dims[0], choices_dim]))
        return mtf.cast(mtf.rename_dimension(scores, choices_dim.name, "classes"), tf.float32)

    def regression_values(self, pooled: mtf.Tensor, training: bool) -> mtf.Tensor:
        """[batch] values: a linear layer with one output on the pooled [CLS] after dropout
        (the paper's STS-B head; transformers' BertForSequenceClassification, num_labels 1)."""
        value = self._dense(self._dropout(pooled, training), [self.d_model],
                            [mtf.Dimension("value", 1)], "cls/classifier")
        return mtf.cast(mtf.reshape(value, pooled.shape.dims[:1]), tf.float32)

    def next_sentence_logits(self, pooled: mtf.Tensor) -> mtf.Tensor:
        """[batch, 2] next-sentence logits (0: B follows A) from the pooled [CLS]."""
        class_dim = mtf.Dimension("classes", 2)
        return mtf.cast(self._dense(pooled, [self.d_model], [class_dim], "cls/seq_relationship"),
                        tf.float32)

    def classification_logits(self, pooled: mtf.Tensor, training: bool) -> mtf.Tensor:
        """BERT's run_classifier: dropout on the pooled [CLS], then a linear layer."""
        class_dim = mtf.Dimension("classes", self.bert.num_classes)
        return mtf.cast(self._dense(self._dropout(pooled, training), [self.d_model],
                                    [class_dim], "cls/classifier"), tf.float32)

    def span_logits(self, sequence: mtf.Tensor) -> Tuple[mtf.Tensor, mtf.Tensor]:
        """[batch, length] start and end logits: one learned start vector and one end vector,
        dotted with each final hidden state (BERT's SQuAD head)."""
        ends_dim = mtf.Dimension("span_ends", 2)
        logits = mtf.cast(self._dense(sequence, [self.d_model], [ends_dim], "cls/squad"),
                          tf.float32)
        return (mtf.gather(logits, 0, ends_dim), mtf.gather(logits, 1, ends_dim))


@dataclasses.dataclass(frozen=True)
class _Term:
    loss: mtf.Tensor  # scalar mean over weighted items
    per_example_loss: Tuple[mtf.Tensor, mtf.Tensor]  # ([batch] sums, [batch] weights)
    per_example_correct: Tuple[mtf.Tensor, mtf.Tensor]


def _weighted_cross_entropy(logits: mtf.Tensor, labels: mtf.Tensor, weights: mtf.Tensor
                            ) -> _Term:
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
    return _Term(loss, (per_example(cross_entropy), per_example(weights)),
                 (per_example(correct), per_example(weights)))


def regression_losses(values: mtf.Tensor, labels: mtf.Tensor) -> Losses:
    """Mean squared error of [batch] `values` against [batch, 1] float labels (transformers'
    BertForSequenceClassification with one label: MSELoss)."""
    labels = mtf.reshape(mtf.cast(labels, tf.float32), values.shape)
    squared_error = mtf.square(values - labels)
    loss = mtf.reduce_mean(squared_error)
    ones = mtf.ones(values.mesh, values.shape, tf.float32)
    return Losses(loss=loss, objective=loss, metrics={"squared_error": (squared_error, ones)})


def _classification_losses(heads: Dict[str, Tuple[mtf.Tensor, mtf.Tensor]]) -> Losses:
    """Mean over heads of each head's mean cross entropy ([batch, 1] labels); accuracy counts an
    example correct only when every head is."""
    terms = {}
    for name, (logits, labels) in heads.items():
        labels = mtf.reshape(labels, labels.shape.dims[:-1])
        terms[name] = _weighted_cross_entropy(logits, labels,
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


def _fit_length(ids: mtf.Tensor, length_dim: mtf.Dimension, decode_length: int) -> mtf.Tensor:
    """[batch, length] ids as [batch, decode_length]: cut or zero padded."""
    ids = mtf.cast(ids, tf.int32)
    if length_dim.size >= decode_length:
        ids = mtf.slice(ids, 0, decode_length, length_dim.name)
    else:
        ids = mtf.pad(ids, [0, decode_length - length_dim.size], length_dim.name)
    return mtf.rename_dimension(ids, length_dim.name, OUTPUT_LENGTH)
