"""The rules of the released C4, as pure functions over one page.

`--rules released` reproduces what the public code that made the released C4 does
(tensorflow_datasets/text/c4.py and c4_utils.py, TFDS 4.9.10) for en, en.noclean, realnewslike
and webtextlike. This module holds the rules that differ from the paper's (pipelines/cleaning.py
and friends); URL normalization and the split are in urls.py, line dedup is dedup.py's `lines`
mode, and the language and bad-words stages are the same under both rule sets.
tests/test_released_c4.py runs the TFDS code itself as the oracle.
"""
import collections
import re
from typing import Counter, Dict, List

import tldextract

from pipelines.cleaning import CleaningConfig, CleaningResult
from pipelines.domains import AllowedSubdomains
from text.splitters import Splitter

# TFDS reads a WET file line by line in text mode, where `\r\n`, `\r` and `\n` all end a line, and
# leaves out of the page text every line that starts like a WARC header.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_HEADER_PREFIXES = ("WARC", "CONTENT-", "Content-")


def wet_text(body: str) -> str:
    """The text of a WET conversion record as the released C4 saw it: lines stripped, blank
    lines and lines that start with `WARC`, `Content-` or `CONTENT-` left out."""
    lines = (line.strip() for line in _LINE_BREAK.split(body))
    return "\n".join(line for line in lines if line and not line.startswith(_HEADER_PREFIXES))


# Case-sensitive, unlike the paper rules' citation pattern: `[Edit]` stays.
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
_END_MARKS = (".", "?", "!", '"')
_ELLIPSIS = "..."
_POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies",
                   "use of cookies", "use cookies")


def clean_page(text: str, config: CleaningConfig, split: Splitter) -> CleaningResult:
    """The released C4's cleaning of one page.

    Differences from the paper rules, all on purpose: lines come from `str.splitlines()`; a line
    with an overlong word is dropped before citations are removed, and the line is not stripped
    again after that; `”` is no end mark; "lorem ipsum" and `{` drop the page only when they are
    on a line that passed the end-mark and length checks (and `{` only if the line has no
    "javascript"); sentences are counted line by line with `split`.
    """
    kept: List[str] = []
    dropped: Counter[str] = collections.Counter()
    sentences = 0
    for line in text.splitlines():
        line = line.strip()
        if any(len(word) > config.max_word_length for word in line.split()):
            dropped["word_too_long"] += 1
            continue
        line = _CITATION.sub("", line)
        if line.endswith(_ELLIPSIS):
            dropped["ellipsis"] += 1
            continue
        if not line.endswith(_END_MARKS):
            dropped["no_terminal_punctuation"] += 1
            continue
        if len(line.split()) < config.min_words_per_line:
            dropped["too_few_words"] += 1
            continue
        lower = line.lower()
        if "lorem ipsum" in lower:
            return CleaningResult(None, "lorem_ipsum", len(kept), dropped)
        if "javascript" in lower:
            dropped["javascript"] += 1
            continue
        if "{" in line:
            return CleaningResult(None, "curly_bracket", len(kept), dropped)
        if any(phrase in lower for phrase in _POLICY_PHRASES):
            dropped["policy"] += 1
            continue
        sentences += len(split(line))
        kept.append(line)
    if sentences < config.min_sentences_per_page:
        return CleaningResult(None, "too_few_sentences", len(kept), dropped)
    return CleaningResult("\n".join(kept).strip(), None, len(kept), dropped)


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
