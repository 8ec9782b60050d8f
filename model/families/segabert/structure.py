"""Document structure for SegaBERT: paragraphs, sentences and the three indices of every token.

A C4 page keeps its structure: its paragraphs are its non-blank lines, its sentences come from
the shared sentence splitter (`text/`, the C4 build's own), and every token gets three indices,
all from 0: its index in its sentence, its sentence's index in its paragraph and its paragraph's
index in the document. The indices travel with the tokens into model-length windows and into
the model's features (`token_index`, `sentence_index`, `paragraph_index` beside BERT's), where
they replace BERT's position in the sequence (model/families/segabert/model.py).

Pre-training examples: `SegaBertStream`, BERT's resumable stream (model/families/bert/inputs.py) whose
window examples are the authors' sequences (their data_utils/datasets.py,
`bert_sentencepair_pst_dataset`), masked as BERT (15% of the pieces, 80/10/10), one per row:
- a document of the window (`BertDataConfig.window_documents` pages) is drawn with probability
  proportional to its length in pieces (the authors: in characters, over the whole corpus) and
  a start sentence uniformly among its sentences; sentences are taken from there until they
  reach the target length (the sequence length; with probability `short_sequence_rate`, 1% in
  segabert/pretrain.gin as the authors' default, a random target from 2 up) or the document
  ends;
- A is the first k of those sentences, k drawn from 0..n, B the rest; a draw that leaves A or
  B empty (a chunk of one sentence, or k = 0 or n) is drawn again from the document on, as the
  authors do, so every row is `[CLS] A [SEP] B [SEP]` split at a sentence boundary;
- the pair is trimmed to the length less 3 a piece at a time from the front or the back (a
  coin) of the longer segment, as BERT's truncate_seq_pair; every token type is 0 (the authors
  type every sentence 'str0': no next-sentence prediction);
- a window of pages gives as many sequences as its pieces would fill (ceil(pieces / (length -
  3))), so an epoch reads about its text's worth; each window's generator is seeded with (seed,
  epoch, window), so every epoch draws other sequences, and the same seed the same ones.
Rows are not packed: BERT's attention separates padding only, not packed examples.
Fine-tuning examples are indexed by model/families/segabert/finetune.py, with this module's
framing and limits.

Choices (SegaBERT's, read from the authors' code, rsvp-ai/segatron_aaai, where the paper is
silent):
- Sentences are tokenized one by one (the tokenizer is a parameter: WordPiece for SegaBERT,
  any `texts -> ids` function in tests); a sentence or paragraph without tokens is not counted.
- Indices are the document's, not restarted per sequence: a sequence that starts mid-sentence
  (trimmed at its front) keeps the sentence's token indices.
- `[CLS] A [SEP] B [SEP]`: [CLS] takes the indices of A's first token, each [SEP] those of its
  segment's last token with the token index one further (the next token of that sentence), as
  the authors' `concat_tokens`.
- At the maxima (256 tokens per sentence, 100 sentences per paragraph, 50 paragraphs): token
  and sentence indices are clamped to the last index; a window whose paragraphs run past the
  last index first has its paragraph indices shifted down (keeping their differences) until the
  highest is the last index or the lowest is 0, and only what is still past the last index is
  clamped. So a window deep into a long document still tells its paragraphs apart.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator, List, Sequence

import gin
import numpy as np
import tensorflow as tf

from model.families.bert import inputs as bert_inputs
from model.families.bert.wordpiece import SpecialIds
from text.splitters import Splitter, load_splitter

# Texts -> their token ids (a batch: tokenizers run faster on many texts at once).
Tokenize = Callable[[Sequence[str]], Sequence[Sequence[int]]]
INDEX_KEYS = ("token_index", "sentence_index", "paragraph_index")


@gin.configurable
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


def document_tokens(paragraphs: Sequence[Sequence[str]], tokenize: Tokenize
                    ) -> List[StructuredTokens]:
    """Every sentence of the document as tokens with the document's indices (unclamped)."""
    flat = list(tokenize([text for texts in paragraphs for text in texts]))
    sentences = []
    paragraph = 0
    for texts in paragraphs:
        tokenized, flat = flat[:len(texts)], flat[len(texts):]
        tokenized = [list(ids) for ids in tokenized if len(ids)]
        for number, ids in enumerate(tokenized):
            n = len(ids)
            sentences.append(StructuredTokens(tuple(ids), tuple(range(n)), (number,) * n,
                                              (paragraph,) * n))
        paragraph += bool(tokenized)
    return sentences


def frame_segments(parts: Sequence[StructuredTokens], cls_id: int, sep_id: int
                   ) -> tuple[StructuredTokens, tuple[int, ...]]:
    """`[CLS] A [SEP] (B [SEP] ...)` and its token types (0 for [CLS] A [SEP], then 1, ...):
    [CLS] takes the indices of the first token, each [SEP] those of its segment's last token
    with the token index one further (an empty segment: the start of its paragraph)."""
    first = parts[0][:1] if len(parts[0]) else StructuredTokens((cls_id,), (0,), (0,), (0,))
    framed = StructuredTokens((cls_id,), first.token_index, first.sentence_index,
                              first.paragraph_index)
    types: tuple[int, ...] = (0,)
    for kind, part in enumerate(parts):
        last = part[-1:] if len(part) else StructuredTokens((sep_id,), (-1,), (0,), (kind,))
        sep = StructuredTokens((sep_id,), (last.token_index[0] + 1,), last.sentence_index,
                               last.paragraph_index)
        framed = framed + part + sep
        types += (kind,) * (len(part) + 1)
    return framed, types


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
            raise ValueError(f"a window needs room for [CLS], a token and [SEP]: "
                             f"length {self.length}")


# --------------------------------------------------------------------------------------------
# SegaBERT's training examples and stream.

def draw_document(cumulative_lengths: np.ndarray, rng: np.random.Generator) -> int:
    """A document index drawn with probability proportional to its length: the authors'
    get_weighted_samples (a uniform draw below the total length, then the first document
    whose cumulative length passes it)."""
    return int(np.searchsorted(cumulative_lengths, rng.integers(cumulative_lengths[-1]),
                               side="right"))


def can_split(document: Sequence[StructuredTokens], target: int) -> bool:
    """Whether some start sentence of `document` gives a chunk of two sentences or more at
    this target: one that is not the last and is shorter than the target."""
    return any(len(sentence) < target for sentence in document[:-1])


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One draw of the authors' create_random_sentencepair: the document, the start sentence,
    the chunk's sentences and how many of them are A."""

    document: int
    start: int
    sentences: tuple[StructuredTokens, ...]
    split: int


def document_lengths(documents: Sequence[Sequence[StructuredTokens]]) -> np.ndarray:
    """The cumulative lengths in pieces of `documents`, as `draw_document` reads them."""
    return np.cumsum([sum(map(len, document)) for document in documents])


def draw_chunk(documents: Sequence[Sequence[StructuredTokens]], cumulative_lengths: np.ndarray,
               target: int, rng: np.random.Generator) -> Chunk | None:
    """The authors' create_random_sentencepair, drawn until A and B are both non-empty (their
    __getitem__ loop): a document by length (`draw_document`), a start sentence uniformly,
    sentences from it until their pieces reach `target` or the document ends, then A = the
    first k of the chunk's n sentences with k uniform in 0..n (1 for a one-sentence chunk).
    None when no document can give two sentences at this target (the authors would draw
    forever)."""
    if not any(can_split(document, target) for document in documents):
        return None
    while True:
        index = draw_document(cumulative_lengths, rng)
        document = documents[index]
        start = int(rng.integers(len(document)))
        chunk, pieces = [], 0
        for sentence in document[start:]:
            chunk.append(sentence)
            pieces += len(sentence)
            if pieces >= target:
                break
        split = int(rng.integers(len(chunk) + 1)) if len(chunk) >= 2 else 1
        if 0 < split < len(chunk):
            return Chunk(index, start, tuple(chunk), split)


def trimmed_pair(a: StructuredTokens, b: StructuredTokens, max_tokens: int,
                 rng: np.random.Generator) -> tuple[StructuredTokens, StructuredTokens]:
    """BERT's truncate_seq_pair (as bert_inputs.trim_pair, and the authors' own): a piece off
    the front or the back (a coin) of the longer segment (B on a tie) until both fit."""
    kept_a, kept_b = list(range(len(a))), list(range(len(b)))
    bert_inputs.trim_pair(kept_a, kept_b, max_tokens, rng)
    # What stays of each segment is a run of its positions.
    return (a[kept_a[0]:kept_a[-1] + 1] if kept_a else EMPTY,
            b[kept_b[0]:kept_b[-1] + 1] if kept_b else EMPTY)


def sequences_per_window(pieces: int, length: int) -> int:
    """How many sequences a window of `pieces` pieces gives: as many as its pieces would fill
    (A and B hold length - 3), so an epoch reads about its text's worth."""
    return math.ceil(pieces / (length - 3))


def masked_features(window: StructuredTokens, special: SpecialIds, vocab_size: int, length: int,
                    max_predictions: int, rng: np.random.Generator,
                    masking: bert_inputs.BertDataConfig) -> dict[str, np.ndarray]:
    """BERT's masked-LM features of a framed sequence (bert_inputs.mask_sequence: 15% of the
    pieces, never [CLS]/[SEP], 80/10/10), every token type 0, plus the three indices; all zero
    padded to `length` (the predictions to `max_predictions`)."""
    masked = bert_inputs.mask_sequence(list(window.tokens), special, vocab_size, max_predictions,
                                       rng, masking)
    features = {
        "bert_input_tokens": bert_inputs.padded(masked.tokens, length),
        "bert_token_types": bert_inputs.padded([], length),
        "masked_lm_positions": bert_inputs.padded(masked.positions, max_predictions),
        "masked_lm_ids": bert_inputs.padded(masked.labels, max_predictions),
        "masked_lm_weights": bert_inputs.padded([1] * len(masked.positions), max_predictions),
    }
    features.update({key: bert_inputs.padded(getattr(window, key), length) for key in INDEX_KEYS})
    return features


@dataclasses.dataclass(frozen=True)
class SegaBertStream(bert_inputs.BertPretrainingStream):
    """SegaBERT's training stream: BERT's (windows of documents, resumable positions, a
    generator seeded per window and epoch, rows shuffled over blocks of windows) with the
    authors' sequences (the module docstring) instead of BERT's segment pairs, for masked LM
    alone."""

    # None: StructureLimits() as gin binds it when the stream is made (a default instance here
    # would be made at import, before any binding).
    limits: StructureLimits | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limits is None:
            object.__setattr__(self, "limits", StructureLimits())
        if self.length < 5:
            raise ValueError(f"a sequence needs room for [CLS] A [SEP] B [SEP]: length "
                             f"{self.length}")

    @property
    def structure(self) -> StructureConfig:
        special = self.vocabulary.special
        return StructureConfig(special.cls, special.sep, self.length, self.limits)

    @property
    def spec(self) -> dict[str, tf.TensorSpec]:
        spec = {k: v for k, v in super().spec.items() if k != "next_sentence_labels"}
        return {**spec, **{key: tf.TensorSpec([self.length], tf.int32) for key in INDEX_KEYS}}

    def identity(self) -> dict:
        return {**super().identity(), "objective": "segabert",
                "structure_limits": dataclasses.asdict(self.limits)}

    def window_documents(self, texts: Sequence[str]) -> List[List[StructuredTokens]]:
        """Each page's sentences with the document's indices."""
        split_sentences = load_splitter(self.structure.splitter)
        return [document_tokens(paragraph_sentences(text, split_sentences),
                                self.vocabulary.encode_batch) for text in texts]

    def sequence_pairs(self, documents: Sequence[Sequence[StructuredTokens]],
                       rng: np.random.Generator
                       ) -> Iterator[tuple[StructuredTokens, StructuredTokens]]:
        """The (A, B) pairs a window's documents give (the module docstring), trimmed."""
        cumulative_lengths = document_lengths(documents)
        pieces = int(cumulative_lengths[-1]) if len(documents) else 0
        for _ in range(sequences_per_window(pieces, self.length)):
            target = self.length
            if rng.random() < self.config.short_sequence_rate:
                target = int(rng.integers(2, self.length + 1))
            chunk = draw_chunk(documents, cumulative_lengths, target, rng)
            if chunk is not None:
                yield trimmed_pair(sum(chunk.sentences[:chunk.split], EMPTY),
                                   sum(chunk.sentences[chunk.split:], EMPTY), self.length - 3,
                                   rng)

    def window_examples(self, texts: Sequence[str], rng: np.random.Generator) -> List[dict]:
        """The examples of one window of pages: `[CLS] A [SEP] B [SEP]`, masked."""
        max_predictions = self.config.predictions(self.length)
        special = self.vocabulary.special
        return [masked_features(limit(frame_segments(pair, special.cls, special.sep)[0],
                                      self.limits),
                                special, self.vocabulary.vocab_size, self.length,
                                max_predictions, rng, self.config)
                for pair in self.sequence_pairs(self.window_documents(texts), rng)]
