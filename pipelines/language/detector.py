"""langdetect's algorithm, with its profiles, seeded, and fast: `LanguageDetector`.

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
import itertools
import operator
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from langdetect.detector import Detector
from langdetect.utils.ngram import NGram

from pipelines.language.draws import DrawStream
from pipelines.language.profiles import code_points, is_upper, shared_profiles
from pipelines.language.trials import Trials

LANGDETECT_SEED = 0
_LATIN_LETTERS = re.compile(r"[A-z]")  # langdetect's test: 'A' <= ch <= 'z'.
# langdetect's test: 'A' <= ch <= 'z'.
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
_MAX_CACHED_TOKENS = 500_000


class LanguageDetector:
    """langdetect's Detector over its bundled profiles, with a fixed seed and vectorised maths."""

    def __init__(self, seed: int = LANGDETECT_SEED):
        languages, self._ngram_of_row, self._probabilities, self._grams = shared_profiles()
        self.languages = list(languages)
        self._draws = DrawStream(seed)
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
        codes = self._normalize(code_points(" " + " ".join(tokens) + " "))
        spaces = codes == 32
        upper = is_upper(codes)
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
        totals = Trials(self._probabilities, self._draws, rows_of_texts).run()
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
        operations in the same order, on numpy rows (`Trials`).
        """
        return self.probabilities_of_texts([text])[0]

    def detect_texts(self, texts: Sequence[str]) -> List[Optional[Tuple[str, float]]]:
        """`detect` of each text."""
        return [ranked[0] if ranked else None for ranked in self.probabilities_of_texts(texts)]

    def detect(self, text: str) -> Optional[Tuple[str, float]]:
        """The most probable language of `text` and its probability; None if there is none."""
        return self.detect_texts([text])[0]
