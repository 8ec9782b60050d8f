"""Which benchmark examples a web page contains: the contamination measure of Dodge et al.
(2021, "Documenting Large Webtext Corpora", Section 4.2) and GPT-3's 13-gram overlap.

Normalisation (`normalize`): Dodge et al. count exact matches "normalized for capitalization and
punctuation", without saying more. Here that is: lower case (`str.lower`); every character
Unicode classes as punctuation (P*), symbol (S*: `$`, `+`, `|`, emoji; ASCII's
`string.punctuation` is all P* and S*) or invisible format (Cf: soft hyphens, zero-width
spaces) deleted, not made a space, so that "U.S." and "US" or "don't" and "dont" agree; runs of
white space made one space, none at the ends. No compatibility folding (NFKC): a full-width or
ligature form is a different character.

Two methods, both over normalised text, both answered by one `ContaminationIndex` built from
the examples (task, field, example id, text):
- exact: the example's whole normalised text occurs in the page's, between word boundaries
  (a space or an end on each side, so "the cat" is not found in "bathe cats"); every example
  with any text after normalisation takes part. All examples are searched at once with one
  Aho-Corasick automaton (pyahocorasick, in C) of their first 32 characters; where one occurs,
  the page is compared with the whole text there.
- 13-gram: the page and the example share a run of 13 normalised words (GPT-3, Brown et al.
  2020, Appendix C: 13-grams of lower-cased words without punctuation). Only the examples'
  13-grams are held, as 64-bit hashes (a polynomial over the words' BLAKE2b hashes, mod 2**64),
  sorted, with the examples each belongs to; a page's 13-grams are hashed and looked up, never
  kept. An example of fewer than 13 words has no 13-gram: the exact method alone counts it
  (`too_short_for_ngrams`). Word n-grams assume words between spaces: text in a language
  written without them (Chinese, Japanese, Thai) is, for this method, a few long "words".

The index is saved as the examples' normalised texts with the method's settings (`save`,
`load`), and rebuilt from them on loading: a later stage (a decontamination filter) loads it
and drops pages whose `matches(text)` it does not want.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import sys
import unicodedata
from typing import Iterable, NamedTuple

import ahocorasick
import numpy as np

from text.hashing import hash64

NGRAM_WORDS = 13
# The base of the polynomial that makes one hash of a 13-gram's word hashes (FNV-1's 64-bit
# prime; any odd number keeps the map from the last word's hash one to one).
_NGRAM_BASE = np.uint64(1099511628211)
_DELETED_CATEGORIES = ("P", "S", "Cf")
# The exact method's automaton holds each text's first characters (after a space: a word's
# start); a page where they occur is then compared with the whole text there.
_EXACT_PREFIX_CHARACTERS = 32
FORMAT = "t5-c4 contamination index"
FORMAT_VERSION = 1
# What a saved index must agree on to be rebuilt the same: a file of another method is refused.
METHOD = {"normalization": "lower case; Unicode P*, S* and Cf characters deleted; white space "
                           "collapsed (Dodge et al. 2021: normalized for capitalization and "
                           "punctuation)",
          "exact": "whole normalised example between word boundaries (Aho-Corasick)",
          "ngram_words": NGRAM_WORDS,
          "ngram_hash": "64-bit polynomial (base 1099511628211, mod 2**64) of BLAKE2b-64 word hashes"}


class ExampleKey(NamedTuple):
    """One field of one example: what a match names."""
    task: str
    field: str
    example_id: str


class Matches(NamedTuple):
    """The examples a text contains, by each method."""
    exact: set
    ngram13: set


@functools.lru_cache(maxsize=1)
def _deletions() -> dict:
    """str.translate's table: every code point of a deleted category -> None (built once, on
    first use: a walk over all of Unicode takes a fraction of a second)."""
    return {code: None for code in range(sys.maxunicode + 1)
            if unicodedata.category(chr(code)).startswith(_DELETED_CATEGORIES)}


def normalize(text: str) -> str:
    """Lower case, punctuation, symbols and format characters deleted, white space collapsed."""
    return " ".join(text.lower().translate(_deletions()).split())


# Words recur (Zipf): a cache of their hashes makes a page's 13-grams 4x cheaper to hash; bounded,
# at a few tens of MB when full, since a corpus pass meets millions of distinct words.
@functools.lru_cache(maxsize=1 << 18)
def _word_hash(word: str) -> int:
    return hash64(word)


def ngram_hashes(words: list, n: int = NGRAM_WORDS) -> np.ndarray:
    """The 64-bit hash of every run of `n` consecutive words, in order (empty for fewer words)."""
    if len(words) < n:
        return np.empty(0, dtype=np.uint64)
    hashes = np.fromiter((_word_hash(word) for word in words), dtype=np.uint64, count=len(words))
    count = len(words) - n + 1
    combined = hashes[:count].copy()
    for offset in range(1, n):
        combined *= _NGRAM_BASE  # wraps mod 2**64, as uint64 arrays do
        combined += hashes[offset:offset + count]
    return combined


@dataclasses.dataclass(frozen=True)
class IndexStats:
    """What went into an index: the examples, and those too short for the 13-gram method."""
    examples: int
    too_short_for_ngrams: int
    ngrams: int


class ContaminationIndex:
    """The normalised examples, searchable by both methods at once (see the module docstring).

    Examples whose normalised text is empty are left out (nothing could match them); several
    examples with one normalised text are all found by it."""

    def __init__(self, keys: list, texts: list):
        if len(keys) != len(texts):
            raise ValueError(f"{len(keys)} example keys but {len(texts)} texts")
        self.keys = keys
        self.texts = texts
        self._automaton = _exact_automaton(texts)
        self._ngram_keys, self._ngram_starts, self._ngram_owners = _ngram_table(texts)
        # Per example: fewer than 13 words, so the 13-gram method never finds it.
        self.too_short = [len(text.split()) < NGRAM_WORDS for text in texts]

    @classmethod
    def build(cls, examples: Iterable) -> ContaminationIndex:
        """From (task, field, example id, raw text) tuples; the first of a repeated key counts."""
        keys, texts, seen = [], [], set()
        for task, field, example_id, raw in examples:
            key = ExampleKey(task, field, str(example_id))
            normalized = normalize(raw)
            if key in seen or not normalized:
                continue
            seen.add(key)
            keys.append(key)
            texts.append(normalized)
        return cls(keys, texts)

    @property
    def stats(self) -> IndexStats:
        return IndexStats(len(self.keys), sum(self.too_short), len(self._ngram_keys))

    def matches(self, text: str) -> Matches:
        """The keys of the examples `text` contains: by exact normalised match, and by a shared
        13-gram."""
        exact, ngram = self.positions(text)
        return Matches({self.keys[i] for i in exact}, {self.keys[i] for i in ngram})

    def positions(self, text: str) -> tuple:
        """As `matches`, the examples' positions in `keys` (sets of ints): for a caller that
        counts per example."""
        normalized = normalize(text)
        return self._exact_positions(normalized), self._ngram_positions(normalized.split())

    def _exact_positions(self, normalized: str) -> set:
        if not normalized or self._automaton is None:
            return set()
        padded = f" {normalized} "
        found = set()
        for end, (prefix_length, candidates) in self._automaton.iter(padded):
            start = end - prefix_length + 1
            for text, positions in candidates:
                if padded.startswith(text, start):
                    found.update(positions)
        return found

    def _ngram_positions(self, words: list) -> set:
        if not len(self._ngram_keys):
            return set()
        hashes = ngram_hashes(words)
        slots = np.searchsorted(self._ngram_keys, hashes)
        inside = slots < len(self._ngram_keys)
        slots, hashes = slots[inside], hashes[inside]
        hit = np.unique(slots[self._ngram_keys[slots] == hashes])
        return {int(owner) for slot in hit
                for owner in self._ngram_owners[self._ngram_starts[slot]:self._ngram_starts[slot + 1]]}

    def save(self, path: str) -> None:
        """Writes the index as gzipped JSON: the method's settings and every example's key and
        normalised text (`load` rebuilds the rest)."""
        document = {"format": FORMAT, "version": FORMAT_VERSION, "method": METHOD,
                    "examples": [[*key, text] for key, text in zip(self.keys, self.texts)]}
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(document, f, ensure_ascii=False)

    @classmethod
    def load(cls, path: str) -> ContaminationIndex:
        """An index `save` wrote; a file that is not one, or one of another method, is a
        ValueError naming the file."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                document = json.load(f)
        except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path} is not a contamination index: {error}") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ValueError(f"{path} is not a contamination index (no format {FORMAT!r})")
        if document.get("version") != FORMAT_VERSION or document.get("method") != METHOD:
            raise ValueError(f"{path} was written by another version of the method "
                             f"(version {document.get('version')}); rebuild it")
        examples = document["examples"]
        return cls([ExampleKey(*row[:3]) for row in examples], [row[3] for row in examples])


def _exact_automaton(texts: list):
    """The start of each distinct normalised text padded with a space on each side (a space and
    `_EXACT_PREFIX_CHARACTERS` characters, or all of a shorter one) -> (its length, ((the whole
    padded text, the positions of the examples that have it), ...) for each text that starts
    so); None when there is none.
    Only the prefixes go into the automaton, whose nodes cost tens of bytes a character: the
    whole texts (SQuAD's contexts, CNN/DM's articles) would cost hundreds of MB."""
    positions_of: dict = {}
    for position, text in enumerate(texts):
        positions_of.setdefault(f" {text} ", []).append(position)
    if not positions_of:
        return None
    texts_of: dict = {}
    for padded, positions in positions_of.items():
        prefix = padded[:_EXACT_PREFIX_CHARACTERS + 1]
        texts_of.setdefault(prefix, []).append((padded, tuple(positions)))
    automaton = ahocorasick.Automaton()
    for prefix, candidates in texts_of.items():
        automaton.add_word(prefix, (len(prefix), tuple(candidates)))
    automaton.make_automaton()
    return automaton


def _ngram_table(texts: list) -> tuple:
    """(distinct 13-gram hashes sorted, start of each one's owners, owners): the owners of
    keys[i] are owners[starts[i]:starts[i + 1]], positions of examples."""
    hashes, owners = [], []
    for position, text in enumerate(texts):
        found = np.unique(ngram_hashes(text.split()))
        hashes.append(found)
        owners.append(np.full(len(found), position, dtype=np.int32))
    if not hashes:
        return np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int32)
    all_hashes, all_owners = np.concatenate(hashes), np.concatenate(owners)
    order = np.argsort(all_hashes, kind="stable")
    all_hashes, all_owners = all_hashes[order], all_owners[order]
    keys, starts = np.unique(all_hashes, return_index=True)
    return keys, np.append(starts, len(all_hashes)).astype(np.int64), all_owners
