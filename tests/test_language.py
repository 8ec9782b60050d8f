"""Our LanguageDetector returns exactly what langdetect (seed 0) returns, and the stage's rule."""
import gzip
import json

import pytest
from langdetect import detector_factory

from pipelines.files import open_raw
from pipelines.language import LanguageConfig, LanguageDetector, language_drop_reason
from pipelines.page import Page
from pipelines.wet import read_wet


@pytest.fixture(scope="module")
def detector():
    return LanguageDetector()


@pytest.fixture(scope="module")
def reference():
    factory = detector_factory.DetectorFactory()
    factory.load_profile(detector_factory.PROFILES_DIRECTORY)
    factory.seed = 0

    def probabilities(text):
        detector = factory.create()
        detector.append(text)
        try:
            return [(language.lang, language.prob) for language in detector.get_probabilities()]
        except detector_factory.LangDetectException:
            return []
    return probabilities


def sample_texts(shared_data):
    wet_file = str(shared_data / "wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz")
    texts = [page.text for page in read_wet(lambda: open_raw(wet_file), 10**6)
             if isinstance(page, Page)]
    for path in sorted((shared_data / "c4_samples/olmo").glob("c4-sample.0*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts.extend(json.loads(line)["text"] for line in lines)
    for language, code in (("de", "deu"), ("fr", "fra"), ("ro", "ron")):
        lines = (shared_data / f"text/{language}/tatoeba.{code}-eng.{code}").read_text().splitlines()
        texts.extend(" ".join(lines[i:i + 5]) for i in range(0, 200, 5))
        texts.extend(lines[:20])
    texts += ["", "1234 5678", "https://example.com/x mail@example.com", "ABC DEF GHI",
              "Ünïcödé façade naïve café", "日本語のテキストです。", "Привет, как дела?",
              "Tiếng Việt có dấu", "x" * 30000, "THE NASA CEO SAID HELLO to everyone here."]
    return texts


def test_same_results_as_langdetect(detector, reference, shared_data):
    texts = sample_texts(shared_data)
    assert len(texts) > 400
    for text in texts:
        assert detector.probabilities(text) == reference(text), text[:80]


def test_detects_languages_of_real_text(detector, shared_data):
    for language, code in (("de", "deu"), ("fr", "fra"), ("ro", "ron")):
        lines = (shared_data / f"text/{language}/tatoeba.{code}-eng.{code}").read_text().splitlines()
        assert detector.detect(" ".join(lines[:30]))[0] == language
    assert detector.detect("1234 !!") is None


def test_drop_reasons():
    config = LanguageConfig()
    assert language_drop_reason(("en", 0.995), config) is None
    assert language_drop_reason(("en", 0.5), config) == "low_probability"
    assert language_drop_reason(("fr", 0.999), config) == "other_language"
    assert language_drop_reason(None, config) == "undetectable"
    assert language_drop_reason(("fr", 0.999), LanguageConfig(languages=("de", "fr"))) is None
