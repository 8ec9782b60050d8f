"""`--rules released` against the code that made the released C4, page for page.

The oracle is the installed TFDS code itself (tensorflow_datasets/text/c4_utils.py, 4.9.10),
chained in plain Python exactly as tensorflow_datasets/text/c4.py wires it for each config, over
the shared WET samples; offline, with two patches: its sentence splitter is ours (the one our side
uses, so the comparison is of rules, not splitters), and tldextract uses its bundled suffix list.
Our side is the real CLI (DirectRunner) writing its shards. Every page must agree: the same URLs,
the same texts, the same metadata, the same split.
"""
import collections
import functools
import gzip
import json
import pathlib

import langdetect
import pytest
import tldextract
from tensorflow_datasets.text import c4_utils

from pipelines import c4, domains
from pipelines.urls import split_of
from text.sentences import split_sentences

WET_FILES = ("wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz",
             "wet/realistic/CC-MAIN-2019-30-part-1.warc.wet.gz",
             "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz",
             "wet/whirlwind-python/whirlwind.warc.wet.gz")  # TFDS reads gzip WET files only.
ROUNDTRIP = "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz"  # Released C4 validation pages.
BADWORDS = "badwords/en"
REALNEWS = "realnews/domain_to_allowed_subdomains.json"
WEBTEXT_LISTS = ("openwebtext_urls/lsb-webtext/RS_v2_2005-06.urk.json-00.gz",
                 "openwebtext_urls/lsb-webtext/RS_2019-01.urk.json-03.gz")
# c4.py's configs: (clean and dedupe, bad words, realnewslike, webtextlike).
TFDS_CONFIGS = {"en": (True, True, False, False), "en.noclean": (False, False, False, False),
                "realnewslike": (True, True, True, False), "webtextlike": (True, True, False, True)}


def _noop_counter(*_):
    pass


def _tfds_dedup(pages, min_num_sentences):
    """c4_utils.remove_duplicate_text: each line hash goes to the page whose URL has the smallest
    MD5 hex digest (`Top.PerKey(1, key=_hash_text, reverse=True)`), then each page keeps its
    lines (`_remove_lines_from_text`)."""
    owner = {}
    for page in pages:
        for line_hash, url in c4_utils._emit_url_to_lines(page):
            if line_hash not in owner or (
                    c4_utils._hash_text(url) < c4_utils._hash_text(owner[line_hash])):
                owner[line_hash] = url
    lines_of_url = collections.defaultdict(list)
    for line_hash, url in owner.items():
        lines_of_url[url].append(line_hash)
    kept = []
    for page in pages:
        joined = (page.url, {"pages": [page], "lines": lines_of_url[page.url]})
        kept.extend(c4_utils._remove_lines_from_text(
            joined, counter_inc_fn=_noop_counter, min_num_sentences=min_num_sentences))
    return kept


def tfds_c4(wet_paths, config, badwords_path, realnews_path, webtext_urls):
    """The pages of a TFDS c4 config and their split, as c4.py's `_get_pages_pcollection` and
    `_split_generators` make them; URL ties go to the first page seen in input order."""
    clean, badwords, realnewslike, webtextlike = TFDS_CONFIGS[config]
    pages = [page for path in wet_paths for page in c4_utils.split_wet_file(str(path))]
    pages = [page for page in pages if c4_utils.is_valid_length(page)]
    if realnewslike:
        realnews_domains = json.loads(pathlib.Path(realnews_path).read_text())
        pages = [page for page in pages if c4_utils.is_realnews_domain(page, realnews_domains)]
    by_url = collections.defaultdict(list)
    for page in pages:
        by_url[page.normalized_url].append(page)
    pages = [c4_utils.select_newest_page(group) for group in by_url.values()]
    if webtextlike:
        listed = {c4_utils.normalize_url(url) for url in webtext_urls}
        pages = [kept for page in pages for kept in c4_utils.filter_by_webtextlike(
            (page.normalized_url, {"pages": [page], "webtextlike_urls":
                                   [c4_utils.PageFeatures()] if page.normalized_url in listed
                                   else []}))]
    if clean:
        clean_page = c4_utils.get_clean_page_fn()
        pages = [kept for page in pages for kept in clean_page(page)]
        pages = _tfds_dedup(pages, min_num_sentences=c4_utils._MIN_NUM_SENTENCES)
    pages = [kept for page in pages for kept in c4_utils.detect_english(page)]
    if badwords:
        with open(badwords_path, encoding="utf-8") as lines:
            terms = {line.strip() for line in lines}
        keep = c4_utils.get_badwords_filter_fn({"en": terms}, filter_fraction=1.0)
        pages = [page for page in pages if keep(page)]
    in_validation = c4_utils.get_hashed_url_filter_fn(lambda value: value % 1000 == 0)
    return {page.url: {"text": page.text, "timestamp": page.timestamp,
                       "content-type": page.content_type,
                       "content-length": page.content_length,
                       "split": "validation" if in_validation(page) else "train"}
            for page in pages}


def ours(output: pathlib.Path, config, wet_paths, badwords_path, realnews_path, webtext_lists,
         extra=()):
    c4.main(["--rules", "released", "--variant", config, "--input", *map(str, wet_paths),
             "--output", str(output), "--badwords", str(badwords_path),
             "--realnews_domains", str(realnews_path), "--train_shards", "2",
             *(["--webtext_urls", *map(str, webtext_lists)] if webtext_lists else []), *extra])
    pages = {}
    for split in ("train", "validation"):
        for shard in sorted(output.glob(f"{split}-*.jsonl.gz")):
            with gzip.open(shard, "rt", encoding="utf-8") as records:
                for line in records:
                    record = json.loads(line)
                    pages[record["url"]] = {  # The fields TFDS writes (ours has more).
                        "text": record["text"], "timestamp": record["timestamp"],
                        "content-type": record["content-type"],
                        "content-length": str(record["content-length"]), "split": split}
    return pages


@pytest.fixture(scope="module")
def webtext_lists(shared_data, tmp_path_factory):
    """The shared OpenWebText lists (Reddit JSON lines), plus a plain list naming every fifth
    sample page in another spelling, so that the join keeps pages; and the same URLs as the plain
    lines TFDS reads."""
    sample_urls = []
    for path in WET_FILES:
        with gzip.open(shared_data / path, "rb") as wet_file:
            sample_urls += [line.split(b":", 1)[1].strip().decode() for line in wet_file
                            if line.startswith(b"WARC-Target-URI:")]
    listed = [url.replace("https://", "http://www.", 1) + "/" for url in sample_urls[::5]]
    plain = tmp_path_factory.mktemp("webtext") / "urls.txt"
    plain.write_text("\n".join(listed) + "\n")
    for path in WEBTEXT_LISTS:
        with gzip.open(shared_data / path, "rt", encoding="utf-8") as lines:
            listed += [json.loads(line)["u"] for line in lines]
    return [shared_data / path for path in WEBTEXT_LISTS] + [plain], listed


@pytest.fixture(scope="module")
def both_sides(shared_data, tmp_path_factory, webtext_lists):
    """{config: (TFDS's pages, our pages)} for the four configs, each a dict url -> fields."""
    wet_paths = [shared_data / path for path in WET_FILES]
    detect_langs = functools.lru_cache(maxsize=None)(langdetect.detect_langs)  # Seeded: pure.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(c4_utils, "_get_sentences", split_sentences)
        patch.setattr(tldextract, "extract", domains.offline_domain_extractor())
        patch.setattr(langdetect, "detect_langs", detect_langs)
        results = {}
        for config in TFDS_CONFIGS:
            lists, listed_urls = webtext_lists if TFDS_CONFIGS[config][3] else ((), ())
            expected = tfds_c4(wet_paths, config, shared_data / BADWORDS, shared_data / REALNEWS,
                               listed_urls)
            got = ours(tmp_path_factory.mktemp(config), config, wet_paths,
                       shared_data / BADWORDS, shared_data / REALNEWS, lists)
            results[config] = expected, got
    return results


@pytest.mark.parametrize("config", list(TFDS_CONFIGS))
def test_released_rules_equal_tfds_page_for_page(both_sides, config):
    expected, got = both_sides[config]
    assert len(expected) >= {"en": 500, "en.noclean": 1000, "realnewslike": 5,
                             "webtextlike": 50}[config]
    assert sorted(got) == sorted(expected)  # The same URLs,
    for url, fields in expected.items():  # and for each, the same text, metadata and split.
        assert got[url] == fields, url


def test_released_validation_pages_land_in_validation(both_sides, shared_data):
    """Every released C4 validation page of the samples that a variant keeps is in its
    validation split, under both rule sets (the split is one function of the URL)."""
    with gzip.open(shared_data / ROUNDTRIP, "rb") as wet_file:
        released_validation = {line.split(b":", 1)[1].strip().decode() for line in wet_file
                               if line.startswith(b"WARC-Target-URI:")}
    assert len(released_validation) == 800
    assert all(split_of(url) == "validation" for url in released_validation)
    for config, (_, got) in both_sides.items():
        kept = released_validation & set(got)
        assert all(got[url]["split"] == "validation" for url in kept), config
    assert len(released_validation & set(both_sides["en"][1])) >= 790
