"""GPT-1's input transformations (the paper's Figure 1), over token ids: each task's examples
become start-delimited sequences that end in the extract token, whose final state the head reads;
and the head's features (`head_tokens`, `label`) of a batch of examples.

Special tokens: GPT-1's start, delimiter and extract tokens are the last three ids of its
vocabulary: OpenAI's `_start_`, `_delimiter_`, `_classify_` in the order train.py appends them
after the 40,478 BPE pieces (model/families/gpt1/bpe.py), or with our SentencePiece vocabularies
the sentinel pieces `<extra_id_0>`, `<extra_id_1>`, `<extra_id_2>`, counting down from the last
id (model/data/vocabulary.py). Ordinary text produces none of them.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence

import numpy as np

from model.families.gpt1.bpe import BpeVocabulary
from model.tasks import discriminative

HEAD_KEYS = ("head_tokens", "label")


@dataclasses.dataclass(frozen=True)
class SpecialTokens:
    start: int
    delimiter: int
    extract: int


def special_tokens(vocab_size: int, openai_order: bool = False) -> SpecialTokens:
    """start, delimiter and extract: the last three ids of a vocabulary of `vocab_size` ids.
    With `openai_order` (OpenAI's BPE), `_start_`, `_delimiter_`, `_classify_` in the order
    train.py appended them; else our SentencePiece vocabularies' sentinels `<extra_id_0>`,
    `<extra_id_1>`, `<extra_id_2>`, which count down from the last id (model/data/vocabulary.py),
    as GPT-1 runs have always read them."""
    if vocab_size < 4:
        raise ValueError(f"a GPT-1 vocabulary of {vocab_size} ids has no room for its text "
                         f"beside the start, delimiter and extract tokens")
    last = vocab_size - 1
    if openai_order:
        return SpecialTokens(last - 2, last - 1, last)
    return SpecialTokens(last, last - 1, last - 2)


def vocabulary_special_tokens(vocabulary) -> SpecialTokens:
    """The special tokens of a vocabulary object: OpenAI's order for the BPE, else ours."""
    return special_tokens(vocabulary.vocab_size, isinstance(vocabulary, BpeVocabulary))


def _fit(parts: Sequence[List[int]], budget: int) -> List[List[int]]:
    """The parts trimmed to `budget` tokens in all, always from the longest (so a long context
    gives way before a short question or answer), keeping their beginnings."""
    parts = [list(p) for p in parts]
    while sum(map(len, parts)) > budget:
        longest = max(range(len(parts)), key=lambda i: len(parts[i]))
        parts[longest].pop()
    return parts


def _sequence(parts: Sequence[List[int]], special: SpecialTokens, length: int) -> List[int]:
    """start, parts joined by delimiters, extract; trimmed to fit `length`."""
    budget = length - 1 - len(parts)  # start, delimiters, extract
    if budget < len(parts):
        raise ValueError(f"sequence length {length} is too short for {len(parts)} segments")
    tokens = [special.start]
    for i, part in enumerate(_fit(parts, budget)):
        if i:
            tokens.append(special.delimiter)
        tokens += part
    return tokens + [special.extract]


def _choice_sequence(context: Sequence[List[int]], answer: List[int], special: SpecialTokens,
                     length: int) -> List[int]:
    """start, the context's segments one after the other, delimiter, answer, extract: RACE's
    `[z; q; $; a_k]` (the article z, then the question q). Trimmed to fit `length` from the end of
    the context's first segment (the article, a story, a premise), so that the question and the
    answer stay whole; only were they alone too long, from the longest part."""
    budget = length - 3  # start, delimiter, extract
    if budget < 2:
        raise ValueError(f"sequence length {length} is too short for a context and an answer")
    parts = [list(segment) for segment in context] + [list(answer)]
    excess = sum(map(len, parts)) - budget
    if excess > 0:
        parts[0] = parts[0][:max(0, len(parts[0]) - excess)]
    *context_parts, answer_part = _fit(parts, budget)
    return ([special.start] + [t for part in context_parts for t in part] + [special.delimiter]
            + answer_part + [special.extract])


def transform(example: discriminative.Example, view: discriminative.View, encode,
              special: SpecialTokens, length: int) -> List[List[int]]:
    """An example's token sequences, each `start ... extract` of at most `length` tokens:
    classification `start text extract`; entailment (any ordered pair) `start premise delim
    hypothesis extract`; similarity (symmetric pair) both orders; multiple choice one sequence
    `start context delim answer extract` per answer (`_choice_sequence`)."""
    segments = [encode(s) for s in example.segments]
    if view.kind == discriminative.MULTIPLE_CHOICE:
        return [_choice_sequence(segments, encode(choice), special, length)
                for choice in example.choices]
    if view.symmetric:
        return [_sequence(segments, special, length), _sequence(segments[::-1], special, length)]
    return [_sequence(segments, special, length)]


def sequences_per_example(view: discriminative.View) -> int:
    if view.kind == discriminative.MULTIPLE_CHOICE:
        return view.num_classes
    return 2 if view.symmetric else 1


def label_dtype(head: str) -> type:
    return np.float32 if head == discriminative.REGRESSION else np.int32


def head_features(examples: Sequence[discriminative.Example], view: discriminative.View,
                  vocabulary, length: int) -> Dict[str, np.ndarray]:
    """The head's features of labelled examples: `head_tokens` [n, sequences * length] (each
    sequence zero padded to `length`) and `label` [n, 1]: int32 class indices, float32 values
    for a regression view (STS-B's similarity scores)."""
    special = vocabulary_special_tokens(vocabulary)
    count = sequences_per_example(view)
    tokens = np.zeros([len(examples), count * length], np.int32)
    labels = np.zeros([len(examples), 1], label_dtype(view.kind))
    for row, example in enumerate(examples):
        for i, sequence in enumerate(transform(example, view, vocabulary.encode, special, length)):
            tokens[row, i * length:i * length + len(sequence)] = sequence
        labels[row, 0] = example.label
    return {"head_tokens": tokens, "label": labels}
