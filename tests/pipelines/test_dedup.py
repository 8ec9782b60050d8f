"""The span and line dedup rules, on single pages and across pages (pure functions)."""
import collections

import pytest

from pipelines.filters.dedup import (PAPER_SPAN_DEDUP, RELEASED_LINE_DEDUP, DedupConfig,
                                     bucket_blocks, distinct_span_keys, drop_reason_after_dedup,
                                     page_key, page_records, remove_units, removed_starts,
                                     resolve_records, span_keys, units_of)
from tests.support.pages import HOT, hot_span_pages
from text.sentences import split_sentences


def dedup_pages(pages, config):
    """The whole-dataset rule applied to a dict url -> text, as the Beam stage applies it (the
    URLs serve as raw and normalized URL)."""
    records = b""
    for url, text in pages.items():
        keys, _ = distinct_span_keys(units_of(text, config.mode, split_sentences), config)
        records += page_records(keys, page_key(url, url, config.mode))
    lost = collections.defaultdict(set)
    for loser, key in resolve_records(records, config.mode)[1]:
        lost[loser].add(key)
    result = {}
    for url, text in pages.items():
        units = units_of(text, config.mode, split_sentences)
        removed = removed_starts(units, config, lost[page_key(url, url, config.mode)])
        result[url] = remove_units(text, units, config, removed)
    return result


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


def records(*pairs):
    return b"".join(key + page for key, page in pairs)


def test_a_key_is_won_by_its_smallest_page_and_lost_by_every_other():
    hot, once = b"\x07" * 8, b"\x01" * 8
    pages = [b"\x02" * 8, b"\x01" * 8, b"\x03" * 8]
    winners, losers = resolve_records(records(*[(hot, page) for page in pages], (once, pages[2])),
                                      "spans")
    assert winners == records((once, pages[2]), (hot, pages[1]))
    assert sorted(losers) == [(pages[0], hot), (pages[2], hot)]
    winners, losers = resolve_records(b"", "spans")
    assert winners == b"" and list(losers) == []
    with pytest.raises(ValueError, match="not whole"):
        resolve_records(b"\x00" * 20, "spans")


def test_resolving_parts_first_gives_the_same_losers():
    """What lets each worker resolve its own pages' records before the shuffle."""
    import random
    draw = random.Random(3)
    keys = [draw.randbytes(16) for _ in range(40)]  # MD5-wide: `lines` mode records.
    pairs = [(draw.choice(keys), draw.randbytes(16)) for _ in range(500)]
    winners, losers = resolve_records(records(*pairs), "lines")
    losers = list(losers)
    parts = [pairs[i:i + 70] for i in range(0, len(pairs), 70)]
    part_winners, part_losers = b"", []
    for part in parts:
        won, lost = resolve_records(records(*part), "lines")
        part_winners += won
        part_losers += lost
    final_winners, final_losers = resolve_records(part_winners, "lines")
    assert final_winners == winners
    assert sorted(part_losers + list(final_losers)) == sorted(losers)
    assert len(losers) == len(pairs) - len(set(key for key, _ in pairs))


def test_buckets_split_records_by_key():
    pairs = [(bytes([i]) * 8, bytes([j]) * 8) for i in range(10) for j in range(3)]
    blocks = dict(bucket_blocks(records(*pairs), "spans", 4))
    assert b"".join(blocks.values()) != b"" and len(blocks) == 4
    for bucket, block in blocks.items():
        keys = {block[i:i + 8] for i in range(0, len(block), 16)}
        assert all(int.from_bytes(key, "big") % 4 == bucket for key in keys)
    assert sorted(b"".join(blocks.values())[i:i + 16] for i in range(0, 480, 16)) == sorted(
        key + page for key, page in pairs)


def test_a_page_sends_each_key_once_and_finds_its_own_repeats():
    units = units_of(f"{SHARED}\nMiddle line here.\n{SHARED}", "spans", split_sentences)
    keys, repeats = distinct_span_keys(units, PAPER_SPAN_DEDUP)
    assert repeats and len(keys) == len(set(keys)) == 4  # 5 windows, the first one repeated.
    assert removed_starts(units, PAPER_SPAN_DEDUP, set()) == [4]
    assert removed_starts(units, PAPER_SPAN_DEDUP, {keys[0]}) == [0, 4]
    _, repeats = distinct_span_keys(units_of(SHARED, "spans", split_sentences), PAPER_SPAN_DEDUP)
    assert repeats is False
    assert distinct_span_keys(units_of("One. Two.", "spans", split_sentences),
                              PAPER_SPAN_DEDUP) == ([], False)


def test_invalid_config():
    with pytest.raises(ValueError):
        DedupConfig(mode="words")





@pytest.mark.parametrize("records_per_flush,buckets", [(1 << 20, 1), (64, 3)])
def test_a_hot_span_keeps_one_copy_on_the_direct_runner(monkeypatch, records_per_flush, buckets):
    """With one buffer for all pages and one bucket, and with many small buffers (the hot key
    resolved in each, its winners meeting again in the shuffle) over three buckets."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that

    from pipelines.beam.span_dedup import DedupText
    from pipelines.steps import span_dedup
    from text.hashing import digest64
    monkeypatch.setattr(span_dedup, "_RECORDS_PER_FLUSH", records_per_flush)
    pages = hot_span_pages(3000)
    survivor = min(pages, key=lambda page: digest64(page.normalized_url)).url

    def check(output):
        texts = {page.url: page.text for page in output}
        assert sorted(texts) == sorted(page.url for page in pages)
        for number, page in enumerate(pages):
            if page.url == survivor:
                assert texts[page.url] == page.text.split(f"\n{HOT}")[0]
            else:
                assert texts[page.url] == f"Page {number} starts here.\nPage {number} ends here."

    with beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(
            ["--direct_running_mode=in_memory", "--direct_num_workers=1"])) as pipeline:
        kept = (pipeline | beam.Create(pages)
                | DedupText(PAPER_SPAN_DEDUP, min_sentences=1, split=split_sentences,
                                   buckets=buckets))
        assert_that(kept, check)
