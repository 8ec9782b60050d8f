"""Document structure for SegaBERT: paragraphs, sentences and the three indices of every token.

A C4 page keeps its structure: its paragraphs are its non-blank lines, its sentences come from
the shared sentence splitter (`text/`, the C4 build's own), and every token gets three indices,
all from 0: its index in its sentence, its sentence's index in its paragraph and its paragraph's
index in the document. The indices travel with the tokens through chunking into model-length
windows and through packing (model/features.py's `segabert` converter), where they replace
BERT's position in the sequence.

Choices (SegaBERT's, read from the authors' code, rsvp-ai/segatron_aaai, where the paper is
silent):
- Sentences are tokenized one by one (the tokenizer is a parameter: WordPiece for SegaBERT,
  any `str -> ids` function in tests); a sentence or paragraph without tokens is not counted.
- Windows hold whole sentences, greedily in document order (as the authors fill their inputs
  sentence by sentence); a sentence longer than a window fills windows of its own and its
  token indices continue across them. Indices are the document's, not restarted per window.
- Each window becomes `[CLS] tokens [SEP]`: [CLS] takes the indices of the window's first token,
  [SEP] those of its last token with the token index one further (the next token of that
  sentence), as the authors' `concat_tokens`.
- At the maxima (256 tokens per sentence, 100 sentences per paragraph, 50 paragraphs): token
  and sentence indices are clamped to the last index; a window whose paragraphs run past the
  last index first has its paragraph indices shifted down (keeping their differences) until the
  highest is the last index or the lowest is 0, and only what is still past the last index is
  clamped. So a window deep into a long document still tells its paragraphs apart.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, List, Sequence

import numpy as np
import tensorflow as tf

from text.splitters import Splitter, load_splitter

Tokenize = Callable[[str], Sequence[int]]
INDEX_KEYS = ("token_index", "sentence_index", "paragraph_index")


@dataclasses.dataclass(frozen=True)
class StructureLimits:
    """Rows of the three index embeddings (SegaBERT's: 256, 100, 50)."""

    tokens_per_sentence: int = 256
    sentences_per_paragraph: int = 100
    paragraphs_per_document: int = 50

    def __post_init__(self) -> None:
        small = {k: v for k, v in dataclasses.asdict(self).items() if v < 2}
        if small:
            raise ValueError(f"structure limits must be at least 2: {small}")


@dataclasses.dataclass(frozen=True)
class StructuredTokens:
    """Token ids with their three indices, all of one length."""

    tokens: tuple[int, ...]
    token_index: tuple[int, ...]
    sentence_index: tuple[int, ...]
    paragraph_index: tuple[int, ...]

    def __post_init__(self) -> None:
        lengths = {len(getattr(self, f.name)) for f in dataclasses.fields(self)}
        if len(lengths) != 1:
            raise ValueError(f"structured tokens of unequal lengths: {lengths}")

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, part: slice) -> "StructuredTokens":
        return StructuredTokens(*(getattr(self, f.name)[part] for f in dataclasses.fields(self)))

    def __add__(self, other: "StructuredTokens") -> "StructuredTokens":
        return StructuredTokens(*(getattr(self, f.name) + getattr(other, f.name)
                                  for f in dataclasses.fields(self)))


EMPTY = StructuredTokens((), (), (), ())


def paragraph_sentences(text: str, split_sentences: Splitter) -> List[List[str]]:
    """The sentences of each paragraph (non-blank line) of a page, in order."""
    return [sentences for sentences in map(split_sentences, text.split("\n")) if sentences]


def document_tokens(paragraphs: Sequence[Sequence[str]], tokenize: Tokenize) -> List[StructuredTokens]:
    """Every sentence of the document as tokens with the document's indices (unclamped)."""
    sentences = []
    paragraph = 0
    for texts in paragraphs:
        tokenized = [list(tokenize(text)) for text in texts]
        tokenized = [ids for ids in tokenized if ids]
        for number, ids in enumerate(tokenized):
            n = len(ids)
            sentences.append(StructuredTokens(tuple(ids), tuple(range(n)), (number,) * n, (paragraph,) * n))
        paragraph += bool(tokenized)
    return sentences


def windows(sentences: Sequence[StructuredTokens], length: int) -> List[StructuredTokens]:
    """Sentence-aligned windows of at most `length` tokens (see the module docstring)."""
    if length < 1:
        raise ValueError(f"window length must be positive, got {length}")
    done, current = [], EMPTY
    for sentence in sentences:
        if len(current) + len(sentence) > length and len(current):
            done.append(current)
            current = EMPTY
        while len(sentence) > length:
            done.append(sentence[:length])
            sentence = sentence[length:]
        current = current + sentence
    if len(current):
        done.append(current)
    return done


def frame(window: StructuredTokens, cls_id: int, sep_id: int) -> StructuredTokens:
    """`[CLS] window [SEP]` with the indices of the module docstring (unclamped)."""
    first, last = window[:1], window[-1:]
    sep = StructuredTokens((sep_id,), (last.token_index[0] + 1,), last.sentence_index, last.paragraph_index)
    return StructuredTokens((cls_id,), first.token_index, first.sentence_index, first.paragraph_index) + window + sep


def limit(window: StructuredTokens, limits: StructureLimits) -> StructuredTokens:
    """The indices within the embeddings' rows (the maxima rule of the module docstring)."""
    last_paragraph = limits.paragraphs_per_document - 1
    shift = max(0, min(min(window.paragraph_index), max(window.paragraph_index) - last_paragraph))
    return StructuredTokens(
        window.tokens,
        tuple(min(i, limits.tokens_per_sentence - 1) for i in window.token_index),
        tuple(min(i, limits.sentences_per_paragraph - 1) for i in window.sentence_index),
        tuple(min(i - shift, last_paragraph) for i in window.paragraph_index))


@dataclasses.dataclass(frozen=True)
class StructureConfig:
    """How a page becomes SegaBERT windows: the special ids, the model length and the limits."""

    cls_id: int
    sep_id: int
    # Model tokens per window, [CLS] and [SEP] included.
    length: int
    limits: StructureLimits = StructureLimits()
    splitter: str = "ours"

    def __post_init__(self) -> None:
        if self.length < 3:
            raise ValueError(f"a window needs room for [CLS], a token and [SEP]: length {self.length}")


def structured_windows(text: str, tokenize: Tokenize, config: StructureConfig,
                       split_sentences: Splitter | None = None) -> List[StructuredTokens]:
    """A page -> its model windows `[CLS] ... [SEP]` with the indices the model reads."""
    split_sentences = split_sentences or load_splitter(config.splitter)
    sentences = document_tokens(paragraph_sentences(text, split_sentences), tokenize)
    return [limit(frame(window, config.cls_id, config.sep_id), config.limits)
            for window in windows(sentences, config.length - 2)]


# --------------------------------------------------------------------------------------------
# The tf.data path.

def _flat_windows(text: bytes, tokenize: Tokenize, config: StructureConfig, split_sentences: Splitter
                  ) -> tuple[np.ndarray, ...]:
    found = structured_windows(text.decode("utf-8"), tokenize, config, split_sentences)
    joined = sum(found, EMPTY)
    return tuple(np.asarray(getattr(joined, f.name), np.int32) for f in dataclasses.fields(joined)) + (
        np.asarray([len(w) for w in found], np.int64),)


def split_structured(documents: tf.data.Dataset, tokenize: Tokenize, config: StructureConfig
                     ) -> tf.data.Dataset:
    """{"text", other scalars} documents -> one example per window: "targets" (the window's ids,
    [CLS] and [SEP] included), "token_index", "sentence_index", "paragraph_index" (int32) and
    "chunk" (the window's number in its document); the other features are copied to each window
    (as `objectives.split_tokens`). Documents without tokens vanish. Deterministic, in order."""
    split_sentences = load_splitter(config.splitter)

    def to_windows(document):
        *flat, row_lengths = tf.numpy_function(
            lambda text: _flat_windows(text, tokenize, config, split_sentences),
            [document["text"]], [tf.int32] * 4 + [tf.int64], stateful=False)
        row_lengths.set_shape([None])
        count = tf.size(row_lengths)
        chunks = {key: tf.fill([count], value) for key, value in document.items() if key != "text"}
        for key, values in zip(("targets",) + INDEX_KEYS, flat):
            values.set_shape([None])
            chunks[key] = tf.RaggedTensor.from_row_lengths(values, row_lengths)
        chunks["chunk"] = tf.range(count, dtype=tf.int64)
        return chunks

    return documents.map(to_windows).unbatch()

