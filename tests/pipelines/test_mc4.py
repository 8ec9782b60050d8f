"""mC4's rules one by one (pipelines/filters/mc4.py and the stages that apply them), each against
the public code's function where it has one (tensorflow_datasets/text/c4.py, c4_utils.py), on edges
and on many synthetic inputs. tests/pipelines/test_mc4_oracle.py runs the whole chain against
TFDS's."""
import functools
import random

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from tensorflow_datasets.text import c4 as tfds_c4
from tensorflow_datasets.text import c4_utils

from pipelines import c4, config
from pipelines.beam.phases import PhaseFn
from pipelines.filters import badwords, mc4
from pipelines.page import Page
from pipelines.steps.filter_steps import Cld3Language
from pipelines.steps.resources import load_resources


def test_the_constants_are_the_public_codes():
    assert list(mc4.LANGUAGES) == tfds_c4.MC4_LANGUAGES
    assert len(mc4.LANGUAGES) == 107 and len({code.split("-")[0] for code in mc4.LANGUAGES}) == 101
    assert mc4.UNKNOWN_LANGUAGE == c4_utils.UNKNOWN_LANGUAGE
    assert mc4.SPLIT_LANGUAGES[-1] == "und"
    assert list(mc4.BADWORDS_FILES) == tfds_c4._BADWORDS_LANGS
    assert mc4.BADWORDS_ALLOWLIST == tfds_c4._BADWORDS_ALLOWLIST
    multilingual = {c.name: c for c in tfds_c4.C4.BUILDER_CONFIGS}["multilingual"]
    assert mc4.BADWORDS_FILTER_FRACTION == multilingual.badwords_filter_fraction
    ours = config.variant("multilingual")
    assert ours.paragraph_filter and multilingual.paragraph_filter
    assert ours.cleaning is None and not multilingual.clean
    assert ours.dedup.mode == "lines" and ours.min_sentences_after_dedup == 0
    assert ours.language.detector == "cld3" and ours.rules == "released"


def _tfds_page(text: str, url: str = "example.com/a", language: str = "en"):
    return c4_utils.PageFeatures(url="http://" + url, normalized_url=url, text=text,
                                 language=language)


@pytest.mark.parametrize("lines", [
    [], ["x" * 500], ["x" * 500, "y" * 500],  # Too few lines.
    ["x" * 200, "y" * 200, "z" * 200],  # Exactly at the limit: kept.
    ["x" * 200, "y" * 200, "z" * 199],  # One short.
    ["x" * 199, "y" * 300, "z" * 300, "w" * 300],  # The three longest are enough.
    ["x" * 300, "", "y" * 300, "", "z" * 300],  # Blank lines count as lines.
    ["x" * 300, "y" * 300, "z" * 150 + "\r" + "z" * 150],  # \r is not a line break here.
])
def test_the_paragraph_filter_is_the_public_codes(lines):
    text = "\n".join(lines)
    reason = mc4.paragraph_drop_reason(text)
    assert (reason is None) == c4_utils.paragraph_filter(_tfds_page(text))
    if len(lines) < 3:
        assert reason == "too_few_paragraphs"


class _Result:
    def __init__(self, language, probability, is_reliable):
        self.language, self.probability, self.is_reliable = language, probability, is_reliable


@pytest.mark.parametrize("answer, expected", [
    (("de", 0.99, True), ("de", None)),
    (("de", 0.95, True), ("de", None)),  # The threshold itself passes.
    (("de", 0.949, True), ("und", "low_probability")),
    (("de", 1.0, False), ("und", "not_reliable")),
    (("und", 0.0, False), ("und", "not_reliable")),
    (("bg-Latn", 0.97, True), ("bg-Latn", None)),
    (("xx-Qaaa", 0.99, True), (None, "other_language")),
])
def test_cld3_answers_become_a_language_und_or_a_drop_as_tfds_decides(answer, expected):
    assert mc4.cld3_label(*answer) == expected
    # TFDS's own DoFn on the same answer (its detector replaced by one that gives it).
    capture = type("Capture", (), {"__or__": lambda self, transform: transform})()
    predict = c4_utils.detect_languages(capture, valid_languages=tfds_c4.MC4_LANGUAGES).fn
    predict._detector = type("Fixed", (), {"FindLanguage": lambda self, text: _Result(*answer)})()
    kept = list(predict.process(_tfds_page("text")))
    assert [page.language for page in kept] == ([expected[0]] if expected[0] else [])


def _page_of(indexed):
    index, encoded = indexed
    text = encoded.decode("utf-8", "surrogatepass")
    return Page(url=f"http://example.com/{index}", normalized_url=f"example.com/{index}",
                timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                content_length=len(text), text=text)


def _run_language_stage(texts):
    variant = config.variant("multilingual")
    # The texts go in as bytes and become pages in the pipeline: Beam's UTF-8 coding of text
    # cannot carry the lone surrogate, which no page read from a WET file has (invalid UTF-8 is
    # skipped as it is read).
    indexed = [(index, text.encode("utf-8", "surrogatepass")) for index, text in enumerate(texts)]
    with beam.Pipeline(options=PipelineOptions(["--direct_num_workers=1"])) as pipeline:
        detected = (pipeline | beam.Create(indexed) | beam.Map(_page_of)
                    | beam.ParDo(PhaseFn([Cld3Language(variant.language)]))
                    | beam.Map(lambda page: (page.url, page.language)))
        assert_that(detected, equal_to([(_page_of(item).url, "und") for item in indexed]))
    counters = pipeline.result.metrics().query(MetricsFilter().with_namespace("c4.language"))
    return {counter.key.metric.name: counter.committed for counter in counters["counters"]}


def test_text_cld3_cannot_read_is_und_never_a_crash():
    """Empty text, control bytes, digits only, under CLD3's 100 bytes, a lone surrogate (text
    CLD3's binding cannot take): each page is `und`, counted by why."""
    counters = _run_language_stage(["", "\x00\x01\x02" * 60, "1234567890 " * 40, "short text",
                                    "Guten Tag, \ud800 " * 20])
    assert counters["pages.passed:und"] == 5
    assert counters["und.not_reliable"] == 4 and counters["und.unreadable"] == 1


def test_the_soft_filter_keeps_the_share_and_the_pages_tfds_keeps():
    """0.999: about 1 in 1,000 pages with a bad word stays, chosen by the MD5 of its normalized
    URL exactly as TFDS's predicate chooses; 1.0 keeps none."""
    tfds_keeps = c4_utils.get_badwords_filter_fn({"en": ["bad"]}, filter_fraction=0.999)
    generator = random.Random(27)
    urls = [f"example{generator.randrange(10**9)}.com/{index}" for index in range(200_000)]
    kept = [url for url in urls if mc4.keeps_page_with_badword(url, 0.999)]
    assert 0.0008 < len(kept) / len(urls) < 0.0012
    assert kept == [url for url in urls if tfds_keeps(_tfds_page("a bad word", url))]
    assert not any(mc4.keeps_page_with_badword(url, 1.0) for url in urls[:1000])
    # The same pages on every run: the choice is the URL's hash, not a draw.
    assert kept == [url for url in urls if mc4.keeps_page_with_badword(url, 0.999)]


@pytest.fixture(scope="module")
def mc4_badwords(shared_data):
    return load_resources(config.variant("multilingual"),
                                 badwords_dir=str(shared_data / "badwords")).badwords


@pytest.fixture(scope="module")
def tfds_filter(shared_data):
    """TFDS's bad-words filter over c4.py's dictionary of the shared lists, hard (1.0)."""
    terms = {}
    for name in tfds_c4._BADWORDS_LANGS:
        with open(shared_data / "badwords" / name, encoding="utf-8") as lines:
            terms.setdefault(name.split("-")[0], set()).update(line.strip() for line in lines)
    for language, allowed in tfds_c4._BADWORDS_ALLOWLIST.items():
        terms[language] -= allowed
    return c4_utils.get_badwords_filter_fn(terms, filter_fraction=1.0)


@functools.lru_cache(maxsize=None)
def _matcher(language: str, terms: tuple) -> badwords.BadwordsMatcher:
    return badwords.compile_badwords(terms, language not in mc4.UNSPACED_LANGUAGES)


def _ours_keeps(page_text: str, language: str, terms) -> bool:
    """What the bad-words stage decides, hard: a page's list is its language's without the
    script (`ja-Latn`: `ja`), unspaced or not by that language."""
    listed = mc4.page_language(language)
    if listed not in terms:
        return True
    return not badwords.contains_badword(page_text, _matcher(listed, terms[listed]))


def test_lists_are_merged_by_language_and_the_allowlist_is_removed(mc4_badwords, shared_data):
    canadian = (shared_data / "badwords" / "fr-CA-u-sd-caqc").read_text(encoding="utf-8").split("\n")
    assert {term.strip() for term in canadian if term.strip()} <= set(mc4_badwords["fr"])
    assert "fr-CA-u-sd-caqc" not in mc4_badwords and "fr-CA" not in mc4_badwords
    assert not set(mc4_badwords["ja"]) & mc4.BADWORDS_ALLOWLIST["ja"]
    assert "性" not in mc4_badwords["zh"]
    assert len(mc4_badwords) == 27  # 28 files, French in two.


@pytest.mark.parametrize("language", ["ja", "zh", "th"])
def test_unspaced_languages_match_inside_words_and_spaced_ones_do_not(language, mc4_badwords,
                                                                      tfds_filter):
    term = next(term for term in mc4_badwords[language] if len(term) > 1)
    inside = f"前文{term}後文"
    assert not _ours_keeps(inside, language, mc4_badwords)
    assert not tfds_filter(_tfds_page(inside, language=language))
    # The allowlisted words are subwords there: a page with them stays.
    for allowed in mc4.BADWORDS_ALLOWLIST.get(language, ()):
        assert _ours_keeps(f"前文{allowed}後文", language, mc4_badwords)
        assert tfds_filter(_tfds_page(f"前文{allowed}後文", language=language))


def test_every_term_of_every_list_matches_as_tfds_matches(mc4_badwords, tfds_filter):
    """Each term alone, inside a word, flanked by punctuation, and capitalised, for each
    language with a list and for a script suffix (`ja-Latn` is checked against `ja`): our
    matcher keeps exactly the pages TFDS keeps."""
    checked = 0
    for language, terms in mc4_badwords.items():
        for code in (language, f"{language}-Latn"):
            for term in terms:
                for text in (term, f"x{term}x", f"({term}).", f"Words {term.upper()} here"):
                    page = _tfds_page(text, language=code)
                    assert _ours_keeps(text, code, mc4_badwords) == tfds_filter(page), (code, text)
                    checked += 1
    assert checked > 10_000


def test_a_missing_list_stops_the_job_before_it_starts_naming_the_file(shared_data, tmp_path):
    partial = tmp_path / "badwords"
    partial.mkdir()
    for name in mc4.BADWORDS_FILES:
        if name != "tlh":
            (partial / name).symlink_to(shared_data / "badwords" / name)
    with pytest.raises(SystemExit) as exit_info:
        c4.main(["--variant", "multilingual", "--input",
                 str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"),
                 "--badwords_dir", str(partial), "--output", str(tmp_path / "out")])
    assert "bad-words list of tlh" in str(exit_info.value)
    assert str(partial / "tlh") in str(exit_info.value)
    assert not (tmp_path / "out").exists()


def test_known_corrupt_files_are_skipped_and_counted(shared_data, tmp_path):
    from pipelines.readers import common_crawl, inputs
    corrupt = tmp_path / common_crawl.KNOWN_CORRUPT_WET_FILES[0]
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes((shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz").read_bytes())
    assert inputs.is_known_corrupt(str(corrupt))
    stats = c4.main(["--variant", "multilingual", "--input", str(corrupt),
                     str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"),
                     "--badwords_dir", str(shared_data / "badwords"),
                     "--output", str(tmp_path / "out")])
    assert stats["read"]["files.skipped:known_corrupt"] == 1
    assert stats["read"]["files.read"] == 1


def test_the_job_writes_a_folder_per_language_with_its_statistics(shared_data, tmp_path):
    """`--variant multilingual` on the realistic samples: each language that has pages gets a
    folder with both splits and a stats.json of its own counters, every record in it carries
    that language, and the counters add up from detection to the files."""
    import gzip
    import json
    output = tmp_path / "out"
    stats = c4.main(["--variant", "multilingual", "--input",
                     str(shared_data / "wet/realistic/*.warc.wet.gz"),
                     "--badwords_dir", str(shared_data / "badwords"), "--output", str(output)])
    folders = sorted(path.name for path in output.iterdir() if path.is_dir())
    assert {"en", "und", "es", "fr"} <= set(folders) and set(folders) <= set(mc4.SPLIT_LANGUAGES)
    for language in folders:
        own = json.loads((output / language / "stats.json").read_text())
        assert own["language"] == language and own["variant"] == "multilingual"
        detected = own["stages"]["language"]["pages.passed"]
        badwords_stage = own["stages"]["badwords"]
        written = own["stages"]["write"]
        assert detected == stats["language"][f"pages.passed:{language}"]
        assert detected == sum(badwords_stage.values())
        assert (written.get("pages.written:train", 0) + written.get("pages.written:validation", 0)
                == detected - badwords_stage.get("pages.dropped:badword", 0))
        records = [json.loads(line) for path in sorted((output / language).glob("*.jsonl.gz"))
                   for line in gzip.open(path, "rt", encoding="utf-8")]
        assert {record["language"] for record in records} <= {language}
        assert sorted(path.name.split("-")[0] for path in (output / language).glob("*.jsonl.gz")
                      )[-1] == "validation"
    und = json.loads((output / "und" / "stats.json").read_text())["stages"]["language"]
    assert und["pages.passed"] == und.get("und.not_reliable", 0) + und.get(
        "und.low_probability", 0) + und.get("und.unreadable", 0)
    assert (output / "funnel.svg").is_file() and (output / "run_config.json").is_file()
