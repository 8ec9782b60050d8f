"""Language identification for the variants: langdetect's results for C4 (`detector.py`, exact
and fast, over `profiles.py`), CLD3 for mC4 (`cld3.py`), and the rule that keeps or drops a page
by what it detected."""
import dataclasses
from typing import Optional, Tuple

from pipelines.filters.language.detector import LANGDETECT_SEED, LanguageDetector
from pipelines.filters.language.profiles import sorted_profiles_factory

__all__ = ["LANGDETECT_SEED", "LanguageConfig", "LanguageDetector", "language_drop_reason",
           "sorted_profiles_factory"]


@dataclasses.dataclass(frozen=True)
class LanguageConfig:
    languages: Tuple[str, ...] = ("en",)
    min_probability: float = 0.99
    # "langdetect" (C4's: a page outside `languages` or below the probability is dropped) or
    # "cld3" (mC4's, pipelines/filters/mc4.py: one that CLD3 is unsure of is `und`).
    detector: str = "langdetect"

    def __post_init__(self):
        if self.detector not in ("langdetect", "cld3"):
            raise ValueError(f"unknown language detector {self.detector!r}")


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
