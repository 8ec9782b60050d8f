"""URL normalisation, splits, language, bad words, domain lists, WET reading on dirty input."""
import gzip
import io
import random
import re
import sys

import pytest

from pipelines.filters import badwords, domains, urls
from pipelines.page import Page
from pipelines.readers import wet
from pipelines.readers.files import InputError, expand, open_raw, read_all


@pytest.mark.parametrize("raw, normalized", [
    ("https://www.example.com/a/b/", "example.com/a/b"),
    ("http://Example.COM/Path?utm_source=feed&x=1", "example.com/Path"),
    ("https://example.com/story?ref=twitter", "example.com/story"),
    ("https://example.com/story?feed=rss", "example.com/story"),
    ("https://example.com/search?q=1", "example.com/search?q=1"),
    # No path: the query and the fragment keep their case, only the host is lower-cased.
    ("https://WWW.Example.com?ID=AbC", "example.com?ID=AbC"),
    ("https://Example.com#Top", "example.com#Top"),
])
def test_normalize_url(raw, normalized):
    assert urls.normalize_url(raw) == normalized


def page(url="https://a.com/x", timestamp="2019-04-20T00:00:00Z", text="t"):
    return Page(url, urls.normalize_url(url), timestamp, "text/plain", len(text), text)


def test_newest_page_wins_regardless_of_order():
    old, new = page(timestamp="2019-04-18T00:00:00Z"), page(timestamp="2019-04-25T00:00:00Z")
    assert urls.newest_page(old, new) == urls.newest_page(new, old) == new
    tie_a, tie_b = page(url="http://a.com/x"), page(url="https://a.com/x")
    assert urls.newest_page(tie_a, tie_b) == urls.newest_page(tie_b, tie_a)


def test_split_is_stable_and_about_one_in_a_thousand():
    splits = [urls.split_of(f"site{i}.com/page") for i in range(100_000)]
    assert splits == [urls.split_of(f"site{i}.com/page") for i in range(100_000)]
    assert 50 <= splits.count("validation") <= 150
    wider = [urls.split_of(f"site{i}.com/page", 0.1) for i in range(100_000)]
    assert 9_000 <= wider.count("validation") <= 11_000
    assert all(w == "validation" for s, w in zip(splits, wider) if s == "validation")
    with pytest.raises(ValueError):
        urls.split_of("a.com", 1.5)


def test_badwords_whole_word_case_insensitive(shared_data):
    terms = badwords.parse_badwords((shared_data / "badwords/en").read_bytes(), "en")
    pattern = badwords.compile_badwords(terms)
    assert badwords.contains_badword("Nothing to see, just a SCUNTHORPE United match.", pattern) is False
    assert badwords.contains_badword("He watched 2 Girls 1 Cup yesterday.", pattern)
    assert badwords.contains_badword("What an ORGASM.", pattern)
    assert not badwords.contains_badword("Analysis of class assignments.", pattern)


def test_word_characters_are_those_of_python_re():
    word = re.compile(r"\w")
    assert all(badwords.is_word_character(chr(code)) == bool(word.match(chr(code)))
               for code in range(sys.maxunicode + 1))


def _badword_texts(terms, count, seed):
    """Seeded texts of listed terms, pieces of them and filler, each next to characters on both
    sides of the word boundary: letters, digits of every kind, `_`, combining marks, CJK."""
    neighbours = [" ", "\n", "_", "a", "Z", "1", "²", "Ⅻ", "é", "\u0301", "-", "'", ".", "日", "ß",
                  "İ", ""]
    draws = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(draws.randint(1, 6)):
            term = draws.choice(terms)
            piece = draws.choice([term, term.upper(), term[:-1], term[1:], "filler"])
            parts += [draws.choice(neighbours), piece, draws.choice(neighbours)]
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("language, word_boundaries", [("en", True), ("zh", False)])
def test_badwords_match_as_the_public_code(shared_data, language, word_boundaries):
    # The oracle: TFDS's c4_utils filter, a regular expression over the lower-cased page.
    from tensorflow_datasets.text import c4_utils
    terms = badwords.parse_badwords((shared_data / "badwords" / language).read_bytes(), language,
                                    lower_case=False)
    matcher = badwords.compile_badwords(terms, word_boundaries)
    public = c4_utils.get_badwords_filter_fn({language: terms})
    texts = _badword_texts(terms, 3000, seed=len(language))
    wet_file = str(shared_data / "wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz")
    texts += [item.text for item in wet.read_wet(lambda: open_raw(wet_file), 10**6)
              if isinstance(item, Page)]
    found = [badwords.contains_badword(text, matcher) for text in texts]
    assert found == [not public(c4_utils.PageFeatures(text=text, language=language))
                     for text in texts]
    assert 0 < sum(found) < len(texts)


def test_malformed_badwords_list():
    with pytest.raises(ValueError, match="not UTF-8"):
        badwords.parse_badwords(b"\xff\xfe\x00bad", "list")
    with pytest.raises(ValueError, match="no terms"):
        badwords.parse_badwords(b"\n  \n", "list")


def test_realnews_domains(shared_data):
    path = shared_data / "realnews/domain_to_allowed_subdomains.json"
    allowed = domains.parse_realnews_domains(path.read_bytes(), str(path))
    extractor = domains.offline_domain_extractor()
    assert domains.is_realnews_url("https://www.nytimes.com/2019/story.html", allowed, extractor)
    assert domains.is_realnews_url("https://www.bbc.co.uk/news/x", allowed, extractor)
    assert domains.is_realnews_url("http://news.gather.com/article", allowed, extractor)
    assert not domains.is_realnews_url("http://recipes.gather.com/article", allowed, extractor)
    assert not domains.is_realnews_url("https://example.org/news", allowed, extractor)


@pytest.mark.parametrize("content, message", [
    (b"[1, 2]", "non-empty JSON object"),
    (b"{not json", "not valid JSON"),
    (b'{"a.com": 3}', "must be true, false or a list"),
])
def test_malformed_realnews_list(content, message):
    with pytest.raises(ValueError, match=message):
        domains.parse_realnews_domains(content, "domains.json")


def test_webtext_url_lines():
    assert domains.webtext_url_of_line("https://www.a.com/x/") == "a.com/x"
    assert domains.webtext_url_of_line('{"u": "http://a.com/y", "k": 7}') == "a.com/y"
    assert domains.webtext_url_of_line('{"u": "http://a.com/y", "k": 2}') is None
    assert domains.webtext_url_of_line(
        '{"url": "http://a.com/z", "score": 5, "is_self": false}') == "a.com/z"
    assert domains.webtext_url_of_line('{"url": "http://reddit.com/r", "score": 9, "is_self": true}') is None
    assert domains.webtext_url_of_line("{broken json") is None
    assert domains.webtext_url_of_line("") is None


def test_missing_files_give_clear_errors(tmp_path):
    with pytest.raises(InputError, match="no file matches"):
        expand(str(tmp_path / "nothing*.wet.gz"))
    with pytest.raises(InputError, match="cannot"):
        read_all(str(tmp_path / "missing.txt"))
    (tmp_path / "wet").mkdir()
    with pytest.raises(InputError, match="names the folder .*wet: pass the files in it"):
        expand(str(tmp_path / "wet"))


def _member(record: bytes) -> bytes:
    return gzip.compress(record, mtime=0)


def _record(url: str, body: bytes, date: str = "2019-04-20T00:00:00Z", length=None) -> bytes:
    headers = ["WARC/1.0", "WARC-Type: conversion"]
    if url:
        headers.append(f"WARC-Target-URI: {url}")
    if date:
        headers.append(f"WARC-Date: {date}")
    headers += ["Content-Type: text/plain", f"Content-Length: {len(body) if length is None else length}"]
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body + b"\r\n\r\n"


def _read(data: bytes, max_bytes: int = 1000):
    return list(wet.read_wet(lambda: io.BufferedReader(io.BytesIO(data)), max_bytes))


def _outcomes(items):
    return [item.url if isinstance(item, Page) else item.reason for item in items]


def test_dirty_records_are_skipped_and_counted():
    data = b"".join(_member(r) for r in [
        _record("http://a.com/1", b"Good page one."),
        _record("", b"No url."),
        _record("http://a.com/2", b"No date.", date=""),
        _record("http://a.com/3", b"\xff\xfe invalid utf-8"),
        _record("http://a.com/4", b"   \n  "),
        _record("http://a.com/5", b"x" * 1001),
        _record("http://a.com/6", b"Good page six."),
    ])
    assert _outcomes(_read(data)) == [
        "http://a.com/1", "missing_url", "missing_date", "invalid_utf8", "empty_page",
        "oversized_record", "http://a.com/6"]


def test_corrupt_member_skips_one_record_only():
    members = [_member(_record(f"http://a.com/{i}", f"Page {i} text.".encode())) for i in range(5)]
    broken = bytearray(members[2])
    broken[len(broken) // 2] ^= 0xFF
    broken[len(broken) // 2 + 1] ^= 0xFF
    data = b"".join(members[:2]) + bytes(broken) + b"".join(members[3:])
    assert _outcomes(_read(data)) == [
        "http://a.com/0", "http://a.com/1", "corrupt_record", "http://a.com/3", "http://a.com/4"]


def test_truncated_file_keeps_every_complete_record():
    members = [_member(_record(f"http://a.com/{i}", f"Page {i} text.".encode())) for i in range(3)]
    data = b"".join(members)[:-len(members[-1]) // 2]
    assert _outcomes(_read(data)) == ["http://a.com/0", "http://a.com/1", "corrupt_record"]


# Named ids: the data are no test id (gzip's header holds the time, so two pytest-xdist workers
# collecting a second apart would name the test differently and refuse to run).
@pytest.mark.parametrize("data", [
    b"this is not a gzip file" * 100,  # Was read as 50 non-conversion records.
    gzip.compress(b"this is a gzip file of text, not of WARC records\n" * 100),
    b"",
], ids=["not_gzip", "gzip_of_text", "empty"])
def test_a_file_that_is_not_wet_is_rejected_whole(data):
    with pytest.raises(wet.NotWetFile):
        _read(data)


def test_uncompressed_wet_with_a_broken_header(shared_data):
    path = shared_data / "wet/eugeneware-warc/CC-MAIN-20140820021334-00006-ip-10-180-136-8.ec2.internal.warc.wet"
    data = path.read_bytes()
    assert len([i for i in _read(data, 10**6) if isinstance(i, Page)]) == 3
    second = data.index(b"WARC/1.0", data.index(b"WARC-Type: conversion"))
    broken = data[:second] + b"XXXX" + data[second + 4:]
    outcomes = _outcomes(_read(broken, 10**6))
    assert outcomes.count("corrupt_record") == 1
    assert len([o for o in outcomes if o.startswith("http")]) == 2


def test_inflated_wet_bytes_are_zlibs(shared_data):
    # The reader inflates with ISA-L member by member; zlib (Python's gzip) inflates the whole.
    paths = sorted(shared_data.glob("wet/**/*.gz"))
    assert len(paths) >= 4
    for path in paths:
        with open(path, "rb") as raw:
            stream = wet.GzipMemberStream(raw, 0)
            inflated = b"".join(iter(lambda: stream.read(65536), b""))
        assert inflated == gzip.decompress(path.read_bytes()), path
