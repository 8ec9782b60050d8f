"""Greedy decoding equals an argmax loop over teacher-forced logits, for every architecture.

Each tiny model is trained for a few steps (so its logits are not uniform) through the trainer,
then decodes through TPUEstimator's PREDICT mode. The reference re-reads the checkpoint into a
teacher-forced graph (the same logits the loss is computed from) and extends each prompt one
argmax token at a time. Decoder-only and prefix LMs once returned the wrong slice of mtf's
output here (the continuation starts at position 0 after `remove_partial_sequences`).
"""
import gin
import numpy as np
import pytest
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from model import families
from model.data.features import (EncoderDecoderConverter, FeatureConverter, PrefixLMConverter,
                                 convert_features)
from model.data.vocabulary import EOS_ID
from model.families.t5.architectures import Architecture
from model.trainer import runs
from model.trainer.decoding import strip_after_eos
from model.trainer.mesh import MeshConfig, cpu_mesh_impl
from model.trainer.model_fn import import_features
from model.trainer.mtf_compat import mtf

# Each test binds gin for its run; none of it may leak into later test modules.
pytestmark = pytest.mark.usefixtures("clean_gin")

VOCAB_SIZE = 64
LENGTHS = {"inputs": 8, "targets": 8}
DECODE_LENGTH = 8
TINY = ["ModelConfig.d_model = 32", "ModelConfig.d_ff = 64", "ModelConfig.num_heads = 4",
        "ModelConfig.d_kv = 8", "ModelConfig.num_layers = 2", "ModelConfig.dropout_rate = 0.0",
        "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1",
        "OptimizationConfig.learning_rate_schedule = @lr.constant", "lr.constant.value = 0.01",
        f"TrainConfig.decode_length = {DECODE_LENGTH}"]


def examples(seed: int = 0, num: int = 64) -> list:
    """Count on from a random token through a cycle of 7 tokens: inputs 7 tokens, targets the
    next 6, each ending in EOS as the objectives make them. Quick to learn (next token = this
    one + 1), so that a few steps give logits whose argmax is not EOS everywhere."""
    rng = np.random.RandomState(seed)
    out = []
    for start in rng.randint(0, 7, size=num):
        cycle = [3 + (start + i) % 7 for i in range(13)]
        out.append({"inputs": cycle[:7] + [EOS_ID], "targets": cycle[7:] + [EOS_ID]})
    return out


def feature_dataset(converter: type[FeatureConverter]):
    def dataset():
        texts = tf2.data.Dataset.from_generator(
            lambda: iter(examples()),
            output_signature={k: tf2.TensorSpec([None], tf2.int32) for k in LENGTHS})
        return convert_features(texts, converter, LENGTHS)
    return dataset


def prompts() -> np.ndarray:
    rows = np.zeros([4, LENGTHS["inputs"]], np.int32)
    for row, example in zip(rows, examples(seed=1, num=4)):
        row[:len(example["inputs"])] = example["inputs"]
    return rows


def teacher_forced_features(converter: type[FeatureConverter], prompt: list, generated: list) -> dict:
    """Features whose logits at the next position predict the token after `generated`."""
    if converter is EncoderDecoderConverter:
        encoder = np.zeros([1, LENGTHS["inputs"]], np.int32)
        encoder[0, :len(prompt)] = prompt
        decoder_length, next_position = DECODE_LENGTH, len(generated)
        targets = generated
    else:
        decoder_length = LENGTHS["inputs"] + DECODE_LENGTH
        targets, next_position = prompt + generated, len(prompt) + len(generated)
    target_tokens = np.zeros([1, decoder_length], np.int32)
    target_tokens[0, :len(targets)] = targets
    segments = (np.arange(decoder_length) <= next_position).astype(np.int32)[None]
    positions = np.arange(decoder_length, dtype=np.int32)[None]
    features = {"decoder_target_tokens": target_tokens, "decoder_segment_ids": segments,
                "decoder_positions": positions, "decoder_loss_weights": segments,
                # One segment: the targets shifted right by one.
                "decoder_input_tokens": np.pad(target_tokens[:, :-1], [(0, 0), (1, 0)]) * segments}
    if converter is EncoderDecoderConverter:
        features.update(encoder_input_tokens=encoder, encoder_segment_ids=(encoder > 0) * 1,
                        encoder_positions=np.arange(LENGTHS["inputs"], dtype=np.int32)[None])
    if converter is PrefixLMConverter:
        features["decoder_causal_attention"] = (np.arange(decoder_length) <= len(prompt))[None] * 1
    return {k: v.astype(np.int32) for k, v in features.items()}, next_position


def argmax_loop(run: runs.Run, prompt_rows: np.ndarray) -> list:
    """Greedy continuations from teacher-forced logits of the newest checkpoint."""
    family = families.family_for(run.model_config, VOCAB_SIZE)
    converter = family.converter
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        example, _ = teacher_forced_features(converter, [EOS_ID], [])
        placeholders = {k: tf.placeholder(tf.int32, v.shape, name=k) for k, v in example.items()}
        logits = family.logits(family.build(training=False),
                               import_features(placeholders, family.feature_keys, mesh),
                               tf.estimator.ModeKeys.EVAL)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        output = lowering.export_to_tf_tensor(logits)
        saver = tf.train.Saver(tf.global_variables())
        config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        with tf.Session(config=config) as session:
            saver.restore(session, tf.train.latest_checkpoint(run.model_dir))
            session.run(lowering.copy_masters_to_slices())
            decodes = []
            for row in prompt_rows:
                prompt, generated = [int(t) for t in row if t > 0], []
                while len(generated) < DECODE_LENGTH and EOS_ID not in generated:
                    feed, position = teacher_forced_features(converter, prompt, generated)
                    values = session.run(output, {placeholders[k]: v for k, v in feed.items()})
                    generated.append(int(np.argmax(values[0, position])))
                decodes.append(generated)
    return decodes


@pytest.mark.parametrize("architecture", [a.value for a in Architecture])
def test_greedy_decoding_equals_argmax_over_teacher_forced_logits(tmp_path, architecture):
    gin.clear_config()
    runs.parse_gin(["pretrain.gin"], TINY + [
        f"ModelConfig.architecture = '{architecture}'",
        f"TrainConfig.tokens_per_batch = {8 * (LENGTHS['inputs'] + LENGTHS['targets'])}"])
    run = families.configured_run(str(tmp_path))
    converter = families.family_class(architecture).converter
    assert runs.train(run, feature_dataset(converter), VOCAB_SIZE, max_steps=30) == 30

    rows = prompts()
    estimator = run.estimator(len(rows), VOCAB_SIZE)
    predictions = list(estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"inputs": rows}).batch(
            params["batch_size"], drop_remainder=True)))
    decoded = [p["outputs"].tolist() for p in predictions]
    expected = argmax_loop(run, rows)
    # Trained: the argmax continues the prompts with several different tokens.
    assert len({t for d in expected for t in d} - {EOS_ID}) > 1, expected
    for got, want in zip(decoded, expected):
        # Equal up to the first EOS (what follows it in a row is ignored: strip_after_eos).
        assert got[:len(want)] == want
        assert strip_after_eos(np.array(got)) == [t for t in want if t != EOS_ID]
