"""The generic model function's own pieces."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model.trainer.model_fn import clipped_by_global_norm
from model.trainer.mtf_compat import mtf


@pytest.mark.parametrize("clip_norm", [1.0, 10.0])
def test_gradient_clipping_equals_tf_clip_by_global_norm(clip_norm):
    values = [np.array([[3.0, -1.0], [0.5, 2.0]], np.float32), np.array([4.0, -0.5], np.float32)]
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        shapes = [mtf.Shape([mtf.Dimension("rows", 2), mtf.Dimension("cols", 2)]),
                  mtf.Shape([mtf.Dimension("items", 2)])]
        gradients = [mtf.import_tf_tensor(mesh, tf.constant(v), s) for v, s in zip(values, shapes)]
        clipped = clipped_by_global_norm([gradients[0], None, gradients[1]], clip_norm)
        assert clipped[1] is None
        impl = mtf.placement_mesh_impl.PlacementMeshImpl(shape=[], layout={}, devices=[""])
        lowering = mtf.Lowering(graph, {mesh: impl})
        ours = [lowering.export_to_tf_tensor(clipped[i]) for i in (0, 2)]
        reference, _ = tf.clip_by_global_norm([tf.constant(v) for v in values], clip_norm)
        with tf.Session() as session:
            ours, reference = session.run([ours, reference])
    for got, want in zip(ours, reference):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gpt1_and_bert_clip_at_one_as_their_reference_code_t5_does_not():
    by_architecture = families.REGISTRY.architectures
    assert by_architecture["gpt1"].gradient_clip_norm == 1.0
    assert by_architecture["bert"].gradient_clip_norm == 1.0
    assert by_architecture["segabert"].gradient_clip_norm == 1.0
    assert by_architecture["encoder_decoder"].gradient_clip_norm is None
