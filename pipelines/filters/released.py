"""The rules of the released C4, as pure functions over one page.

`--rules released` reproduces what the public code that made the released C4 does
(tensorflow_datasets/text/c4.py and c4_utils.py, TFDS 4.9.10) for en, en.noclean, realnewslike
and webtextlike. This module holds the rules that differ from the paper's
(pipelines/filters/cleaning.py
and friends); URL normalization and the split are in urls.py, line dedup is dedup.py's `lines`
mode, and the language and bad-words stages are the same under both rule sets.
tests/pipelines/test_released_c4.py runs the TFDS code itself as the oracle.
"""
import dataclasses
import re
from typing import Dict, Iterator, List, Optional

import tldextract

from pipelines.filters.cleaning import CleaningConfig, CleaningResult, DroppedLines, has_sentences
from pipelines.filters.domains import AllowedSubdomains
from pipelines.filters.urls import released_normalize_url
from pipelines.page import Page
from text.splitters import Splitter

# TFDS reads a WET file line by line in text mode, where `\r\n`, `\r` and `\n` all end a line. It
# knows no record boundaries: a line `WARC/1.0` starts a new page, header lines set the page's
# fields wherever they are (in the body too), and every line that starts like a WARC header is
# left out of the text.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PAGE_DELIMITER = "WARC/1.0"
_HEADER_PREFIXES = ("WARC", "CONTENT-", "Content-")
_FIELD_OF_HEADER = {"WARC-Target-URI:": "url", "WARC-Date:": "timestamp",
                    "Content-Type:": "content_type", "Content-Length:": "content_length"}


def _as_read_by_tfds(fields: Dict[str, str], lines: List[str]) -> Optional[Page]:
    if not (fields["url"] and lines and fields["timestamp"]):  # TFDS's `_validate_features`.
        return None
    content_length = fields["content_length"]
    return Page(url=fields["url"], normalized_url=released_normalize_url(fields["url"]),
                timestamp=fields["timestamp"], content_type=fields["content_type"],
                content_length=int(content_length) if content_length.isdigit() else 0,
                text="\n".join(lines))


def wet_pages(page: Page) -> Iterator[Page]:
    """The pages the released C4 read from the WET record of `page` (whose text is the record's
    body): one, with the body's lines stripped and blank lines and lines that start with `WARC`,
    `Content-` or `CONTENT-` left out, and its released normalized URL; none if no text is left.
    A body line `WARC/1.0` ends the page there and starts a new one with no fields, which only a
    `WARC-Target-URI:` and a `WARC-Date:` line further down the body can make a page; header
    lines in the body set the fields they name (a Content-Length that is missing or not a number
    becomes 0: ours is a number). Pages from one record keep its input position, with the
    page's index in the record added.
    """
    fields = {"url": page.url, "timestamp": page.timestamp, "content_type": page.content_type,
              "content_length": str(page.content_length)}
    lines: List[str] = []
    part = 0
    for line in _LINE_BREAK.split(page.text):
        line = line.strip()
        if not line:
            continue
        if line == _PAGE_DELIMITER:
            found = _as_read_by_tfds(fields, lines)
            if found:
                yield dataclasses.replace(found, input_position=page.input_position + (part,))
                part += 1
            fields = dict.fromkeys(fields, "")
            lines = []
        for prefix, field in _FIELD_OF_HEADER.items():
            if line.startswith(prefix):
                fields[field] = line[len(prefix):].strip()
        if not line.startswith(_HEADER_PREFIXES):
            lines.append(line)
    found = _as_read_by_tfds(fields, lines)
    if found:
        yield dataclasses.replace(found, input_position=page.input_position + (part,))


# Case-sensitive, unlike the paper rules' citation pattern: `[Edit]` stays.
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
_END_MARKS = (".", "?", "!", '"')
_ELLIPSIS = "..."
_POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies",
                   "use of cookies", "use cookies")


def clean_page(text: str, config: CleaningConfig, split: Splitter,
               keep_removed: bool = False) -> CleaningResult:
    """The released C4's cleaning of one page.

    Differences from the paper rules, all on purpose: lines come from `str.splitlines()`; a line
    with an overlong word is dropped before citations are removed, and the line is not stripped
    again after that; `”` is no end mark; "lorem ipsum" and `{` drop the page only when they are
    on a line that passed the end-mark and length checks (and `{` only if the line has no
    "javascript"); sentences are counted line by line with `split`.
    """
    kept: List[str] = []
    dropped = DroppedLines(keep_removed)
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if max(map(len, line.split()), default=0) > config.max_word_length:
            dropped.add("word_too_long", raw_line)
            continue
        line = _CITATION.sub("", line)
        if line.endswith(_ELLIPSIS):
            dropped.add("ellipsis", raw_line)
            continue
        if not line.endswith(_END_MARKS):
            dropped.add("no_terminal_punctuation", raw_line)
            continue
        if len(line.split()) < config.min_words_per_line:
            dropped.add("too_few_words", raw_line)
            continue
        lower = line.lower()
        if "lorem ipsum" in lower:
            return dropped.result(None, "lorem_ipsum", len(kept))
        if "javascript" in lower:
            dropped.add("javascript", raw_line)
            continue
        if "{" in line:
            return dropped.result(None, "curly_bracket", len(kept))
        if any(phrase in lower for phrase in _POLICY_PHRASES):
            dropped.add("policy", raw_line)
            continue
        kept.append(line)
    # No kept line holds a line break (they come from splitlines), so the joined text splits back
    # into them: its sentences are counted line by line.
    cleaned = "\n".join(kept)
    if not has_sentences(cleaned, config.min_sentences_per_page, split):
        return dropped.result(None, "too_few_sentences", len(kept))
    return dropped.result(cleaned.strip(), None, len(kept))


def is_realnews_url(normalized_url: str, domains: Dict[str, AllowedSubdomains],
                    extractor: tldextract.TLDExtract) -> bool:
    """The released RealNews test, on the released normalized URL: the registered domain must be
    listed as it is written (no lower-casing), and where the list names subdomains, the
    subdomain must be one of them exactly (`www.` is already gone with the http(s) scheme)."""
    parts = extractor(normalized_url)
    domain = f"{parts.domain}.{parts.suffix}"
    if domain not in domains:
        return False
    allowed = domains[domain]
    return not isinstance(allowed, list) or parts.subdomain in allowed
