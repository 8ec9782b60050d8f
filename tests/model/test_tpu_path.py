"""The TPU path, in every part that runs without a TPU: RunConfig, the mesh plan per topology,
the SIMD mesh for a TPU context, the graph the model function builds (use_tpu=False, the same
code), bfloat16 activations, and the loss check that runs on the host."""
import json
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.ops import summary_ops_v2
from tensorflow_estimator.python.estimator.tpu import tpu_config

from model import families
from model.trainer import hooks
from model.trainer import runs
from model.trainer.mesh import DEFAULT_LAYOUT, MeshConfig, logical_to_physical, tpu_mesh_impl
from model.trainer.model_config import ModelConfig
from model.trainer.model_fn import ModelFnSetup, OptimizationConfig, PrecisionConfig, make_model_fn
from model.trainer.mtf_compat import simd_mesh_impl

# TPU topologies as TPUEstimator reports them: [x, y, z, cores per chip].
V3_8, V3_32, V3_128, V4_8 = [2, 2, 1, 2], [4, 4, 1, 2], [8, 8, 1, 2], [2, 2, 1, 1]


def test_run_config_replicates_the_model_on_every_core():
    config = runs.run_config(runs.TrainConfig(use_tpu=True, iterations_per_loop=50), "gs://b/m")
    tpu = config.tpu_config
    # SimdMeshImpl needs one core per replica and the whole batch on each (T5's settings).
    assert tpu.num_cores_per_replica == 1
    assert tpu.per_host_input_for_training == tpu_config.InputPipelineConfig.BROADCAST
    assert tpu.iterations_per_loop == 50
    rewrite = config.session_config.graph_options.rewrite_options
    assert rewrite.disable_meta_optimizer == rewriter_config_pb2.RewriterConfig.ON
    # Checkpoints and summaries are the model function's (mesh slices copied first).
    assert config.save_checkpoints_steps is None and config.save_checkpoints_secs is None


@pytest.mark.parametrize("mesh_shape, topology", [
    ("batch:4,model:2", V3_8), ("batch:8", V3_8), ("model:2,batch:16", V3_32),
    ("batch:16,model:8", V3_128), ("batch:4", V4_8)])
def test_mesh_plan_uses_every_core_once(mesh_shape, topology):
    mapping = logical_to_physical(MeshConfig(mesh_shape), topology)
    assert sorted(mapping) == list(range(int(np.prod(topology))))


def test_two_way_model_parallelism_stays_on_one_chip():
    # Logical slices (b, 0) and (b, 1) all-reduce every layer: the two cores of one v3 chip.
    mapping = logical_to_physical(MeshConfig("batch:4,model:2"), V3_8)
    cores_per_chip = V3_8[-1]
    assert [mapping[2 * b] // cores_per_chip == mapping[2 * b + 1] // cores_per_chip
            for b in range(4)] == [True] * 4


def test_mesh_plan_that_does_not_fit_the_topology_is_a_clear_error():
    with pytest.raises(ValueError, match="has 16 slices but .* has 8 cores"):
        logical_to_physical(MeshConfig("batch:8,model:2"), V3_8)


def fake_tpu_context(topology, num_hosts=1):
    cores = int(np.prod(topology))
    assignment = types.SimpleNamespace(topology=types.SimpleNamespace(mesh_shape=topology))
    return types.SimpleNamespace(
        num_replicas=cores, num_hosts=num_hosts, device_assignment=assignment,
        tpu_host_placement_function=lambda host_id: f"/job:worker/task:{host_id}/device:CPU:0")


def test_tpu_mesh_is_simd_with_a_variable_placer_over_the_hosts():
    impl, placer = tpu_mesh_impl(MeshConfig("batch:16,model:2"), fake_tpu_context(V3_32, 4))
    assert isinstance(impl, simd_mesh_impl.SimdMeshImpl)
    assert sorted(impl._logical_to_physical) == list(range(32))
    devices = {device for _, device in placer._mem_device_heap}
    assert devices == {f"/job:worker/task:{h}/device:CPU:0" for h in range(4)}
    with pytest.raises(ValueError, match="has 8 slices but the TPU runs 32 replicas"):
        tpu_mesh_impl(MeshConfig("batch:8"), fake_tpu_context(V3_32))


def train_spec(tmp_path, precision=PrecisionConfig()):
    """The TRAIN spec of a tiny encoder-decoder, built as TPUEstimator builds it on CPU."""
    setup = ModelFnSetup(
        family_class=families.family_class("encoder_decoder"),
        model_config=ModelConfig(d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=1),
        mesh_config=MeshConfig(), optimization=OptimizationConfig(), vocab_size=64,
        model_dir=str(tmp_path), save_checkpoints_steps=10, keep_checkpoint_max=1,
        decode_length=4, train_steps=10, precision=precision)
    features = {key: tf.ones([2, 8], tf.int32) for key in setup.family.feature_keys}
    return make_model_fn(setup)(features, None, tf.estimator.ModeKeys.TRAIN, {})


def test_saver_comes_from_the_scaffold_and_values_from_the_host_call(tmp_path):
    with tf.Graph().as_default():
        spec = train_spec(tmp_path)
        # Nothing that saves or restores lives in the (TPU-rewritten) model function ...
        assert not tf.get_collection(tf.GraphKeys.SAVERS)
        # ... the scaffold function, which TPUEstimator runs on the host, makes the saver.
        scaffold = spec.scaffold_fn()
        assert tf.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
        # Hooks fetch no tensors: step, loss and learning rate reach the host by the host call.
        host_fn, tensors = spec.host_call
        assert [t.shape.as_list() for t in tensors] == [[1], [1], [1]]
        for hook in spec.training_hooks:
            assert not isinstance(hook, tf.train.LoggingTensorHook)


def test_bfloat16_activations_build(tmp_path):
    with tf.Graph().as_default():
        spec = train_spec(tmp_path, PrecisionConfig(activation_dtype="bfloat16"))
        assert spec.loss.dtype == tf.float32
        assert any(op.type == "Cast" and op.get_attr("DstT") == tf.bfloat16
                   for op in tf.get_default_graph().get_operations())


@pytest.mark.parametrize("loss", [2.5, float("nan"), float("inf")])
def test_host_call_logs_every_step_and_stops_on_a_non_finite_loss(tmp_path, capsys, loss):
    with tf.Graph().as_default():
        host_fn, tensors = hooks.training_host_call(
            str(tmp_path), tf.constant(7), tf.constant(loss), tf.constant(0.01),
            hooks.CheckpointSteps(7), hooks.StepRate(100, 7))
        ops = host_fn(*tensors)
        with tf.Session() as session:
            # What TPUEstimator's host-call hook runs first.
            session.run(summary_ops_v2.summary_writer_initializer_op())
            if np.isfinite(loss):
                session.run(ops)
            else:
                with pytest.raises(tf.errors.InvalidArgumentError) as error:
                    session.run(ops)
                assert hooks.is_non_finite_loss(error.value)
    (entry,) = map(json.loads, (tmp_path / hooks.LOSS_LOG_NAME).read_text().splitlines())
    assert entry["step"] == 7
    assert entry["loss"] == loss or (np.isnan(loss) and np.isnan(entry["loss"]))
    assert f"step 7: loss {loss:.4f}" in capsys.readouterr().err  # progress at step 7
    message = str(hooks.error_for_failed_step(str(tmp_path)))
    assert f"training loss is {loss} at step 7" in message


def test_example_tpu_plan_in_gin_fits_its_slice(tmp_path, clean_gin):
    """tpu.gin with meshes/tpu_v3_8x8_dp_mp.gin: a v3-128 run, one mesh slice per core, T5's
    bfloat16 precision, the layout model/trainer/mesh.py owns."""
    import gin
    gin.clear_config()
    runs.parse_gin(["tpu.gin", "meshes/tpu_v3_8x8_dp_mp.gin"], [])
    run = families.configured_run(str(tmp_path))
    assert run.train_config.use_tpu
    assert (run.precision.activation_dtype, run.precision.master_dtype) == ("bfloat16", "bfloat16")
    assert run.mesh_config.layout == DEFAULT_LAYOUT
    assert sorted(logical_to_physical(run.mesh_config, V3_128)) == list(range(128))
