"""The teacher-forced logits of a run's newest checkpoint, through its family's own graph (the
logits its loss is computed from): the reference that exported models and reported metrics are
checked against."""
from typing import Mapping

import numpy as np
import tensorflow.compat.v1 as tf

from model import families
from model.trainer import runs
from model.trainer.mesh import MeshConfig, cpu_mesh_impl
from model.trainer.model_fn import import_features
from model.trainer.mtf_compat import mtf


def checkpoint_logits(run: runs.Run, features: Mapping[str, np.ndarray]) -> np.ndarray:
    """[batch, length, vocab] logits of the newest checkpoint in `run.model_dir` for a batch of
    the family's features ([batch, length] int arrays)."""
    family = families.family_for(run.model_config, run.vocabulary.vocab_size,
                                 family_config=run.family_config)
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        tensors = {key: tf.constant(np.asarray(value).astype(np.int32)) for key, value in features.items()}
        logits = family.logits(family.build(training=False),
                               import_features(tensors, family.feature_keys, mesh),
                               tf.estimator.ModeKeys.EVAL)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        output = lowering.export_to_tf_tensor(logits)
        with tf.Session() as session:
            tf.train.Saver(tf.global_variables()).restore(session, tf.train.latest_checkpoint(run.model_dir))
            session.run(lowering.copy_masters_to_slices())
            return session.run(output)


# Texts a tiny exported T5 is compared on (tests/model/test_export_hf.py,
# tests/model/test_t5_1_1.py).
TEXTS = ["The quick brown fox <extra_id_0> over the lazy dog.",
         "Thank you for subscribing to our newsletter. We send one email a week."]


def our_logits(run, encoder: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Teacher-forced logits of the newest checkpoint, through our family's graph."""
    return checkpoint_logits(run, {
        "encoder_input_tokens": encoder, "encoder_segment_ids": (encoder > 0) * 1,
        "encoder_positions": np.tile(np.arange(encoder.shape[1]), (len(encoder), 1)),
        "decoder_target_tokens": targets, "decoder_segment_ids": np.ones_like(targets),
        "decoder_input_tokens": np.pad(targets[:, :-1], [(0, 0), (1, 0)]),
        "decoder_positions": np.tile(np.arange(targets.shape[1]), (len(targets), 1)),
        "decoder_loss_weights": np.ones_like(targets)})
