"""The span and line dedup rules, on single pages and across pages (pure functions)."""
import collections

import pytest

from pipelines.dedup import (PAPER_SPAN_DEDUP, PUBLIC_C4_LINE_DEDUP, DedupConfig,
                             decode_occurrence, encode_occurrence, losing_occurrences, page_key,
                             remove_units, span_keys, units_of)


def dedup_pages(pages, config):
    """The whole-dataset rule applied to a dict url -> text, as the Beam stage applies it."""
    occurrences = collections.defaultdict(list)
    for url, text in pages.items():
        for key, start in span_keys(units_of(text, config.mode), config.span_units):
            occurrences[key].append(encode_occurrence(page_key(url), start))
    removals = collections.defaultdict(list)
    for occurrence_list in occurrences.values():
        for loser in losing_occurrences(occurrence_list):
            key_of_page, start = decode_occurrence(loser)
            removals[key_of_page].append(start)
    return {url: remove_units(text, config.mode, config.span_units, removals[page_key(url)])
            for url, text in pages.items()}


SHARED = "Alpha is first. Beta is second. Gamma is third."


def test_units_are_sentences_across_lines():
    units = units_of("A one. B two.\nC three.", "spans")
    assert [(u.line_index, u.text) for u in units] == [(0, "A one."), (0, "B two."), (1, "C three.")]


def test_windows_overlap_and_cross_lines():
    units = units_of("A one. B two.\nC three. D four.", "spans")
    assert [start for _, start in span_keys(units, 3)] == [0, 1]


def test_span_keys_ignore_case_and_spacing():
    a = list(span_keys(units_of("Alpha is first. Beta is second. Gamma is third.", "spans"), 3))
    b = list(span_keys(units_of("ALPHA  is FIRST.   Beta is second.\nGamma is THIRD.", "spans"), 3))
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


def test_line_mode_matches_public_c4():
    pages = {"a.com": "Same line here.\nOnly in a.\nsame line HERE.",
             "b.com": "Same line here.\nOnly in b."}
    result = dedup_pages(pages, PUBLIC_C4_LINE_DEDUP)
    all_lines = [line for text in result.values() for line in text.split("\n")]
    assert sum(line.lower() == "same line here." for line in all_lines) == 1
    assert "Only in a." in result["a.com"] and "Only in b." in result["b.com"]


def test_losing_occurrences_streams_all_but_smallest():
    occurrences = [b"\x02" * 12, b"\x01" * 12, b"\x03" * 12]
    assert sorted(losing_occurrences(occurrences)) == [b"\x02" * 12, b"\x03" * 12]


def test_invalid_config():
    with pytest.raises(ValueError):
        DedupConfig(mode="words")
