"""The span and line dedup rules, on single pages and across pages (pure functions)."""
import collections

import pytest

from pipelines.dedup import (PAPER_SPAN_DEDUP, RELEASED_LINE_DEDUP, DedupConfig,
                             decode_occurrence, drop_reason_after_dedup, encode_occurrence,
                             losing_occurrences, page_key, remove_units, span_keys, units_of)
from text.sentences import split_sentences


def dedup_pages(pages, config):
    """The whole-dataset rule applied to a dict url -> text, as the Beam stage applies it (the
    URLs serve as raw and normalized URL)."""
    occurrences = collections.defaultdict(list)
    for url, text in pages.items():
        for key, start in span_keys(units_of(text, config.mode, split_sentences), config):
            occurrences[key].append(encode_occurrence(page_key(url, url, config.mode), start))
    removals = collections.defaultdict(list)
    for occurrence_list in occurrences.values():
        for loser in losing_occurrences(occurrence_list):
            key_of_page, start = decode_occurrence(loser)
            removals[key_of_page].append(start)
    return {url: remove_units(text, config, removals[page_key(url, url, config.mode)],
                              split_sentences)
            for url, text in pages.items()}


SHARED = "Alpha is first. Beta is second. Gamma is third."


def test_units_are_sentences_across_lines():
    units = units_of("A one. B two.\nC three.", "spans", split_sentences)
    assert [(u.line_index, u.text) for u in units] == [
        (0, "A one."), (0, "B two."), (1, "C three.")]


def test_windows_overlap_and_cross_lines():
    units = units_of("A one. B two.\nC three. D four.", "spans", split_sentences)
    assert [start for _, start in span_keys(units, PAPER_SPAN_DEDUP)] == [0, 1]


def test_span_keys_ignore_case_and_spacing():
    a = list(span_keys(units_of("Alpha is first. Beta is second. Gamma is third.", "spans",
                                split_sentences), PAPER_SPAN_DEDUP))
    b = list(span_keys(units_of("ALPHA  is FIRST.   Beta is second.\nGamma is THIRD.", "spans",
                                split_sentences), PAPER_SPAN_DEDUP))
    assert a[0][0] == b[0][0]


def test_one_copy_of_a_repeated_span_survives():
    pages = {"a.com/1": f"Intro of page one. {SHARED} Outro one.",
             "b.com/2": f"Intro of page two. {SHARED} Outro two."}
    result = dedup_pages(pages, PAPER_SPAN_DEDUP)
    survivors = [url for url, text in result.items() if SHARED in text]
    assert len(survivors) == 1
    loser = next(url for url in pages if url not in survivors)
    assert "Alpha" not in result[loser] and "Intro" in result[loser] and "Outro" in result[loser]


def test_survivor_does_not_depend_on_input_order():
    pages = {f"site{i}.com": f"Page {i} starts. {SHARED}" for i in range(5)}
    forward = dedup_pages(pages, PAPER_SPAN_DEDUP)
    backward = dedup_pages(dict(reversed(list(pages.items()))), PAPER_SPAN_DEDUP)
    assert forward == backward
    assert sum(SHARED in text for text in forward.values()) == 1


def test_repeat_within_one_page_keeps_first():
    text = f"{SHARED}\nMiddle line here.\n{SHARED}"
    assert dedup_pages({"a.com": text}, PAPER_SPAN_DEDUP)["a.com"] == f"{SHARED}\nMiddle line here."


def test_untouched_lines_are_verbatim():
    text = "Keep  this   spacing. Untouched here. Really.\n" + SHARED
    other = "Other page starts. " + SHARED
    result = dedup_pages({"z.com": text, "a.com": other}, PAPER_SPAN_DEDUP)
    assert "Keep  this   spacing." in (result["z.com"] + result["a.com"])


def _tfds_line_dedup(pages):
    """The released C4's line dedup (TFDS c4_utils, the oracle) over a dict url -> text, as its
    Beam graph wires it: the smallest MD5 hex digest of the raw URL owns each line."""
    from tensorflow_datasets.text import c4_utils
    owner = {}
    for url, text in pages.items():
        for line_hash, _ in c4_utils._emit_url_to_lines(c4_utils.PageFeatures(url=url, text=text)):
            candidates = [owner.get(line_hash, url), url]
            owner[line_hash] = min(candidates, key=c4_utils._hash_text)
    kept = {}
    for url, text in pages.items():
        lines = [line for line, owning_url in owner.items() if owning_url == url]
        for page in c4_utils._remove_lines_from_text(
                (url, {"pages": [c4_utils.PageFeatures(url=url, text=text)], "lines": lines}),
                counter_inc_fn=lambda *args: None, min_num_sentences=0):
            kept[url] = page.text
    return kept


def test_line_mode_is_the_released_c4_rule():
    pages = {"a.com": "Same line here.\n Only in a.\nsame line HERE.\nOnly in a.",
             "b.com": "Same line here.\nOnly in b.\nOnly  in b.",
             "c.com": "SAME LINE HERE. \nOnly in c."}
    ours = {url: text for url, text in dedup_pages(pages, RELEASED_LINE_DEDUP).items() if text}
    assert ours == _tfds_line_dedup(pages)
    all_lines = [line for text in ours.values() for line in text.split("\n")]
    assert sum(line.strip().lower() == "same line here." for line in all_lines) == 1
    assert ours["a.com"].count("Only in a.") == 1  # A repeat inside the page goes too.


def test_line_mode_counts_sentences_over_the_joined_text():
    # Our splitter ends no sentence at a line break by itself: the released rule counts over the
    # joined text (as TFDS does), the paper rule line by line.
    text = "One two three four five\nsix seven. Eight nine ten."
    assert drop_reason_after_dedup(text, RELEASED_LINE_DEDUP, split_sentences, 3) == (
        "too_few_sentences_after_dedup")
    assert drop_reason_after_dedup(text, PAPER_SPAN_DEDUP, split_sentences, 3) is None
    assert drop_reason_after_dedup(" \n", PAPER_SPAN_DEDUP, split_sentences, 0) == (
        "empty_after_dedup")


def test_losing_occurrences_streams_all_but_smallest():
    occurrences = [b"\x02" * 12, b"\x01" * 12, b"\x03" * 12]
    assert sorted(losing_occurrences(occurrences)) == [b"\x02" * 12, b"\x03" * 12]


def test_invalid_config():
    with pytest.raises(ValueError):
        DedupConfig(mode="words")
