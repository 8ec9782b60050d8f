"""One TPUEstimator model function for every model family, mode and mesh: CPU tests and TPUs run
this same code.

It knows nothing of any architecture: the run's family (model/trainer/family.py's `Family`,
implemented in model/families/) names the features it reads, builds the Mesh TensorFlow model
and returns its losses, metrics and predictions. This module imports the features onto the mesh,
lowers, optimises and wires the host side: mesh (model/trainer/mesh.py), schedules
(model/trainer/schedules.py), hooks and host call (model/trainer/hooks.py), warm start
(model/trainer/warm_start.py).

Follows `mesh_tensorflow.transformer.utils.tpu_estimator_model_fn` (what T5 ran). Where we differ:
- features are imported by the family's keys, each [batch, length] with its own length;
- the loss is the family's (T5's mtf computes it inside `call_simple`), and the learning rate is
  computed inside the step (T5 computes it outside the TPU program for its summary; ours goes
  through the host call with the loss);
- the step's own number (`global_step + 1`) goes to the host call, so the log of checkpoint N
  holds steps 1..N; the loss is checked there (model/trainer/hooks.py);
- warm start and the saver are created in the scaffold function, which TPUEstimator runs outside
  the TPU rewrite (T5 uses `outside_all_rewrites` in the model function); warm start fails on
  missing variables (model/trainer/warm_start.py);
- predictions are ids (the driver decodes text), without T5's in-graph detokenisation.
PREDICT mode takes one feature, `inputs`: token ids ending in EOS, zero padded (and those of the
family's `predict_feature_keys` that are given, passed to its `predict` by name).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import gin
import tensorflow.compat.v1 as tf
from tensorflow_estimator.python.estimator.tpu import tpu_estimator

from model.data.vocabulary import Vocabulary
from model.trainer import finetune_methods, hooks, schedules, warm_start
from model.trainer.family import Family
from model.trainer.mesh import MeshConfig, mesh_impl
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf


@gin.configurable
@dataclasses.dataclass(frozen=True)
class OptimizationConfig:
    """The learning-rate schedule of the global step; the optimizer is the family's (T5's
    Adafactor)."""

    # Called as schedule(step, total_train_steps) (model/trainer/schedules.py).
    learning_rate_schedule: Callable[[tf.Tensor, int], tf.Tensor] = schedules.inverse_sqrt
    # The part of the schedule the run trains, (start, end) as fractions of its steps: (0, 1)
    # ends it at the run's last step. BERT's pre-training phases: (0, 0.9), then (0.9, 1).
    schedule_part: Tuple[float, float] = (0.0, 1.0)

    def learning_rate(self, global_step: tf.Tensor, first_step: int, train_steps: int
                      ) -> tf.Tensor:
        """The rate at `global_step` of a run that trains `train_steps` from `first_step`."""
        span = schedules.span(first_step, train_steps, self.schedule_part)
        return self.learning_rate_schedule(global_step + span.shift, span.total_steps)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class PrecisionConfig:
    """Data types, as T5's `utils.get_variable_dtype`: variables as stored in checkpoints
    (`master_dtype`), in memory (always float32: training needs it) and activations.

    float32 by default: the numerics of the reference, and a resumed run continues exactly.
    T5 on TPU: master_dtype 'bfloat16' (its released checkpoints store bfloat16) and
    activation_dtype 'bfloat16'. On CPUs with AVX512-BF16 / AMX, activation_dtype 'bfloat16'
    (gin/bfloat16_activations.gin) trains over twice as fast through oneDNN's bfloat16 matmuls,
    on a loss curve a few percent from float32's (bench/bench_train_vs_mtf.py --curves,
    tests/model/test_speed_paths.py); the loss itself is computed in float32
    (model/trainer/losses.py)."""

    master_dtype: str = "float32"
    activation_dtype: str = "float32"

    @property
    def variable_dtype(self) -> mtf.VariableDType:
        return mtf.VariableDType(master_dtype=tf.as_dtype(self.master_dtype),
                                 slice_dtype=tf.float32,
                                 activation_dtype=tf.as_dtype(self.activation_dtype))


@dataclasses.dataclass(frozen=True)
class ModelFnSetup:
    """Everything the model function needs besides features: all of it fixed per run."""

    # The run's family: a class of model/trainer/family.py's protocol.
    family_class: "type[Family]"
    model_config: ModelConfig
    mesh_config: MeshConfig
    optimization: OptimizationConfig
    vocab_size: int
    model_dir: str
    save_checkpoints_steps: int
    keep_checkpoint_max: int
    decode_length: int
    # The steps the run trains from its first step (0, or the warm-start checkpoint's:
    # warm_start.first_step): what the learning-rate schedule spans.
    train_steps: int
    # TRAIN: the global step the session starts at (a resumed run's newest checkpoint, else the
    # run's first step), which the checkpoints count from.
    session_start: int = 0
    # TRAIN: a progress line (steps per second, time left) every this many steps (hooks.StepRate).
    progress_steps: int = 100
    use_tpu: bool = False
    precision: PrecisionConfig = PrecisionConfig()
    # Warm start (fine-tuning): every variable, optimizer slots and the global step included
    # (the weights alone where the family says so), from this checkpoint, but those matching
    # `warm_start_fresh` (and the family's own list).
    init_checkpoint: Optional[str] = None
    warm_start_fresh: Tuple[str, ...] = ()
    # Which parameters fine-tuning updates (the paper's Section 3.5.1).
    fine_tuning: finetune_methods.FineTuningMethod = finetune_methods.FineTuningMethod()
    # PREDICT: greedy (beam_size 1) or beam search with length penalty alpha (a task's Decoding).
    beam_size: int = 1
    alpha: float = 0.6
    # The run's vocabulary, given to the family (None: the run names none).
    vocabulary: Optional[Vocabulary] = None
    # The run's family config (the family's `config_class`; None: its defaults).
    family_config: Any = None

    @property
    def family(self) -> Family:
        return self.family_class(self.model_config, self.vocab_size,
                                 self.precision.variable_dtype, run_vocabulary=self.vocabulary,
                                 family_config=self.family_config)


def import_features(features: Dict[str, tf.Tensor], keys: Sequence[str], mesh: mtf.Mesh,
                    float_keys: Sequence[str] = ()) -> Dict[str, mtf.Tensor]:
    """[batch, length] int32 features (float32 for `float_keys`: values such as regression
    labels, which int32 would truncate) as mtf tensors, replicated on every mesh slice (one core
    per replica broadcasts the batch; the layout then splits it)."""
    missing = [key for key in keys if key not in features]
    if missing:
        raise ValueError(f"the input features lack {missing}; they have {sorted(features)}")
    imported = {}
    for key in keys:
        tensor = tf.cast(features[key], tf.float32 if key in float_keys else tf.int32)
        batch, length = tensor.shape.as_list()
        if batch is None or length is None:
            raise ValueError(f"feature {key} needs a fixed shape, got {tensor.shape}")
        shape = mtf.Shape([mtf.Dimension("batch", batch), mtf.Dimension("length", length)])
        imported[key] = mtf.import_fully_replicated(mesh, tensor, shape, name=key)
    return imported


def _restore_scaffold_fn(lowering: mtf.Lowering) -> Callable[[], tf.train.Scaffold]:
    """EVAL and PREDICT: the checkpoint's master variables are copied to the mesh slices."""
    def scaffold_fn():
        return tf.train.Scaffold(local_init_op=tf.group(
            tf.train.Scaffold.default_local_init_op(), lowering.copy_masters_to_slices()))
    return scaffold_fn


def _training_scaffold_fn(setup: ModelFnSetup, family: Family
                          ) -> Callable[[], tf.train.Scaffold]:
    """Warm start and the saver, outside the TPU program (TPUEstimator calls this on the host)."""
    def scaffold_fn():
        if setup.init_checkpoint:
            warm_start.warm_start(setup.init_checkpoint,
                                  family.fresh_on_warm_start + tuple(setup.warm_start_fresh)
                                  + setup.fine_tuning.fresh_on_warm_start,
                                  weights_only=not family.warm_start_continues_training,
                                  aliases=family.checkpoint_aliases)
        saver = tf.train.Saver(tf.global_variables(), sharded=True,
                               max_to_keep=setup.keep_checkpoint_max, save_relative_paths=True)
        # The checkpoint hook (model/trainer/hooks.py) finds it here.
        tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
        return tf.train.Scaffold(saver=saver)
    return scaffold_fn


def _eval_metric_fn(names: Sequence[str]):
    """sum(sums) / sum(weights) over the validation set for each named metric."""
    def metric_fn(*tensors):
        pairs = zip(tensors[0::2], tensors[1::2])
        return {name: tf.metrics.mean(tf.math.divide_no_nan(sums, weights), weights=weights)
                for name, (sums, weights) in zip(names, pairs)}
    return metric_fn


def clipped_by_global_norm(gradients: Sequence[Optional[mtf.Tensor]], clip_norm: float
                           ) -> list:
    """The gradients scaled by clip_norm / max(global norm, clip_norm), as
    tf.clip_by_global_norm (None stays None: a variable without a gradient)."""
    present = [g for g in gradients if g is not None]
    norm = mtf.sqrt(mtf.add_n([mtf.reduce_sum(mtf.square(mtf.cast(g, tf.float32)))
                               for g in present]))
    scale = clip_norm / mtf.maximum(norm, clip_norm)
    return [None if g is None else g * mtf.cast(scale, g.dtype) for g in gradients]


def make_model_fn(setup: ModelFnSetup):
    """The TPUEstimator model function (TRAIN, EVAL, PREDICT) for `setup`."""
    family = setup.family

    def model_fn(features, labels, mode, params, config=None):
        del labels, config
        impl, variable_placer = mesh_impl(setup.mesh_config, setup.use_tpu, params)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh", variable_placer)
        train = mode == tf.estimator.ModeKeys.TRAIN
        model = family.build(training=train)

        if mode == tf.estimator.ModeKeys.PREDICT:
            extra_keys = [key for key in family.predict_feature_keys if key in features]
            batch = import_features(features, ["inputs"] + extra_keys, mesh)
            outputs = mtf.anonymize(family.predict(model, batch.pop("inputs"), setup.decode_length,
                                                   setup.beam_size, setup.alpha, **batch))
            lowering = mtf.Lowering(graph, {mesh: impl})
            return tpu_estimator.TPUEstimatorSpec(
                mode=mode,
                predictions={"outputs": lowering.export_to_tf_tensor(outputs)},
                scaffold_fn=_restore_scaffold_fn(lowering),
                prediction_hooks=[mtf.MtfRestoreHook(lowering)])

        batch = import_features(features, family.feature_keys, mesh,
                                family.float_feature_keys)
        losses = family.losses(model, batch, mode)

        if mode == tf.estimator.ModeKeys.EVAL:
            names = sorted(losses.metrics)
            per_example = [mtf.anonymize(t) for name in names for t in losses.metrics[name]]
            lowering = mtf.Lowering(graph, {mesh: impl})
            tf_loss = tf.cast(lowering.export_to_tf_tensor(losses.loss), tf.float32)
            return tpu_estimator.TPUEstimatorSpec(
                mode=mode, loss=tf_loss,
                eval_metrics=(_eval_metric_fn(names),
                              [lowering.export_to_tf_tensor(t) for t in per_example]),
                scaffold_fn=_restore_scaffold_fn(lowering),
                evaluation_hooks=[mtf.MtfRestoreHook(lowering)])

        variables = finetune_methods.trained_variables(graph.trainable_variables, setup.fine_tuning)
        gradients = mtf.gradients([losses.objective], [v.outputs[0] for v in variables])
        global_step = tf.train.get_or_create_global_step()
        # The step this update produces, read before the increment (checkpoint N holds steps 1..N).
        this_step = tf.identity(global_step.read_value()) + 1
        first_step = warm_start.first_step(setup.init_checkpoint,
                                           family.warm_start_continues_training)
        gradients = finetune_methods.gated_gradients(
            variables, gradients, setup.fine_tuning, this_step, first_step)
        if family.gradient_clip_norm is not None:
            gradients = clipped_by_global_norm(gradients, family.gradient_clip_norm)
        learning_rate = setup.optimization.learning_rate(global_step, first_step,
                                                         setup.train_steps)
        checkpoints = hooks.CheckpointSteps(setup.save_checkpoints_steps, setup.session_start,
                                            first_step + setup.train_steps)
        update_ops = family.optimizer(learning_rate).apply_grads(gradients, variables)
        lowering = mtf.Lowering(graph, {mesh: impl})
        tf_loss = tf.cast(lowering.export_to_tf_tensor(losses.loss), tf.float32)
        lowered_updates = [lowering.lowered_operation(op) for op in update_ops]
        # After the updates: the schedule and the optimizers' bias corrections read the global
        # step, and a read racing the increment gave step t + 1's values now and then.
        with tf.control_dependencies([this_step] + lowered_updates):
            increment = tf.assign_add(global_step, 1)
        train_op = tf.group(lowered_updates + [increment])
        return tpu_estimator.TPUEstimatorSpec(
            mode=mode, loss=tf_loss, train_op=train_op,
            # Progress on stderr at each checkpoint.
            host_call=hooks.training_host_call(
                setup.model_dir, this_step, tf_loss, learning_rate, checkpoints,
                hooks.StepRate(setup.progress_steps, first_step + setup.train_steps)),
            scaffold_fn=_training_scaffold_fn(setup, family),
            training_hooks=hooks.training_hooks(lowering, setup.model_dir, checkpoints))

    return model_fn
