"""Language identification with langdetect, deterministic (fixed seed), as a pure function."""
import dataclasses
from typing import Optional, Tuple

from langdetect import detector_factory
from langdetect.lang_detect_exception import LangDetectException

LANGDETECT_SEED = 0


@dataclasses.dataclass(frozen=True)
class LanguageConfig:
    languages: Tuple[str, ...] = ("en",)
    min_probability: float = 0.99


def new_detector_factory() -> detector_factory.DetectorFactory:
    """A factory of our own with a fixed seed, rather than langdetect's process-wide one."""
    factory = detector_factory.DetectorFactory()
    factory.load_profile(detector_factory.PROFILES_DIRECTORY)
    factory.seed = LANGDETECT_SEED
    return factory


def detect_language(text: str, factory: detector_factory.DetectorFactory
                    ) -> Optional[Tuple[str, float]]:
    """The most probable language of `text` and its probability; None if none can be found."""
    detector = factory.create()
    detector.append(text)
    try:
        best = detector.get_probabilities()[0]
    except (LangDetectException, IndexError):
        return None
    return best.lang, best.prob


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
