"""The released rule set's pure functions, each against the TFDS c4_utils function it reproduces
(the oracle), on inputs chosen to hit the places where the released code differs from ours."""
import dataclasses
import gzip
import random

import pytest
import tldextract
from tensorflow_datasets.text import c4_utils

from pipelines.config import variant
from pipelines.filters import badwords, domains, released, urls
from pipelines.filters.cleaning import PUBLIC_C4_CLEANING
from pipelines.page import Page
from text.sentences import split_sentences


@pytest.fixture
def tfds_splits_like_ours(monkeypatch):
    monkeypatch.setattr(c4_utils, "_get_sentences", split_sentences)


def _wet_record(url, body: bytes) -> bytes:
    header = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {url}\r\n"
              f"WARC-Date: 2019-04-20T10:00:00Z\r\nContent-Type: text/plain\r\n"
              f"Content-Length: {len(body)}\r\n\r\n").encode()
    return gzip.compress(header + body + b"\r\n\r\n")


BODIES = [
    "  First line here.  \n\n\nWARC-ish line dropped\nContent-Type: text/html\n"
    "CONTENT-Length: and this\ncontent-type: kept (lower case)\nLast\tline.\t",
    "Old Mac line one.\rOld Mac line two.\r\nWindows line.\r\nTab\x0bstays in the line.",
    "Only\u2028one WET line (U+2028 is no line break there).\n"
    "\u00a0Non-breaking space strip.\u00a0",
    "WARC\nContent-\n \n",  # Nothing left: no page.
    # Header lines in a body set fields; `WARC/1.0` ends the page, and what follows is a page
    # only if it names a URL and a date.
    "A page that quotes a WARC file.\nWARC-Date: 2020-01-01T00:00:00Z\nContent-Length: 12\n"
    "WARC/1.0\nWARC-Target-URI: http://quoted.example/x\nWARC-Date: 2018-01-01T00:00:00Z\n"
    "Quoted text.\nWARC/1.0\nText of a page without a URL.",
]


def _fields(page):
    return (page.url, page.normalized_url, page.timestamp, page.content_type,
            str(page.content_length), page.text)


def test_wet_pages_are_the_pages_tfds_reads(tmp_path):
    path = tmp_path / "sample.warc.wet.gz"
    path.write_bytes(b"".join(_wet_record(f"http://a.com/{i}", body.encode())
                              for i, body in enumerate(BODIES)))
    # Our content-length is a number: where TFDS has none (''), ours is 0.
    tfds_pages = [_fields(dataclasses.replace(page, content_length=page.content_length or "0"))
                  for page in c4_utils.split_wet_file(str(path))]
    ours = []
    for index, body in enumerate(BODIES):
        record = Page(f"http://a.com/{index}", "", "2019-04-20T10:00:00Z", "text/plain",
                      len(body.encode()), body, input_position=(0, index))
        ours += [_fields(page) for page in released.wet_pages(record)]
    assert ours == tfds_pages
    assert len(ours) == len(BODIES)  # One record gave no page, one gave two.


URLS = [
    "https://www.Example.com/a/", "http://WWW.example.com/a", "HTTPS://example.com/a",
    "https://example.com/r?u=http://www.other.com/x", "https://a.com/x?utm_source=t&y=1",
    "https://a.com/x?y=1&utm_source=t", "https://a.com/?ref=x/", "ftp://www.a.com/f//",
    "https://www.www.a.com", "https://a.com/x?feedback=1", "https://a.com///",
]


@pytest.mark.parametrize("url", URLS)
def test_released_normalize_url_is_tfds(url):
    assert urls.released_normalize_url(url) == c4_utils.normalize_url(url)


def test_split_is_the_released_c4_split_and_extends_it():
    in_validation = c4_utils.get_hashed_url_filter_fn(lambda value: value % 1000 == 0)
    generator = random.Random(0)
    sample = [f"https://site{generator.randrange(10**9)}.com/p{i}" for i in range(20_000)]
    sample += URLS
    for url in sample:
        tfds_page = c4_utils.PageFeatures(normalized_url=c4_utils.normalize_url(url))
        assert (urls.split_of(url) == "validation") == in_validation(tfds_page), url
    wider = [url for url in sample if urls.split_of(url, 0.05) == "validation"]
    assert 0.04 < len(wider) / len(sample) < 0.06
    assert {url for url in sample if urls.split_of(url) == "validation"} <= set(wider)
    assert all(urls.split_of(url, 1.0) == "validation" for url in URLS)
    assert all(urls.split_of(url, 0.0) == "train" for url in URLS)


def _page(timestamp, position, text="t"):
    url = "https://a.com/x"
    return Page(url, urls.released_normalize_url(url), timestamp, "text/plain", 1, text,
                input_position=position)


def test_url_ties_go_to_the_first_page_seen_on_any_runner():
    pages = [_page("2019-04-20T00:00:00Z", (1, 5), "b"),
             _page("2019-04-20T00:00:00Z", (0, 9), "a"),
             _page("2019-04-19T00:00:00Z", (0, 0), "old"),
             _page("2019-04-20T00:00:00Z", (1, 2), "c")]
    in_input_order = sorted(pages, key=lambda page: page.input_position)
    expected = c4_utils.select_newest_page(in_input_order)  # TFDS, fed in input order.
    for order in (pages, pages[::-1], in_input_order):
        chosen = order[0]
        for page in order[1:]:
            chosen = urls.first_seen_newest_page(chosen, page)
        assert chosen.text == expected.text == "a"


def test_url_dedup_keeps_the_page_its_rule_set_chooses():
    """Through URL dedup's Beam stage: the released rules keep the first page seen of equally
    new ones (TFDS's choice), the paper rules the one `urls.newest_page` breaks the tie to."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from pipelines.filters import rules
    from pipelines.beam.url_dedup import DedupUrls
    from pipelines.steps.url_dedup import KeyByUrl
    pages = [_page("2019-04-20T00:00:00Z", (1, 5), "b"),
             _page("2019-04-20T00:00:00Z", (0, 9), "a"),
             _page("2019-04-20T00:00:00Z", (1, 2), "c")]
    paper_choice = urls.newest_page(urls.newest_page(pages[0], pages[1]), pages[2]).text
    assert paper_choice != "a"
    for rule_set, kept in ((rules.RELEASED, "a"), (rules.PAPER, paper_choice)):
        with beam.Pipeline() as pipeline:
            texts = (pipeline | beam.Create(pages)
                     | DedupUrls(rule_set, before=[KeyByUrl()])
                     | beam.Map(lambda keyed: (keyed[1][0].text, keyed[1][1])))
            assert_that(texts, equal_to([(kept, 3)]))


PAGES = [
    "A line with a citation at the end.[1]\nAnother [Edit] line with five words.[edit]\n"
    "Third line here, also long enough!",
    # "{" on a line that fails the line rules does not drop the page, nor does "lorem ipsum".
    "No end mark { here at all\nlorem ipsum dolor sit amet\nOne two three four five.\n"
    "Six seven eight nine ten. Eleven twelve.",
    "This javascript line has a { bracket.\nOne two three four five. Six seven eight nine.\n"
    "More words on this line here.",
    "This line has a { bracket and five words.\nOne two three four five.",
    "Lorem ipsum dolor sit amet, consectetur.\nOne two three four five.",
    "Closing quote is an end mark\u201d\nStraight \"quote\" ends this one too\"\n"
    "A line that trails off with five...\nWord " + "x" * 1001 + " long.[2]\n"
    "He said so. She did too. They all did.",
    "Lines\x0bsplit by\x0cstr.splitlines, not by split.\u2028A line read with our privacy "
    "policy here.\nOne two three four five six. Seven eight nine ten. Eleven twelve.",
    " [1] Citation first leaves a space here. Another one. And a third one.",
]


@pytest.mark.parametrize("text", PAGES)
def test_clean_page_is_tfds(text, tfds_splits_like_ours):
    tfds = list(c4_utils.get_clean_page_fn()(c4_utils.PageFeatures(text=text),
                                            counter_inc_fn=lambda *_: None))
    ours = released.clean_page(text, PUBLIC_C4_CLEANING, split_sentences)
    assert ours.text == (tfds[0].text if tfds else None)


BADWORD_TEXTS = ["An ASS here.", "class assignment", "b!tch", "the 2 girls 1 cup video",
                 "x_ass_y", "_ass", "ass_", "über-ass!", "🖕", "a🖕b", "ASSES", "sex\u00adual",
                 "KINKY", "\u212aINKY", "two  girls", "s&m club", "s & m"]


def test_badwords_have_the_tfds_regex_semantics(shared_data):
    content = (shared_data / "badwords/en").read_bytes()
    with open(shared_data / "badwords/en", encoding="utf-8") as lines:
        tfds_terms = {line.strip() for line in lines}
    keep = c4_utils.get_badwords_filter_fn({"en": tfds_terms}, filter_fraction=1.0)
    matcher = badwords.compile_badwords(badwords.parse_badwords(content, "en"))
    for text in BADWORD_TEXTS:
        tfds_drops = not keep(c4_utils.PageFeatures(text=text, language="en"))
        assert badwords.contains_badword(text, matcher) == tfds_drops, text
    # A term written with a capital never matched in the released C4 (the text is lower-cased).
    listed = badwords.parse_badwords(b"Kinky\nass\n", "list", lower_case=False)
    tfds_keep = c4_utils.get_badwords_filter_fn({"en": {"Kinky", "ass"}}, filter_fraction=1.0)
    for text in ("kinky", "KINKY", "Kinky", "ass"):
        assert badwords.contains_badword(text, badwords.compile_badwords(listed)) == (
            not tfds_keep(c4_utils.PageFeatures(text=text, language="en"))), text


def test_realnews_test_is_tfds(shared_data, monkeypatch):
    path = shared_data / "realnews/domain_to_allowed_subdomains.json"
    allowed = domains.parse_realnews_domains(path.read_bytes(), str(path))
    extractor = domains.offline_domain_extractor()
    monkeypatch.setattr(tldextract, "extract", extractor)
    listed = [domain for domain, value in allowed.items() if isinstance(value, list)][:5]
    anywhere = [domain for domain, value in allowed.items() if value is True][:5]
    candidates = []
    for domain in listed + anywhere:
        subdomains = allowed[domain] if isinstance(allowed[domain], list) else []
        for host in [domain, f"www.{domain}", f"news.{domain}", domain.upper(),
                     *(f"{sub}.{domain}" for sub in subdomains[:2])]:
            candidates += [f"https://{host}/story", f"http://www.{host}/a?ref=x"]
    candidates.append("https://not-a-news-site.example/x")
    for url in candidates:
        normalized = urls.released_normalize_url(url)
        tfds_keeps = c4_utils.is_realnews_domain(
            c4_utils.PageFeatures(normalized_url=c4_utils.normalize_url(url)), allowed)
        assert released.is_realnews_url(normalized, allowed, extractor) == tfds_keeps, url
    assert any(released.is_realnews_url(urls.released_normalize_url(url), allowed, extractor)
               for url in candidates)


def test_variants_under_the_released_rules():
    alias = variant("en.linededup")
    assert dataclasses.replace(alias, name="en", description="") == dataclasses.replace(
        variant("en", "released"), description="")
    en = variant("en", "released")
    assert en.rules == "released" and en.dedup.mode == "lines" and en.cleaning
    noclean = variant("en.noclean", "released")
    assert noclean.cleaning is None and noclean.dedup is None and not noclean.filter_badwords
    assert variant("en").rules == "paper" and variant("en").dedup.mode == "spans"
    assert variant("en", splitter="punkt").splitter == "punkt"
    with pytest.raises(ValueError, match="no released rule set"):
        variant("de-fr-ro", "released")
    noblocklist = variant("en.noblocklist", "released")
    assert dataclasses.replace(noblocklist, name="en", description="", filter_badwords=True) == (
        dataclasses.replace(en, description=""))
    assert variant("multilingual").rules == variant("multilingual", "released").rules == "released"
    # `multilingual` was the paper rules' German, French and Romanian variant: asking for it
    # under the paper rules names the variant that has that now.
    with pytest.raises(ValueError, match="mC4.*variant de-fr-ro"):
        variant("multilingual", "paper")
    with pytest.raises(ValueError, match="unknown rule set"):
        variant("en", "tfds")


def test_the_rule_set_is_chosen_once_by_name_and_carries_its_functions():
    """A config names its rule set; `rule_set` gives the object whose functions the stages use
    (the released C4's URL key under the released rules, ours under the paper's), and it travels
    to Beam's workers pickled. No module but the rule sets' own and the variants' compares a rule
    set's name."""
    import pathlib
    import re

    from apache_beam.internal import pickler

    from pipelines.filters import rules
    url = "http://www.Example.com/a/?utm_source=x"
    for name, tfds_rules in (("paper", False), ("released", True)):
        rule_set = variant("en", name).rule_set
        assert rule_set is rules.rule_set(name) and rule_set.name == name
        assert (rule_set.normalize_url(url) == c4_utils.normalize_url(url)) is tfds_rules
        assert pickler.loads(pickler.dumps(rule_set)) == rule_set
    with pytest.raises(ValueError, match="unknown rule set 'tfds'"):
        variant("en", "tfds")
    from pipelines.filters.dedup import PAPER_SPAN_DEDUP
    with pytest.raises(ValueError, match="the released rules have one text dedup, 'lines'"):
        dataclasses.replace(variant("en", "released"), dedup=PAPER_SPAN_DEDUP)
    root = pathlib.Path(rules.__file__).parents[1]
    compared = [f"{path.relative_to(root)}: {line.strip()}"
                for folder in ("pipelines", "tfds_c4", "deploy") for path in (root / folder).rglob("*.py")
                if path.name not in ("rules.py", "config.py")
                for line in path.read_text().splitlines()
                if re.search(r"""rules\s*[!=]=\s*["'](paper|released)["']""", line)]
    assert compared == []


def test_the_realnews_filter_and_the_badwords_list_follow_the_rule_set(tmp_path):
    """Through the RealNews step and the resources a run loads: the paper rules test the page's
    URL with its host lower-cased and lower-case the bad words; the released rules test the
    released URL key as written (so `www.NYTimes.com` is not `nytimes.com`) and keep the list's
    terms as written."""
    from pipelines.steps.base import Counts
    from pipelines.steps.filter_steps import RealNewsDomains
    from pipelines.steps.resources import load_resources
    url = "https://www.NYTimes.com/a"
    page = Page(url, urls.released_normalize_url(url), "2019-04-20T00:00:00Z", "text/plain", 1, "t")
    allowed = domains.parse_realnews_domains(b'{"nytimes.com": true}', "domains.json")
    listed, domains_file = tmp_path / "en", tmp_path / "domains.json"
    listed.write_text("Shit\nfoo\n")
    domains_file.write_text('{"nytimes.com": true}')
    for name, kept, terms in (("paper", 1, ("foo", "shit")), ("released", 0, ("Shit", "foo"))):
        config = variant("realnewslike", name)
        step = RealNewsDomains(allowed, config.rule_set)
        step.setup()
        assert len(step(page, Counts())) == kept
        resources = load_resources(config, str(listed), str(domains_file))
        assert resources.badwords == {"en": terms}


def test_cleaning_thresholds_are_chosen_under_the_paper_rules_only():
    """--cleaning paper_text (3 words per line, 5 sentences per page) sets the paper rules'
    cleaning; the released rules have the public C4's thresholds and refuse another choice."""
    from pipelines import c4
    from pipelines.filters.cleaning import CLEANING_SETTINGS

    def configured(*flags):
        args, _ = c4.parser().parse_known_args(["--variant", "en", "--output", "out", *flags])
        return c4.configure(args)

    assert configured("--cleaning", "paper_text").cleaning == CLEANING_SETTINGS["paper_text"]
    assert configured().cleaning == CLEANING_SETTINGS["public_c4"] == PUBLIC_C4_CLEANING
    assert configured("--rules", "released").cleaning == PUBLIC_C4_CLEANING
    with pytest.raises(ValueError, match="--cleaning applies to the paper rules only"):
        configured("--rules", "released", "--cleaning", "paper_text")
