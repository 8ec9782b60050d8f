"""Document structure for SegaBERT: paragraphs, sentences and the three indices of every token.

A C4 page keeps its structure: its paragraphs are its non-blank lines, its sentences come from
the shared sentence splitter (`text/`, the C4 build's own), and every token gets three indices,
all from 0: its index in its sentence, its sentence's index in its paragraph and its paragraph's
index in the document. The indices travel with the tokens into model-length windows and into
the model's features (`token_index`, `sentence_index`, `paragraph_index` beside BERT's), where
they replace BERT's position in the sequence (model/families/segabert.py).

Pre-training examples: `SegaBertStream`, BERT's resumable stream (model/bert_inputs.py) over
these windows, masked as BERT (15% of the pieces, 80/10/10), one window per row. Rows are not
packed: BERT's attention separates padding only, not packed examples; windows of whole
sentences fill 77% of a row on the shared C4 pages (at 128 and at 512 pieces), so packing
would save about a fifth of the compute once BERT's attention takes segment ids.
Fine-tuning examples: `classification_features`, each segment of a task input a paragraph of
one sentence (the authors' processors/glue.py does not split a GLUE segment into sentences).

Choices (SegaBERT's, read from the authors' code, rsvp-ai/segatron_aaai, where the paper is
silent):
- Sentences are tokenized one by one (the tokenizer is a parameter: WordPiece for SegaBERT,
  any `texts -> ids` function in tests); a sentence or paragraph without tokens is not counted.
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
from typing import Callable, Iterable, List, Sequence

import gin
import numpy as np
import tensorflow as tf

from model import bert_inputs
from model.bert_inputs import CLS_ID, SEP_ID
from model.tasks.discriminative import Example
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
    return frame_segments([window], cls_id, sep_id)[0]


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


def structured_windows(text: str, tokenize: Tokenize, config: StructureConfig,
                       split_sentences: Splitter | None = None) -> List[StructuredTokens]:
    """A page -> its model windows `[CLS] ... [SEP]` with the indices the model reads."""
    split_sentences = split_sentences or load_splitter(config.splitter)
    sentences = document_tokens(paragraph_sentences(text, split_sentences), tokenize)
    return [limit(frame(window, config.cls_id, config.sep_id), config.limits)
            for window in windows(sentences, config.length - 2)]


def segment_paragraphs(text: str, split_sentences: Splitter | None) -> List[List[str]]:
    """A fine-tuning segment as paragraphs of sentences: with a splitter, its lines, each split
    into its sentences (as the authors' utils_multiple_choice.py reads a RACE article); without
    one, a single paragraph of a single sentence, the whole segment (their processors/glue.py:
    sentence index 0, the token index running over the segment)."""
    if split_sentences is None:
        return [[text]]
    return paragraph_sentences(text, split_sentences)


def structured_segments(segments: Sequence[Sequence[Sequence[str]]], tokenize: Tokenize,
                        config: StructureConfig) -> tuple[StructuredTokens, tuple[int, ...]]:
    """A fine-tuning input `[CLS] A [SEP] (B [SEP])` from its segments' paragraphs of sentences
    (`segment_paragraphs`), and its token types (0 up to the first [SEP], 1 after): a segment's
    paragraphs are numbered on from the previous segment's (A from 0: the authors' GLUE and
    RACE inputs give B the paragraph after A's last), the pair trimmed as BERT's run_classifier
    (bert_inputs.trimmed_segments, as transformers' `longest_first`); [CLS] and each [SEP] get
    their indices as in `frame_segments`."""
    parts, next_paragraph = [], 0
    for paragraphs in segments:
        part = sum(document_tokens(paragraphs, tokenize), EMPTY)
        parts.append(dataclasses.replace(
            part, paragraph_index=tuple(next_paragraph + i for i in part.paragraph_index)))
        next_paragraph += max(1, len(set(part.paragraph_index)))
    parts = bert_inputs.trimmed_segments(parts, config.length - 1 - len(parts))
    framed, types = frame_segments(parts, config.cls_id, config.sep_id)
    return limit(framed, config.limits), types


def classification_features(examples: Iterable[Example], tokenize: Tokenize,
                            config: StructureConfig) -> dict[str, np.ndarray]:
    """[n, length] bert_input_tokens, bert_token_types and the three indices, [n, 1] labels:
    the classification head's features of a task's labelled examples
    (model/tasks/discriminative.py; test-release examples, label -1, are left out). Each
    segment is one sentence of its own paragraph, as the authors' processors/glue.py."""
    pad = lambda values: bert_inputs.padded(values, config.length)
    rows: dict[str, list] = {key: [] for key in ("bert_input_tokens", "bert_token_types", "labels")
                             + INDEX_KEYS}
    for example in (example for example in examples if example.label != -1):
        framed, types = structured_segments(
            [segment_paragraphs(text, None) for text in example.segments], tokenize, config)
        rows["bert_input_tokens"].append(pad(framed.tokens))
        rows["bert_token_types"].append(pad(types))
        rows["labels"].append(np.array([int(example.label)], np.int32))
        for key in INDEX_KEYS:
            rows[key].append(pad(getattr(framed, key)))
    return {key: np.stack(values) for key, values in rows.items()}


# --------------------------------------------------------------------------------------------
# SegaBERT's training examples and stream.

def masked_features(window: StructuredTokens, vocab_size: int, length: int, max_predictions: int,
                    rng: np.random.Generator, masking: bert_inputs.BertDataConfig
                    ) -> dict[str, np.ndarray]:
    """BERT's masked-LM features of a window (bert_inputs.mask_sequence: 15% of the pieces,
    never [CLS]/[SEP], 80/10/10), one segment (token type 0), plus the three indices; all zero
    padded to `length` (the predictions to `max_predictions`)."""
    masked = bert_inputs.mask_sequence(list(window.tokens), vocab_size, max_predictions, rng,
                                       masking)
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
    generator seeded per window and epoch) with structured windows instead of segment pairs, so
    masked LM alone, one window per row (not packed: see the module docstring)."""

    # None: StructureLimits() as gin binds it when the stream is made (a default instance here
    # would be made at import, before any binding).
    limits: StructureLimits | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limits is None:
            object.__setattr__(self, "limits", StructureLimits())

    @property
    def structure(self) -> StructureConfig:
        return StructureConfig(CLS_ID, SEP_ID, self.length, self.limits)

    @property
    def spec(self) -> dict[str, tf.TensorSpec]:
        spec = {k: v for k, v in super().spec.items() if k != "next_sentence_labels"}
        return {**spec, **{key: tf.TensorSpec([self.length], tf.int32) for key in INDEX_KEYS}}

    def identity(self) -> dict:
        return {**super().identity(), "objective": "segabert",
                "structure_limits": dataclasses.asdict(self.limits)}

    def window_examples(self, texts: Sequence[str], rng: np.random.Generator) -> List[dict]:
        """The examples of one window of pages, in document order."""
        split_sentences = load_splitter(self.structure.splitter)
        max_predictions = self.config.predictions(self.length)
        return [masked_features(window, self.vocabulary.vocab_size, self.length, max_predictions,
                                rng, self.config)
                for text in texts
                for window in structured_windows(text, self.vocabulary.encode_batch, self.structure,
                                                 split_sentences)]
