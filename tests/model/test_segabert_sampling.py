"""SegaBERT's pre-training draws (model/families/segabert/structure.py) against the authors' sampling, restated:
rsvp-ai/segatron_aaai, segabert/data_utils/datasets.py, bert_sentencepair_pst_dataset
(get_weighted_samples, create_random_sentencepair, __getitem__'s loop, truncate_seq_pair)."""
import bisect
import itertools

import numpy as np
import pytest

from model.families.bert import inputs as bert_inputs
from model.families.segabert import structure

DRAWS = 20000


def sentence(first, length, sentence_index=0, paragraph=0):
    return structure.StructuredTokens(tuple(range(first, first + length)), tuple(range(length)),
                                      (sentence_index,) * length, (paragraph,) * length)


def document(lengths):
    """A document of one paragraph of sentences of the given lengths (ids count on)."""
    starts = np.cumsum([0] + list(lengths))
    return [sentence(int(start), n, i) for i, (start, n) in enumerate(zip(starts, lengths))]


class FixedDraw:
    """A generator whose integers() gives one chosen value (to read off a deterministic map)."""

    def __init__(self, value):
        self.value = value

    def integers(self, high):
        assert 0 <= self.value < high
        return self.value


def test_document_choice_is_the_authors_weighted_sample():
    """Every draw below the total length picks the document the authors' get_weighted_samples
    picks (bisect_right over the running lengths), so a document's chance is its length's
    share; an empty document is never picked. Over 20,000 seeded draws the shares are within
    0.012 (about 4 standard deviations) of the lengths' shares."""
    lengths = [5, 0, 20, 75, 100]
    running = list(itertools.accumulate(lengths))
    cumulative = np.array(running)
    for value in range(running[-1]):
        assert structure.draw_document(cumulative, FixedDraw(value)) == bisect.bisect_right(
            running, value)
    rng = np.random.default_rng(0)
    counts = np.bincount([structure.draw_document(cumulative, rng) for _ in range(DRAWS)],
                         minlength=len(lengths))
    assert counts[1] == 0
    np.testing.assert_allclose(counts / DRAWS, np.array(lengths) / sum(lengths), atol=0.012)


def authors_start_and_split_shares(lengths, target):
    """The authors' chances of (start sentence, A's sentence count) for one document: a start
    uniform over the sentences, the chunk up to the target or the document's end, A's count k
    uniform over 0..n (1 for one sentence), the draw repeated until A and B are non-empty."""
    shares = {}
    for start in range(len(lengths)):
        n = next((end - start for end in range(start + 1, len(lengths) + 1)
                  if sum(lengths[start:end]) >= target), len(lengths) - start)
        for split in (range(n + 1) if n >= 2 else [1]):
            if 0 < split < n:
                shares[start, split] = 1 / len(lengths) / (n + 1)
    total = sum(shares.values())
    return {key: value / total for key, value in shares.items()}


def test_start_sentences_and_splits_are_the_authors():
    """One document of 10 sentences of 5 pieces at a target of 12: a chunk from sentence i
    holds 3 sentences (2 from sentence 8, 1 from the last), A's share of it is uniform over
    the splits that leave B something, and a draw is repeated until one does: the drawn
    (start, split) shares are within 0.01 of the authors' over 20,000 seeded draws, the last
    sentence never starts a chunk, and a chunk is consecutive sentences from its start."""
    lengths = [5] * 10
    documents = [document(lengths)]
    cumulative = structure.document_lengths(documents)
    rng = np.random.default_rng(1)
    counts = {}
    for _ in range(DRAWS):
        chunk = structure.draw_chunk(documents, cumulative, 12, rng)
        assert chunk.sentences == tuple(documents[0][chunk.start:chunk.start + len(chunk.sentences)])
        key = (chunk.start, chunk.split)
        counts[key] = counts.get(key, 0) + 1
    expected = authors_start_and_split_shares(lengths, 12)
    assert set(counts) == set(expected)
    assert all(start < 9 for start, _ in counts)
    for key, share in expected.items():
        assert counts[key] / DRAWS == pytest.approx(share, abs=0.01), key


def test_documents_that_cannot_split_are_not_drawn():
    """A document of one sentence, or of sentences as long as the target, gives no pair (the
    authors draw again); when no document can give one, there is none (they would loop)."""
    one_sentence, long_sentences, splittable = document([50]), document([30, 30]), document([3, 4])
    documents = [one_sentence, long_sentences, splittable]
    rng = np.random.default_rng(2)
    cumulative = structure.document_lengths(documents)
    assert {structure.draw_chunk(documents, cumulative, 20, rng).document
            for _ in range(200)} == {2}
    assert structure.draw_chunk(documents[:2], structure.document_lengths(documents[:2]), 20,
                                rng) is None


def test_pairs_are_trimmed_as_bert_trims_them():
    """trimmed_pair drops the same pieces as bert_inputs.trim_pair (BERT's truncate_seq_pair,
    which the authors' truncate_seq_pair copies) given the same generator, and keeps each
    piece's indices."""
    for seed in range(20):
        a, b = sentence(0, 40, 1), sentence(100, 25, 2, 1)
        rng_ours, rng_bert = np.random.default_rng(seed), np.random.default_rng(seed)
        got_a, got_b = structure.trimmed_pair(a, b, 30, rng_ours)
        want_a, want_b = list(a.tokens), list(b.tokens)
        bert_inputs.trim_pair(want_a, want_b, 30, rng_bert)
        assert (list(got_a.tokens), list(got_b.tokens)) == (want_a, want_b)
        assert got_a.token_index == tuple(t - a.tokens[0] for t in got_a.tokens)
        assert got_b.token_index == tuple(t - b.tokens[0] for t in got_b.tokens)
        assert rng_ours.random() == rng_bert.random()


def test_a_window_gives_its_text_s_worth_of_sequences():
    """ceil(pieces / (length - 3)) sequences for a window (A and B hold length - 3 pieces)."""
    assert structure.sequences_per_window(0, 128) == 0
    assert structure.sequences_per_window(125, 128) == 1
    assert structure.sequences_per_window(126, 128) == 2
