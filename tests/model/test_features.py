"""Feature conversion and packing: exact rows on small examples, invariants on real data."""
import numpy as np
import pytest
import tensorflow as tf

from model.data import features
from model.data.inputs import plain_text_dataset, pretraining_dataset
from tests.support.trained_vocab import trained_vocabulary


def examples_dataset(examples):
    keys = examples[0].keys()
    return tf.data.Dataset.from_generator(
        lambda: iter(examples), output_signature={k: tf.TensorSpec([None], tf.int32) for k in keys})


def rows(dataset):
    return [{k: v.tolist() for k, v in row.items()} for row in dataset.as_numpy_iterator()]


EXAMPLES = [{"inputs": [5, 6, 1], "targets": [8, 1]},
            {"inputs": [7, 1], "targets": [9, 10, 1]},
            {"inputs": [11, 12, 13, 1], "targets": [14, 1]}]


def test_encoder_decoder_packing_by_hand():
    [first, second] = rows(features.convert_features(
        examples_dataset(EXAMPLES), features.EncoderDecoderConverter, {"inputs": 6, "targets": 6}))
    assert first == {
        "encoder_input_tokens": [5, 6, 1, 7, 1, 0],
        "encoder_segment_ids": [1, 1, 1, 2, 2, 0],
        "encoder_positions": [0, 1, 2, 0, 1, 0],
        "decoder_target_tokens": [8, 1, 9, 10, 1, 0],
        "decoder_input_tokens": [0, 8, 0, 9, 10, 0],
        "decoder_segment_ids": [1, 1, 2, 2, 2, 0],
        "decoder_positions": [0, 1, 0, 1, 2, 0],
        "decoder_loss_weights": [1, 1, 1, 1, 1, 0],
    }
    assert second["encoder_input_tokens"] == [11, 12, 13, 1, 0, 0]
    assert second["decoder_target_tokens"] == [14, 1, 0, 0, 0, 0]


def test_prefix_lm_and_decoder_only_by_hand():
    lengths = {"inputs": 4, "targets": 3}  # one stream of 7
    [first, second, third] = rows(features.convert_features(
        examples_dataset(EXAMPLES), features.PrefixLMConverter, lengths))
    assert first == {
        "decoder_target_tokens": [5, 6, 1, 8, 1, 0, 0],
        "decoder_input_tokens": [0, 5, 6, 1, 8, 0, 0],
        "decoder_segment_ids": [1, 1, 1, 1, 1, 0, 0],
        "decoder_positions": [0, 1, 2, 3, 4, 0, 0],
        "decoder_loss_weights": [0, 0, 0, 1, 1, 0, 0],
        # The prefix as the decoder reads it (shifted right): positions 0..len(inputs).
        "decoder_causal_attention": [1, 1, 1, 1, 0, 0, 0],
    }
    assert second["decoder_target_tokens"] == [7, 1, 9, 10, 1, 0, 0]
    assert second["decoder_causal_attention"] == [1, 1, 1, 0, 0, 0, 0]
    [only] = rows(features.convert_features(examples_dataset([{"targets": [3, 4, 1]}] * 2),
                                            features.DecoderOnlyConverter, {"targets": 7}))
    assert only == {"decoder_target_tokens": [3, 4, 1, 3, 4, 1, 0],
                    "decoder_input_tokens": [0, 3, 4, 0, 3, 4, 0],
                    "decoder_segment_ids": [1, 1, 1, 2, 2, 2, 0],
                    "decoder_positions": [0, 1, 2, 0, 1, 2, 0],
                    "decoder_loss_weights": [1, 1, 1, 1, 1, 1, 0]}
    # Plain language modelling has no inputs: an inputs length in the configuration is not used.
    [lm] = rows(features.convert_features(examples_dataset([{"targets": [3, 4, 1]}] * 2),
                                          features.DecoderOnlyConverter, {"inputs": 5, "targets": 7}))
    assert lm == only


def test_without_packing_one_example_per_row_and_long_ones_trimmed():
    out = rows(features.convert_features(examples_dataset(EXAMPLES), features.EncoderDecoderConverter,
                                         {"inputs": 3, "targets": 4}, pack=False))
    assert [r["encoder_input_tokens"] for r in out] == [[5, 6, 1], [7, 1, 0], [11, 12, 13]]
    assert [r["decoder_segment_ids"] for r in out] == [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]]


def test_missing_features_or_bad_lengths_are_rejected():
    dataset = examples_dataset(EXAMPLES)
    with pytest.raises(ValueError, match="encoder_decoder needs features and sequence lengths"):
        features.convert_features(dataset, features.EncoderDecoderConverter, {"targets": 4})
    with pytest.raises(ValueError, match="prefix_lm needs features and sequence lengths"):
        features.convert_features(examples_dataset([{"targets": [3, 1]}]), features.PrefixLMConverter,
                                  {"inputs": 4, "targets": 4})
    with pytest.raises(ValueError, match="sequence lengths must be positive"):
        features.convert_features(dataset, features.DecoderOnlyConverter, {"targets": 0})


def test_a_family_outside_model_names_a_converter_of_its_own():
    """The toy family of tests/toys converts with its own class (no name known to
    model/data/), which declares the model features it writes and the family reads."""
    from tests.toys.bigram_family import BigramConverter, ToyBigram

    assert ToyBigram.converter is BigramConverter
    [row] = rows(features.convert_features(examples_dataset([{"targets": [3, 4, 1]}, {"targets": [5, 1]}]),
                                           ToyBigram.converter, {"targets": 6}))
    assert row == {"previous_tokens": [0, 3, 4, 0, 5, 0], "next_tokens": [3, 4, 1, 5, 1, 0],
                   "next_token_weights": [1, 1, 1, 1, 1, 0]}
    assert ToyBigram(None, 8).feature_keys == BigramConverter.model_features == tuple(row)


# --------------------------------------------------------------------------------------------
# Invariants of packed real data.

def unpack(tokens, segment_ids, positions):
    """The segments of one row, checking segment ids, positions and padding on the way."""
    tokens, segment_ids, positions = map(np.asarray, (tokens, segment_ids, positions))
    used = segment_ids > 0
    assert not np.any(used[np.argmin(used):]) or used.all(), "padding inside a row"
    assert np.all(tokens[~used] == 0) and np.all(positions[~used] == 0)
    ids = segment_ids[used]
    assert ids[0] == 1 and np.all(np.diff(ids) >= 0) and np.all(np.diff(ids) <= 1)
    segments = []
    for segment in range(1, ids.max() + 1):
        where = segment_ids == segment
        assert positions[where].tolist() == list(range(where.sum()))
        segments.append(tokens[where].tolist())
    return segments


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    return trained_vocabulary(shared_data)


@pytest.fixture(scope="module")
def text(shared_data):
    """Short sentences, so that many share a row."""
    return plain_text_dataset(str(shared_data / "text/de/tatoeba.deu-eng.*"))


@pytest.mark.parametrize("converter", [features.EncoderDecoderConverter, features.DecoderOnlyConverter,
                                       features.PrefixLMConverter], ids=lambda converter: converter.name)
def test_packing_loses_no_token_and_keeps_segments_apart(text, vocabulary, converter):
    lengths = {"inputs": 64, "targets": 16}
    packed = rows(pretraining_dataset(text, vocabulary, "span_corruption", lengths, converter, seed=1))
    unpacked = rows(pretraining_dataset(text, vocabulary, "span_corruption", lengths, converter, seed=1,
                                        pack=False))
    assert len(packed) < len(unpacked) / 2  # packing fills rows
    for table in (packed, unpacked):
        assert all(set(r) == set(converter.model_features) for r in table)
    family = converter.name
    width = {"encoder_decoder": 16, "decoder_only": 80, "prefix_lm": 80}[family]
    decoder = lambda table: [s for r in table for s in unpack(r["decoder_target_tokens"], r["decoder_segment_ids"],
                                                              r["decoder_positions"])]
    assert all(len(r["decoder_target_tokens"]) == width for r in packed)
    assert decoder(packed) == decoder(unpacked)  # same examples, same order, nothing lost
    for row in packed:
        shifted = unpack(row["decoder_input_tokens"], row["decoder_segment_ids"], row["decoder_positions"])
        targets = unpack(row["decoder_target_tokens"], row["decoder_segment_ids"], row["decoder_positions"])
        assert shifted == [[0] + t[:-1] for t in targets]
        if family == "encoder_decoder":
            encoder = unpack(row["encoder_input_tokens"], row["encoder_segment_ids"], row["encoder_positions"])
            assert len(encoder) == len(targets)  # the same examples on both sides
        assert row["decoder_loss_weights"] == [int(s > 0) for s in row["decoder_segment_ids"]] or family == "prefix_lm"
