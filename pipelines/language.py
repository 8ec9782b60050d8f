"""Language identification: langdetect's algorithm, with its profiles, seeded, and fast.

langdetect spends most of its time in per-character Python method calls (n-gram extraction), in
a Python loop over its 55 languages for each sampled n-gram and in one `random.choice` call per
sample. `LanguageDetector` computes the same thing with the same profiles, the same random draws
and the same floating-point operations in the same order, so it returns exactly what
`langdetect.detector_factory.DetectorFactory(seed=0).create().get_probabilities()` returns with
the profiles loaded in name order (the library's own order is os.listdir's, which differs between
machines). How it stays exact:
- n-grams: langdetect's n-gram buffer restarts after every character it normalizes to a space,
  which every whitespace character but three is; so the n-grams of a text are those of its
  whitespace-separated tokens, each token's depending only on the token (and on whether the text
  ends after it). A token's n-grams are computed once, as table rows, and cached; the new tokens
  of a batch are computed together in numpy from langdetect's own rules (normalization by
  `NGram.normalize` itself, the capital-word rule, which n-grams the buffer holds), looked up in a
  hash table of the profiles' n-grams. Texts holding one of the three other whitespace
  characters are split at spaces only.
- draws: langdetect reseeds for every text, so every text reads the same Mersenne Twister words
  (`_DrawStream`, computed once); a text's choices are the words below its n-gram count after
  CPython's shift, found for all texts of a batch at once; `random.gauss` is Python's own
  arithmetic on the words it reads.
- trials: all texts of a batch run side by side (`_Trials`), one numpy step advancing every
  text's current trial by a block of iterations (by several when few texts are left), in
  langdetect's order of multiplications, sums and divisions (row sums are cumulative sums, which
  add in order).
The profile tables are built once per process and shared by its detectors.
tests/test_language.py checks the results on real pages and on a seeded fuzz of mixed scripts,
one by one and in batches; bench/bench_language.py measures the speed against the library.
"""
import dataclasses
import functools
import itertools
import json
import math
import operator
import pathlib
import random
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from langdetect import detector_factory
from langdetect.detector import Detector
from langdetect.utils.ngram import NGram

LANGDETECT_SEED = 0
_LATIN_LETTERS = re.compile(r"[A-z]")  # langdetect's test: 'A' <= ch <= 'z'.
# langdetect means to exempt the Latin Extended Additional block (U+1E00-U+1EFF) here, but it
# compares unicode_block()'s number with the block's name, which never matches: every character
# from U+0300 up counts as non-Latin, and so it does here.
_NON_LATIN = re.compile("[\u0300-\U0010ffff]")
# str.split()'s separators (none lies above U+3000; tests check every code point), and those of
# them that NGram.normalize does not turn into a space (they do not restart the n-gram buffer).
_WHITESPACE = "".join(filter(str.isspace, map(chr, range(0x3001))))
_WHITESPACE_NOT_NORMALIZED = tuple(char for char in _WHITESPACE if NGram.normalize(char) != " ")
# langdetect's Detector defaults (instance attributes there, so not importable).
_MAX_TEXT_LENGTH = 10000
_TRIALS = 7
_ITERATIONS_PER_CHECK = 5  # langdetect normalizes and tests convergence every 5th iteration.
# A step runs up to this many blocks when fewer than _ROWS_PER_STEP rows share it.
_MAX_BLOCKS_PER_STEP = 8
_ROWS_PER_STEP = 32
# The draws each block multiplies in, from the row's next choice: a trial's first block takes
# one draw (and multiplies by 1.0 four times), later blocks 5.
_LATER_BLOCK_DRAWS = np.arange(_MAX_BLOCKS_PER_STEP * _ITERATIONS_PER_CHECK).reshape(
    _MAX_BLOCKS_PER_STEP, _ITERATIONS_PER_CHECK)
_FIRST_BLOCK_DRAWS = np.maximum(_LATER_BLOCK_DRAWS - (_ITERATIONS_PER_CHECK - 1), 0)
# Stream words scanned for a batch's choices at first: enough for most texts' 7 trials (an
# English page takes about 350 choices); the scan doubles, for the texts under way, when one
# needs more.
_INITIAL_WORDS = 1024
_MAX_CACHED_TOKENS = 500_000
_Rows = Union[np.ndarray, slice]  # Rows of a _Trials: indices, or all of them.
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing.


@dataclasses.dataclass(frozen=True)
class LanguageConfig:
    languages: Tuple[str, ...] = ("en",)
    min_probability: float = 0.99
    # "langdetect" (C4's: a page outside `languages` or below the probability is dropped) or
    # "cld3" (mC4's, pipelines/mc4.py: one that CLD3 is unsure of is `und`).
    detector: str = "langdetect"

    def __post_init__(self):
        if self.detector not in ("langdetect", "cld3"):
            raise ValueError(f"unknown language detector {self.detector!r}")


def sorted_profiles_factory() -> detector_factory.DetectorFactory:
    """langdetect's factory over its bundled profiles, languages in name order.

    The library's load_profile numbers languages in os.listdir order, which varies between file
    systems; the order changes the floating-point sums, so it is fixed here.
    """
    factory = detector_factory.DetectorFactory()
    factory.load_json_profile([path.read_text(encoding="utf-8") for path in _profile_paths()])
    return factory


def _profile_paths() -> List[pathlib.Path]:
    directory = pathlib.Path(detector_factory.PROFILES_DIRECTORY)
    return sorted(path for path in directory.iterdir()
                  if path.is_file() and not path.name.startswith("."))


def profile_table() -> Tuple[List[str], List[str], np.ndarray]:
    """(languages, n-grams, probabilities[n-gram, language]): `sorted_profiles_factory()`'s
    langlist, word_lang_prob_map keys (in its order) and values, built in numpy from the same
    profiles (langdetect's add_profile: count / n_words[len - 1]), several times faster than
    through the factory's lists."""
    languages, grams, table, _ = _profiles()
    return list(languages), list(grams), table


def _profiles() -> Tuple[Tuple[str, ...], Tuple[str, ...], np.ndarray, "_GramIndex"]:
    """profile_table()'s values and an index of its n-grams. An n-gram's row is its first
    appearance's, found by sorting the n-grams' numbers (`_GramIndex`) rather than hashing
    strings."""
    languages: List[str] = []
    grams: List[str] = []
    columns = []
    for path in _profile_paths():
        profile = json.loads(path.read_text(encoding="utf-8"))
        languages.append(profile["name"])
        frequencies = profile["freq"]
        lengths = np.fromiter(map(len, frequencies), dtype=np.intp, count=len(frequencies))
        words_of_length = np.array([0.0, *profile["n_words"]])[np.minimum(lengths, 3)]
        counts = np.fromiter(frequencies.values(), dtype=np.float64, count=len(frequencies))
        columns.append(counts / words_of_length)
        grams.extend(frequencies)
    index = _GramIndex(grams)
    distinct, firsts, inverse = np.unique(index.keys, return_index=True, return_inverse=True)
    order = np.argsort(firsts)  # The distinct n-grams in order of first appearance.
    row_of_distinct = np.empty(len(order), dtype=np.intp)
    row_of_distinct[order] = np.arange(len(order))
    index.add_rows(distinct[order])
    language_of = np.repeat(np.arange(len(languages)), [len(column) for column in columns])
    table = np.zeros((len(order), len(languages)))
    table[row_of_distinct[inverse.ravel()], language_of] = np.concatenate(columns)
    return tuple(languages), tuple(map(grams.__getitem__, firsts[order].tolist())), table, index


@functools.lru_cache(maxsize=None)
def _shared_profiles() -> Tuple[Tuple[str, ...], Tuple[str, ...], np.ndarray, "_GramIndex"]:
    """_profiles(), built once per process (several detectors, as Beam's DoFn instances in one
    worker, share them; nothing writes to them)."""
    languages, grams, table, index = _profiles()
    table.setflags(write=False)
    return languages, grams, table, index


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@functools.lru_cache(maxsize=None)
def _upper_case_bmp() -> np.ndarray:
    """str.isupper of every character of the Basic Multilingual Plane."""
    return np.frombuffer(bytes(map(str.isupper, map(chr, range(0x10000)))), dtype=np.bool_)


def _is_upper(codes: np.ndarray) -> np.ndarray:
    upper = _upper_case_bmp()[codes & 0xFFFF]
    astral = np.flatnonzero(codes > 0xFFFF)
    if len(astral):
        upper[astral] = [chr(code).isupper() for code in codes[astral].tolist()]
    return upper


class _GramIndex:
    """The table rows of n-grams given as code points, looked up many at a time.

    Each character of the profiles' n-grams gets a small number (its rank; all ones for the
    characters of no n-gram); an n-gram is the number made of its characters' ranks, a fixed
    number of bits each, the last character lowest (so that a shorter n-gram's high bits are 0,
    and n-grams of different lengths differ). 1-grams are looked up in an array, longer ones in an
    open-addressing hash table (linear probing, no wrap-around) holding key and row in one word.
    """

    def __init__(self, grams: Sequence[str]):
        """The numbers of `grams` (repeats allowed) as `keys`; `add_rows` indexes them."""
        lengths = np.fromiter(map(len, grams), dtype=np.intp, count=len(grams))
        if len(grams) and not ((lengths >= 1) & (lengths <= 3)).all():
            raise ValueError("langdetect's profiles hold n-grams of 1 to 3 characters")
        codes = _code_points("".join(grams))
        alphabet = np.unique(codes)
        self._bits = (len(alphabet) + 1).bit_length()
        self._unknown = (1 << self._bits) - 1  # The rank of characters in no n-gram.
        self._rank = np.full(int(alphabet[-1]) + 1 if len(alphabet) else 1, self._unknown,
                             dtype=np.uint64)
        self._rank[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.uint64)
        ends = np.cumsum(lengths)
        self.keys = np.zeros(len(grams), dtype=np.uint64)
        for offset in range(3):  # The last, second last and third last characters.
            has = lengths > offset
            self.keys[has] |= self._rank[codes[ends[has] - 1 - offset]] << np.uint64(
                self._bits * offset)

    def add_rows(self, keys: np.ndarray) -> None:
        """Makes the distinct n-grams `keys` the table's rows 0, 1, ..."""
        rows = np.arange(len(keys))
        ones = keys < (1 << self._bits)
        self._row_of_rank = np.full(1 << self._bits, -1, dtype=np.int32)
        self._row_of_rank[keys[ones]] = rows[ones]
        self._row_bits = max(len(keys), 1).bit_length()
        if 3 * self._bits + self._row_bits > 64:
            raise ValueError("too many distinct characters or n-grams for 64-bit entries")
        self._hash_bits = (4 * int((~ones).sum())).bit_length()  # At most a quarter full.
        self._hash_shift = np.uint64(64 - self._hash_bits)
        self._entries = self._hash_table(keys[~ones], rows[~ones])

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        return ((keys * _HASH_MULTIPLIER) >> self._hash_shift).astype(np.intp)

    def _hash_table(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Linear probing, keys inserted in the order of their home slots: each key lands on the
        first free slot at or after its home, past the end if need be (the table grows)."""
        homes = self._slots(keys)
        order = np.argsort(homes, kind="stable")
        homes = homes[order]
        ranks = np.arange(len(homes))
        slots = ranks + np.maximum.accumulate(homes - ranks)
        # Every home slot exists; the last entry stays empty, so every probe ends there at most.
        size = max(1 << self._hash_bits, int(slots[-1]) + 1 if len(slots) else 0) + 1
        entries = np.zeros(size, dtype=np.uint64)
        entries[slots] = (keys[order] << np.uint64(self._row_bits)) | rows[order].astype(np.uint64)
        return entries

    def rows(self, codes: np.ndarray) -> np.ndarray:
        """For the n-grams ending at each position of `codes` but the first (a space): the table
        row of the 1-, 2- and 3-gram langdetect's buffer holds there, -1 for none."""
        ranks = np.zeros(len(codes), dtype=np.uint64)
        known = codes < len(self._rank)
        ranks[known] = self._rank[codes[known]]
        ranks[~known] = self._unknown
        found = np.full((len(codes) - 1, 3), -1, dtype=np.int32)
        found[:, 0] = self._row_of_rank[ranks[1:]]
        bits = np.uint64(self._bits)
        pairs = (ranks[:-1] << bits) | ranks[1:]
        found[:, 1] = self._lookup(pairs)
        found[1:, 2] = self._lookup((ranks[:-2] << (bits + bits)) | pairs[1:])
        return found

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        found = np.full(len(keys), -1, dtype=np.int32)
        pending = np.arange(len(keys))
        slots = self._slots(keys)
        row_bits = np.uint64(self._row_bits)
        row_mask = np.uint64((1 << self._row_bits) - 1)
        while len(pending):
            entries = self._entries[slots]
            hits = (entries >> row_bits) == keys
            found[pending[hits]] = entries[hits] & row_mask
            going = (entries != 0) & ~hits
            pending, slots, keys = pending[going], slots[going] + 1, keys[going]
        return found


def _uniform(first: int, second: int) -> float:
    """`random.random()` made of two 32-bit words of the stream."""
    return ((first >> 5) * 67108864.0 + (second >> 6)) * (1.0 / 9007199254740992.0)


def _gauss_pair(words: List[int]) -> Tuple[float, float]:
    """The two normals `random.gauss` makes of 4 words (it returns the first, keeps the other)."""
    first, second, third, fourth = words
    angle = _uniform(first, second) * math.tau
    radius = math.sqrt(-2.0 * math.log(1.0 - _uniform(third, fourth)))
    return math.cos(angle) * radius, math.sin(angle) * radius


class _DrawStream:
    """The 32-bit words of Python's Mersenne Twister seeded with `seed`: langdetect's draws.

    langdetect reseeds for every text, so every text reads the same words; only how `choice`
    reads them depends on the text (its number of n-grams). Holding the words lets a text take
    many choices in one numpy step instead of one `random.choice` call each. CPython makes
    `choice(seq)` from `getrandbits(k)` = word >> (32 - k), k = len(seq).bit_length(), drawn again
    while >= len(seq); `random()` from two words (`_uniform`); `gauss` from two `random()`s,
    keeping the second normal for the next call.
    """

    def __init__(self, seed: int, size: int = 4096):
        self._generator = random.Random(seed)
        self.words = np.empty(0, dtype=np.uint32)
        self.grow(size)

    def grow(self, size: int) -> None:
        """At least `size` words (getrandbits(32 n) is the next n words, the first lowest)."""
        missing = size - len(self.words)
        if missing > 0:
            more = self._generator.getrandbits(32 * missing).to_bytes(4 * missing, "little")
            self.words = np.concatenate([self.words, np.frombuffer(more, dtype="<u4")])


def _sequential_row_sums(matrix: np.ndarray) -> np.ndarray:
    """Python's `sum` of each row, as langdetect normalizes. Up to 3.11 it adds in order, as
    numpy's cumulative sum does (numpy's `sum` adds pairwise: other last bits); from 3.12 on it
    compensates, so each row is summed by Python itself there."""
    if sys.version_info < (3, 12):
        return np.cumsum(matrix, axis=1)[:, -1]
    return np.array([sum(row) for row in matrix.tolist()])


class _Trials:
    """The trials of a batch of texts, run side by side: one row of language probabilities per
    text under way (in its current trial), all rows advanced by a block of iterations (or a few,
    when few rows are left) per numpy step; a row starts its text's next trial in place.

    A row's choices are read from `_positions` and `_draws` (the stream positions of the words
    its text accepts, and the table rows they choose, all rows' one after the other), found for
    every row at once over the first `_length` words of the stream, and again over twice as
    many when a row runs out of them.
    """

    def __init__(self, detector: "LanguageDetector", rows_of_texts: List[np.ndarray]):
        self._table = detector._probabilities
        self._stream = detector._draws
        self._rows_of_texts = rows_of_texts
        languages = self._table.shape[1]
        self.totals = np.zeros((len(rows_of_texts), languages))
        # One entry per row:
        self._text = np.array([text for text, rows in enumerate(rows_of_texts) if len(rows)],
                              dtype=np.intp)
        count = len(self._text)
        self._slot = np.arange(count)  # The row's line in _positions and _draws.
        self._trial = np.zeros(count, dtype=np.intp)
        self._prob = np.full((count, languages), 1.0 / languages)
        self._weight = np.empty(count)
        self._spare_normal = np.empty(count)  # random.gauss's second normal, for odd trials.
        self._iteration = np.zeros(count, dtype=np.intp)  # The trial's next iteration.
        self._next_choice = np.zeros(count, dtype=np.intp)  # Index into the row's choices.
        self._length = 0
        self._scan_choices(_INITIAL_WORDS)
        self._start_trials(np.arange(count))

    def run(self) -> np.ndarray:
        """The sums of prob / 7 over each text's 7 trials (langdetect's langprob)."""
        while len(self._text):
            self._step()
        return self.totals

    def _scan_choices(self, length: int) -> None:
        """Every row's accepted words among the stream's first `length`: CPython's choice takes
        word >> (32 - k) and retries while it is >= the text's count of n-grams. A row's choices
        are `_available[slot]` entries of the flat `_positions` and `_draws` from
        `_first_choice[slot]` on."""
        self._stream.grow(length + 4)  # And the 4 words of a Gaussian after the last.
        words = self._stream.words[:length]
        rows_of_rows = [self._rows_of_texts[text] for text in self._text.tolist()]
        counts = np.array([len(rows) for rows in rows_of_rows], dtype=np.uint32)
        shifts = np.array([32 - len(rows).bit_length() for rows in rows_of_rows], dtype=np.uint32)
        candidates = words[None, :] >> shifts[:, None]
        row_of, self._positions = np.nonzero(candidates < counts[:, None])
        self._available = np.bincount(row_of, minlength=len(counts))
        self._first_choice = np.cumsum(self._available) - self._available
        starts = np.cumsum(counts, dtype=np.intp) - counts
        all_rows = np.concatenate(rows_of_rows) if rows_of_rows else np.empty(0, np.int32)
        self._draws = all_rows[starts[row_of] + candidates[row_of, self._positions]]
        self._slot = np.arange(len(counts))
        self._length = length

    def _ensure_choices(self, rows: _Rows, choices: int, words: int = 0) -> None:
        """Scans further until `rows` have `choices` more choices and the stream position after
        their last choice read plus `words` lies within the scan."""
        while True:
            enough = self._next_choice[rows] + choices <= self._available[self._slot[rows]]
            if words:
                enough &= self._read_position(rows) + words <= self._length
            if enough.all():
                return
            self._scan_choices(2 * self._length)

    def _choice_index(self, rows: _Rows) -> np.ndarray:
        """Where the rows' next choices lie in `_positions` and `_draws`."""
        return self._first_choice[self._slot[rows]] + self._next_choice[rows]

    def _read_position(self, rows: _Rows) -> np.ndarray:
        """The stream position after the rows' last choice (0 before their first)."""
        read = self._next_choice[rows] > 0
        last = self._positions[np.where(read, self._choice_index(rows) - 1, 0)]
        return np.where(read, last + 1, 0)

    def _start_trials(self, rows: np.ndarray) -> None:
        """random.gauss for each row's new trial (even trials read 4 words and keep the second
        normal, odd ones use it), and the uniform probabilities it starts from."""
        self._prob[rows] = 1.0 / self._prob.shape[1]
        self._iteration[rows] = 0
        normals = self._spare_normal[rows]
        drawing = np.flatnonzero(self._trial[rows] % 2 == 0)
        if len(drawing):
            fresh = rows[drawing]
            self._ensure_choices(fresh, 4, words=4)
            positions = self._read_position(fresh)
            words = self._stream.words[positions[:, None] + np.arange(4)].tolist()
            pairs = [_gauss_pair(four) for four in words]
            normals[drawing] = [first for first, _ in pairs]
            self._spare_normal[fresh] = [second for _, second in pairs]
            # Choices resume after the 4 words: skip the accepted ones among them.
            later = self._positions[self._choice_index(fresh)[:, None] + np.arange(4)]
            self._next_choice[fresh] += (later < (positions + 4)[:, None]).sum(axis=1)
        alpha = Detector.ALPHA_DEFAULT + normals * Detector.ALPHA_WIDTH
        self._weight[rows] = alpha / Detector.BASE_FREQ

    def _step(self) -> None:
        """Every row through its next blocks of iterations (iteration 0 alone, then 5 at a time),
        each block ending with a normalization and the convergence test, until a block where a
        row is done. With few rows under way, the draws of several blocks are looked up at once
        (the same products; a step's cost is mostly numpy's per-call overhead then)."""
        every_row = slice(None)
        blocks = min(_MAX_BLOCKS_PER_STEP, max(1, _ROWS_PER_STEP // len(self._text)))
        self._ensure_choices(every_row, blocks * _ITERATIONS_PER_CHECK)
        firsts = self._iteration == 0
        offsets = np.where(firsts[:, None, None], _FIRST_BLOCK_DRAWS[:blocks],
                           _LATER_BLOCK_DRAWS[:blocks])
        draws = self._draws[self._choice_index(every_row)[:, None, None] + offsets]
        factors = np.take(self._table, draws, axis=0)
        factors_of_rows = factors.reshape(len(factors), -1)  # A view: each row's in one run.
        factors_of_rows += self._weight[:, None]  # weight + probability, as langdetect adds.
        if firsts.any():
            factors[firsts, 0, 1:] = 1.0  # x * 1.0 == x: a first block multiplies one draw in.
        # The iteration the first block ends with (and tests convergence at); 5 more per block.
        last_iterations = np.where(firsts, 0, self._iteration + _ITERATIONS_PER_CHECK - 1)
        limit_block = -(-(Detector.ITERATION_LIMIT - int(last_iterations.max()))
                        // _ITERATIONS_PER_CHECK)  # The first block where a row can reach it.
        prob = self._prob
        for block in range(blocks):
            for draw in range(_ITERATIONS_PER_CHECK):
                prob *= factors[:, block, draw]
            prob /= _sequential_row_sums(prob)[:, None]
            # A row's maximum passes the threshold if any of its values does (one at most can).
            done = np.nonzero(prob > Detector.CONV_THRESHOLD)[0]
            if block >= limit_block:
                done = np.flatnonzero(
                    (last_iterations + block * _ITERATIONS_PER_CHECK >= Detector.ITERATION_LIMIT)
                    | (prob.max(axis=1) > Detector.CONV_THRESHOLD))
            if len(done):
                break
        self._next_choice += (block + 1) * _ITERATIONS_PER_CHECK - np.where(
            firsts, _ITERATIONS_PER_CHECK - 1, 0)
        self._iteration = last_iterations + block * _ITERATIONS_PER_CHECK + 1
        if not len(done):
            return
        self.totals[self._text[done]] += prob[done] / _TRIALS
        self._trial[done] += 1
        finished = self._trial[done] == _TRIALS
        self._start_trials(done[~finished])
        if finished.any():
            going = np.ones(len(self._text), dtype=bool)
            going[done[finished]] = False
            for name in ("_text", "_slot", "_trial", "_prob", "_weight", "_spare_normal",
                         "_iteration", "_next_choice"):
                setattr(self, name, getattr(self, name)[going])


class LanguageDetector:
    """langdetect's Detector over its bundled profiles, with a fixed seed and vectorised maths."""

    def __init__(self, seed: int = LANGDETECT_SEED):
        languages, self._ngram_of_row, self._probabilities, self._grams = _shared_profiles()
        self.languages = list(languages)
        self._draws = _DrawStream(seed)
        # NGram.normalize of each character of the Basic Multilingual Plane met so far (0 for
        # none yet: no character normalizes to U+0000), and of the others.
        self._normalized_bmp = np.zeros(0x10000, dtype=np.uint32)
        self._normalized_astral: Dict[int, int] = {}
        # A token -> the table rows of its n-grams as int32 bytes, followed by a space (or any
        # whitespace but the three that NGram.normalize keeps), or ending the text.
        self._rows_of_token = {"": b""}
        self._rows_of_last_token = {"": b""}

    def _prepare(self, text: str) -> str:
        """Detector.append followed by Detector.cleaning_text, but for append's collapsing of
        space runs, which changes no n-gram (a space after a space adds none) nor the counts of
        Latin and non-Latin letters.

        The URL, e-mail and Vietnamese patterns are tried only on texts that can hold one (a
        scheme, an `@`, a combining mark); Latin letters are counted only as far as the test
        needs.
        """
        if "http" in text:
            text = Detector.URL_RE.sub(" ", text)
        if "@" in text:
            text = Detector.MAIL_RE.sub(" ", text)
        if any(mark in text for mark in NGram.DMARK_CLASS):
            text = NGram.normalize_vi(text)
        text = text[:_MAX_TEXT_LENGTH]
        if _NON_LATIN.search(text):
            non_latin = len(_NON_LATIN.findall(text))
            enough_latin = (non_latin + 1) // 2  # latin * 2 < non_latin <=> latin < this.
            latin = sum(1 for _ in itertools.islice(_LATIN_LETTERS.finditer(text), enough_latin))
            if latin < enough_latin:
                text = _LATIN_LETTERS.sub("", text)
        return text

    @staticmethod
    def _tokens(text: str) -> Tuple[List[str], str]:
        """The tokens of a prepared text that whitespace follows, and the one ending it ("" if
        none); split at spaces only where the text holds whitespace that normalizes to itself."""
        if any(space in text for space in _WHITESPACE_NOT_NORMALIZED):
            *tokens, last = text.split(" ")
            return tokens, last
        tokens = text.split()
        return tokens, ("" if not text or text[-1].isspace() else tokens.pop())

    def _normalize(self, codes: np.ndarray) -> np.ndarray:
        """NGram.normalize of each code point (one character for one, always)."""
        bmp = codes <= 0xFFFF
        table = self._normalized_bmp
        normalized = table[codes & 0xFFFF]
        new = np.unique(codes[bmp & (normalized == 0)]).tolist()
        if new:
            table[new] = [ord(NGram.normalize(chr(code))) for code in new]
            normalized = table[codes & 0xFFFF]
        astral = np.flatnonzero(~bmp)
        if len(astral):
            cache = self._normalized_astral
            normalized[astral] = [
                cache[code] if code in cache else
                cache.setdefault(code, ord(NGram.normalize(chr(code))))
                for code in codes[astral].tolist()]
        return normalized

    def _add_tokens(self, followed: List[str], last: List[str]) -> None:
        """Computes the n-gram rows of new tokens, all in one text: a space before each, a
        space after each (left out of the rows of `last`)."""
        tokens = followed + last
        codes = self._normalize(_code_points(" " + " ".join(tokens) + " "))
        spaces = codes == 32
        upper = _is_upper(codes)
        # The buffer after a space holds " " + the character; a space after a space adds none;
        # no n-gram comes out while the character and the one before are both upper case.
        emits = ~(upper[1:] & upper[:-1]) & ~(spaces[1:] & spaces[:-1])
        kept = self._grams.rows(codes)
        kept[~emits | spaces[1:], 0] = -1  # " " alone is no n-gram.
        kept[~emits, 1] = -1
        kept[~emits | spaces[:-1], 2] = -1  # The buffer restarted at the previous character.
        present = kept >= 0
        data = kept[present].tobytes()
        # ends[p]: the n-grams at positions 1..p of codes (n-gram p - 1 of the rows above).
        ends = np.concatenate([[0], np.cumsum(present.sum(axis=1))]) * 4
        lengths = np.fromiter(map(len, tokens), dtype=np.intp, count=len(tokens))
        firsts = np.cumsum(lengths + 1) - lengths  # The position of each token's first character.
        starts = ends[firsts - 1].tolist()
        after_space = ends[firsts + lengths].tolist()
        before_space = ends[firsts + lengths - 1].tolist()
        self._rows_of_token.update(zip(followed, map(data.__getitem__, map(
            slice, starts, after_space))))
        self._rows_of_last_token.update(zip(last, map(data.__getitem__, map(
            slice, starts[len(followed):], before_space[len(followed):]))))

    def _ngram_rows(self, texts: Sequence[str]) -> List[np.ndarray]:
        """Detector._extract_ngrams of each text, as rows of the probability table."""
        tokens_of_texts = [self._tokens(self._prepare(text)) for text in texts]
        if len(self._rows_of_token) > _MAX_CACHED_TOKENS:
            self._rows_of_token = {"": b""}
        if len(self._rows_of_last_token) > _MAX_CACHED_TOKENS:
            self._rows_of_last_token = {"": b""}
        cache, last_cache = self._rows_of_token, self._rows_of_last_token
        parts_of_texts = [list(map(cache.get, tokens)) for tokens, _ in tokens_of_texts]
        # Where each text misses tokens: (parts, tokens, the indices of the missing ones).
        missing = [(parts, tokens, list(itertools.compress(itertools.count(), map(
            operator.is_, parts, itertools.repeat(None)))))
            for (tokens, _), parts in zip(tokens_of_texts, parts_of_texts) if None in parts]
        new = {tokens[index] for _, tokens, indices in missing for index in indices}
        new_last = {last for _, last in tokens_of_texts}.difference(last_cache)
        if new or new_last:
            self._add_tokens(list(new), list(new_last))
        for parts, tokens, indices in missing:
            if 4 * len(indices) > len(tokens):  # Looking all up again is then faster, in C.
                parts[:] = map(cache.__getitem__, tokens)
            else:
                for index in indices:
                    parts[index] = cache[tokens[index]]
        return [np.frombuffer(b"".join(parts) + last_cache[last], dtype=np.int32)
                for parts, (_, last) in zip(parts_of_texts, tokens_of_texts)]

    def ngrams(self, text: str) -> List[str]:
        """The n-grams of `text` that the random draws sample from, in langdetect's order."""
        return [self._ngram_of_row[row] for row in self._ngram_rows([text])[0]]

    def probabilities_of_texts(self, texts: Sequence[str]) -> List[List[Tuple[str, float]]]:
        """`probabilities` of each text, the texts' trials run side by side (faster than one by
        one: each numpy step advances them all)."""
        rows_of_texts = self._ngram_rows(texts)
        totals = _Trials(self, rows_of_texts).run()
        results = []
        for rows, total in zip(rows_of_texts, totals.tolist()):
            ranked = [(language, p) for language, p in zip(self.languages, total)
                      if p > Detector.PROB_THRESHOLD] if len(rows) else []
            ranked.sort(key=lambda pair: pair[1], reverse=True)  # Stable, as langdetect's sort.
            results.append(ranked)
        return results

    def probabilities(self, text: str) -> List[Tuple[str, float]]:
        """(language, probability) above langdetect's 0.1 threshold, most probable first.

        langdetect's 7 trials, with its draws: each multiplies the language probabilities by
        the table rows of sampled n-grams and normalizes after iterations 0, 5, 10, ... until
        one language passes CONV_THRESHOLD or the iteration limit. The same floating-point
        operations in the same order, on numpy rows (`_Trials`).
        """
        return self.probabilities_of_texts([text])[0]

    def detect_texts(self, texts: Sequence[str]) -> List[Optional[Tuple[str, float]]]:
        """`detect` of each text."""
        return [ranked[0] if ranked else None for ranked in self.probabilities_of_texts(texts)]

    def detect(self, text: str) -> Optional[Tuple[str, float]]:
        """The most probable language of `text` and its probability; None if there is none."""
        return self.detect_texts([text])[0]


def language_drop_reason(detected: Optional[Tuple[str, float]], config: LanguageConfig
                         ) -> Optional[str]:
    if detected is None:
        return "undetectable"
    language, probability = detected
    if language not in config.languages:
        return "other_language"
    if probability < config.min_probability:
        return "low_probability"
    return None
