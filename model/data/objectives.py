"""Pre-training objectives of the T5 paper (Section 3.3, Table 3) as tf.data preprocessors.

Every objective maps token examples {"targets": int32 [n]} (a chunk of a tokenized document) to
{"inputs", "targets"} (or only "targets" for plain language modelling), before EOS is appended.
Randomness is stateless: example i of epoch e draws from the seed (base_seed + e * 2^32, i), so
the same seed and the same input give the same outputs, whatever the order tf.data runs the maps
in, and every pass over the data draws fresh noise.

Sentinel convention (as T5): the k-th corrupted span (k = 0, 1, ...) becomes `<extra_id_k>` in
the inputs; the targets list each span after its sentinel, and end with one more sentinel when
text follows the last span (Table 3: "Thank you <X> me to your party <Y> week." ->
"<X> for inviting <Y> last <Z>"). There are 100 sentinels: a chunk with more corrupted spans
(about 2 chunks in a whole baseline run at 15% i.i.d. noise over 511 tokens) has its spans past the budget merged into
the last one, the text between them included, so inputs and targets still rebuild the chunk.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import tensorflow as tf

from model.data.vocabulary import EOS_ID, NUM_RESERVED_IDS, TokenIds

Example = dict[str, tf.Tensor]


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
    """Parameters of the objectives (paper defaults); each objective reads the ones it needs."""

    noise_density: float = 0.15
    mean_noise_span_length: float = 3.0
    # BERT-style: share of corrupted tokens replaced by a random token instead of the mask.
    random_token_rate: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 < self.noise_density < 1.0:
            raise ValueError(f"noise_density must be in (0, 1), got {self.noise_density}")
        if self.mean_noise_span_length < 1.0:
            raise ValueError(f"mean_noise_span_length must be >= 1, got {self.mean_noise_span_length}")
        if not 0.0 <= self.random_token_rate <= 1.0:
            raise ValueError(f"random_token_rate must be in [0, 1], got {self.random_token_rate}")


# --------------------------------------------------------------------------------------------
# Noise masks: bool [length], True where a token is corrupted.

def iid_noise_mask(length: tf.Tensor, noise_density: float, seed: tf.Tensor) -> tf.Tensor:
    """Each token independently corrupted with probability `noise_density`."""
    return tf.random.stateless_uniform([length], seed) < noise_density


def _random_segmentation(num_items: tf.Tensor, num_segments: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """Lengths of `num_segments` non-empty segments summing to `num_items`, uniformly at random.

    Marks `num_segments - 1` distinct cut points among the `num_items - 1` gaps by shuffling a
    vector with that many ones (a stateless argsort of uniform keys).
    """
    cuts = tf.concat([tf.ones([num_segments - 1], tf.int32),
                      tf.zeros([num_items - num_segments], tf.int32)], axis=0)
    order = tf.argsort(tf.random.stateless_uniform([num_items - 1], seed))
    cuts = tf.concat([[0], tf.gather(cuts, order)], axis=0)
    segment_of_item = tf.cumsum(cuts)
    return tf.math.unsorted_segment_sum(tf.ones_like(segment_of_item), segment_of_item, num_segments)


def random_spans_noise_mask(length: tf.Tensor, noise_density: float, mean_noise_span_length: float,
                            seed: tf.Tensor) -> tf.Tensor:
    """T5's span mask: round(length * density) noisy tokens in spans of mean length `mean`.

    Spans alternate kept/noise, starting with kept text and ending with noise, so every chunk
    has exactly the same number of noisy tokens and spans (which makes lengths predictable).
    """
    length = tf.maximum(tf.convert_to_tensor(length, tf.int32), 2)  # one kept + one noisy token
    num_noise = tf.cast(tf.round(tf.cast(length, tf.float32) * noise_density), tf.int32)
    num_noise = tf.clip_by_value(num_noise, 1, length - 1)
    num_spans = tf.cast(tf.round(tf.cast(num_noise, tf.float32) / mean_noise_span_length), tf.int32)
    num_spans = tf.maximum(num_spans, 1)
    noise_seed, kept_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    noise_lengths = _random_segmentation(num_noise, num_spans, noise_seed)
    kept_lengths = _random_segmentation(length - num_noise, num_spans, kept_seed)
    # Runs in order kept_0, noise_0, kept_1, noise_1, ...; odd runs are noise.
    run_lengths = tf.reshape(tf.stack([kept_lengths, noise_lengths], axis=1), [-1])
    run_of_token = tf.repeat(tf.range(2 * num_spans), run_lengths)
    return tf.equal(run_of_token % 2, 1)


def _clip_mask(mask: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
    """The span mask is built for >= 2 tokens; a 1-token chunk keeps its first entry only."""
    return mask[:length]


# --------------------------------------------------------------------------------------------
# Ways to turn (tokens, mask) into inputs and targets.

def _span_starts(mask: tf.Tensor) -> tf.Tensor:
    previous = tf.concat([[False], mask[:-1]], axis=0)
    return tf.logical_and(mask, tf.logical_not(previous))


def merge_spans_past_budget(mask: tf.Tensor, num_sentinels: int) -> tf.Tensor:
    """The mask with at most as many spans as sentinels: from the start of the last span the
    budget allows to the last corrupted token, every token becomes noise (one span).

    The budget is `num_sentinels` spans, one less when text follows the last span (its targets
    end with one more sentinel). The merged span's target holds the kept text between the spans
    too, so inputs and targets still rebuild the chunk exactly; an assertion instead would stop
    training (and every resumed run) on one rare example.
    """
    size = tf.size(mask)
    span_number = tf.cumsum(tf.cast(_span_starts(mask), tf.int32))
    text_after_last_span = tf.logical_and(size > 0, tf.logical_not(mask[-1:]))
    budget = num_sentinels - tf.cast(tf.reduce_any(text_after_last_span), tf.int32)
    positions = tf.range(size)
    last_noise = tf.reduce_max(tf.concat([[-1], tf.boolean_mask(positions, mask)], axis=0))
    return tf.logical_or(mask, tf.logical_and(span_number >= budget, positions <= last_noise))


def spans_to_sentinels(tokens: tf.Tensor, mask: tf.Tensor, token_ids: TokenIds) -> Example:
    """Each run of masked tokens -> one unique sentinel in the inputs; the runs become targets.

    `<extra_id_k>` for span k + 1 is id vocab_size - (k + 1); spans past the sentinel budget are
    merged first (see `merge_spans_past_budget`)."""
    mask = merge_spans_past_budget(mask, token_ids.num_sentinels)
    starts = _span_starts(mask)
    span_number = tf.cumsum(tf.cast(starts, tf.int32))
    sentinels = token_ids.vocab_size - span_number
    inputs = tf.boolean_mask(tf.where(starts, sentinels, tokens),
                             tf.logical_or(tf.logical_not(mask), starts))
    # Targets interleave [sentinel, token] pairs, keeping the sentinel only at span starts.
    pairs = tf.reshape(tf.stack([sentinels, tokens], axis=1), [-1])
    keep = tf.reshape(tf.stack([starts, mask], axis=1), [-1])
    targets = tf.boolean_mask(pairs, keep)
    text_after_last_span = tf.logical_and(tf.size(mask) > 0, tf.logical_not(mask[-1]))
    final = token_ids.vocab_size - (span_number[-1:] + 1)
    targets = tf.cond(text_after_last_span, lambda: tf.concat([targets, final], 0), lambda: targets)
    return {"inputs": inputs, "targets": targets}


def drop_tokens(tokens: tf.Tensor, mask: tf.Tensor) -> Example:
    """Masked tokens leave the inputs; the targets are exactly those tokens, in order."""
    return {"inputs": tf.boolean_mask(tokens, tf.logical_not(mask)),
            "targets": tf.boolean_mask(tokens, mask)}


# --------------------------------------------------------------------------------------------
# The objectives: (tokens, seed, config, token ids) -> example.

ObjectiveFn = Callable[[tf.Tensor, tf.Tensor, ObjectiveConfig, TokenIds], Example]


def iid_noise_sentinels(tokens, seed, config, token_ids):
    """Baseline of the paper: i.i.d. corruption, each corrupted run -> one unique sentinel."""
    return spans_to_sentinels(tokens, iid_noise_mask(tf.size(tokens), config.noise_density, seed), token_ids)


def span_corruption(tokens, seed, config, token_ids):
    """Spans of mean length `mean_noise_span_length` covering `noise_density` of the tokens."""
    length = tf.size(tokens)
    mask = random_spans_noise_mask(length, config.noise_density, config.mean_noise_span_length, seed)
    return spans_to_sentinels(tokens, _clip_mask(mask, length), token_ids)


def iid_drop(tokens, seed, config, token_ids):
    """i.i.d. corruption, corrupted tokens dropped from the inputs and predicted in order."""
    return drop_tokens(tokens, iid_noise_mask(tf.size(tokens), config.noise_density, seed))


def _mask_and_maybe_swap(tokens, seed, config, token_ids, random_token_rate: float) -> Example:
    mask_seed, choice_seed, token_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    length = tf.size(tokens)
    mask = iid_noise_mask(length, config.noise_density, mask_seed)
    swap = tf.logical_and(mask, tf.random.stateless_uniform([length], choice_seed) < random_token_rate)
    # Random replacements are ordinary pieces: never pad/eos/unk, never a sentinel.
    random_tokens = tf.random.stateless_uniform(
        [length], token_seed, minval=NUM_RESERVED_IDS, maxval=token_ids.first_sentinel_id, dtype=tf.int32)
    inputs = tf.where(mask, tf.fill([length], token_ids.mask_id), tokens)
    inputs = tf.where(swap, random_tokens, inputs)
    return {"inputs": inputs, "targets": tokens}


def bert(tokens, seed, config, token_ids):
    """BERT-style: corrupt tokens; 90% become the mask token, 10% a random token; target = text."""
    return _mask_and_maybe_swap(tokens, seed, config, token_ids, config.random_token_rate)


def mass(tokens, seed, config, token_ids):
    """MASS-style: BERT-style without random swaps (every corrupted token -> mask)."""
    return _mask_and_maybe_swap(tokens, seed, config, token_ids, 0.0)


def prefix_lm(tokens, seed, config, token_ids):
    """Split at a uniformly random point: prefix -> inputs, the rest -> targets (both non-empty
    when the chunk has two tokens or more)."""
    length = tf.size(tokens)
    split = tf.random.stateless_uniform([], seed, minval=1, maxval=tf.maximum(length, 2), dtype=tf.int32)
    split = tf.minimum(split, length)
    return {"inputs": tokens[:split], "targets": tokens[split:]}


def deshuffle(tokens, seed, config, token_ids):
    """Tokens shuffled in the inputs; the original order as targets."""
    order = tf.argsort(tf.random.stateless_uniform([tf.size(tokens)], seed))
    return {"inputs": tf.gather(tokens, order), "targets": tokens}


def lm(tokens, seed, config, token_ids):
    """Plain language modelling (decoder-only): the whole chunk is the target, no inputs."""
    return {"targets": tokens}


# --------------------------------------------------------------------------------------------
# Chunk lengths: how many raw tokens each objective takes so that its outputs, with EOS, fit.

def span_corruption_chunk_length(inputs_length: int, noise_density: float,
                                 mean_noise_span_length: float) -> tuple[int, int]:
    """Largest raw chunk whose span-corrupted inputs (+EOS) fit `inputs_length`, and the targets
    length it then needs (+EOS). T5's numbers: 512 -> (568, 114) at 15% and spans of 3."""

    def lengths(chunk: int) -> tuple[int, int]:
        num_noise = min(max(int(round(chunk * noise_density)), 1), chunk - 1)
        num_spans = max(int(round(num_noise / mean_noise_span_length)), 1)
        # Inputs: kept tokens + one sentinel per span + EOS. Targets: noise + sentinels + EOS
        # (no final sentinel: the span mask always ends with noise).
        return chunk - num_noise + num_spans + 1, num_noise + num_spans + 1

    chunk = 2
    while lengths(chunk + 1)[0] <= inputs_length:
        chunk += 1
    return chunk, lengths(chunk)[1]


@dataclasses.dataclass(frozen=True)
class Objective:
    name: str
    fn: ObjectiveFn
    # Raw tokens per chunk for given task lengths (each length counts the EOS).
    chunk_length: Callable[[Mapping[str, int], ObjectiveConfig], int]


def _inputs_chunk(lengths, config):
    return lengths["inputs"] - 1


def _full_text_chunk(lengths, config):
    """Objectives whose inputs and targets each hold (up to) the whole chunk: bert, mass,
    deshuffle, prefix_lm. A targets length below the inputs length would silently shorten every
    chunk to it (113 tokens at 512/114), so it is an error."""
    if lengths["targets"] < lengths["inputs"]:
        raise ValueError(f"this objective's targets are the whole chunk: a targets length of "
                         f"{lengths['targets']} would cut chunks of {lengths['inputs']} input tokens "
                         f"to {lengths['targets'] - 1}; give targets at least the inputs length "
                         f"(see model/gin/objectives/)")
    return lengths["inputs"] - 1


def _span_chunk(lengths, config):
    chunk, targets_length = span_corruption_chunk_length(
        lengths["inputs"], config.noise_density, config.mean_noise_span_length)
    if targets_length > lengths["targets"]:
        raise ValueError(f"span corruption of {lengths['inputs']} input tokens needs a targets "
                         f"length of {targets_length}, got {lengths['targets']}")
    return chunk


def _targets_chunk(lengths, config):
    return lengths["targets"] - 1


OBJECTIVES: dict[str, Objective] = {o.name: o for o in [
    Objective("iid_noise_sentinels", iid_noise_sentinels, _inputs_chunk),
    Objective("span_corruption", span_corruption, _span_chunk),
    Objective("iid_drop", iid_drop, _inputs_chunk),
    Objective("bert", bert, _full_text_chunk),
    Objective("mass", mass, _full_text_chunk),
    Objective("prefix_lm", prefix_lm, _full_text_chunk),
    Objective("deshuffle", deshuffle, _full_text_chunk),
    Objective("lm", lm, _targets_chunk),
]}


def get_objective(name: str) -> Objective:
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known: {sorted(OBJECTIVES)}")
    return OBJECTIVES[name]


# --------------------------------------------------------------------------------------------
# Dataset-level preprocessing around the objectives.

def split_tokens(dataset: tf.data.Dataset, chunk_length: int) -> tf.data.Dataset:
    """{"targets": tokens, ...} documents -> chunks of at most `chunk_length` tokens (T5
    split_tokens), each with its number "chunk" in the document; the other (scalar) features of
    a document are copied to each of its chunks. Empty documents vanish."""
    if chunk_length < 1:
        raise ValueError(f"chunk_length must be positive, got {chunk_length}")

    def to_chunks(example: Example) -> Example:
        tokens = example["targets"]
        length = tf.size(tokens)
        full, rest = length // chunk_length, length % chunk_length
        row_lengths = tf.concat([tf.fill([full], chunk_length), tf.reshape(rest, [1])[:tf.minimum(rest, 1)]], 0)
        num_chunks = tf.size(row_lengths)
        chunks = {key: tf.fill([num_chunks], value) for key, value in example.items() if key != "targets"}
        chunks["targets"] = tf.RaggedTensor.from_row_lengths(tokens, row_lengths)
        chunks["chunk"] = tf.range(num_chunks, dtype=tf.int64)
        return chunks

    return dataset.map(to_chunks).unbatch()


def append_eos_after_trim(example: Example, sequence_lengths: Mapping[str, int]) -> Example:
    """Trims each feature to its length - 1 and appends EOS (T5's append_eos_after_trim)."""
    out = {}
    for key, tokens in example.items():
        if key not in sequence_lengths:
            raise ValueError(f"no sequence length given for feature {key!r}: {dict(sequence_lengths)}")
        out[key] = tf.concat([tokens[:sequence_lengths[key] - 1], [EOS_ID]], axis=0)
    return out


def example_seed(base_seed: tf.Tensor | int, index: tf.Tensor, epoch: tf.Tensor | int = 0) -> tf.Tensor:
    """The stateless seed of example `index` in pass `epoch` over the data:
    (base_seed + epoch * 2^32, index). Epoch 0 is (base_seed, index); base seeds below 2^32 and
    distinct epochs never share a seed."""
    epoch_word = tf.bitwise.left_shift(tf.cast(epoch, tf.int64), tf.constant(32, tf.int64))
    return tf.stack([tf.cast(base_seed, tf.int64) + epoch_word, tf.cast(index, tf.int64)])


def corruption(name: str, sequence_lengths: Mapping[str, int], token_ids: TokenIds, seed: int,
               config: ObjectiveConfig = ObjectiveConfig()
               ) -> Callable[[tf.Tensor, tf.Tensor, tf.Tensor | int], Example]:
    """(chunk tokens, example index, epoch[, seed]) -> the objective's features, EOS appended,
    trimmed. The noise depends on (seed, epoch, index) only (see `example_seed`); a seed given
    to the call (a tensor: a mixture's member's) replaces `seed`."""
    objective = get_objective(name)

    def corrupt(tokens: tf.Tensor, index: tf.Tensor, epoch: tf.Tensor | int = 0,
                example_base_seed: tf.Tensor | int = seed) -> Example:
        features = objective.fn(tokens, example_seed(example_base_seed, index, epoch), config, token_ids)
        return append_eos_after_trim(features, sequence_lengths)

    return corrupt


def chunk_length(name: str, sequence_lengths: Mapping[str, int], config: ObjectiveConfig = ObjectiveConfig()) -> int:
    return get_objective(name).chunk_length(sequence_lengths, config)


def apply_objective(dataset: tf.data.Dataset, name: str, sequence_lengths: Mapping[str, int],
                    token_ids: TokenIds, seed: int, config: ObjectiveConfig = ObjectiveConfig(),
                    num_parallel_calls: int | None = None, epoch: tf.Tensor | int = 0) -> tf.data.Dataset:
    """Token documents {"targets"} -> split into chunks -> objective -> EOS appended, trimmed.
    Chunk i of the dataset is example i (its seed)."""
    dataset = split_tokens(dataset, chunk_length(name, sequence_lengths, config))
    corrupt = corruption(name, sequence_lengths, token_ids, seed, config)
    # Outputs depend on the example index only, so parallel maps stay reproducible in order.
    return dataset.enumerate().map(lambda index, example: corrupt(example["targets"], index, epoch),
                                   num_parallel_calls=num_parallel_calls,
                                   deterministic=True if num_parallel_calls else None)
