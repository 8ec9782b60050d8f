"""Feature conversion: task examples {"inputs", "targets"} -> the model's fixed-shape features.

The only model-specific layer of the input pipeline; it does not care where the tokens came
from (pre-training objective or "task: ..." fine-tuning text). A converter is a class
(`FeatureConverter`) that declares the task features it reads and the model features it writes
(int32, fixed shapes: the contract with the family that names it, model/families/base.py's
`converter`). Those of the families in model/families/:

  EncoderDecoderConverter: encoder_input_tokens, encoder_segment_ids, encoder_positions,
                           decoder_target_tokens, decoder_input_tokens, decoder_segment_ids,
                           decoder_positions, decoder_loss_weights
  DecoderOnlyConverter:    decoder_target_tokens, decoder_input_tokens, decoder_segment_ids,
                           decoder_positions, decoder_loss_weights
  PrefixLMConverter:       the decoder-only keys + decoder_causal_attention

The decoder converters read one stream, inputs followed by targets, of the summed lengths of the
features the examples have (targets alone for plain language modelling). DecoderOnlyConverter
learns the whole stream; PrefixLMConverter learns the targets only and gives the prefix full
attention. A family whose model reads other features names a converter class of its own package.

Packing puts several examples in a row, greedily in order (a new row starts when the next example
does not fit): segment ids 1, 2, 3... per row, positions restart at 0 per segment, padding (token
0, segment 0, position 0) only at the end of a row. Rows are packed within windows of consecutive
examples, all in TensorFlow ops (ragged batch, a scalar while loop for the row assignment, one
scatter per feature).
"""
from __future__ import annotations

import abc
from typing import Any, ClassVar, Dict, Mapping, Tuple

import tensorflow as tf

# Consecutive examples packed together. Larger windows do not pack tighter with greedy next-fit
# (it only looks at the current row) but amortize the per-window overhead.
PACKING_WINDOW = 256


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
# Feature converters: one class per kind of model, named by the families that read its features.

def shift_right(tokens: tf.Tensor, positions: tf.Tensor, segment_ids: tf.Tensor) -> tf.Tensor:
    """Decoder inputs: each token's predecessor within its segment, 0 at segment starts/padding."""
    shifted = tf.concat([tf.zeros_like(tokens[..., :1]), tokens[..., :-1]], axis=-1)
    first_or_padding = tf.logical_or(tf.equal(positions, 0), tf.equal(segment_ids, 0))
    return tf.where(first_or_padding, tf.zeros_like(tokens), shifted)


class FeatureConverter(abc.ABC):
    """Task examples -> one kind of model's packed fixed-shape features.

    A subclass declares the task features it reads (`task_features`, each with a sequence
    length) and the model features it writes (`model_features`), and says how an example
    becomes the 1-D streams to pack (`streams`, of the lengths `stream_lengths` gives) and how
    packed streams (`key`, `key_segment_ids`, `key_positions`) become model features
    (`model_row`). A family names its converter class (model/families/base.py's `converter`);
    one for a new kind of model subclasses this one in the family's own package.

    An object is one conversion, for examples of `element_spec` at `sequence_lengths`, in two
    steps for pipelines that handle the packing windows themselves: `prepare` maps one task
    example to its streams (trimmed), `convert` a ragged batch of prepared examples (one packing
    window) to a batch of model feature rows.
    """

    # What a pre-training stream's identity records (a recorded input position stays valid for
    # the same name).
    name: ClassVar[str]
    task_features: ClassVar[Tuple[str, ...]]
    model_features: ClassVar[Tuple[str, ...]]

    def __init__(self, sequence_lengths: Mapping[str, int], element_spec: Mapping[str, Any]):
        required = set(self.task_features)
        if required - set(sequence_lengths) or required - set(element_spec):
            raise ValueError(f"{self.name} needs features and sequence lengths {sorted(required)}; "
                             f"lengths given {dict(sequence_lengths)}, features {sorted(element_spec)}")
        if any(int(v) < 1 for v in sequence_lengths.values()):
            raise ValueError(f"sequence lengths must be positive: {dict(sequence_lengths)}")
        self.lengths = self.stream_lengths(sequence_lengths, element_spec)

    @abc.abstractmethod
    def stream_lengths(self, sequence_lengths: Mapping[str, int],
                       element_spec: Mapping[str, Any]) -> Dict[str, int]:
        """{stream: row length} of the streams `streams` gives."""

    @abc.abstractmethod
    def streams(self, example: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """One task example -> its 1-D streams to pack, untrimmed."""

    @abc.abstractmethod
    def model_row(self, packed: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """Packed streams -> the `model_features`."""

    def prepare(self, example: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        return _trim(self.streams(example), self.lengths)

    def convert(self, window: Mapping[str, tf.RaggedTensor]) -> Dict[str, tf.Tensor]:
        return self.model_row(_pack_window(window, self.lengths))


class EncoderDecoderConverter(FeatureConverter):
    """inputs to the encoder, targets to the decoder, each packed at its own length."""

    name = "encoder_decoder"
    task_features = ("inputs", "targets")
    model_features = ("encoder_input_tokens", "encoder_segment_ids", "encoder_positions",
                      "decoder_target_tokens", "decoder_input_tokens", "decoder_segment_ids",
                      "decoder_positions", "decoder_loss_weights")

    def stream_lengths(self, sequence_lengths, element_spec):
        return {key: sequence_lengths[key] for key in self.task_features}

    def streams(self, example):
        return {key: example[key] for key in self.task_features}

    def model_row(self, packed):
        return {
            "encoder_input_tokens": packed["inputs"],
            "encoder_segment_ids": packed["inputs_segment_ids"],
            "encoder_positions": packed["inputs_positions"],
            "decoder_target_tokens": packed["targets"],
            "decoder_input_tokens": shift_right(packed["targets"], packed["targets_positions"],
                                                packed["targets_segment_ids"]),
            "decoder_segment_ids": packed["targets_segment_ids"],
            "decoder_positions": packed["targets_positions"],
            "decoder_loss_weights": tf.cast(packed["targets_segment_ids"] > 0, tf.int32),
        }


class DecoderOnlyConverter(FeatureConverter):
    """One stream, inputs followed by targets (targets alone for plain language modelling),
    every token learned."""

    name = "decoder_only"
    task_features = ("targets",)
    model_features = ("decoder_target_tokens", "decoder_input_tokens", "decoder_segment_ids",
                      "decoder_positions", "decoder_loss_weights")
    stream_keys: ClassVar[Tuple[str, ...]] = ("targets", "loss")
    loss_on_inputs: ClassVar[bool] = True

    def stream_lengths(self, sequence_lengths, element_spec):
        # The stream holds the features the examples have: targets alone for plain language
        # modelling (whatever inputs length the configuration also carries), inputs + targets
        # otherwise.
        length = sum(int(sequence_lengths[k]) for k in ("inputs", "targets") if k in element_spec)
        return {key: length for key in self.stream_keys}

    def streams(self, example):
        """inputs + targets as one stream, with per-token loss weights."""
        inputs = tf.cast(example.get("inputs", tf.zeros([0], tf.int32)), tf.int32)
        targets = tf.cast(example["targets"], tf.int32)
        loss = tf.concat([tf.fill([tf.size(inputs)], int(self.loss_on_inputs)),
                          tf.ones([tf.size(targets)], tf.int32)], 0)
        return {"targets": tf.concat([inputs, targets], 0), "loss": loss}

    def model_row(self, packed):
        return {
            "decoder_target_tokens": packed["targets"],
            "decoder_input_tokens": shift_right(packed["targets"], packed["targets_positions"],
                                                packed["targets_segment_ids"]),
            "decoder_segment_ids": packed["targets_segment_ids"],
            "decoder_positions": packed["targets_positions"],
            "decoder_loss_weights": packed["loss"],
        }


class PrefixLMConverter(DecoderOnlyConverter):
    """The decoder-only stream, learning the targets only, with full attention over the prefix
    (the inputs)."""

    name = "prefix_lm"
    task_features = ("inputs", "targets")
    model_features = DecoderOnlyConverter.model_features + ("decoder_causal_attention",)
    stream_keys = DecoderOnlyConverter.stream_keys + ("prefix",)
    loss_on_inputs = False

    def streams(self, example):
        """The decoder-only streams and the prefix flags. The flag covers len(inputs) + 1
        positions: decoder_input_tokens are shifted right by one, so the prefix tokens sit at
        positions 1..len(inputs) of what the decoder reads (as seqio's PrefixLM converter does).
        """
        streams = super().streams(example)
        num_inputs = tf.size(example["inputs"])
        streams["prefix"] = tf.cast(tf.range(tf.size(streams["targets"])) <= num_inputs, tf.int32)
        return streams

    def model_row(self, packed):
        return {**super().model_row(packed), "decoder_causal_attention": packed["prefix"]}


def convert_features(dataset: tf.data.Dataset, converter: "type[FeatureConverter]",
                     sequence_lengths: Mapping[str, int], pack: bool = True,
                     window: int = PACKING_WINDOW) -> tf.data.Dataset:
    """Task examples -> model features of `converter` (a FeatureConverter class)."""
    conversion = converter(sequence_lengths, dataset.element_spec)
    return (dataset.map(conversion.prepare)
            .ragged_batch(window if pack else 1)
            .map(conversion.convert)
            .unbatch())
