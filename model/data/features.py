"""Feature conversion: task examples {"inputs", "targets"} -> the model's fixed-shape features.

The only model-specific layer of the input pipeline; it does not care where the tokens came
from (pre-training objective or "task: ..." fine-tuning text). Output keys (int32, fixed shapes),
the contract with the trainer:

  encoder_decoder: encoder_input_tokens, encoder_segment_ids, encoder_positions,
                   decoder_target_tokens, decoder_input_tokens, decoder_segment_ids,
                   decoder_positions, decoder_loss_weights
  decoder_only:    decoder_target_tokens, decoder_input_tokens, decoder_segment_ids,
                   decoder_positions, decoder_loss_weights
  prefix_lm:       the decoder_only keys + decoder_causal_attention

Decoder families read one stream, inputs followed by targets, of the summed lengths of the
features the examples have (targets alone for plain language modelling). decoder_only learns the whole stream; prefix_lm learns the targets
only and gives the prefix full attention (see `_decoder_stream`).

Packing puts several examples in a row, greedily in order (a new row starts when the next example
does not fit): segment ids 1, 2, 3... per row, positions restart at 0 per segment, padding (token
0, segment 0, position 0) only at the end of a row. Rows are packed within windows of consecutive
examples, all in TensorFlow ops (ragged batch, a scalar while loop for the row assignment, one
scatter per feature).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import tensorflow as tf

# Consecutive examples packed together. Larger windows do not pack tighter with greedy next-fit
# (it only looks at the current row) but amortize the per-window overhead.
PACKING_WINDOW = 256

ENCODER_DECODER_KEYS = ("encoder_input_tokens", "encoder_segment_ids", "encoder_positions",
                        "decoder_target_tokens", "decoder_input_tokens", "decoder_segment_ids",
                        "decoder_positions", "decoder_loss_weights")
DECODER_ONLY_KEYS = ("decoder_target_tokens", "decoder_input_tokens", "decoder_segment_ids",
                     "decoder_positions", "decoder_loss_weights")
PREFIX_LM_KEYS = DECODER_ONLY_KEYS + ("decoder_causal_attention",)
# The keys each converter writes: the contract with the model families (model/families/).
FEATURE_KEYS = {"encoder_decoder": ENCODER_DECODER_KEYS, "decoder_only": DECODER_ONLY_KEYS,
                "prefix_lm": PREFIX_LM_KEYS}
FAMILIES = tuple(FEATURE_KEYS)


# --------------------------------------------------------------------------------------------
# Packing of any dict of 1-D int32 features, each with its own row length.

def _assign_rows(sizes: tf.Tensor, capacities: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Greedy next-fit: for examples with `sizes` [n, features] (each within `capacities`), the
    row, the 1-based segment within the row and the start offset per feature of every example."""
    n = tf.shape(sizes)[0]

    def body(i, row, segment, fill, rows, segments, offsets):
        size = sizes[i]
        fits = tf.reduce_all(fill + size <= capacities)
        new_row = tf.logical_and(tf.logical_not(fits), segment > 0)
        row = tf.where(new_row, row + 1, row)
        fill = tf.where(new_row, tf.zeros_like(fill), fill)
        segment = tf.where(new_row, 0, segment) + 1
        return (i + 1, row, segment, fill + size, rows.write(i, row), segments.write(i, segment),
                offsets.write(i, fill))

    _, _, _, _, rows, segments, offsets = tf.while_loop(
        lambda i, *_: i < n, body,
        (0, 0, 0, tf.zeros_like(capacities),
         tf.TensorArray(tf.int32, size=n), tf.TensorArray(tf.int32, size=n),
         tf.TensorArray(tf.int32, size=n, element_shape=capacities.shape)))
    return rows.stack(), segments.stack(), tf.reshape(offsets.stack(), [n, capacities.shape[0]])


def _pack_window(window: Mapping[str, tf.RaggedTensor], lengths: Mapping[str, int]) -> dict[str, tf.Tensor]:
    """A ragged batch of examples -> packed rows: `key`, `key_segment_ids`, `key_positions`."""
    keys = sorted(lengths)
    sizes = tf.stack([tf.cast(window[k].row_lengths(), tf.int32) for k in keys], axis=1)
    rows, segments, offsets = _assign_rows(sizes, tf.constant([lengths[k] for k in keys], tf.int32))
    num_rows = rows[-1] + 1
    packed = {}
    for column, key in enumerate(keys):
        ragged = window[key]
        example = tf.cast(ragged.value_rowids(), tf.int32)
        position = tf.range(tf.size(ragged.flat_values)) - tf.gather(tf.cast(ragged.row_starts(), tf.int32), example)
        where = tf.stack([tf.gather(rows, example), tf.gather(offsets[:, column], example) + position], axis=1)
        shape = tf.stack([num_rows, lengths[key]])
        packed[key] = tf.scatter_nd(where, ragged.flat_values, shape)
        packed[f"{key}_segment_ids"] = tf.scatter_nd(where, tf.gather(segments, example), shape)
        packed[f"{key}_positions"] = tf.scatter_nd(where, position, shape)
    return packed


def _trim(example, lengths: Mapping[str, int]) -> dict[str, tf.Tensor]:
    return {k: tf.cast(example[k][:lengths[k]], tf.int32) for k in lengths}


# --------------------------------------------------------------------------------------------
# Model families.

def shift_right(tokens: tf.Tensor, positions: tf.Tensor, segment_ids: tf.Tensor) -> tf.Tensor:
    """Decoder inputs: each token's predecessor within its segment, 0 at segment starts/padding."""
    shifted = tf.concat([tf.zeros_like(tokens[..., :1]), tokens[..., :-1]], axis=-1)
    first_or_padding = tf.logical_or(tf.equal(positions, 0), tf.equal(segment_ids, 0))
    return tf.where(first_or_padding, tf.zeros_like(tokens), shifted)


def _decoder_stream(example, loss_on_inputs: bool) -> dict[str, tf.Tensor]:
    """inputs + targets as one stream, with per-token loss weights and prefix flags.

    The prefix flag covers len(inputs) + 1 positions: decoder_input_tokens are shifted right by
    one, so the prefix tokens sit at positions 1..len(inputs) of what the decoder reads (as
    seqio's PrefixLM converter does).
    """
    inputs = tf.cast(example.get("inputs", tf.zeros([0], tf.int32)), tf.int32)
    targets = tf.cast(example["targets"], tf.int32)
    num_inputs, num_targets = tf.size(inputs), tf.size(targets)
    loss = tf.concat([tf.fill([num_inputs], int(loss_on_inputs)), tf.ones([num_targets], tf.int32)], 0)
    prefix = tf.cast(tf.range(num_inputs + num_targets) <= num_inputs, tf.int32)
    return {"targets": tf.concat([inputs, targets], 0), "loss": loss, "prefix": prefix}


def _check_lengths(family: str, sequence_lengths: Mapping[str, int], element_spec) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; known: {FAMILIES}")
    required = {"encoder_decoder": {"inputs", "targets"}, "prefix_lm": {"inputs", "targets"},
                "decoder_only": {"targets"}}[family]
    missing_lengths = required - set(sequence_lengths)
    missing_features = required - set(element_spec)
    if missing_lengths or missing_features:
        raise ValueError(f"{family} needs features and sequence lengths {sorted(required)}; "
                         f"lengths given {dict(sequence_lengths)}, features {sorted(element_spec)}")
    if any(int(v) < 1 for v in sequence_lengths.values()):
        raise ValueError(f"sequence lengths must be positive: {dict(sequence_lengths)}")


@dataclasses.dataclass(frozen=True)
class WindowConverter:
    """Feature conversion in two steps, for pipelines that handle the windows themselves:
    `prepare` maps one task example to the streams to pack (trimmed), and `convert` maps a
    ragged batch of prepared examples (one packing window) to a batch of model feature rows."""

    prepare: Callable[[Mapping[str, tf.Tensor]], dict[str, tf.Tensor]]
    convert: Callable[[Mapping[str, tf.RaggedTensor]], dict[str, tf.Tensor]]


def window_converter(family: str, sequence_lengths: Mapping[str, int], element_spec) -> WindowConverter:
    """The converter of `family` for examples of `element_spec` (see the module docstring)."""
    _check_lengths(family, sequence_lengths, element_spec)
    if family == "encoder_decoder":
        lengths = {"inputs": sequence_lengths["inputs"], "targets": sequence_lengths["targets"]}

        def to_features(row):
            return {
                "encoder_input_tokens": row["inputs"],
                "encoder_segment_ids": row["inputs_segment_ids"],
                "encoder_positions": row["inputs_positions"],
                "decoder_target_tokens": row["targets"],
                "decoder_input_tokens": shift_right(row["targets"], row["targets_positions"],
                                                    row["targets_segment_ids"]),
                "decoder_segment_ids": row["targets_segment_ids"],
                "decoder_positions": row["targets_positions"],
                "decoder_loss_weights": tf.cast(row["targets_segment_ids"] > 0, tf.int32),
            }

        prepare = lambda example: _trim(example, lengths)
    else:
        # The stream holds the features the examples have: targets alone for plain language
        # modelling (whatever inputs length the configuration also carries), inputs + targets
        # otherwise.
        stream_length = sum(int(sequence_lengths[k]) for k in ("inputs", "targets") if k in element_spec)
        streams = ("targets", "loss", "prefix") if family == "prefix_lm" else ("targets", "loss")
        lengths = {k: stream_length for k in streams}
        loss_on_inputs = family == "decoder_only"

        def to_features(row):
            features = {
                "decoder_target_tokens": row["targets"],
                "decoder_input_tokens": shift_right(row["targets"], row["targets_positions"],
                                                    row["targets_segment_ids"]),
                "decoder_segment_ids": row["targets_segment_ids"],
                "decoder_positions": row["targets_positions"],
                "decoder_loss_weights": row["loss"],
            }
            if family == "prefix_lm":
                features["decoder_causal_attention"] = row["prefix"]
            return features

        prepare = lambda example: _trim(_decoder_stream(example, loss_on_inputs), lengths)
    return WindowConverter(prepare=prepare, convert=lambda window: to_features(_pack_window(window, lengths)))


def convert_features(dataset: tf.data.Dataset, family: str, sequence_lengths: Mapping[str, int],
                     pack: bool = True, window: int = PACKING_WINDOW) -> tf.data.Dataset:
    """Task examples -> model features for `family` (see the module docstring)."""
    converter = window_converter(family, sequence_lengths, dataset.element_spec)
    return (dataset.map(converter.prepare)
            .ragged_batch(window if pack else 1)
            .map(converter.convert)
            .unbatch())
