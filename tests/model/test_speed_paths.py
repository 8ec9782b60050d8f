"""The trainer's speed paths and their numerics: the fused cross entropy equals mtf's formula;
bfloat16 activations (gin/bfloat16_activations.gin) train within a band of the float32 curve.

The trainer runs are tiny (d_model 32, batch 8 x 16 tokens) on the reversal task of
tests/model/test_train.py, dropout 0, so that the curves differ only by the path under test.
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model.trainer import hooks
from model.trainer import runs
from model.trainer.losses import token_losses
from model.trainer.mesh import MeshConfig
from model.trainer.model_config import ModelConfig
from model.trainer.model_fn import OptimizationConfig, PrecisionConfig
from model.trainer.mtf_compat import mtf, placement_mesh_impl
from tests.support.training import synthetic_examples

STEPS = 30
# Largest relative difference per step of the bfloat16 curve from the float32 one.
BFLOAT16_BAND = 0.02
TINY = ModelConfig(d_model=32, d_ff=64, num_heads=4, d_kv=8, num_layers=2, dropout_rate=0.0)


def loss_curve(model_dir, precision=PrecisionConfig()):
    run = runs.Run(families.family_class(TINY.architecture), TINY, MeshConfig(), OptimizationConfig(), runs.DataConfig(),
                    runs.TrainConfig(tokens_per_batch=128, save_checkpoints_steps=STEPS,
                                      keep_checkpoint_max=1, intra_op_threads=1,
                                      inter_op_threads=1),
                    str(model_dir), precision)
    runs.train(run, synthetic_examples(), vocab_size=200, max_steps=STEPS)
    return np.array([entry["loss"] for entry in hooks.logged_losses(model_dir)])


@pytest.fixture(scope="module")
def float32_curve(tmp_path_factory):
    return loss_curve(tmp_path_factory.mktemp("float32"))


def test_fused_cross_entropy_equals_mtf_formula():
    """Loss, objective (with z-loss) and their gradients against mtf's
    softmax_cross_entropy_with_logits, on random logits with padding in the weights."""
    rng = np.random.RandomState(0)
    batch, length, vocab = 3, 5, 130
    logits_value = (rng.randn(batch, length, vocab) * 4).astype(np.float32)
    targets_value = rng.randint(0, vocab, size=(batch, length)).astype(np.int32)
    weights_value = (rng.rand(batch, length) > 0.3).astype(np.int32)
    z_loss = 1e-2
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        dims = [mtf.Dimension("batch", batch), mtf.Dimension("length", length)]
        vocab_dim = mtf.Dimension("vocab", vocab)
        logits_variable = mtf.get_variable(mesh, "logits", mtf.Shape(dims + [vocab_dim]),
                                           initializer=tf.constant_initializer(logits_value))
        logits = logits_variable * 1.0
        targets = mtf.import_tf_tensor(mesh, tf.constant(targets_value), mtf.Shape(dims))
        weights = mtf.import_tf_tensor(mesh, tf.constant(weights_value), mtf.Shape(dims))

        ours = token_losses(logits, targets, weights, z_loss)
        float_weights = mtf.cast(weights, tf.float32)
        num_tokens = mtf.reduce_sum(float_weights)
        mtf_loss = mtf.reduce_sum(mtf.layers.softmax_cross_entropy_with_logits(
            logits, targets, vocab_dim) * float_weights) / num_tokens
        mtf_objective = mtf.reduce_sum(mtf.layers.softmax_cross_entropy_with_logits(
            logits, targets, vocab_dim, z_loss=z_loss) * float_weights) / num_tokens
        scalars = [ours.loss, ours.objective, mtf_loss, mtf_objective]
        gradients = [mtf.gradients([objective], [logits_variable])[0]
                     for objective in (ours.objective, mtf_objective)]
        lowering = mtf.Lowering(graph, {mesh: placement_mesh_impl.PlacementMeshImpl(
            mtf.Shape([]), mtf.LayoutRules([]), [""])})
        fetches = [lowering.export_to_tf_tensor(t) for t in scalars + gradients]
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(lowering.copy_masters_to_slices())
            loss, objective, expected_loss, expected_objective, grad, expected_grad = (
                session.run(fetches))
    assert objective > loss  # the z-loss term is there
    np.testing.assert_allclose([loss, objective], [expected_loss, expected_objective], rtol=1e-6)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-9)


def test_bfloat16_activations_train_within_a_band_of_float32(tmp_path, float32_curve, clean_gin):
    runs.parse_gin(["bfloat16_activations.gin"], [])
    precision = families.configured_run(str(tmp_path)).precision
    # Activations only: variables and checkpoints stay float32.
    assert precision == PrecisionConfig(activation_dtype="bfloat16", master_dtype="float32")
    reduced = loss_curve(tmp_path, precision)
    assert len(reduced) == STEPS
    assert reduced[-5:].mean() < 0.7 * reduced[:5].mean()
    # bfloat16 keeps 8 bits of mantissa: the curve is not float32's, but close to it.
    relative = np.abs(reduced - float32_curve) / float32_curve
    assert 0 < relative.max() < BFLOAT16_BAND, relative
