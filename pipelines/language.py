"""Language identification: langdetect's algorithm, with its profiles, seeded, and fast.

langdetect spends most of its time in per-character Python method calls (n-gram extraction) and
in a Python loop over its 55 languages for each sampled n-gram. `LanguageDetector` computes the
same thing with the same profiles, the same random draws and the same floating-point operations
in the same order (elementwise numpy, Python's sum), so it returns exactly what
`langdetect.detector_factory.DetectorFactory(seed=0).create().get_probabilities()` returns with
the profiles loaded in name order (the library's own order is os.listdir's, which differs between
machines); tests/test_language.py checks this on real pages and on a seeded fuzz of mixed
scripts, and bench/bench_pipeline.py measures the gain.
"""
import dataclasses
import pathlib
import random
import re
from typing import Dict, List, Optional, Tuple

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
    directory = pathlib.Path(detector_factory.PROFILES_DIRECTORY)
    profiles = sorted(path for path in directory.iterdir()
                      if path.is_file() and not path.name.startswith("."))
    factory = detector_factory.DetectorFactory()
    factory.load_json_profile([path.read_text(encoding="utf-8") for path in profiles])
    return factory


class LanguageDetector:
    """langdetect's Detector over its bundled profiles, with a fixed seed and vectorised maths."""

    def __init__(self, seed: int = LANGDETECT_SEED):
        factory = sorted_profiles_factory()
        self.languages: List[str] = list(factory.langlist)
        words = list(factory.word_lang_prob_map)
        self._ngram_of_row: List[str] = words
        self._row_of_ngram: Dict[str, int] = {word: row for row, word in enumerate(words)}
        self._probabilities = np.array([factory.word_lang_prob_map[w] for w in words],
                                       dtype=np.float64)
        self._seed = seed
        self._normalized_chars: Dict[int, str] = {}
        self._rows_of_word: Dict[str, Tuple[int, ...]] = {}

    def _prepare(self, text: str) -> str:
        """Detector.append followed by Detector.cleaning_text."""
        text = Detector.URL_RE.sub(" ", text)
        text = Detector.MAIL_RE.sub(" ", text)
        text = NGram.normalize_vi(text)
        text = _SPACE_RUNS.sub(" ", text[:_MAX_TEXT_LENGTH])
        if len(_LATIN_LETTERS.findall(text)) * 2 < len(_NON_LATIN.findall(text)):
            text = _LATIN_LETTERS.sub("", text)
        return text

    def _normalize(self, text: str) -> str:
        table = self._normalized_chars
        for char in set(text):
            if ord(char) not in table:
                table[ord(char)] = NGram.normalize(char)
        return text.translate(table)

    def _ngram_rows(self, text: str) -> List[int]:
        """Detector._extract_ngrams, as rows of the probability table.

        langdetect's n-gram buffer restarts at every space, so a word's n-grams depend only on
        the word and on whether a space follows it: they are computed once per word and cached.
        """
        rows: List[int] = []
        words = self._normalize(text).split(" ")
        last = len(words) - 1
        cache = self._rows_of_word
        for position, word in enumerate(words):
            if not word:
                continue
            key = word + " " if position < last else word
            word_rows = cache.get(key)
            if word_rows is None:
                if len(cache) >= _MAX_CACHED_WORDS:
                    cache.clear()
                word_rows = cache[key] = self._rows_of(key)
            rows.extend(word_rows)
        return rows

    def _rows_of(self, word: str) -> Tuple[int, ...]:
        """The n-grams langdetect emits for one word (and the space after it, if any)."""
        rows = []
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
                row = self._row_of_ngram.get(gram) if gram not in (None, " ") else None
                if row is not None:
                    rows.append(row)
        return tuple(rows)

    def ngrams(self, text: str) -> List[str]:
        """The n-grams of `text` that the random draws sample from, in langdetect's order."""
        return [self._ngram_of_row[row] for row in self._ngram_rows(self._prepare(text))]

    def probabilities(self, text: str) -> List[Tuple[str, float]]:
        """(language, probability) above langdetect's 0.1 threshold, most probable first."""
        rows = self._ngram_rows(self._prepare(text))
        if not rows:
            return []
        table = self._probabilities
        count = len(self.languages)
        total = np.zeros(count)
        draws = random.Random(self._seed)
        for _ in range(_TRIALS):
            prob = np.full(count, 1.0 / count)
            alpha = Detector.ALPHA_DEFAULT + draws.gauss(0.0, 1.0) * Detector.ALPHA_WIDTH
            weight = alpha / Detector.BASE_FREQ
            iteration = 0
            while True:
                prob *= weight + table[draws.choice(rows)]
                if iteration % 5 == 0:
                    # Python's sum, as langdetect: it adds in order up to 3.11 and compensates
                    # from 3.12 on, so this stays identical to the library on every version.
                    prob /= sum(prob.tolist())
                    if prob.max() > Detector.CONV_THRESHOLD or iteration >= Detector.ITERATION_LIMIT:
                        break
                iteration += 1
            total += prob / _TRIALS
        ranked = [(language, float(p)) for language, p in zip(self.languages, total)
                  if p > Detector.PROB_THRESHOLD]
        ranked.sort(key=lambda pair: pair[1], reverse=True)  # Stable, as langdetect's sort.
        return ranked

    def detect(self, text: str) -> Optional[Tuple[str, float]]:
        """The most probable language of `text` and its probability; None if there is none."""
        ranked = self.probabilities(text)
        return ranked[0] if ranked else None


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
