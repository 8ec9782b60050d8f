"""SegaBERT: the document-structure path (model/structure.py) and the family."""
import gzip
import json
import re

import numpy as np
import pytest
import tensorflow as tf

from model import structure
from model.inputs import jsonl_documents
from tests.trained_vocab import trained_vocabulary
from text.sentences import split_sentences

CLS, SEP = 1001, 1002


def word_ids(text):
    """A tokenizer whose ids say which word they are: `w<N>` or `W<N>` -> N; punctuation has
    no ids. (The splitter ends a sentence before a capital: sentences here start with `W`.)"""
    return [int(number) for number in re.findall(r"[wW](\d+)", text)]


def indices(window):
    return [list(window.tokens), list(window.token_index), list(window.sentence_index),
            list(window.paragraph_index)]


# Two paragraphs; the first has two sentences, the second three. Word N is token N.
TWO_PARAGRAPHS = "W1 w2. W3 w4 w5!\n\nW6 w7 w8 w9 w10 w11. W12? W13 w14."


def test_two_paragraphs_by_hand():
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=9)  # 7 tokens per window
    first, second, third = structure.structured_windows(TWO_PARAGRAPHS, word_ids, config)
    # Whole sentences while they fit: "W1 w2." + "W3 w4 w5!" (5 tokens); the 6-token sentence
    # does not fit beside them. [CLS] copies the first token's indices; [SEP] is the next token
    # of the last sentence.
    assert indices(first) == [[CLS, 1, 2, 3, 4, 5, SEP],
                              [0, 0, 1, 0, 1, 2, 3],
                              [0, 0, 0, 1, 1, 1, 1],
                              [0, 0, 0, 0, 0, 0, 0]]
    # The 6-token sentence and the 1-token "W12?" fill the next window exactly.
    assert indices(second) == [[CLS, 6, 7, 8, 9, 10, 11, 12, SEP],
                               [0, 0, 1, 2, 3, 4, 5, 0, 1],
                               [0, 0, 0, 0, 0, 0, 0, 1, 1],
                               [1, 1, 1, 1, 1, 1, 1, 1, 1]]
    assert indices(third) == [[CLS, 13, 14, SEP],
                              [0, 0, 1, 2],
                              [2, 2, 2, 2],
                              [1, 1, 1, 1]]


def test_a_long_sentence_fills_windows_and_its_indices_continue():
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=5)  # 3 tokens per window
    windows = structure.structured_windows("W1 w2 w3 w4 w5 w6 w7. W8.", word_ids, config)
    assert [indices(w) for w in windows] == [
        [[CLS, 1, 2, 3, SEP], [0, 0, 1, 2, 3], [0] * 5, [0] * 5],
        [[CLS, 4, 5, 6, SEP], [3, 3, 4, 5, 6], [0] * 5, [0] * 5],
        # The sentence's last token and the next sentence share a window.
        [[CLS, 7, 8, SEP], [6, 6, 0, 1], [0, 0, 1, 1], [0] * 4]]


def test_indices_at_the_maxima():
    limits = structure.StructureLimits(tokens_per_sentence=3, sentences_per_paragraph=2,
                                       paragraphs_per_document=2)
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=7, limits=limits)
    text = "W1 w2 w3 w4. W5. W6.\nW7.\nW8.\nW9."
    windows = structure.structured_windows(text, word_ids, config)
    # Token indices past 2 and sentence indices past 1 are clamped.
    assert indices(windows[0]) == [[CLS, 1, 2, 3, 4, 5, SEP],
                                   [0, 0, 1, 2, 2, 0, 1],
                                   [0, 0, 0, 0, 0, 1, 1],
                                   [0] * 7]
    # Paragraphs 0..3 in one window: shifting down stops at 0, so 2 and 3 are clamped to 1.
    assert indices(windows[1]) == [[CLS, 6, 7, 8, 9, SEP],
                                   [0, 0, 0, 0, 0, 1],
                                   [1, 1, 0, 0, 0, 0],
                                   [0, 0, 1, 1, 1, 1]]
    # A window of paragraphs 2 and 3 is shifted to 0 and 1: they stay apart.
    shifted = structure.limit(structure.StructuredTokens((7, 8), (0, 0), (0, 0), (2, 3)), limits)
    assert shifted.paragraph_index == (0, 1)


def test_blank_lines_and_sentences_without_tokens_are_not_counted():
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=20)
    [window] = structure.structured_windows("\n  \nw1. ... w2.\n...\nw3.", word_ids,
                                            config, lambda line: line.split())
    # "..." tokenizes to nothing: neither a sentence nor a paragraph.
    assert indices(window) == [[CLS, 1, 2, 3, SEP], [0, 0, 0, 0, 1], [0, 0, 1, 0, 0],
                               [0, 0, 0, 1, 1]]
    assert structure.structured_windows("\n\n", word_ids, config) == []


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="at least 2"):
        structure.StructureLimits(paragraphs_per_document=1)
    with pytest.raises(ValueError, match="room"):
        structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=2)


# --------------------------------------------------------------------------------------------
# Real C4 pages.

C4_PAGES = "c4_samples/olmo/*.json*.gz"


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    return trained_vocabulary(shared_data)


@pytest.fixture(scope="module")
def pages(shared_data):
    texts = []
    for path in sorted(shared_data.glob(C4_PAGES)):
        with gzip.open(path, "rt") as lines:
            texts += [json.loads(line)["text"] for line in lines if line.strip()]
    return texts


def test_indices_on_real_pages(pages, vocabulary):
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=64)
    sentence_count = 0
    for text in pages:
        windows = structure.structured_windows(text, vocabulary.encode, config)
        body = sum((w[1:-1] for w in windows), structure.EMPTY)
        for window in windows:
            assert len(window) <= config.length
            assert (window.tokens[0], window.tokens[-1]) == (CLS, SEP)
            # Paragraphs never go back within a window.
            assert list(window.paragraph_index) == sorted(window.paragraph_index)
        # Across the page: every sentence's token indices run 0..n-1, sentence indices run
        # 0, 1, ... within a paragraph, paragraphs 0, 1, ... (no page here reaches a maximum).
        starts = [i for i, t in enumerate(body.token_index) if t == 0] + [len(body)]
        for start, end in zip(starts, starts[1:]):
            assert list(body.token_index[start:end]) == list(range(end - start))
            assert len(set(body.sentence_index[start:end])) == 1
            assert len(set(body.paragraph_index[start:end])) == 1
        heads = [(body.paragraph_index[s], body.sentence_index[s]) for s in starts[:-1]]
        for (p0, s0), (p1, s1) in zip(heads, heads[1:]):
            assert (p1, s1) in {(p0, s0 + 1), (p0 + 1, 0)}
        # Nothing lost: the paragraphs are the page's lines, and the tokens decode to its text
        # as SentencePiece normalises it.
        lines = [line for line in text.split("\n") if line.strip()]
        assert body.paragraph_index[-1] + 1 == len(lines)
        page = vocabulary.decode(vocabulary.encode(text))
        assert " ".join(vocabulary.decode(list(body.tokens)).split()) == " ".join(page.split())
        sentence_count += len(starts) - 1
    assert sentence_count == sum(len(split_sentences(line)) for text in pages for line in text.split("\n"))


def test_tf_data_path_equals_the_pure_path(shared_data, pages, vocabulary):
    config = structure.StructureConfig(cls_id=CLS, sep_id=SEP, length=64)
    documents = jsonl_documents(str(shared_data / C4_PAGES))
    got = list(structure.split_structured(documents, vocabulary.encode, config).as_numpy_iterator())
    expected = [(number, chunk, window) for number, text in enumerate(pages)
                for chunk, window in enumerate(structure.structured_windows(text, vocabulary.encode, config))]
    assert len(got) == len(expected)
    for row, (_, chunk, window) in zip(got, expected):
        assert row["chunk"] == chunk
        assert [row[k].tolist() for k in ("targets",) + structure.INDEX_KEYS] == indices(window)
