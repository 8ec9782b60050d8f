"""Language identification: langdetect's algorithm, with its profiles, seeded, and fast.

langdetect spends most of its time in per-character Python method calls (n-gram extraction), in
a Python loop over its 55 languages for each sampled n-gram and in one `random.choice` call per
sample. `LanguageDetector` computes the same thing with the same profiles, the same random draws
and the same floating-point operations in the same order, so it returns exactly what
`langdetect.detector_factory.DetectorFactory(seed=0).create().get_probabilities()` returns with
the profiles loaded in name order (the library's own order is os.listdir's, which differs between
machines): each word's n-grams are computed once and cached; the draws are read in bulk from the
seeded Mersenne Twister stream, computed once (`_DrawStream`); and the trials of a batch of texts
run side by side, one numpy step advancing every text's trial by a block of iterations
(`_Trials`). tests/test_language.py checks the results on real pages and on a seeded fuzz of
mixed scripts, one by one and in batches; bench/bench_pipeline.py measures the gain.
"""
import array
import dataclasses
import itertools
import json
import math
import pathlib
import random
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple

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
_SPACE_RUNS = re.compile(" {2,}")
# langdetect's Detector defaults (instance attributes there, so not importable).
_MAX_TEXT_LENGTH = 10000
_TRIALS = 7
_ITERATIONS_PER_CHECK = 5  # langdetect normalizes and tests convergence every 5th iteration.
# Draws looked up ahead of need: a trial on an English page takes about 11 blocks of 5.
_LOOKAHEAD = 61
_BLOCK_OFFSETS = np.arange(_ITERATIONS_PER_CHECK)
_MAX_CACHED_WORDS = 500_000


@dataclasses.dataclass(frozen=True)
class LanguageConfig:
    languages: Tuple[str, ...] = ("en",)
    min_probability: float = 0.99


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
    profiles (langdetect's add_profile: count / n_words[len - 1] for n-grams of 1 to 3
    characters), several times faster than through the factory's lists."""
    languages: List[str] = []
    row_of_ngram: Dict[str, int] = {}
    columns = []
    for path in _profile_paths():
        profile = json.loads(path.read_text(encoding="utf-8"))
        languages.append(profile["name"])
        frequencies = profile["freq"]
        rows = np.array([row_of_ngram.setdefault(ngram, len(row_of_ngram))
                         for ngram in frequencies], dtype=np.intp)
        lengths = np.fromiter(map(len, frequencies), dtype=np.intp, count=len(frequencies))
        words_of_length = np.array([0.0, *profile["n_words"]])[np.clip(lengths, 0, 3)]
        counts = np.fromiter(frequencies.values(), dtype=np.float64, count=len(frequencies))
        with np.errstate(divide="ignore", invalid="ignore"):
            probabilities = np.where((lengths >= 1) & (lengths <= 3), counts / words_of_length, 0.0)
        columns.append((rows, probabilities))
    table = np.zeros((len(row_of_ngram), len(languages)))
    for language, (rows, probabilities) in enumerate(columns):
        table[rows, language] = probabilities
    return languages, list(row_of_ngram), table


def _uniform(first: int, second: int) -> float:
    """`random.random()` made of two 32-bit words of the stream."""
    return ((first >> 5) * 67108864.0 + (second >> 6)) * (1.0 / 9007199254740992.0)


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
        extra = [self._generator.getrandbits(32) for _ in range(size - len(self.words))]
        self.words = np.concatenate([self.words, np.array(extra, dtype=np.uint32)])


class _Reader:
    """One text's reading of a `_DrawStream`: `choice` over `count` n-grams, and raw words."""

    def __init__(self, stream: _DrawStream, count: int):
        self._stream = stream
        self._count = count
        self._shift = np.uint32(32 - count.bit_length())
        self._position = 0  # The next word to read.
        self._next_accepted = 0  # Index into _accepted of the next choice.
        self._scan(len(stream.words))

    def _scan(self, size: int) -> None:
        if size > len(self._stream.words):
            self._stream.grow(size)
        self._candidates = self._stream.words[:size] >> self._shift
        self._accepted = np.flatnonzero(self._candidates < self._count)

    def words(self, count: int) -> List[int]:
        """Reads the next `count` words as they are (what `random()` reads)."""
        while self._position + count > len(self._candidates):
            self._scan(2 * len(self._candidates))
        words = self._stream.words[self._position:self._position + count].tolist()
        self._position += count
        self._next_accepted = int(np.searchsorted(self._accepted, self._position))
        return words

    def peek_choices(self, count: int) -> np.ndarray:
        """The indices that the next `count` calls of `choice` would return, not yet read."""
        end = self._next_accepted + count
        while end > len(self._accepted):
            self._scan(2 * len(self._candidates))
        return self._candidates[self._accepted[self._next_accepted:end]]

    def read_choices(self, count: int) -> None:
        """Reads `count` >= 1 choices (peeked or not)."""
        self.peek_choices(count)
        self._next_accepted += count
        self._position = int(self._accepted[self._next_accepted - 1]) + 1


def _sequential_row_sums(matrix: np.ndarray) -> np.ndarray:
    """Python's `sum` of each row, as langdetect normalizes. Up to 3.11 it adds in order, as
    numpy's cumulative sum does (numpy's `sum` adds pairwise: other last bits); from 3.12 on it
    compensates, so each row is summed by Python itself there."""
    if sys.version_info < (3, 12):
        return np.cumsum(matrix, axis=1)[:, -1]
    return np.array([sum(row) for row in matrix.tolist()])


class _Trials:
    """The trials of a batch of texts, run side by side: one row of language probabilities per
    text in a trial, all rows advanced by one block of iterations per numpy step."""

    def __init__(self, detector: "LanguageDetector", rows_of_texts: List[np.ndarray]):
        self._table = detector._probabilities
        self._stream = detector._draws
        self._rows_of_texts = rows_of_texts
        languages = self._table.shape[1]
        self.totals = np.zeros((len(rows_of_texts), languages))
        self._readers = {}
        self._trial = {}  # Text -> the number of its trial under way.
        self._spare_normal = {}
        # One entry per row (a text in a trial):
        self._text = np.empty(0, dtype=np.intp)
        self._weight = np.empty(0)
        self._prob = np.empty((0, languages))
        self._iteration = np.empty(0, dtype=np.intp)  # The trial's next iteration.
        self._lookahead = np.empty((0, _LOOKAHEAD), dtype=np.int32)  # Table rows of next draws.
        self._used = np.empty(0, dtype=np.intp)  # Draws of the lookahead multiplied in.

    def run(self) -> np.ndarray:
        """The sums of prob / 7 over each text's 7 trials (langdetect's langprob)."""
        starts = []
        for text, rows in enumerate(self._rows_of_texts):
            if len(rows):
                self._readers[text] = _Reader(self._stream, len(rows))
                self._trial[text] = 0
                self._spare_normal[text] = None
                starts.append(text)
        self._start_trials(starts)
        while len(self._text):
            self._step()
        return self.totals

    def _start_trials(self, texts: List[int]) -> None:
        """Adds a row per text for its next trial: random.gauss, then a fresh probability row."""
        if not texts:
            return
        weights, lookaheads = [], []
        for text in texts:
            reader = self._readers[text]
            spare = self._spare_normal[text]
            if spare is None:
                first, second, third, fourth = reader.words(4)
                angle = _uniform(first, second) * math.tau
                radius = math.sqrt(-2.0 * math.log(1.0 - _uniform(third, fourth)))
                normal = math.cos(angle) * radius
                self._spare_normal[text] = math.sin(angle) * radius
            else:
                normal, self._spare_normal[text] = spare, None
            alpha = Detector.ALPHA_DEFAULT + normal * Detector.ALPHA_WIDTH
            weights.append(alpha / Detector.BASE_FREQ)
            lookaheads.append(self._rows_of_texts[text][reader.peek_choices(_LOOKAHEAD)])
        languages = self._table.shape[1]
        self._text = np.concatenate([self._text, texts])
        self._weight = np.concatenate([self._weight, weights])
        self._prob = np.concatenate([self._prob, np.full((len(texts), languages), 1.0 / languages)])
        self._iteration = np.concatenate([self._iteration, np.zeros(len(texts), dtype=np.intp)])
        self._lookahead = np.concatenate([self._lookahead, lookaheads])
        self._used = np.concatenate([self._used, np.zeros(len(texts), dtype=np.intp)])

    def _refill(self, row: int) -> None:
        """Reads the draws the row has used and looks further ahead."""
        text, used = int(self._text[row]), int(self._used[row])
        reader = self._readers[text]
        ahead = reader.peek_choices(used + _LOOKAHEAD)[used:]
        self._lookahead[row] = self._rows_of_texts[text][ahead]
        reader.read_choices(used)
        self._used[row] = 0

    def _step(self) -> None:
        """Every row through its next block: iteration 0 alone, then 5 at a time, each block
        ending with a normalization and the convergence test."""
        for row in np.flatnonzero(self._used > _LOOKAHEAD - _ITERATIONS_PER_CHECK).tolist():
            self._refill(row)
        firsts = self._iteration == 0
        blocks = np.where(firsts, 1, _ITERATIONS_PER_CHECK)
        draws = np.take_along_axis(self._lookahead, self._used[:, None] + _BLOCK_OFFSETS, axis=1)
        factors = self._weight[:, None, None] + self._table[draws]
        factors[firsts, 1:] = 1.0  # x * 1.0 == x: a first block multiplies one draw in.
        prob = self._prob
        for draw in range(_ITERATIONS_PER_CHECK):
            prob *= factors[:, draw]
        prob /= _sequential_row_sums(prob)[:, None]
        last_iterations = self._iteration + blocks - 1
        done = (prob.max(axis=1) > Detector.CONV_THRESHOLD) | (
            last_iterations >= Detector.ITERATION_LIMIT)
        self._used += blocks
        self._iteration = last_iterations + 1
        if not done.any():
            return
        next_trials = []
        for row in np.flatnonzero(done).tolist():
            text = int(self._text[row])
            self.totals[text] += prob[row] / _TRIALS
            self._readers[text].read_choices(int(self._used[row]))
            self._trial[text] += 1
            if self._trial[text] < _TRIALS:
                next_trials.append(text)
        going = ~done
        for name in ("_text", "_weight", "_prob", "_iteration", "_lookahead", "_used"):
            setattr(self, name, getattr(self, name)[going])
        self._start_trials(next_trials)


class LanguageDetector:
    """langdetect's Detector over its bundled profiles, with a fixed seed and vectorised maths."""

    def __init__(self, seed: int = LANGDETECT_SEED):
        self.languages, words, self._probabilities = profile_table()
        self._ngram_of_row: List[str] = words
        self._row_of_ngram: Dict[str, int] = {word: row for row, word in enumerate(words)}
        self._draws = _DrawStream(seed)
        self._normalized_chars: Dict[int, str] = {}
        # A word followed by a space -> the table rows of its n-grams, as int32 bytes.
        self._rows_of_word: Dict[str, bytes] = {"": b""}

    def _prepare(self, text: str) -> str:
        """Detector.append followed by Detector.cleaning_text.

        The URL and e-mail patterns are tried only on texts that can hold one (a scheme, an
        `@`); Latin letters are counted only as far as the test needs.
        """
        if "http" in text:
            text = Detector.URL_RE.sub(" ", text)
        if "@" in text:
            text = Detector.MAIL_RE.sub(" ", text)
        text = NGram.normalize_vi(text)
        text = _SPACE_RUNS.sub(" ", text[:_MAX_TEXT_LENGTH])
        non_latin = len(_NON_LATIN.findall(text))
        if non_latin:
            enough_latin = (non_latin + 1) // 2  # latin * 2 < non_latin <=> latin < this.
            latin = sum(1 for _ in itertools.islice(_LATIN_LETTERS.finditer(text), enough_latin))
            if latin < enough_latin:
                text = _LATIN_LETTERS.sub("", text)
        return text

    def _normalize(self, text: str) -> str:
        table = self._normalized_chars
        for char in set(text):
            if ord(char) not in table:
                table[ord(char)] = NGram.normalize(char)
        return text.translate(table)

    def _ngram_rows(self, text: str) -> np.ndarray:
        """Detector._extract_ngrams, as rows of the probability table.

        langdetect's n-gram buffer restarts at every space, so a word's n-grams depend only on
        the word and on whether a space follows it: they are computed once per word, cached as
        bytes, and a text's rows are the join of its words' bytes.
        """
        *words, last_word = self._normalize(text).split(" ")
        cache = self._rows_of_word
        parts = list(map(cache.get, words))
        for index, part in enumerate(parts):
            if part is None:
                word = words[index]
                part = cache.get(word)  # A new word may come twice in a text.
                if part is None:
                    if len(cache) >= _MAX_CACHED_WORDS:
                        cache.clear()
                        cache[""] = b""
                    part = cache[word] = self._rows_of(word + " ")
                parts[index] = part
        parts.append(self._rows_of(last_word) if last_word else b"")
        return np.frombuffer(b"".join(parts), dtype=np.int32)

    def _rows_of(self, word: str) -> bytes:
        """The n-grams langdetect emits for one word (and the space after it, if any)."""
        row_of = self._row_of_ngram.get
        if word[1:].islower():
            # No two upper-case letters in a row, so langdetect's capital-word rule never skips:
            # every 1-, 2- and 3-gram of " " + word, in its order (" " alone is no n-gram).
            padded = " " + word
            grams = [padded[1], padded[:2]]
            for end in range(3, len(padded) + 1):
                grams += (padded[end - 1], padded[end - 2:end], padded[end - 3:end])
            return array.array("i", [row for row in map(row_of, grams)
                                     if row is not None]).tobytes()
        rows = array.array("i")
        grams = " "
        capital_word = False
        for char in word:
            previous = grams[-1]
            grams = (grams[1:] if len(grams) >= NGram.N_GRAM else grams) + char
            if char.isupper():
                if previous.isupper():
                    capital_word = True
            else:
                capital_word = False
            if capital_word:
                continue
            for gram in (grams[-1], grams[-2:], grams[-3:] if len(grams) == 3 else None):
                row = row_of(gram) if gram not in (None, " ") else None
                if row is not None:
                    rows.append(row)
        return rows.tobytes()

    def ngrams(self, text: str) -> List[str]:
        """The n-grams of `text` that the random draws sample from, in langdetect's order."""
        return [self._ngram_of_row[row] for row in self._ngram_rows(self._prepare(text))]

    def probabilities_of_texts(self, texts: Sequence[str]) -> List[List[Tuple[str, float]]]:
        """`probabilities` of each text, the texts' trials run side by side (faster than one by
        one: each numpy step advances them all)."""
        rows_of_texts = [self._ngram_rows(self._prepare(text)) for text in texts]
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
