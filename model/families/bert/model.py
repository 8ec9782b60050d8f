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
  the parameters are exactly BERT's (and transformers' BertModel's: tests/model/test_bert.py);
- layer-norm epsilon 1e-12 (BERT's; mtf: 1e-6), and no z-loss on the MLM and NSP losses
  (mtf adds 1e-4), as BERT;
- attention dropout runs when training (mtf's `is_training=(prob == 0.0)` drops only when the
  rate is zero, i.e. never);
- dimension names are the model core's (`d_model`, `heads`, `d_kv`, `d_ff`, `vocab`), so the
  default layout splits heads, d_ff and vocabulary over a `model` mesh axis, as for T5;
- PREDICT reads token types from the inputs (everything after the first [SEP] is segment B),
  so the one-feature predict path of model_fn.py serves every head;
- the optimizer is BERT's AdamWeightDecay, the trainer's Adam (model/trainer/adam.py: weights
  read in float32, so that bfloat16 activations work); ModelConfig.z_loss is not used.
GELU is mtf's (the tanh approximation, as BERT's TensorFlow code; transformers' "gelu_new") by
default; `BertConfig.hidden_act = 'gelu'` computes the exact erf form, transformers' "gelu", which
the hub's BERT configs name (a model imported from one computes what it computed there).
The forward pass equals transformers' BertForPreTraining on the same weights (mapped by
model/families/bert/hf.py; tests/model/test_bert_hf.py).
`BertConfig` is read from gin when the family is made (each estimator call), as the model
function's other settings are bound once per process.

Special ids are the vocabulary's (model/families/bert/wordpiece.py): ours [PAD] 0, [UNK] 1,
[CLS] 2, [SEP] 3, [MASK] 4; Google's [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103. The
data path reads them from the vocabulary it tokenises with; the model, which PREDICT's token
types (and SegaBERT's indices) need, from the run's vocabulary, which the trainer gives the
family (`run_vocabulary`; without one, the learner's ids). Padding is [PAD], id 0 in every
vocabulary; attention never looks at it.

The heads are classes over this body (model/families/bert/heads.py); the family makes the one
`BertConfig.head` names. Features, each [batch, length] int32 (`feature_keys`: the body's and
the head's):
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
from typing import Any, Dict, Optional, Tuple

import tensorflow.compat.v1 as tf

from model.families.base import ModelFamily, eval_on_tasks
from model.families.bert import finetune, google, hf, inputs as bert_inputs
from model.families.bert.activations import ACTIVATIONS
from model.families.bert.config import BertConfig, bert_part
from model.families.bert.heads import HEADS, Encoded, Head
from model.convert.checkpoints import TransformersFormat
from model.trainer.adam import DecoupledAdam
from model.trainer.losses import Losses
from model.trainer.mtf_compat import mtf
from model.families.bert.wordpiece import LEARNED_IDS, PAD_ID, SpecialIds, WordPieceVocabulary

_ATTENTION_MASK_BIAS = -10000.0  # BERT's additive bias on padding keys
# What BERT's exclude_from_weight_decay names (patterns searched in the variable's name).
_NOT_DECAYED = ("layer_norm", "bias")


class AdamWeightDecay(DecoupledAdam):
    """BERT's optimizer (its optimization.py's AdamWeightDecayOptimizer): Adam without bias
    correction, the decay `weight_decay * param` added to the update on every weight but layer
    norms and biases (model/trainer/adam.py keeps the slots and moments)."""

    def decays(self, variable_name: str) -> bool:
        return not any(excluded in variable_name for excluded in _NOT_DECAYED)


@dataclasses.dataclass(frozen=True)
class Built:
    """What `build` returns: BERT's variables are created as its graph is built, in `losses` /
    `predict`; this records whether dropout applies."""

    training: bool


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
    # {"inputs", "targets"} examples by a feature converter.
    converter = None
    architectures = ("bert",)
    # Heads that pre-training does not have (patterns match whole names).
    fresh_on_warm_start = (r"cls/classifier/.*", r"cls/squad/.*")
    gradient_clip_norm = 1.0
    # Fine-tuning starts from the weights only, at step 0 (ModelFamily).
    warm_start_continues_training = False

    config_class = BertConfig

    def __init__(self, config, vocab_size, variable_dtype=mtf.VariableDType(),
                 run_vocabulary: Optional[WordPieceVocabulary] = None,
                 family_config: Optional[BertConfig] = None):
        super().__init__(config, vocab_size, variable_dtype, run_vocabulary, family_config)
        # The run's reserved ids (none: the learner's), for PREDICT's token types.
        self.special: SpecialIds = (run_vocabulary.special if run_vocabulary is not None
                                    else LEARNED_IDS)
        # The one place the head's name is read: its class owns its features, losses and
        # PREDICT output.
        self.head: Head = HEADS[self.bert.head](self)

    @property
    def bert(self) -> BertConfig:
        """BERT's part of the family config (SegaBERT's holds more)."""
        return bert_part(self.family_config)

    # ----------------------------------------------------------------------------------------
    # The run's side: WordPiece, documents made into NSP pairs, heads fine-tuned on one task.

    @classmethod
    def vocabulary(cls, path: str) -> WordPieceVocabulary:
        return WordPieceVocabulary(path)

    @classmethod
    def checkpoint_formats(cls):
        # hf: transformers' BertForPreTraining, or the fine-tuned head's model (BertConfig.head).
        return {"hf": TransformersFormat(
                    lambda: hf.conversion(cls, cls.configured_family_config())),
                # google: google-research/bert's released checkpoints (import).
                "google": google.GoogleFormat(cls, cls.configured_family_config)}

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
    def task_plan(cls, run, request, training):
        return finetune.task_plan(run, request, training)

    # The heads whose PREDICT is text: the masked LM's pieces at every position.
    text_heads = ("pretraining", "mlm")

    @classmethod
    def text_decoding_refusal(cls, family_config, model_dir):
        head = bert_part(family_config).head
        if head in cls.text_heads:
            return None
        return (f"a {cls.name} run fine-tuned with a {head} head answers its task (a class, a "
                f"value or a span), it writes no text; {eval_on_tasks(model_dir)}"
                + cls.head_export(head, model_dir))

    @classmethod
    def head_export(cls, head: str, model_dir: str) -> str:
        """How a run fine-tuned with `head` is used outside this command line, where its
        format has a model for the head (a clause to follow the refusal of text decoding)."""
        if head not in hf.HEAD_CLASSES:
            return ""
        return (f"; or export it (python -m model export --family bert --format hf --model_dir "
                f"{model_dir} --export_dir OUT) and run the Python of OUT/README.md")

    # ----------------------------------------------------------------------------------------
    # Contract with the model core: the body's features and the head's (heads.py).

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        return ("bert_input_tokens", "bert_token_types") + self.head.feature_keys

    @property
    def float_feature_keys(self) -> Tuple[str, ...]:
        """A regression head's label is a float value (STS-B's scores from 0 to 5)."""
        return self.head.float_feature_keys

    def convert_features(self, dataset, sequence_lengths, pack=True):
        raise NotImplementedError(
            "BERT's features come from documents (model/families/bert/inputs.py), not from "
            "{inputs, targets} examples")

    def build(self, training: bool) -> Built:
        return Built(training=training)

    def optimizer(self, learning_rate):
        return AdamWeightDecay(learning_rate, beta1=self.bert.adam_beta1,
                               beta2=self.bert.adam_beta2, epsilon=self.bert.adam_epsilon,
                               weight_decay=self.bert.weight_decay_rate)

    def losses(self, model: Built, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        batch = self.head.per_example(batch)
        return self.head.losses(self.encode(batch, model.training), batch, model.training)

    def predict(self, model: Built, inputs: mtf.Tensor, decode_length: int, beam_size: int = 1,
                alpha: float = 0.6, **features: mtf.Tensor) -> mtf.Tensor:
        """The head's PREDICT output (heads.py) for `inputs`, the token types read from them
        (segment B after the first [SEP]). `features`: those of `predict_feature_keys` the
        input has (SegaBERT's indices), read as in training."""
        del beam_size, alpha
        batch = self.head.per_example({"bert_input_tokens": inputs, **features})
        tokens = batch["bert_input_tokens"]
        batch["bert_token_types"] = token_types_from_inputs(tokens, self.special.sep)
        return self.head.predict(self.encode(batch, model.training), inputs, decode_length)

    # ----------------------------------------------------------------------------------------
    # The encoder.

    @property
    def d_model(self) -> mtf.Dimension:
        return mtf.Dimension("d_model", self.config.d_model)

    @property
    def vocab_dim(self) -> mtf.Dimension:
        return mtf.Dimension("vocab", self.vocab_size)

    @property
    def activation(self):
        """The GELU of the feed-forward and the MLM transform (BertConfig.hidden_act)."""
        return ACTIVATIONS[self.bert.hidden_act]

    def _initializer(self):
        return tf.truncated_normal_initializer(stddev=self.bert.initializer_range)

    def variable(self, mesh, name, dims, initializer=None):
        return mtf.get_variable(mesh, name, mtf.Shape(dims),
                                initializer=initializer or self._initializer(),
                                dtype=self.variable_dtype)

    def dense(self, x, reduced_dims, new_dims, name, activation=None):
        return mtf.layers.dense(x, new_dims=new_dims, reduced_dims=reduced_dims, use_bias=True,
                                activation=activation, variable_dtype=self.variable_dtype,
                                kernel_initializer=self._initializer(), name=name)

    def layer_norm(self, x, name="layer_norm"):
        """LayerNorm over d_model with scale and bias (BERT's, epsilon 1e-12)."""
        with tf.variable_scope(name):
            mean = mtf.reduce_mean(x, reduced_dim=self.d_model)
            centred = x - mean
            variance = mtf.reduce_mean(mtf.square(centred), reduced_dim=self.d_model)
            normed = centred * mtf.rsqrt(variance + self.bert.layer_norm_epsilon)
            scale = self.variable(x.mesh, "scale", [self.d_model], tf.ones_initializer())
            bias = self.variable(x.mesh, "bias", [self.d_model], tf.zeros_initializer())
            return normed * scale + bias

    def dropout(self, x, training):
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
        table = self.variable(tokens.mesh, "position_embeddings", [positions_dim, self.d_model])
        return mtf.gather(table, mtf.range(tokens.mesh, length_dim, tf.int32), positions_dim)

    def embed(self, batch: Dict[str, mtf.Tensor], training: bool
              ) -> Tuple[mtf.Tensor, mtf.Tensor]:
        """[batch, length, d_model] embedded inputs, and the [vocab, d_model] word embedding
        (which the MLM head's output shares)."""
        tokens = batch["bert_input_tokens"]
        mesh = tokens.mesh
        with tf.variable_scope("embeddings"):
            word_embeddings = self.variable(mesh, "word_embeddings",
                                            [self.vocab_dim, self.d_model])
            types_dim = mtf.Dimension("token_types", self.bert.type_vocab_size)
            type_table = self.variable(mesh, "token_type_embeddings", [types_dim, self.d_model])
            x = (mtf.gather(word_embeddings, tokens, self.vocab_dim)
                 + mtf.gather(type_table, batch["bert_token_types"], types_dim)
                 + self.position_embedding(batch))
            x = self.layer_norm(x)
        return self.dropout(x, training), word_embeddings

    def _self_attention(self, x, key_bias, training):
        length_dim = x.shape.dims[-2]
        memory_dim = mtf.Dimension("memory_length", length_dim.size)
        heads = mtf.Dimension("heads", self.config.num_heads)
        d_kv = mtf.Dimension("d_kv", self.config.d_kv)
        memory = mtf.rename_dimension(x, length_dim.name, memory_dim.name)
        q = self.dense(x, [self.d_model], [heads, d_kv], "query")
        k = self.dense(memory, [self.d_model], [heads, d_kv], "key")
        v = self.dense(memory, [self.d_model], [heads, d_kv], "value")
        scores = mtf.einsum([q, k], reduced_dims=[d_kv]) * d_kv.size ** -0.5
        scores += mtf.rename_dimension(key_bias, length_dim.name, memory_dim.name)
        weights = self.dropout(mtf.softmax(scores, memory_dim), training)
        context = mtf.einsum([weights, v], reduced_dims=[memory_dim])
        return self.dense(context, [heads, d_kv], [self.d_model], "output")

    def _feedforward(self, x):
        d_ff = mtf.Dimension("d_ff", self.config.d_ff)
        hidden = self.dense(x, [self.d_model], [d_ff], "intermediate",
                            activation=self.activation)
        return self.dense(hidden, [d_ff], [self.d_model], "output")

    def encode(self, batch: Dict[str, mtf.Tensor], training: bool) -> Encoded:
        """The final hidden states, the pooled [CLS] and the word embedding, for the head."""
        tokens = batch["bert_input_tokens"]
        key_bias = mtf.cast(mtf.cast(mtf.equal(tokens, PAD_ID), tf.float32) * _ATTENTION_MASK_BIAS,
                            self.variable_dtype.activation_dtype)
        with tf.variable_scope("bert"):
            x, word_embeddings = self.embed(batch, training)
            with tf.variable_scope("encoder"):
                for block in range(self.config.num_layers):
                    with tf.variable_scope(f"block_{block:03d}"):
                        with tf.variable_scope("attention"):
                            attended = self._self_attention(x, key_bias, training)
                            x = self.layer_norm(x + self.dropout(attended, training))
                        with tf.variable_scope("feedforward"):
                            x = self.layer_norm(x + self.dropout(self._feedforward(x), training))
            with tf.variable_scope("pooler"):
                first = mtf.gather(x, 0, tokens.shape.dims[-1])
                pooled = self.dense(first, [self.d_model], [self.d_model], "dense",
                                    activation=mtf.tanh)
        return Encoded(x, pooled, word_embeddings)
