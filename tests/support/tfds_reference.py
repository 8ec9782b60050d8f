"""The public TFDS code that made the released C4, chained offline as its c4.py wires it.

tensorflow_datasets/text/c4_utils.py (4.9.10) run in plain Python, page by page, for the
configs en, en.noclean, realnewslike and webtextlike: the oracle of tests/test_released_c4.py
and the baseline of bench/bench_vs_tfds.py. Only TFDS and the standard library are imported,
so a process that runs it pays TFDS's start-up, not ours. The caller patches what must be
patched (the sentence splitter, tldextract's suffix list, langdetect's seed).
"""
import collections
import json
import pathlib

from tensorflow_datasets.text import c4_utils

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
