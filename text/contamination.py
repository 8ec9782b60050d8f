"""Which benchmark examples a web page contains: the contamination measure of Dodge et al.
(2021, "Documenting Large Webtext Corpora", Section 4.2) and GPT-3's 13-gram overlap.

Normalisation (`normalize`): Dodge et al. count exact matches "normalized for capitalization and
punctuation", without saying more. Here that is: lower case (`str.lower`); every character
Unicode classes as punctuation (P*), symbol (S*: `$`, `+`, `|`, emoji; ASCII's
`string.punctuation` is all P* and S*) or invisible format (Cf: soft hyphens, zero-width
spaces) deleted, not made a space, so that "U.S." and "US" or "don't" and "dont" agree; runs of
white space made one space, none at the ends. No compatibility folding (NFKC): a full-width or
ligature form is a different character.

Words, and characters: words between spaces mean nothing in a script written without them
(Chinese, Japanese, Thai, Lao, Khmer, Myanmar: `SPACELESS_SCRIPTS`), where a whole paragraph is
a few "words". An example that holds a character of such a script (`in_spaceless_script`) is
also measured in the characters of its normalised text with the spaces removed, as the GPT-4
Technical Report (OpenAI 2023, Appendix C) measures every example ("removing all spaces and
symbols", substrings of 50 characters); a page, where it holds such a character.

Two methods, both over normalised text, both answered by one `ContaminationIndex` built from
the examples (task, field, example id, text):
- exact: the example's whole normalised text occurs in the page's, between word boundaries
  (a space or an end on each side, so "the cat" is not found in "bathe cats"); an example in a
  script without spaces, anywhere in the page's text with the spaces removed (there are no word
  boundaries to respect). An example shorter than `MIN_EXACT_WORDS` words (in a script without
  spaces, `MIN_EXACT_CHARACTERS` characters) is left out: it occurs in pages by chance (WMT's
  "Good.", WiC's "Real life."). All examples are searched at once with an Aho-Corasick automaton
  (pyahocorasick, in C) of their first 32 characters; where one occurs, the page is compared
  with the whole text there.
- 13-gram: the page and the example share a run of 13 normalised words (GPT-3, Brown et al.
  2020, Appendix C: 13-grams of lower-cased words without punctuation), or, for an example in
  a script without spaces, a run of `NGRAM_CHARACTERS` characters (GPT-4's 50). Only the
  examples' n-grams are held, as 64-bit hashes (a polynomial over the words' or characters'
  BLAKE2b hashes, mod 2**64), sorted, with the examples each belongs to; a page's n-grams are
  hashed and looked up, never kept. An example shorter than one n-gram (13 words, and 50
  characters in a script without spaces) has none: the exact method alone counts it.
`too_short[method]` says, per example, whether that method leaves it out.

The index is saved as the examples' normalised texts with the method's settings (`save`,
`load`), and rebuilt from them on loading: a later stage (a decontamination filter) loads it
and drops pages whose `matches(text)` it does not want.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import re
import sys
import unicodedata
from typing import Iterable, NamedTuple

import ahocorasick
import numpy as np

from text.hashing import hash64

NGRAM_WORDS = 13
# GPT-4 Technical Report (OpenAI 2023), Appendix C: substrings of 50 characters of the text with
# spaces and symbols removed, for every language; here for the scripts written without spaces.
NGRAM_CHARACTERS = 50
# GPT-3 (Brown et al. 2020), Appendix C: "Due to spurious collisions at lower values of N we use
# a minimum value of 8 on non-synthetic tasks" (N in words). Dodge et al. give no minimum, and
# their exact matches of one-word examples are pages that merely say "Good.".
MIN_EXACT_WORDS = 8
# The same minimum in characters: 8/13 of the 50 characters that stand for 13 words, rounded up.
MIN_EXACT_CHARACTERS = -(-NGRAM_CHARACTERS * MIN_EXACT_WORDS // NGRAM_WORDS)
# Unicode blocks of the scripts that do not put spaces between words.
SPACELESS_SCRIPTS = {
    "Thai": ("\u0e00", "\u0e7f"), "Lao": ("\u0e80", "\u0eff"), "Myanmar": ("\u1000", "\u109f"),
    "Khmer": ("\u1780", "\u17ff"), "Hiragana": ("\u3040", "\u309f"),
    "Katakana": ("\u30a0", "\u30ff"), "Katakana Phonetic Extensions": ("\u31f0", "\u31ff"),
    "CJK Unified Ideographs Extension A": ("\u3400", "\u4dbf"),
    "CJK Unified Ideographs": ("\u4e00", "\u9fff"),
    "Myanmar Extended-B": ("\ua9e0", "\ua9ff"), "Myanmar Extended-A": ("\uaa60", "\uaa7f"),
    "CJK Compatibility Ideographs": ("\uf900", "\ufaff"),
    "Halfwidth Katakana": ("\uff66", "\uff9f"),
    "CJK Unified Ideographs Extensions B-H": ("\U00020000", "\U000323af"),
}
_SPACELESS = re.compile("[" + "".join(f"{first}-{last}" for first, last
                                      in SPACELESS_SCRIPTS.values()) + "]")
# The base of the polynomial that makes one hash of an n-gram's word hashes (FNV-1's 64-bit
# prime; any odd number keeps the map from the last word's hash one to one).
_NGRAM_BASE = np.uint64(1099511628211)
_DELETED_CATEGORIES = ("P", "S", "Cf")
# The exact method's automaton holds each text's first characters (after a space: a word's
# start); a page where they occur is then compared with the whole text there.
_EXACT_PREFIX_CHARACTERS = 32
FORMAT = "t5-c4 contamination index"
FORMAT_VERSION = 2
# What a saved index must agree on to be rebuilt the same: a file of another method is refused.
METHOD = {"normalization": "lower case; Unicode P*, S* and Cf characters deleted; white space "
                           "collapsed (Dodge et al. 2021: normalized for capitalization and "
                           "punctuation)",
          "exact": "whole normalised example between word boundaries (Aho-Corasick); in the "
                   "text without spaces for an example in a script without spaces",
          "min_exact_words": MIN_EXACT_WORDS,
          "min_exact_characters": MIN_EXACT_CHARACTERS,
          "ngram_words": NGRAM_WORDS,
          "ngram_characters": NGRAM_CHARACTERS,
          "spaceless_scripts": {name: f"U+{ord(first):04X}..U+{ord(last):04X}"
                                for name, (first, last) in SPACELESS_SCRIPTS.items()},
          "ngram_hash": "64-bit polynomial (base 1099511628211, mod 2**64) of BLAKE2b-64 word "
                        "(character) hashes"}


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


def in_spaceless_script(text: str) -> bool:
    """Whether a text holds a character of a script written without spaces."""
    return _SPACELESS.search(text) is not None


# Words recur (Zipf): a cache of their hashes makes a page's 13-grams 4x cheaper to hash; bounded,
# at a few tens of MB when full, since a corpus pass meets millions of distinct words.
@functools.lru_cache(maxsize=1 << 18)
def _word_hash(word: str) -> int:
    return hash64(word)


def ngram_hashes(units: list, n: int = NGRAM_WORDS) -> np.ndarray:
    """The 64-bit hash of every run of `n` consecutive units (words or characters), in order
    (empty for fewer units)."""
    if len(units) < n:
        return np.empty(0, dtype=np.uint64)
    hashes = np.fromiter((_word_hash(unit) for unit in units), dtype=np.uint64, count=len(units))
    count = len(units) - n + 1
    combined = hashes[:count].copy()
    for offset in range(1, n):
        combined *= _NGRAM_BASE  # wraps mod 2**64, as uint64 arrays do
        combined += hashes[offset:offset + count]
    return combined


def text_ngram_hashes(normalized: str, in_characters: bool) -> np.ndarray:
    """A normalised text's 13-grams of words, and where `in_characters`, its 50-grams of
    characters with the spaces removed."""
    words = ngram_hashes(normalized.split())
    if not in_characters:
        return words
    return np.concatenate([words, ngram_hashes(list(normalized.replace(" ", "")),
                                               NGRAM_CHARACTERS)])


def _too_short(normalized: str, in_characters: bool) -> dict:
    """Per method (a `Matches` field): whether the example is too short for it."""
    words, characters = len(normalized.split()), len(normalized) - normalized.count(" ")
    return {"exact": (characters < MIN_EXACT_CHARACTERS if in_characters
                      else words < MIN_EXACT_WORDS),
            "ngram13": words < NGRAM_WORDS and not (in_characters
                                                    and characters >= NGRAM_CHARACTERS)}


@dataclasses.dataclass(frozen=True)
class IndexStats:
    """What went into an index: the examples, those in a script without spaces, and those each
    method leaves out as too short."""
    examples: int
    in_characters: int
    too_short_for_exact: int
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
        self.in_characters = [in_spaceless_script(text) for text in texts]
        shorts = [_too_short(text, chars) for text, chars in zip(texts, self.in_characters)]
        # Per method (a `Matches` field), per example: too short, so that method never finds it.
        self.too_short = {method: [short[method] for short in shorts] for method in Matches._fields}
        searched = [not short for short in self.too_short["exact"]]
        self._word_automaton = _exact_automaton(
            (f" {text} ", position) for position, text in enumerate(texts)
            if searched[position] and not self.in_characters[position])
        self._character_automaton = _exact_automaton(
            (text.replace(" ", ""), position) for position, text in enumerate(texts)
            if searched[position] and self.in_characters[position])
        self._ngram_keys, self._ngram_starts, self._ngram_owners = _ngram_table(
            texts, self.in_characters)
        self._any_in_characters = any(self.in_characters)

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
        return IndexStats(len(self.keys), sum(self.in_characters), sum(self.too_short["exact"]),
                          sum(self.too_short["ngram13"]), len(self._ngram_keys))

    def matches(self, text: str) -> Matches:
        """The keys of the examples `text` contains: by exact normalised match, and by a shared
        13-gram (50 characters)."""
        exact, ngram = self.positions(text)
        return Matches({self.keys[i] for i in exact}, {self.keys[i] for i in ngram})

    def positions(self, text: str) -> tuple:
        """As `matches`, the examples' positions in `keys` (sets of ints): for a caller that
        counts per example."""
        normalized = normalize(text)
        # The text without spaces only where an example measured in characters could be in it.
        in_characters = self._any_in_characters and in_spaceless_script(normalized)
        exact = _found(self._word_automaton, f" {normalized} ")
        if in_characters:
            exact |= _found(self._character_automaton, normalized.replace(" ", ""))
        return exact, self._ngram_positions(text_ngram_hashes(normalized, in_characters))

    def _ngram_positions(self, hashes: np.ndarray) -> set:
        if not len(self._ngram_keys) or not len(hashes):
            return set()
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


def _exact_automaton(patterns: Iterable):
    """For (text to find, example position) pairs: the start of each distinct text
    (`_EXACT_PREFIX_CHARACTERS` characters and one more, a word's padding space, or all of a
    shorter one) -> (its length, ((the whole text, the positions of the examples that have it),
    ...) for each text that starts so); None when there is none.
    Only the prefixes go into the automaton, whose nodes cost tens of bytes a character: the
    whole texts (SQuAD's contexts, CNN/DM's articles) would cost hundreds of MB."""
    positions_of: dict = {}
    for text, position in patterns:
        positions_of.setdefault(text, []).append(position)
    if not positions_of:
        return None
    texts_of: dict = {}
    for text, positions in positions_of.items():
        prefix = text[:_EXACT_PREFIX_CHARACTERS + 1]
        texts_of.setdefault(prefix, []).append((text, tuple(positions)))
    automaton = ahocorasick.Automaton()
    for prefix, candidates in texts_of.items():
        automaton.add_word(prefix, (len(prefix), tuple(candidates)))
    automaton.make_automaton()
    return automaton


def _found(automaton, text: str) -> set:
    """The positions of the examples whose whole text occurs in `text`."""
    if automaton is None or not text:
        return set()
    found = set()
    for end, (prefix_length, candidates) in automaton.iter(text):
        start = end - prefix_length + 1
        for whole, positions in candidates:
            if text.startswith(whole, start):
                found.update(positions)
    return found


def _ngram_table(texts: list, in_characters: list) -> tuple:
    """(distinct n-gram hashes sorted, start of each one's owners, owners): the owners of
    keys[i] are owners[starts[i]:starts[i + 1]], positions of examples."""
    hashes, owners = [], []
    for position, (text, chars) in enumerate(zip(texts, in_characters)):
        found = np.unique(text_ngram_hashes(text, chars))
        hashes.append(found)
        owners.append(np.full(len(found), position, dtype=np.int32))
    if not hashes:
        return np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int32)
    all_hashes, all_owners = np.concatenate(hashes), np.concatenate(owners)
    order = np.argsort(all_hashes, kind="stable")
    all_hashes, all_owners = all_hashes[order], all_owners[order]
    keys, starts = np.unique(all_hashes, return_index=True)
    return keys, np.append(starts, len(all_hashes)).astype(np.int64), all_owners
