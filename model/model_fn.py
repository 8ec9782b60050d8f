"""One TPUEstimator model function for every mode and mesh: CPU tests and TPUs run this same code.

Features come from `model.inputs` (int32, fixed shapes, packed). They map onto Mesh TensorFlow's
transformer arguments as:
    encoder_input_tokens -> inputs                 encoder_segment_ids -> encoder_sequence_id
    decoder_target_tokens -> targets               decoder_segment_ids -> (decoder_)sequence_id
    decoder_input_tokens -> inputs (decoder-only)  *_positions -> *_position (unused: relative
    decoder_loss_weights -> loss weights             attention takes positions from the index)
The Bitransformer derives its decoder inputs from the targets and segment ids itself (the same
shift-right-within-segment as `decoder_input_tokens`). A prefix LM finds its bidirectional prefix
from the `<inputs> EOS <targets> EOS` layout of each packed example (Mesh TF's `delimited_lm`:
positions with an even count of earlier EOS in the row, plus one), so it ignores
`decoder_causal_attention` yet equals it while every example's inputs and targets end in EOS, as
`objectives.append_eos_after_trim` makes them (tests/test_prefix_lm.py checks it on packed rows);
an example without those EOS would misplace the prefix of every later segment in its row.
PREDICT mode takes one feature, `inputs`: token ids ending in EOS, zero padded.
"""
from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from typing import Callable, Dict, Optional

import gin
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow_estimator.python.estimator.tpu import tpu_estimator

from model.architectures import Architecture, Model, ModelConfig, build_model
from model.mtf_compat import mtf, placement_mesh_impl, simd_mesh_impl

ENCODER_DECODER_KEYS = ("encoder_input_tokens", "encoder_segment_ids", "decoder_target_tokens",
                        "decoder_segment_ids", "decoder_loss_weights")
DECODER_ONLY_KEYS = ("decoder_target_tokens", "decoder_input_tokens", "decoder_segment_ids",
                     "decoder_loss_weights")
LOSS_LOG_NAME = "train_loss.jsonl"


@gin.configurable(module="lr")
def inverse_sqrt(step: tf.Tensor, warmup_steps: int = 10000) -> tf.Tensor:
    """The pre-training schedule: 1 / sqrt(max(step, warmup_steps)), constant 0.01 at first."""
    step = tf.cast(step, tf.float32)
    return tf.math.rsqrt(tf.maximum(step, float(warmup_steps)))


@gin.configurable(module="lr")
def constant(step: tf.Tensor, value: float = 0.001) -> tf.Tensor:
    """The fine-tuning schedule."""
    del step
    return tf.constant(value, tf.float32)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """Mesh shape and layout, in Mesh TensorFlow's string syntax.

    The default layout splits the batch over a `batch` mesh axis (data parallelism) and the
    feed-forward, heads and vocabulary dimensions over a `model` axis (model parallelism); rules
    whose mesh axis is absent from `mesh_shape` are ignored, so `mesh_shape` alone picks the mix:
    "" (one device), "batch:2", "model:2", "batch:8,model:4".
    """

    mesh_shape: str = ""
    layout: str = "batch:batch,d_ff:model,heads:model,vocab:model"

    @property
    def shape(self) -> mtf.Shape:
        return mtf.convert_to_shape(self.mesh_shape)

    @property
    def layout_rules(self) -> mtf.LayoutRules:
        return mtf.convert_to_layout_rules(self.layout)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class OptimizationConfig:
    """Adafactor (T5's settings: factored second moments, decay 0.8 power, clipping 1, no
    momentum, parameter-scaled updates) driven by a learning-rate schedule of the global step."""

    learning_rate_schedule: Callable[[tf.Tensor], tf.Tensor] = inverse_sqrt
    # T5's auxiliary loss that keeps log(sum(exp(logits))) near zero.
    z_loss: float = 1e-4


@dataclasses.dataclass(frozen=True)
class ModelFnSetup:
    """Everything the model function needs besides features: all of it fixed per run."""

    model_config: ModelConfig
    mesh_config: MeshConfig
    optimization: OptimizationConfig
    vocab_size: int
    model_dir: str
    save_checkpoints_steps: int
    keep_checkpoint_max: int
    decode_length: int
    use_tpu: bool = False
    # Warm start (fine-tuning): weights and optimizer slots from this checkpoint; step restarts.
    init_checkpoint: Optional[str] = None


class NonFiniteLossError(RuntimeError):
    """Training stopped because the loss became NaN or infinite."""


def non_finite_loss_error(loss: float, step: int, model_dir: str) -> NonFiniteLossError:
    last = tf.train.latest_checkpoint(model_dir)
    return NonFiniteLossError(
        f"training loss is {loss} at step {step}: stopping. The last checkpoint is "
        f"{last or 'none'}. Lower the learning rate or check the inputs, then resume.")


def last_logged_step(model_dir: str) -> int:
    log = pathlib.Path(model_dir) / LOSS_LOG_NAME
    lines = log.read_text().splitlines() if log.is_file() else []
    return json.loads(lines[-1])["step"] if lines else 0


class LossMonitorHook(tf.train.SessionRunHook):
    """Checks every step's loss is finite (stops with a clear error otherwise) and appends
    {"step", "loss"} to `train_loss.jsonl` in the model directory, so curves can be compared
    across interrupted runs."""

    def __init__(self, loss: tf.Tensor, step: tf.Tensor, model_dir: str):
        self._fetches = {"loss": loss, "step": step}
        self._model_dir = pathlib.Path(model_dir)
        self._log_path = self._model_dir / LOSS_LOG_NAME

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        loss = float(run_values.results["loss"])
        step = int(run_values.results["step"])
        if not math.isfinite(loss):
            raise non_finite_loss_error(loss, step, str(self._model_dir))
        with self._log_path.open("a") as log:
            log.write(json.dumps({"step": step, "loss": loss}) + "\n")


def _mesh_impl(setup: ModelFnSetup, params: dict) -> mtf.MeshImpl:
    shape, layout = setup.mesh_config.shape, setup.mesh_config.layout_rules
    if setup.use_tpu:
        context = params["context"]
        return simd_mesh_impl.SimdMeshImpl(
            shape, layout, [""] * shape.size, context.device_assignment)
    return placement_mesh_impl.PlacementMeshImpl(shape, layout, [""] * shape.size)


def _import_features(features: Dict[str, tf.Tensor], keys, mesh: mtf.Mesh
                     ) -> Dict[str, mtf.Tensor]:
    missing = [key for key in keys if key not in features]
    if missing:
        raise ValueError(f"the input features lack {missing}; they have {sorted(features)}")
    imported = {}
    for key in keys:
        tensor = tf.cast(features[key], tf.int32)
        batch, length = tensor.shape.as_list()
        if batch is None or length is None:
            raise ValueError(f"feature {key} needs a fixed shape, got {tensor.shape}")
        shape = mtf.Shape([mtf.Dimension("batch", batch), mtf.Dimension("length", length)])
        imported[key] = mtf.import_fully_replicated(mesh, tensor, shape, name=key)
    return imported


def _logits(model: Model, kind: Architecture, feats: Dict[str, mtf.Tensor], mode: str
            ) -> mtf.Tensor:
    """Teacher-forced logits, [batch, length, vocab]."""
    if kind.is_encoder_decoder:
        logits, _ = model.call_simple(
            inputs=feats["encoder_input_tokens"],
            targets=feats["decoder_target_tokens"],
            compute_loss=False,
            mode=mode,
            encoder_sequence_id=feats["encoder_segment_ids"],
            decoder_sequence_id=feats["decoder_segment_ids"])
        return logits
    logits, _ = model.call_simple(
        inputs=feats["decoder_input_tokens"],
        targets=feats["decoder_target_tokens"],
        compute_loss=False,
        mode=mode,
        sequence_id=feats["decoder_segment_ids"])
    return logits


@dataclasses.dataclass(frozen=True)
class TokenLosses:
    cross_entropy: mtf.Tensor  # [batch, length], weighted
    correct: mtf.Tensor  # [batch, length], weighted
    weights: mtf.Tensor  # [batch, length]
    z_loss: mtf.Tensor  # [batch, length], weighted


def _token_losses(logits: mtf.Tensor, targets: mtf.Tensor, loss_weights: mtf.Tensor
                  ) -> TokenLosses:
    vocab_dim = logits.shape.dims[-1]
    logits = mtf.cast(logits, tf.float32)
    weights = mtf.cast(loss_weights, tf.float32)
    cross_entropy = mtf.layers.softmax_cross_entropy_with_logits(
        logits, mtf.one_hot(targets, vocab_dim, dtype=tf.float32), vocab_dim)
    log_z = mtf.reduce_logsumexp(logits, vocab_dim)
    predictions = mtf.cast(mtf.argmax(logits, vocab_dim), tf.int32)
    correct = mtf.cast(mtf.equal(predictions, targets), tf.float32)
    return TokenLosses(cross_entropy * weights, correct * weights, weights,
                       mtf.square(log_z) * weights)


def _decode(model: Model, kind: Architecture, inputs: mtf.Tensor, decode_length: int
            ) -> mtf.Tensor:
    """Greedy decoding (temperature 0, as the paper does): [batch, decode_length] ids."""
    if kind.is_encoder_decoder:
        return model.decode(inputs, beam_size=1, temperature=0.0, max_decode_length=decode_length)
    # A decoder-only model continues its prefix in place: pad, fill, then drop the prefix.
    length_dim = inputs.shape.dims[-1]
    padded = mtf.pad(inputs, [0, decode_length], length_dim.name)
    samples = model.sample_autoregressive(
        padded, temperature=0.0, remove_partial_sequences=True)
    return mtf.slice(samples, length_dim.size, decode_length, length_dim.name)


def _restore_scaffold_fn(lowering: mtf.Lowering) -> Callable[[], tf.train.Scaffold]:
    def scaffold_fn():
        return tf.train.Scaffold(local_init_op=tf.group(
            tf.train.Scaffold.default_local_init_op(), lowering.copy_masters_to_slices()))
    return scaffold_fn


def _warm_start(init_checkpoint: str) -> None:
    """Initialises every variable also in `init_checkpoint`, except the global step."""
    in_checkpoint = {name for name, _ in tf.train.list_variables(init_checkpoint)}
    names = {v.op.name for v in tf.global_variables()} & in_checkpoint
    names.discard(tf.GraphKeys.GLOBAL_STEP)
    tf.train.init_from_checkpoint(init_checkpoint, {name: name for name in sorted(names)})


def make_model_fn(setup: ModelFnSetup):
    """The TPUEstimator model function (TRAIN, EVAL, PREDICT) for `setup`."""
    kind = setup.model_config.kind
    keys = ENCODER_DECODER_KEYS if kind.is_encoder_decoder else DECODER_ONLY_KEYS

    def model_fn(features, labels, mode, params, config=None):
        del labels, config
        mesh_impl = _mesh_impl(setup, params)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        train = mode == tf.estimator.ModeKeys.TRAIN
        model_config = setup.model_config if train else dataclasses.replace(
            setup.model_config, dropout_rate=0.0)
        model = build_model(model_config, setup.vocab_size)

        if mode == tf.estimator.ModeKeys.PREDICT:
            inputs = _import_features(features, ["inputs"], mesh)["inputs"]
            outputs = mtf.anonymize(_decode(model, kind, inputs, setup.decode_length))
            lowering = mtf.Lowering(graph, {mesh: mesh_impl})
            return tpu_estimator.TPUEstimatorSpec(
                mode=mode,
                predictions={"outputs": lowering.export_to_tf_tensor(outputs)},
                scaffold_fn=_restore_scaffold_fn(lowering),
                prediction_hooks=[mtf.MtfRestoreHook(lowering)])

        feats = _import_features(features, keys, mesh)
        logits = _logits(model, kind, feats, mode)
        token = _token_losses(logits, feats["decoder_target_tokens"],
                              feats["decoder_loss_weights"])
        # Mean over the tokens that carry loss: a per-token NLL, whatever the packing.
        num_tokens = mtf.maximum(mtf.reduce_sum(token.weights), 1.0)
        loss = mtf.reduce_sum(token.cross_entropy) / num_tokens

        if mode == tf.estimator.ModeKeys.EVAL:
            length = token.weights.shape.dims[-1]
            per_example = [mtf.anonymize(mtf.reduce_sum(t, reduced_dim=length))
                           for t in (token.cross_entropy, token.correct, token.weights)]
            lowering = mtf.Lowering(graph, {mesh: mesh_impl})
            tf_loss = lowering.export_to_tf_tensor(loss)
            return tpu_estimator.TPUEstimatorSpec(
                mode=mode, loss=tf_loss,
                eval_metrics=(_eval_metrics,
                              [lowering.export_to_tf_tensor(t) for t in per_example]),
                scaffold_fn=_restore_scaffold_fn(lowering),
                evaluation_hooks=[mtf.MtfRestoreHook(lowering)])

        objective = loss + setup.optimization.z_loss * mtf.reduce_sum(token.z_loss) / num_tokens
        variables = graph.trainable_variables
        gradients = mtf.gradients([objective], [v.outputs[0] for v in variables])
        global_step = tf.train.get_or_create_global_step()
        learning_rate = setup.optimization.learning_rate_schedule(global_step)
        optimizer = mtf.optimize.AdafactorOptimizer(learning_rate=learning_rate)
        update_ops = optimizer.apply_grads(gradients, variables)
        lowering = mtf.Lowering(graph, {mesh: mesh_impl})
        tf_loss = tf.cast(lowering.export_to_tf_tensor(loss), tf.float32)
        # The step this update produces, read before the increment (checkpoint N holds steps 1..N).
        this_step = tf.identity(global_step.read_value()) + 1
        with tf.control_dependencies([this_step]):
            increment = tf.assign_add(global_step, 1)
        train_op = tf.group([lowering.lowered_operation(op) for op in update_ops] + [increment])
        if setup.init_checkpoint:
            _warm_start(setup.init_checkpoint)
        return tpu_estimator.TPUEstimatorSpec(
            mode=mode, loss=tf_loss, train_op=train_op,
            host_call=_summaries_host_call(setup.model_dir, this_step, tf_loss, learning_rate),
            training_hooks=_training_hooks(setup, lowering, tf_loss, this_step))

    return model_fn


def _training_hooks(setup: ModelFnSetup, lowering: mtf.Lowering, loss: tf.Tensor,
                    step: tf.Tensor) -> list:
    saver = tf.train.Saver(tf.global_variables(), sharded=True,
                           max_to_keep=setup.keep_checkpoint_max, save_relative_paths=True)
    tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
    # Order matters: the loss check runs before the saver, so a NaN step is never checkpointed.
    return [
        mtf.MtfRestoreHook(lowering),
        LossMonitorHook(loss, step, setup.model_dir),
        tf.train.CheckpointSaverHook(
            setup.model_dir, save_steps=setup.save_checkpoints_steps, saver=saver,
            listeners=[mtf.MtfCheckpointSaverListener(lowering)]),
    ]


def _summaries_host_call(model_dir: str, step: tf.Tensor, loss: tf.Tensor,
                         learning_rate: tf.Tensor):
    """TensorBoard scalars, written on the host (the TPU pattern, also used on CPU)."""
    def host_fn(step, loss, learning_rate):
        step = step[0]
        with tf.compat.v2.summary.create_file_writer(model_dir).as_default():
            with tf.compat.v2.summary.record_if(True):
                tf.compat.v2.summary.scalar("loss", loss[0], step=step)
                tf.compat.v2.summary.scalar("learning_rate", learning_rate[0], step=step)
                return tf.summary.all_v2_summary_ops()
    return host_fn, [tf.reshape(tf.cast(step, tf.int64), [1]), tf.reshape(loss, [1]),
                     tf.reshape(learning_rate, [1])]


def _eval_metrics(cross_entropy, correct, weights):
    """Token-weighted validation loss and accuracy from per-example sums."""
    return {
        "token_loss": tf.metrics.mean(tf.math.divide_no_nan(cross_entropy, weights),
                                      weights=weights),
        "token_accuracy": tf.metrics.mean(tf.math.divide_no_nan(correct, weights),
                                          weights=weights),
    }


def strip_after_eos(ids: np.ndarray, eos_id: int = 1) -> list:
    """Token ids up to (not including) the first EOS and without padding."""
    out = []
    for token in ids.tolist():
        if token == eos_id:
            break
        if token > 0:
            out.append(token)
    return out
