"""langdetect's results, bit for bit, at a compiled library's speed: `LanguageDetector`.

langdetect-rs runs langdetect 1.0.9's algorithm in Rust and gives its probabilities to the last
bit, about 27 times faster than the library (bench/bench_language.py: 0.11 CPU ms a cleaned
page against 2.9). Fixed here:
- the profiles: langdetect's own files, in name order (profiles.py);
- the seed: langdetect reseeds its random draws for every text, so with a fixed seed a page's
  answer depends on the page alone, on any runner and in any batch.
Each text is detected on the calling thread: the library's batch call spreads texts over a
thread pool, and a Beam worker already runs a process (or thread) per core.
tests/pipelines/test_language.py checks the results against langdetect itself on real pages and on a
seeded fuzz of every script and whitespace rule.
"""
from typing import List, Optional, Tuple

import langdetect_rs

from pipelines.filters.language.profiles import sorted_profiles_factory

LANGDETECT_SEED = 0


class LanguageDetector:
    """langdetect's Detector over its bundled profiles in name order, seeded."""

    def __init__(self, seed: int = LANGDETECT_SEED):
        self._factory = sorted_profiles_factory(langdetect_rs.DetectorFactory)
        self._factory.set_seed(seed)
        self.languages = self._factory.get_lang_list()

    def probabilities(self, text: str) -> List[Tuple[str, float]]:
        """(language, probability) above langdetect's 0.1 threshold, most probable first; none
        for a text without features (langdetect raises there)."""
        detector = self._factory.create()
        detector.append(text)
        try:
            ranked = detector.get_probabilities()
        except langdetect_rs.LangDetectException as error:
            if error.code != langdetect_rs.ErrorCode.CantDetectError:
                raise
            return []
        return [(found.lang, found.prob) for found in ranked]

    def detect(self, text: str) -> Optional[Tuple[str, float]]:
        """The most probable language of `text` and its probability; None if there is none."""
        ranked = self.probabilities(text)
        return ranked[0] if ranked else None
