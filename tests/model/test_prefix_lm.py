"""The prefix LM's attention, measured on the model itself for packed rows.

Each packed segment's prefix (decoder_causal_attention: positions 0..len(inputs), the inputs as
the shifted-right decoder reads them) is visible to every position of its segment; the rest of a
segment is causal; segments never see each other. We check it by perturbing one decoder input
token at a time and recording which outputs change: output i depends on input p exactly when i
may attend to p (that mask is closed under composition, so depth does not widen it).
"""
import numpy as np
import pytest
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from model import families
from model.data import features, objectives
from model.trainer.mesh import MeshConfig, cpu_mesh_impl
from model.trainer.model_config import ModelConfig
from model.trainer.model_fn import import_features
from model.trainer.mtf_compat import mtf

VOCAB_SIZE = 64
LENGTHS = {"inputs": 8, "targets": 6}  # one 14-token stream per row
# With EOS appended: prefixes of 3, 5, 2 and 2 tokens; packed as rows [1, 2] and [3, 4] + padding.
EXAMPLES = [
    {"inputs": [5, 6], "targets": [7]},
    {"inputs": [8, 9, 10, 11], "targets": [12, 13]},
    {"inputs": [14], "targets": [15, 16, 17]},
    {"inputs": [18], "targets": [19]},
]


def packed_rows(examples) -> dict:
    """Examples as the pipeline ends them (EOS after inputs and targets), converted and packed."""
    dataset = tf2.data.Dataset.from_generator(
        lambda: iter(examples),
        output_signature={k: tf2.TensorSpec([None], tf2.int32) for k in ("inputs", "targets")})
    dataset = dataset.map(lambda ex: objectives.append_eos_after_trim(ex, LENGTHS))
    rows = list(features.convert_features(dataset, features.PrefixLMConverter, LENGTHS).as_numpy_iterator())
    return {key: np.stack([row[key] for row in rows]) for key in rows[0]}


def expected_visibility(segment_ids: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """[query, memory]: same segment (not padding), and memory earlier or in the prefix."""
    length = segment_ids.shape[0]
    same_segment = (segment_ids[:, None] == segment_ids[None, :]) & (segment_ids[:, None] > 0)
    causal = np.arange(length)[None, :] <= np.arange(length)[:, None]
    return same_segment & (causal | (prefix[None, :] == 1))


def model_logits(feats: dict) -> np.ndarray:
    """Teacher-forced logits of a tiny, randomly initialised prefix LM via its family."""
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        config = ModelConfig(architecture="prefix_lm", d_model=16, d_ff=32, num_heads=2, d_kv=8,
                             num_layers=2, dropout_rate=0.0)
        tensors = {k: tf.constant(v) for k, v in feats.items()}
        family = families.family_for(config, VOCAB_SIZE)
        logits = family.logits(family.build(training=False),
                               import_features(tensors, list(feats), mesh),
                               tf.estimator.ModeKeys.EVAL)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        output = lowering.export_to_tf_tensor(logits)
        # One thread, as the trainer tests use: TF keeps the first session's CPU thread pools for
        # the whole process, and more threads make the later training losses nondeterministic.
        config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        with tf.Session(config=config) as session:
            session.run(tf.global_variables_initializer())
            session.run(lowering.copy_masters_to_slices())
            return session.run(output)


def measured_dependence(row: dict) -> np.ndarray:
    """[query, memory]: does output `query` change when decoder input `memory` changes?"""
    length = row["decoder_input_tokens"].shape[0]
    # Batch entry 0 is the row as is; entry p + 1 has a different (non-EOS) token at input p.
    batch = {k: np.repeat(v[None], length + 1, axis=0) for k, v in row.items()}
    for p in range(length):
        batch["decoder_input_tokens"][p + 1, p] = 3 if row["decoder_input_tokens"][p] != 3 else 4
    logits = model_logits(batch)
    changed = np.abs(logits[1:] - logits[:1]).max(axis=-1) > 1e-5  # [memory, query]
    return changed.T


def test_packed_rows_have_several_segments_with_different_prefixes():
    rows = packed_rows(EXAMPLES)
    assert rows["decoder_segment_ids"].max(axis=1).tolist() == [2, 2]
    assert rows["decoder_causal_attention"].sum(axis=1).tolist() == [(3 + 1) + (5 + 1), 2 * (2 + 1)]


@pytest.mark.parametrize("row_index", [0, 1])
def test_prefix_lm_attends_fully_within_each_packed_prefix_and_causally_after(row_index):
    rows = packed_rows(EXAMPLES)
    row = {k: v[row_index] for k, v in rows.items() if k in features.PrefixLMConverter.model_features}
    expected = expected_visibility(row["decoder_segment_ids"], row["decoder_causal_attention"])
    real = row["decoder_segment_ids"] > 0  # padding outputs carry no loss and are not checked
    np.testing.assert_array_equal(measured_dependence(row)[real], expected[real])
