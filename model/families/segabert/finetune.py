"""SegaBERT's fine-tuning: BERT's heads and runs (model/families/bert/finetune.py) on inputs
that carry the three structure indices (framed and limited as model/families/segabert/
structure.py does), computed as the authors' fine-tuning code (their transformers fork) indexes
them: `head_features` for BERT's classification and regression heads (each segment a paragraph
of one sentence: processors/glue.py does not split a GLUE segment into sentences) and its
multiple-choice head (the context's lines and sentences, then the question and choice as the
next paragraph: utils_multiple_choice.py), `squad_indices` for the span head's windows (the
question a sentence, the context the next paragraph of its sentences: processors/squad.py).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Sequence

import numpy as np

from model.families.bert import inputs as bert_inputs
from model.families.bert.finetune import HeadTask, SquadQuestion
from model.families.segabert import structure
from model.families.segabert.structure import (
    EMPTY, INDEX_KEYS, StructureConfig, StructuredTokens, Tokenize, document_tokens,
    frame_segments, limit, paragraph_sentences)
from model.tasks import discriminative
from model.tasks.discriminative import MULTIPLE_CHOICE, REGRESSION, Example
from text.splitters import Splitter, load_splitter


class StructuredHeadTask(HeadTask):
    """A BERT head task whose features add SegaBERT's structure indices."""

    @property
    def structure_config(self) -> structure.StructureConfig:
        special = self.vocabulary.special
        return structure.StructureConfig(special.cls, special.sep, self.length)

    def span_features(self, questions: Sequence[SquadQuestion]) -> Dict[str, np.ndarray]:
        features = super().span_features(questions)
        features.update(squad_indices(questions, self.structure_config))
        return features

    def example_features(self, examples: Sequence[discriminative.Example]) -> Dict[str, np.ndarray]:
        return head_features(examples, discriminative.view(self.name).kind,
                                       self.vocabulary.encode_batch, self.structure_config)


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


def choice_segments(example: Example, choice: str) -> tuple[str, str]:
    """A multiple-choice example's input for one choice, as the authors'
    utils_multiple_choice.py makes RACE's: the context, then the question with its blank ("_")
    filled by the choice, or the question and the choice (the choice alone without one)."""
    question = " ".join(example.segments[1:])
    if "_" in question:
        return example.segments[0], question.replace("_", choice)
    return example.segments[0], f"{question} {choice}" if question else choice


def head_features(examples: Iterable[Example], kind: str, tokenize: Tokenize,
                  config: StructureConfig) -> dict[str, np.ndarray]:
    """The features of BERT's classification, regression and multiple-choice heads
    (model/families/bert/finetune.py head_features) with the three indices, for a `kind`
    view's labelled examples (model/tasks/discriminative.py; test-release examples, label -1,
    are left out): [n,
    length] bert_input_tokens, bert_token_types and indices ([n, choices * length] for
    multiple choice, each choice's input (`choice_segments`) in turn), [n, 1] labels (float32
    for regression). A classification or regression segment is one sentence of its own
    paragraph, as the authors' processors/glue.py; a multiple-choice input's segments are their
    lines' sentences, as their utils_multiple_choice.py reads RACE."""
    multiple_choice = kind == MULTIPLE_CHOICE
    split_sentences = load_splitter(config.splitter) if multiple_choice else None
    pad = lambda values: bert_inputs.padded(values, config.length)
    rows: dict[str, list] = {key: [] for key in ("bert_input_tokens", "bert_token_types", "labels")
                             + INDEX_KEYS}
    for example in (example for example in examples if example.label != -1):
        inputs = ([choice_segments(example, choice) for choice in example.choices]
                  if multiple_choice else [example.segments])
        framed = [structured_segments([segment_paragraphs(text, split_sentences)
                                       for text in segments], tokenize, config)
                  for segments in inputs]
        rows["bert_input_tokens"].append(np.concatenate([pad(f.tokens) for f, _ in framed]))
        rows["bert_token_types"].append(np.concatenate([pad(types) for _, types in framed]))
        for key in INDEX_KEYS:
            rows[key].append(np.concatenate([pad(getattr(f, key)) for f, _ in framed]))
        rows["labels"].append(example.label)
    label_type = np.float32 if kind == REGRESSION else np.int32
    features = {key: np.stack(rows[key]) for key in rows if key != "labels"}
    return {**features, "labels": np.array(rows["labels"], label_type).reshape([-1, 1])}


def word_sentences(words: Sequence[str], split_sentences: Splitter) -> List[int]:
    """The sentence of each of a context's white-space words: the context read as its words
    joined by spaces and split into sentences, each sentence taking as many words as it has
    (the authors' squad.py: sentence_split(' '.join(doc_tokens)), then counting words)."""
    sentence_of = []
    for number, sentence in enumerate(split_sentences(" ".join(words))):
        sentence_of += [number] * len(sentence.split())
    # A splitter that cut inside a word would leave words over: the last sentence's.
    return (sentence_of + [sentence_of[-1] if sentence_of else 0] * len(words))[:len(words)]


def squad_indices(questions: Sequence, config: StructureConfig) -> dict[str, np.ndarray]:
    """[windows, length] indices of every window of BERT's SQuAD questions
    (model/families/bert/finetune.py SquadQuestion), as the authors' squad.py (input_type
    para_sent_token): the question paragraph 0, one sentence, token indices 0, 1, ...; the context paragraph 1, its
    sentences (`word_sentences`) numbered from 0, each piece's token index its place in its
    sentence over the whole context (a window that starts inside a sentence goes on counting,
    as their overflowing windows keep the context's indices); [CLS] and each [SEP] as
    `frame_segments`."""
    split_sentences = load_splitter(config.splitter)
    rows: dict[str, list] = {key: [] for key in INDEX_KEYS}
    for question in questions:
        piece_counts = question.piece_counts
        sentence_of = word_sentences(question.words, split_sentences)
        # The token index of each word's first piece in its sentence.
        word_start, count = [], 0
        for word, pieces in enumerate(piece_counts):
            count = 0 if word and sentence_of[word] != sentence_of[word - 1] else count
            word_start.append(count)
            count += pieces
        for window in question.windows:
            query = window.types.count(0) - 2
            positions = sorted(window.piece_words)
            first_word = window.piece_words[positions[0]]
            # The first word's pieces before the window (a window may start inside a word).
            seen = {first_word: piece_counts[first_word]
                    - sum(1 for word in window.piece_words.values() if word == first_word)}
            context = []
            for position in positions:
                word = window.piece_words[position]
                piece = seen.get(word, 0)
                seen[word] = piece + 1
                context.append((word_start[word] + piece, sentence_of[word], 1))
            token, sentence, paragraph = zip(*context)
            parts = [StructuredTokens(tuple(window.tokens[1:query + 1]), tuple(range(query)),
                                      (0,) * query, (0,) * query),
                     StructuredTokens(tuple(window.tokens[query + 2:-1]), token, sentence,
                                      paragraph)]
            framed = limit(frame_segments(parts, config.cls_id, config.sep_id)[0], config.limits)
            for key in INDEX_KEYS:
                rows[key].append(bert_inputs.padded(getattr(framed, key), config.length))
    return {key: np.stack(values) for key, values in rows.items()}
