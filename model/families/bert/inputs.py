"""BERT's pre-training examples from C4 pages: segment pairs for next-sentence prediction and
masked word pieces, as BERT's `create_pretraining_data.py` makes them, streamed.

A page's sentences are its lines split by our sentence splitter (the shared `text` package).
Pages are read in windows of `BertDataConfig.window_documents` consecutive documents; within a
window, for each document (BERT's `create_instances_from_document`):
- sentences are gathered into a chunk until it reaches the target length (the sequence length
  minus [CLS] and two [SEP]; with probability `short_sequence_rate` a random shorter target, as
  BERT, so that the model also sees short sequences);
- A is the chunk's first 1..n-1 sentences (a random cut); B is, with probability 1/2, the rest
  of the chunk (label 0, IsNext; for a chunk of one long sentence, the document's next
  sentences), otherwise sentences from a random other document of the window from a random
  sentence on (label 1, NotNext), the chunk's unused sentences going back to the document;
  without next-sentence prediction (SegaBERT, `next_sentence=False`) the whole chunk is A;
- the pair is trimmed to the target, one token at a time from the front or the back of the
  longer segment (a coin each time);
- then `[CLS] A [SEP] B [SEP]` with token types 0 up to the first [SEP] and 1 after, and 15% of
  its pieces (never [CLS]/[SEP]; round(15% of the length), at most `max_predictions`) chosen
  at random for prediction: 80% become [MASK], 10% a random piece, 10% stay as they are.
The examples of `BertDataConfig.shuffle_windows` consecutive windows are then shuffled together
(BERT shuffles all its instances in create_pretraining_data.py and again in run_pretraining.py's
input function; a stream shuffles a block of windows at a time), the permutation drawn from the
generator seeded with (seed, e, first window of the block, 1).
Where we differ from BERT: the coin is fair for every pair (BERT makes every one-sentence chunk
a NotNext pair, which on C4's long sentences gave 55% NotNext at 128 pieces and 64% at 64; we
continue such a chunk with the next sentences, and a document's last chunk of one sentence makes
no pair); random B segments come from the same window of documents rather than
from the whole corpus held in memory (a stream cannot hold C4); a random replacement is never a
reserved token ([PAD] [UNK] [CLS] [SEP] [MASK]); the data are made anew in every epoch (BERT
fixes them once, with `dupe_factor` copies): window w of epoch e draws from the generator seeded
with (seed, e, w), so the same seed gives the same examples, and each pass other ones, as T5's
objectives (model/data/objectives.py).

Features per example (int32, fixed lengths), the contract with model/families/bert/model.py:
bert_input_tokens, bert_token_types [length]; masked_lm_positions, masked_lm_ids,
masked_lm_weights [max_predictions] (zero padded); next_sentence_labels [1].
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import ClassVar, Dict, Iterator, List, Optional, Sequence, Tuple

import gin
import numpy as np
import tensorflow as tf

from model.data import inputs
from model.data.input_position import InputPosition
from model.families.bert.wordpiece import SpecialIds, WordPieceVocabulary
from text.sentences import split_sentences

Sentence = List[int]
Document = List[Sentence]


@gin.configurable
@dataclasses.dataclass(frozen=True)
class BertDataConfig:
    """BERT's data settings (create_pretraining_data.py's flags); the sequence length is
    DataConfig.inputs_length."""

    mask_rate: float = 0.15
    # Of the masked pieces: [MASK], a random piece, or unchanged (the rest).
    mask_token_rate: float = 0.8
    random_token_rate: float = 0.1
    # None: ceil(mask_rate * length), BERT's 20 at 128 (it used 76-80 at 512).
    max_predictions: Optional[int] = None
    short_sequence_rate: float = 0.1
    next_sentence: bool = True
    window_documents: int = 64
    # The examples of this many consecutive windows are shuffled together (seeded), as BERT
    # shuffles its instances (create_pretraining_data.py, then run_pretraining.py's input_fn):
    # 16 windows of 64 pages, so a batch of 256 rows at 128 pieces draws from ~1,000 pages,
    # not ~57 adjacent ones. 0: document order (no shuffling).
    shuffle_windows: int = 16

    def predictions(self, length: int) -> int:
        return self.max_predictions or math.ceil(self.mask_rate * length)


@dataclasses.dataclass(frozen=True)
class Pair:
    """Segments A and B (piece ids) and whether B is a random segment (NSP label 1)."""

    a: Sentence
    b: Sentence
    is_random_next: bool


@dataclasses.dataclass(frozen=True)
class Masked:
    tokens: List[int]
    positions: List[int]
    labels: List[int]  # the original piece at each position


def page_sentences(text: str) -> List[str]:
    """A page's sentences: each line split by our sentence splitter."""
    return [s for line in text.split("\n") if line.strip() for s in split_sentences(line)]


def trim_pair(a: List[int], b: List[int], max_tokens: int, rng: np.random.Generator) -> None:
    """BERT's truncate_seq_pair: drops a piece from the front or back (a coin) of the longer
    segment until both fit in `max_tokens`; in place."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def document_pairs(documents: Sequence[Document], index: int, max_tokens: int,
                   rng: np.random.Generator, config: BertDataConfig) -> List[Pair]:
    """The segment pairs of document `index` (BERT's create_instances_from_document, with the
    coin always fair, see the module docstring); random B segments come from the other
    `documents`."""
    document = documents[index]
    target = max_tokens
    if rng.random() < config.short_sequence_rate:
        target = int(rng.integers(2, max_tokens + 1))
    others = [d for d in range(len(documents)) if d != index and documents[d]]
    pairs: List[Pair] = []
    chunk: List[Sentence] = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        at_end = i == len(document) - 1
        if at_end or chunk_length >= target:
            if not config.next_sentence:
                # The chunk's last sentence can overshoot the target: trimmed as a pair would be.
                a = [t for s in chunk for t in s]
                trim_pair(a, [], max_tokens, rng)
                pairs.append(Pair(a, [], False))
            # One sentence at the end of the document has no next segment: no pair (BERT
            # makes it a random pair, which tips the labels towards NotNext on long sentences).
            elif len(chunk) >= 2 or not at_end:
                a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
                a = [t for s in chunk[:a_end] for t in s]
                is_random = bool(others) and rng.random() < 0.5
                b: List[int] = []
                if is_random:
                    other = documents[others[int(rng.integers(len(others)))]]
                    for sentence in other[int(rng.integers(len(other))):]:
                        b.extend(sentence)
                        if len(b) >= target - len(a):
                            break
                    # The chunk's sentences after A are not used: they start the next chunk.
                    i -= len(chunk) - a_end
                else:
                    b = [t for s in chunk[a_end:] for t in s]
                    # A one-sentence chunk continues with the document's next sentences.
                    while (not chunk[a_end:] and i + 1 < len(document)
                           and (not b or len(b) < target - len(a))):
                        i += 1
                        b.extend(document[i])
                trim_pair(a, b, max_tokens, rng)
                pairs.append(Pair(a, b, is_random))
            chunk, chunk_length = [], 0
        i += 1
    return pairs


def apply_masks(tokens: Sequence[int], positions: Sequence[int], draws: Sequence[float],
                random_pieces: Sequence[int], mask_id: int, config: BertDataConfig) -> Masked:
    """Masks `positions` of `tokens`: a draw below mask_token_rate gives [MASK] (`mask_id`),
    below mask_token_rate + random_token_rate the matching random piece, else the piece
    stays."""
    masked = list(tokens)
    for position, draw, piece in zip(positions, draws, random_pieces):
        if draw < config.mask_token_rate:
            masked[position] = mask_id
        elif draw < config.mask_token_rate + config.random_token_rate:
            masked[position] = int(piece)
    order = sorted(positions)
    return Masked(masked, order, [tokens[p] for p in order])


def mask_sequence(tokens: Sequence[int], special: SpecialIds, vocab_size: int,
                  max_predictions: int, rng: np.random.Generator, config: BertDataConfig
                  ) -> Masked:
    """BERT's create_masked_lm_predictions: round(mask_rate * len(tokens)) pieces (at least 1,
    at most `max_predictions`), never [CLS] or [SEP], chosen at random and masked 80/10/10
    (`special`: the vocabulary's reserved ids, which a random piece never is)."""
    candidates = [i for i, t in enumerate(tokens) if t not in (special.cls, special.sep,
                                                                special.pad)]
    count = min(max_predictions, max(1, int(round(len(tokens) * config.mask_rate))),
                len(candidates))
    positions = [candidates[i] for i in rng.permutation(len(candidates))[:count]]
    draws = rng.random(count)
    reserved = special.reserved
    random_pieces = [skip_reserved(int(draw), reserved)
                     for draw in rng.integers(0, vocab_size - len(reserved), size=count)]
    return apply_masks(tokens, positions, draws, random_pieces, special.mask, config)


def skip_reserved(index: int, reserved: Sequence[int]) -> int:
    """The `index`-th id (from 0) that is not one of `reserved` (ascending)."""
    for taken in reserved:
        if index >= taken:
            index += 1
    return index


def pair_tokens(pair: Pair, special: SpecialIds) -> Tuple[List[int], List[int]]:
    """`[CLS] A [SEP] B [SEP]` (`[CLS] A [SEP]` without B) and its token types."""
    tokens = [special.cls] + pair.a + [special.sep]
    types = [0] * len(tokens)
    if pair.b:
        tokens += pair.b + [special.sep]
        types += [1] * (len(pair.b) + 1)
    return tokens, types


def trimmed_segments(segments: Sequence[Sequence], budget: int) -> List[Sequence]:
    """A fine-tuning input's segments cut to `budget` pieces together: a piece from the end of
    the longest at a time, the later segment on a tie (BERT's _truncate_seq_pair)."""
    lengths = [len(segment) for segment in segments]
    while sum(lengths) > budget:
        longest = max(reversed(range(len(lengths))), key=lengths.__getitem__)
        lengths[longest] -= 1
    return [segment[:size] for segment, size in zip(segments, lengths)]


def padded(values: Sequence[int], size: int) -> np.ndarray:
    """`values` zero padded to `size` (int32), the one padding of BERT's and SegaBERT's rows."""
    return np.array(list(values) + [0] * (size - len(values)), np.int32)


def example_features(pair: Pair, masked: Masked, length: int, max_predictions: int,
                     special: SpecialIds) -> Dict[str, np.ndarray]:
    _, types = pair_tokens(pair, special)
    return {
        "bert_input_tokens": padded(masked.tokens, length),
        "bert_token_types": padded(types, length),
        "masked_lm_positions": padded(masked.positions, max_predictions),
        "masked_lm_ids": padded(masked.labels, max_predictions),
        "masked_lm_weights": padded([1] * len(masked.positions), max_predictions),
        "next_sentence_labels": np.array([int(pair.is_random_next)], np.int32),
    }


def feature_spec(length: int, max_predictions: int) -> Dict[str, tf.TensorSpec]:
    sizes = {"bert_input_tokens": length, "bert_token_types": length,
             "masked_lm_positions": max_predictions, "masked_lm_ids": max_predictions,
             "masked_lm_weights": max_predictions, "next_sentence_labels": 1}
    return {key: tf.TensorSpec([size], tf.int32) for key, size in sizes.items()}


def window_examples(texts: Sequence[str], vocabulary: WordPieceVocabulary, length: int,
                    rng: np.random.Generator, config: BertDataConfig
                    ) -> List[Dict[str, np.ndarray]]:
    """The examples of one window of pages, in document order."""
    sentences = [page_sentences(text) for text in texts]
    flat = vocabulary.encode_batch([s for page in sentences for s in page])
    documents: List[Document] = []
    for page in sentences:
        documents.append([ids for ids in flat[:len(page)] if ids])
        flat = flat[len(page):]
    max_tokens = length - (3 if config.next_sentence else 2)
    max_predictions = config.predictions(length)
    examples = []
    for index in range(len(documents)):
        for pair in document_pairs(documents, index, max_tokens, rng, config):
            tokens, _ = pair_tokens(pair, vocabulary.special)
            masked = mask_sequence(tokens, vocabulary.special, vocabulary.vocab_size,
                                   max_predictions, rng, config)
            examples.append(example_features(pair, masked, length, max_predictions,
                                             vocabulary.special))
    return examples


@dataclasses.dataclass(frozen=True)
class BertPretrainingStream:
    """BERT's training stream over a source, epoch after epoch, resumable at a recorded
    `InputPosition` (model/data/input_position.py): a position names the first document of a block
    of shuffled windows (`shard`, `document`), that window's number in the epoch (`example`,
    which seeds the block's order; each window is seeded by its own number) and the next
    example of the block's shuffled rows (`row`). `examples(epoch, start)` is the one source of
    rows (`__call__` and `rows` read it); it reads each window's rows from `window_examples`,
    which SegaBERT's stream (model/families/segabert/structure.py) overrides."""

    source: str
    vocabulary: WordPieceVocabulary
    length: int
    seed: int
    config: BertDataConfig = BertDataConfig()

    position_type: ClassVar[type] = InputPosition

    def __post_init__(self) -> None:
        # An empty source would make the stream look for a first row epoch after epoch; checked
        # where it can be (an estimator's input function builds a graph).
        documents = inputs.documents_from_source(self.source) if tf.executing_eagerly() else None
        if documents is not None and not any(True for _ in documents.take(1)):
            raise ValueError(f"the training source {self.source!r} has no text")

    @property
    def spec(self) -> Dict[str, tf.TensorSpec]:
        return feature_spec(self.length, self.config.predictions(self.length))

    def identity(self) -> dict:
        return {"source": self.source, "vocabulary_sha256": self.vocabulary.sha256,
                "objective": "bert", "length": self.length, "seed": self.seed,
                "bert_data_config": dataclasses.asdict(self.config)}

    def windows(self, epoch: int, start: InputPosition) -> Iterator[Tuple[InputPosition, list]]:
        """(position of the window's first example, its texts), from `start`'s window on."""
        documents = inputs.documents_from_source(self.source, start.shard, start.document)
        window, first, number = [], None, start.example
        for document in documents.as_numpy_iterator():
            if first is None:
                first = InputPosition(epoch, int(document["shard"]), int(document["document"]),
                                      0, number, 0)
            window.append(document["text"].decode("utf-8"))
            if len(window) == self.config.window_documents:
                yield first, window
                window, first, number = [], None, number + 1
        if window:
            yield first, window

    def window_examples(self, texts: Sequence[str], rng: np.random.Generator
                        ) -> List[Dict[str, np.ndarray]]:
        """The examples of one window of pages, in document order (SegaBERT's stream overrides
        this)."""
        return window_examples(texts, self.vocabulary, self.length, rng, self.config)

    def blocks(self, epoch: int, start: InputPosition
               ) -> Iterator[Tuple[InputPosition, List[Dict[str, np.ndarray]]]]:
        """(position of a block's first window, the block's rows in their shuffled order), from
        `start`'s block on: blocks of `shuffle_windows` windows (one window in document order
        when it is 0)."""
        windows = self.windows(epoch, start)
        while True:
            block = list(itertools.islice(windows, max(self.config.shuffle_windows, 1)))
            if not block:
                return
            first = block[0][0]
            rows = [row for position, texts in block for row in self.window_examples(
                texts, np.random.default_rng([self.seed, epoch, position.example]))]
            if self.config.shuffle_windows:
                order = np.random.default_rng([self.seed, epoch, first.example, 1]).permutation(
                    len(rows))
                rows = [rows[i] for i in order]
            yield first, rows

    def examples(self, epoch: int, start: InputPosition = InputPosition()
                 ) -> Iterator[Tuple[Dict[str, np.ndarray], Dict[str, int]]]:
        for first, rows in self.blocks(epoch, start):
            skip = start.row if (first.shard, first.document) == (start.shard, start.document) \
                else 0
            for row in range(skip, len(rows)):
                yield rows[row], dataclasses.asdict(dataclasses.replace(first, row=row))

    def __call__(self) -> tf.data.Dataset:
        """The features of one pass (epoch 0)."""
        return tf.data.Dataset.from_generator(
            lambda: (features for features, _ in self.examples(0)), output_signature=self.spec)

    def rows(self, start: InputPosition = InputPosition()) -> tf.data.Dataset:
        """(features, position) pairs from `start` on, without end."""
        def generate():
            epoch, position = start.epoch, start
            while epoch < inputs.MAX_EPOCHS:
                yield from self.examples(epoch, position)
                epoch, position = epoch + 1, InputPosition()

        position_spec = {k: tf.TensorSpec([], tf.int64)
                         for k in dataclasses.asdict(InputPosition())}
        return tf.data.Dataset.from_generator(generate,
                                              output_signature=(self.spec, position_spec))
