"""Our LanguageDetector (langdetect-rs) returns exactly what langdetect (seed 0) returns, and the
stage's rule."""
import gzip
import json
import os
import random
import sys
from unittest import mock

import pytest
from langdetect import detector_factory

from pipelines.filters.language import LanguageConfig, LanguageDetector, language_drop_reason
from pipelines.page import Page
from pipelines.readers.files import open_raw
from pipelines.readers.wet import read_wet


@pytest.fixture(scope="module")
def detector():
    return LanguageDetector()


@pytest.fixture(scope="module")
def reference_factory():
    """The library itself, seeded, with its profiles loaded in name order (not os.listdir's)."""
    factory = detector_factory.DetectorFactory()
    listdir = os.listdir
    with mock.patch.object(detector_factory.os, "listdir", lambda path: sorted(listdir(path))):
        factory.load_profile(detector_factory.PROFILES_DIRECTORY)
    factory.seed = 0
    return factory


@pytest.fixture(scope="module")
def reference(reference_factory):
    def probabilities(text):
        detector = reference_factory.create()
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


@pytest.fixture(scope="module")
def sample_results(reference, shared_data):
    """The library's results on the sample texts, {text: [(language, probability), ...]}."""
    texts = sample_texts(shared_data)
    assert len(texts) > 400
    return {text: reference(text) for text in texts}


def test_same_results_as_langdetect(detector, sample_results):
    for text, expected in sample_results.items():
        assert detector.probabilities(text) == expected, text[:80]
    for text in list(sample_results)[:20]:
        assert detector.detect(text) == (sample_results[text][0] if sample_results[text]
                                         else None)


def test_profiles_load_in_name_order(detector, reference_factory):
    # langdetect numbers its languages in os.listdir order, which varies between file systems
    # and changes the last bits of the sums.
    assert detector.languages == sorted(detector.languages) == reference_factory.langlist




# Alphabets that take different paths through langdetect: ASCII letters and the non-letters
# between 'Z' and 'a' (counted as Latin), Latin-1 (some excluded), Romanian comma letters,
# Vietnamese precomposed (Latin Extended Additional, normalised to one letter) and decomposed
# (combining marks), Cyrillic, Greek, Arabic (with Farsi yeh), Devanagari, CJK, kana, Hangul,
# general punctuation, digits, and upper-case runs (skipped as capital words).
_FUZZ_ALPHABETS = (
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "[\\]^_`{|}~0123456789.,;:!?'\"-",
    "äöüßéèêçñáíóúàâîôûëïÿæœøå×÷¡¿", "șțȘȚşţ", "ạảấầẩẫậắằẳẵặẹẻẽềểếỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹḀḁẞ",
    "aeiouy\u0300\u0301\u0303\u0309\u0323", "абвгдежзийклмнопрстуфхцчшщыэюяАБВГДЁЖ",
    "αβγδεζηθικλμνξοπρστυφχψωΑΒΓ", "ابتثجحخدذرزسشصضطظعغفقكلمنهوي\u06cc",
    "कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह\u093e\u093f", "日本語中文漢字國家學", "ひらがなカタカナ",
    "한국어조선말", "\u2018\u2019\u201c\u201d\u2013\u2014\u2026", "\U0001f600\U00020000\u0fff",
)


def fuzz_texts(shared_data, count, seed=20191023):
    """Seeded texts mixing real words of several languages with words of random scripts."""
    real_words = [(shared_data / "text" / name).read_text().split()[:3000] for name in (
        "de/tatoeba.deu-eng.deu", "de/tatoeba.deu-eng.eng", "fr/tatoeba.fra-eng.fra",
        "ro/tatoeba.ron-eng.ron")]
    draws = random.Random(seed)
    separators = (" ", " ", " ", "  ", "\n", "", " https://example.com/a?b=1 ", " me@example.org ")
    texts = []
    for _ in range(count):
        words = []
        for _ in range(draws.randint(1, 12)):
            if draws.random() < 0.5:
                words.append(draws.choice(draws.choice(real_words)))
            else:
                alphabet = draws.choice(_FUZZ_ALPHABETS)
                words.append("".join(draws.choice(alphabet) for _ in range(draws.randint(1, 8))))
            words.append(draws.choice(separators))
        texts.append("".join(words))
    return texts


def test_same_results_as_langdetect_on_mixed_scripts(detector, reference, shared_data):
    for text in fuzz_texts(shared_data, 1500):
        assert detector.probabilities(text) == reference(text), text


def test_latin_extended_additional_counts_as_non_latin(detector, reference):
    # langdetect's exemption of U+1E00-U+1EFF never applies: the Cyrillic and Vietnamese letters
    # outnumber twice the Latin ones, so the Latin word is removed and only bg remains.
    text = "Привет мир hello ễ ệ"
    assert reference(text) == [("bg", pytest.approx(0.9996, abs=1e-4))]
    assert detector.probabilities(text) == reference(text)


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



def test_every_whitespace_and_case_rule_as_langdetect(detector, reference):
    # langdetect restarts its n-gram buffer at every character it normalizes to a space, which
    # all whitespace is but U+0085, U+1680 and U+3000. Every whitespace character, between,
    # before and after words, doubled, and next to upper-case letters (astral ones too), with
    # lone surrogates.
    whitespace = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()]
    words = ["Hello", "WORLD", "naïve", "Ünïcödé", "ÀB", "\U00010400\U00010401x", "日本語",
             "Привет", "x\ud800y", "a.b,c", "", "THE"]
    texts = [space.join(words[:index] + [""]) + first + text_end
             for index, space in enumerate(whitespace)
             for first, text_end in ((space, ""), ("", space * 2), ("", "end"))]
    texts += [" ".join(words + [space]) for space in whitespace]
    texts += [space + " ".join(words) for space in whitespace]
    for text in texts:
        assert detector.probabilities(text) == reference(text), repr(text)

