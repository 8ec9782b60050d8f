"""GPT-1 (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training") as a
model family: a decoder-only Transformer pre-trained by next-token prediction, fine-tuned with a
linear head on the extract token's final state plus the auxiliary LM loss.

Architecture, as OpenAI's `finetune-transformer-lm` (and transformers' OpenAIGPTModel, whose
parameter count ours equals at every size, tests/model/test_gpt1.py):
- token embedding plus learned position embedding (`GPT1Config.max_positions`, 512), dropout;
- `num_layers` POST-layer-norm blocks: x = LN(x + dropout(attention(x))), then
  x = LN(x + dropout(mlp(x))); layer norm with gain and bias (epsilon 1e-5); attention with
  biased q, k, v and output projections, causal, dropout on the attention weights; MLP d_model ->
  d_ff -> d_model with biases and GELU (tanh form, mtf.gelu = OpenAI's); no final layer norm;
- output logits from the token embedding (tied, unscaled); the vocabulary is not padded.
mesh_tensorflow.transformer's LayerStack is pre-norm only, so the stack is written here with mtf
ops; dimension names (batch, heads, d_ff, vocab) are the ones MeshConfig's layout splits.
Initialisation as OpenAI: normal(0, 0.02) weights, zero biases, unit gains.

Pre-training reads the `decoder_only` features (model/data/features.py) of the `lm` objective: rows
of DataConfig.targets_length tokens, documents packed with segment ids (attention stays within a
segment, positions restart at 0), in random minibatches as the paper's (gpt1/pretrain.gin shuffles
the rows in blocks: DataConfig.shuffle_windows, model/data/inputs.py). The optimizer is OpenAI's Adam
(bias-corrected, beta 0.9/0.999, eps 1e-8) with their "modified L2": w * param added to the
update (decoupled from the gradient moments) for weights of rank > 1 only, not biases or gains,
the whole update scaled by the bias-corrected step size, as their opt.py (`GPTAdam`).

Fine-tuning (`GPT1Config.head`, set by model/families/gpt1/finetune.py from the task's discriminative
view) reads `head_tokens` [batch, sequences * length] (each example's transformed sequences, see
`transform`) and `label` [batch, 1]: the final states at the extract tokens go through dropout
(`classifier_dropout`) and a linear head; classification and regression sum the states of their
sequences (one, or the two orders of a symmetric pair, GPT-1's similarity) before the head;
multiple choice scores each sequence and takes the softmax over them. Classification and
multiple choice minimise cross entropy; regression (STS-B) predicts one value and minimises the
squared error, its float label kept float32 by the model function (`float_feature_keys`). The
objective adds `lm_loss_weight` times the LM loss over the same sequences, as OpenAI's: every
token after the start is a target (text, delimiter, extract), averaged per sequence, then over
the sequences. OpenAI's softmax also spans the position rows of their joint embedding matrix;
ours spans the vocabulary (the special tokens' rows included), as no position is ever a target.
PREDICT reads `head_tokens` as its `inputs` and returns the head's value or class.

Special tokens: GPT-1's start, delimiter and extract tokens are the last three ids of the
vocabulary (model/families/gpt1/inputs.py `special_tokens`): OpenAI's `_start_`, `_delimiter_`,
`_classify_` appended after its BPE pieces (model/families/gpt1/bpe.py, `GPT1.vocabulary` reads
it for an encoder file), or the sentinel pieces `<extra_id_0>`, `<extra_id_1>`, `<extra_id_2>` of
our SentencePiece vocabularies (the last ids, counting down; the run's vocabulary, which the
trainer gives the family, says which order) (ordinary text never produces them, and the `lm`
objective uses no sentinels), so pre-trained and fine-tuned models share one embedding; with a
head, their three rows, in and out, are fresh ones (`gpt1/head/special_embedding`), as OpenAI
appended theirs at fine-tuning. The auxiliary LM loss covers each sequence up to its extract
token, not by its ids: OpenAI's BPE has a piece at id 0, our padding.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Sequence, Tuple

import tensorflow.compat.v1 as tf

from model.data import features
from model.data.vocabulary import Vocabulary
from model.families.base import ModelFamily, eval_on_tasks
from model.families.gpt1 import finetune, hf, openai
from model.families.gpt1.bpe import BpeVocabulary, is_encoder_file
from model.families.gpt1.config import GPT1Config
from model.families.gpt1.inputs import HEAD_KEYS, special_tokens
from model.tasks import discriminative
from model.convert.checkpoints import TransformersFormat
from model.trainer.adam import DecoupledAdam, bias_correction_step
from model.trainer.losses import Losses, token_losses
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf

ARCHITECTURE = "gpt1"
INITIALIZER_STDDEV = 0.02


# --- The model -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GPT1Model:
    """Sizes and switches of one built model; its layers are called under the mesh of the
    tensors given."""

    config: ModelConfig
    gpt1: GPT1Config
    vocab_size: int
    training: bool
    variable_dtype: mtf.VariableDType

    def _dropout(self, x: mtf.Tensor, rate: float) -> mtf.Tensor:
        return mtf.dropout(x, self.training, rate=rate) if self.training and rate else x

    def _variable(self, mesh, name: str, dims: Sequence[mtf.Dimension], initializer):
        return mtf.get_variable(mesh, name, mtf.Shape(list(dims)), initializer=initializer,
                                dtype=self.variable_dtype)

    def _dense(self, x, new_dims, reduced_dims, name):
        return mtf.layers.dense(
            x, new_dims, reduced_dims=reduced_dims, use_bias=True, name=name,
            variable_dtype=self.variable_dtype,
            kernel_initializer=tf.random_normal_initializer(stddev=INITIALIZER_STDDEV))

    def _layer_norm(self, x: mtf.Tensor, dim: mtf.Dimension, name: str) -> mtf.Tensor:
        with tf.variable_scope(name):
            gain = self._variable(x.mesh, "g", [dim], tf.ones_initializer())
            bias = self._variable(x.mesh, "b", [dim], tf.zeros_initializer())
        mean = mtf.reduce_mean(x, reduced_dim=dim)
        variance = mtf.reduce_mean(mtf.square(x - mean), reduced_dim=dim)
        return (x - mean) * mtf.rsqrt(variance + self.gpt1.layer_norm_epsilon) * gain + bias

    @property
    def dims(self) -> Dict[str, mtf.Dimension]:
        c = self.config
        return {"d_model": mtf.Dimension("d_model", c.d_model),
                "heads": mtf.Dimension("heads", c.num_heads),
                "d_kv": mtf.Dimension("d_kv", c.d_kv),
                "d_ff": mtf.Dimension("d_ff", c.d_ff),
                "vocab": mtf.Dimension("vocab", self.vocab_size),
                "positions": mtf.Dimension("max_positions", self.gpt1.max_positions)}

    def token_embedding(self, mesh: mtf.Mesh) -> mtf.Tensor:
        """The [vocab, d_model] token embedding, the input's rows and the tied output's. With a
        head, the special tokens take fresh rows of their own (`gpt1/head/special_embedding`),
        in and out, as OpenAI appended theirs to the embedding at fine-tuning: the rows of
        pieces that pre-training never reads only ever get pushed away by the tied softmax (with
        Adam, by about the learning rate per step), so they would start fine-tuning far off."""
        d = self.dims
        with tf.variable_scope("gpt1", reuse=tf.AUTO_REUSE):
            pretrained = self._variable(mesh, "token_embedding", [d["vocab"], d["d_model"]],
                                        tf.random_normal_initializer(stddev=INITIALIZER_STDDEV))
            if not self.gpt1.head:
                return pretrained
            special_dim = mtf.Dimension("special", 3)
            with tf.variable_scope("head"):
                special = self._variable(mesh, "special_embedding", [special_dim, d["d_model"]],
                                         tf.random_normal_initializer(stddev=INITIALIZER_STDDEV))
        first = self.vocab_size - 3  # start, delimiter, extract: the last 3 (gpt1/inputs.py)
        ids = mtf.range(mesh, d["vocab"], tf.int32)
        special_rows = mtf.gather(special, mtf.maximum(ids - first, 0), special_dim)
        return mtf.where(mtf.greater_equal(ids, first), special_rows, pretrained)

    def _attention(self, x, segment_ids, length_dim, name):
        d = self.dims
        memory_dim = mtf.Dimension("memory_length", length_dim.size)
        with tf.variable_scope(name):
            q, k, v = (self._dense(x, [d["heads"], d["d_kv"]], [d["d_model"]], n)
                       for n in ("q", "k", "v"))
            k, v = (mtf.replace_dimensions(t, length_dim, memory_dim) for t in (k, v))
            scores = mtf.einsum([q, k], reduced_dims=[d["d_kv"]]) * (self.config.d_kv ** -0.5)
            query_index = mtf.range(x.mesh, length_dim, tf.int32)
            memory_index = mtf.range(x.mesh, memory_dim, tf.int32)
            visible = mtf.logical_and(
                mtf.less_equal(memory_index, query_index),
                mtf.equal(segment_ids, mtf.replace_dimensions(segment_ids, length_dim, memory_dim)))
            scores += (1.0 - mtf.cast(visible, scores.dtype)) * -1e9
            weights = self._dropout(mtf.softmax(scores, memory_dim), self.config.dropout_rate)
            attended = mtf.einsum([weights, v], reduced_dims=[memory_dim])
            return self._dense(attended, [d["d_model"]], [d["heads"], d["d_kv"]], "output")

    def _mlp(self, x, name):
        d = self.dims
        with tf.variable_scope(name):
            hidden = mtf.gelu(self._dense(x, [d["d_ff"]], [d["d_model"]], "fc"))
            return self._dense(hidden, [d["d_model"]], [d["d_ff"]], "projection")

    def hidden_states(self, tokens: mtf.Tensor, positions: mtf.Tensor,
                      segment_ids: mtf.Tensor) -> mtf.Tensor:
        """[..., length, d_model] final states of [..., length] tokens."""
        d = self.dims
        length_dim = tokens.shape.dims[-1]
        if length_dim.size > self.gpt1.max_positions:
            raise ValueError(f"sequences of {length_dim.size} tokens exceed GPT1Config."
                             f"max_positions = {self.gpt1.max_positions}")
        embedding = self.token_embedding(tokens.mesh)
        with tf.variable_scope("gpt1", reuse=tf.AUTO_REUSE):
            position_embedding = self._variable(
                tokens.mesh, "position_embedding", [d["positions"], d["d_model"]],
                tf.random_normal_initializer(stddev=INITIALIZER_STDDEV))
            x = (mtf.gather(embedding, tokens, d["vocab"])
                 + mtf.gather(position_embedding, positions, d["positions"]))
            x = mtf.cast(self._dropout(x, self.config.dropout_rate),
                         self.variable_dtype.activation_dtype)
            for block in range(self.config.num_layers):
                with tf.variable_scope(f"block_{block:03d}"):
                    sublayer = self._attention(x, segment_ids, length_dim, "attention")
                    x = self._layer_norm(x + self._dropout(sublayer, self.config.dropout_rate),
                                         d["d_model"], "attention_norm")
                    sublayer = self._mlp(x, "mlp")
                    x = self._layer_norm(x + self._dropout(sublayer, self.config.dropout_rate),
                                         d["d_model"], "mlp_norm")
            return x

    def logits(self, hidden: mtf.Tensor) -> mtf.Tensor:
        """Next-token logits from the tied token embedding."""
        return mtf.einsum([hidden, self.token_embedding(hidden.mesh)],
                          reduced_dims=[self.dims["d_model"]])

    def head_logits(self, extract_states: mtf.Tensor, choices_dim: mtf.Dimension) -> mtf.Tensor:
        """[batch, classes] from [batch, choices, d_model] extract states (regression: one
        class, the value; the similarity transformation's two states are summed as a
        classification's)."""
        d = self.dims
        states = self._dropout(extract_states, self.gpt1.classifier_dropout)
        with tf.variable_scope("gpt1/head"):
            if self.gpt1.head == discriminative.MULTIPLE_CHOICE:
                scores = self._dense(states, [mtf.Dimension("score", 1)], [d["d_model"]],
                                     "classifier")
                return mtf.reshape(scores, mtf.Shape(
                    [states.shape.dims[0], mtf.Dimension("classes", choices_dim.size)]))
            summed = mtf.reduce_sum(states, reduced_dim=choices_dim)
            return self._dense(summed, [mtf.Dimension("classes", self.gpt1.num_classes)],
                               [d["d_model"]], "classifier")


class GPT1(ModelFamily):
    name = "gpt1"
    converter = features.DecoderOnlyConverter
    architectures = (ARCHITECTURE,)
    fresh_on_warm_start = (r"gpt1/head/.*",)
    gradient_clip_norm = 1.0
    # Fine-tuning starts from the weights only, at step 0 (ModelFamily).
    warm_start_continues_training = False

    config_class = GPT1Config

    def __init__(self, config, vocab_size, variable_dtype=mtf.VariableDType(),
                 run_vocabulary: Optional[Vocabulary] = None,
                 family_config: Optional[GPT1Config] = None):
        super().__init__(config, vocab_size, variable_dtype, run_vocabulary, family_config)
        self.gpt1: GPT1Config = self.family_config
        # The run's vocabulary says the special tokens' order (OpenAI's BPE, or ours: also
        # without one).
        self.special = special_tokens(vocab_size, isinstance(run_vocabulary, BpeVocabulary))

    @classmethod
    def checkpoint_formats(cls):
        # hf: transformers' OpenAIGPTLMHeadModel (the pre-trained model; no head); openai:
        # finetune-transformer-lm's released model/ folder (import).
        def conversion():
            return hf.conversion(cls, cls.configured_family_config())
        return {"hf": TransformersFormat(conversion), "openai": openai.OpenAIFormat(conversion)}

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        return HEAD_KEYS if self.gpt1.head else self.converter.model_features

    @property
    def float_feature_keys(self) -> Tuple[str, ...]:
        """A regression head's label is a float value (STS-B's scores from 0 to 5)."""
        return ("label",) if self.gpt1.head == discriminative.REGRESSION else ()

    def build(self, training: bool) -> GPT1Model:
        return GPT1Model(self.config, self.gpt1, self.vocab_size, training, self.variable_dtype)

    def losses(self, model: GPT1Model, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        if self.gpt1.head:
            return self._head_losses(model, batch)
        hidden = model.hidden_states(batch["decoder_input_tokens"], batch["decoder_positions"],
                                     batch["decoder_segment_ids"])
        return token_losses(model.logits(hidden), batch["decoder_target_tokens"],
                            batch["decoder_loss_weights"], z_loss=0.0)

    def _head_outputs(self, model: GPT1Model, flat: mtf.Tensor
                      ) -> Tuple[mtf.Tensor, mtf.Tensor, mtf.Tensor]:
        """The head's float32 [batch, classes] logits (or [batch, 1] value), the final hidden
        states and the [batch, sequences, length] tokens of `head_tokens` [batch, sequences *
        length]."""
        batch_dim, flat_dim = flat.shape.dims
        count = self.gpt1.sequences_per_example
        choices_dim = mtf.Dimension("choices", count)
        length_dim = mtf.Dimension("length", flat_dim.size // count)
        tokens = mtf.reshape(flat, mtf.Shape([batch_dim, choices_dim, length_dim]))
        positions = mtf.broadcast(mtf.range(flat.mesh, length_dim, tf.int32), tokens.shape)
        hidden = model.hidden_states(tokens, positions, mtf.ones(flat.mesh, tokens.shape, tf.int32))
        extract_id = self.special.extract
        at_extract = mtf.cast(mtf.equal(tokens, extract_id), hidden.dtype)
        extract_states = mtf.reduce_sum(hidden * at_extract, reduced_dim=length_dim)
        logits = mtf.cast(model.head_logits(extract_states, choices_dim), tf.float32)
        return logits, hidden, tokens

    def _head_losses(self, model: GPT1Model, batch: Dict[str, mtf.Tensor]) -> Losses:
        logits, hidden, tokens = self._head_outputs(model, batch["head_tokens"])
        batch_dim, classes_dim = logits.shape.dims
        label = mtf.reshape(batch["label"], mtf.Shape([batch_dim]))
        ones = mtf.ones(tokens.mesh, mtf.Shape([batch_dim]), tf.float32)
        if self.gpt1.head == discriminative.REGRESSION:
            value = mtf.reshape(logits, mtf.Shape([batch_dim]))
            per_example = mtf.square(value - label)
            metrics = {"squared_error": (per_example, ones)}
        else:
            per_example = mtf.layers.softmax_cross_entropy_with_logits(
                logits, mtf.one_hot(label, classes_dim, dtype=tf.float32), classes_dim)
            predicted = mtf.cast(mtf.argmax(logits, classes_dim), tf.int32)
            correct = mtf.cast(mtf.equal(predicted, label), tf.float32)
            metrics = {"accuracy": (correct, ones), "classification_loss": (per_example, ones)}
        head_loss = mtf.reduce_mean(per_example)
        # The auxiliary LM loss as OpenAI's (train.py `model`: mask M[:, 1:]): every token
        # of a sequence after the start is predicted, the delimiter and extract tokens included
        # (from their own rows of the tied embedding, `token_embedding`), averaged per sequence,
        # then over the sequences of the batch. The predictions that count are those from the
        # positions before the extract token (OpenAI's BPE has a piece at id 0, the padding).
        length_dim = tokens.shape.dims[-1]
        next_tokens = mtf.shift(tokens, offset=-1, dim=length_dim, wrap=False)
        positions = mtf.range(tokens.mesh, length_dim, tf.int32)
        at_extract = mtf.cast(mtf.equal(tokens, self.special.extract), tf.int32)
        extract_position = mtf.reduce_sum(positions * at_extract, reduced_dim=length_dim)
        lm = token_losses(model.logits(hidden), next_tokens,
                          mtf.cast(mtf.less(positions, extract_position), tf.int32), z_loss=0.0)
        sums, counts = lm.metrics["token_loss"]  # [batch, sequences]
        lm_loss = mtf.reduce_mean(sums / mtf.maximum(counts, 1.0))
        return Losses(loss=head_loss, objective=head_loss + self.gpt1.lm_loss_weight * lm_loss,
                      metrics=metrics)

    def predict(self, model, inputs, decode_length, beam_size=1, alpha=0.6):
        """A fine-tuned head's answer for `inputs` laid out as `head_tokens`: [batch, 1], the
        value (float32) of a regression head, else the chosen class or answer (int32). GPT-1
        has no text decoding here: it is pre-trained as a language model and fine-tuned with
        heads (model/families/gpt1/finetune.py)."""
        if not self.gpt1.head:
            raise ValueError("GPT-1 predicts with a fine-tuning head only (GPT1Config.head)")
        logits, _, _ = self._head_outputs(model, inputs)
        if self.gpt1.head == discriminative.REGRESSION:
            return logits
        classes_dim = logits.shape.dims[-1]
        chosen = mtf.cast(mtf.argmax(logits, classes_dim), tf.int32)
        return mtf.reshape(chosen, mtf.Shape([logits.shape.dims[0], mtf.Dimension("classes", 1)]))

    @classmethod
    def text_decoding_refusal(cls, family_config, model_dir):
        head = family_config.head
        export = (f"export it (python -m model export --family gpt1 --format hf --model_dir "
                  f"{model_dir} --export_dir OUT) and run the Python of OUT/README.md")
        if not head:
            return ("GPT-1 is pre-trained here to be fine-tuned with heads; this command line "
                    f"does not continue text with it: {export} (OpenAIGPTLMHeadModel generates)")
        reason = (f"a GPT-1 run fine-tuned with a {head} head answers its task, it writes no "
                  f"text; {eval_on_tasks(model_dir)}")
        return reason + (f"; or {export}" if head == discriminative.MULTIPLE_CHOICE else "")

    @classmethod
    def vocabulary(cls, path: str):
        """OpenAI's BPE for an encoder file (`encoder_bpe_40000.json` of OpenAI's release,
        `vocab.json` of transformers'), else a SentencePiece model."""
        if is_encoder_file(path):
            return BpeVocabulary(path)
        return Vocabulary(path)

    @classmethod
    def training_stream(cls, run):
        _pretrains_with(run.vocabulary)
        return super().training_stream(run)

    @classmethod
    def validation_examples(cls, run):
        _pretrains_with(run.vocabulary)
        return super().validation_examples(run)

    @classmethod
    def task_plan(cls, run, request, training):
        return finetune.task_plan(run, request, training)

    def optimizer(self, learning_rate) -> mtf.optimize.Optimizer:
        return GPTAdam(learning_rate, self.gpt1.adam_beta1, self.gpt1.adam_beta2,
                       self.gpt1.adam_epsilon, self.gpt1.weight_decay)


def _pretrains_with(vocabulary) -> None:
    """Pre-training streams are SentencePiece's (tokenised in tf.data, id 0 padding, EOS 1
    after each chunk); OpenAI's BPE has ordinary pieces at ids 0 and 1."""
    if isinstance(vocabulary, BpeVocabulary):
        raise ValueError(f"GPT-1 pre-trains with a SentencePiece vocabulary; OpenAI's BPE "
                         f"({vocabulary.path}) is read for fine-tuning its released weights")


# Biases and layer-norm gains and biases: the parameters the modified L2 leaves alone. OpenAI's
# rule is "rank > 1", as all their biases are vectors; our q, k, v biases are [heads, d_kv]
# matrices, so the rule goes by name.
_NOT_WEIGHTS = ("/bias", "/b", "/g")


def is_weight(variable_name: str) -> bool:
    """Whether the modified L2 applies: kernels and embeddings, not biases or gains."""
    return not variable_name.endswith(_NOT_WEIGHTS)


class GPTAdam(DecoupledAdam):
    """OpenAI's Adam for GPT-1 (`adam` in finetune-transformer-lm's opt.py): the bias correction
    is folded into the step size, `lrt = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`, and that step
    size scales both the Adam step `m / (sqrt(v) + epsilon)` and the modified L2 term
    `weight_decay * param`, the latter on weights only (`is_weight`: not biases or gains),
    outside the moments (decoupled: vector_l2 off). The slots and moments are the trainer's
    (model/trainer/adam.py)."""

    def __init__(self, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.01):
        super().__init__(learning_rate, beta1, beta2, epsilon, weight_decay)

    def step_size(self) -> tf.Tensor:
        step = bias_correction_step()
        return (self.learning_rate * tf.sqrt(1.0 - tf.pow(self.beta2, step))
                / (1.0 - tf.pow(self.beta1, step)))

    def decays(self, variable_name: str) -> bool:
        return is_weight(variable_name)


def count_parameters(config: ModelConfig, vocab_size: int, gpt1: GPT1Config = GPT1Config()) -> int:
    """Trainable parameters of the pre-training model, from the variable shapes of an mtf graph
    that is never lowered."""
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "parameter_count_mesh")
    shape = mtf.Shape([mtf.Dimension("batch", 1), mtf.Dimension("length", 4)])
    tokens = mtf.ones(mesh, shape, dtype=tf.int32)
    model = GPT1Model(config, gpt1, vocab_size, training=False, variable_dtype=mtf.VariableDType())
    model.logits(model.hidden_states(tokens, tokens, tokens))
    return sum(variable.outputs[0].shape.size for variable in graph.trainable_variables)


__all__ = ["ARCHITECTURE", "GPT1", "GPT1Config", "GPT1Model", "GPTAdam", "count_parameters",
           "is_weight"]
