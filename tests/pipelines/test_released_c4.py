"""`--rules released` against the code that made the released C4, page for page.

The oracle is the installed TFDS code itself (tensorflow_datasets/text/c4_utils.py, 4.9.10),
chained in plain Python exactly as tensorflow_datasets/text/c4.py wires it for each config, over
the shared WET samples; offline, with two patches: its sentence splitter is ours (the one our side
uses, so the comparison is of rules, not splitters), and tldextract uses its bundled suffix list.
Our side is the real CLI (DirectRunner) writing its shards. Every page must agree: the same URLs,
the same texts, the same metadata, the same split.
"""
import functools
import gzip
import json

import langdetect
import pytest
import tldextract
from tensorflow_datasets.text import c4_utils

from pipelines.filters import domains
from pipelines.filters.urls import split_of
from tests.support.released_c4 import BADWORDS, REALNEWS, ours
from tests.support.tfds_reference import TFDS_CONFIGS, tfds_c4
from text.sentences import split_sentences

WET_FILES = ("wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz",
             "wet/realistic/CC-MAIN-2019-30-part-1.warc.wet.gz",
             "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz",
             "wet/whirlwind-python/whirlwind.warc.wet.gz")  # TFDS reads gzip WET files only.
ROUNDTRIP = "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz"  # Released C4 validation pages.
WEBTEXT_LISTS = ("openwebtext_urls/lsb-webtext/RS_v2_2005-06.urk.json-00.gz",
                 "openwebtext_urls/lsb-webtext/RS_2019-01.urk.json-03.gz")





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
