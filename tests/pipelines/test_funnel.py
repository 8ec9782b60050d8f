"""funnel.svg: valid SVG with one bar per stage that counts pages, drawn from the counters."""
import xml.etree.ElementTree as ElementTree

import pytest

from pipelines.stats import funnel

SVG = "{http://www.w3.org/2000/svg}"

STATS = {
    "read": {"files.read": 2, "files.skipped:not_wet": 1, "pages.passed": 1000,
             "records.skipped:empty_page": 7},
    "url_dedup": {"pages.dropped:older_duplicate": 40, "pages.passed": 960},
    "clean": {"lines.dropped:too_few_words": 5000, "lines.passed": 9000,
              "pages.dropped:curly_bracket & <more>": 60, "pages.dropped:too_few_sentences": 300,
              "pages.passed": 600},
    "dedup": {"pages.passed": 500, "pages.passed:shortened": 90,
              "pages.dropped:too_few_sentences_after_dedup": 10},
    "language": {"pages.dropped:other_language": 80, "pages.passed:en": 510},
    "write": {"pages.written:train": 505, "pages.written:validation": 5},
}


def _stages(svg: str):
    root = ElementTree.fromstring(svg)  # Valid XML, or this raises.
    assert root.tag == SVG + "svg"
    return root.findall(f"{SVG}g[@class='stage']")


def test_one_bar_per_stage_with_the_counters_numbers():
    stages = _stages(funnel.funnel_svg(STATS, "C4 en"))
    assert [group.get("data-stage") for group in stages] == list(STATS)
    expected_kept = [1000, 960, 600, 590, 510, 510]
    expected_dropped = [0, 40, 360, 10, 80, 0]
    assert [int(group.get("data-kept")) for group in stages] == expected_kept
    assert [int(group.get("data-dropped")) for group in stages] == expected_dropped
    for group, kept, dropped in zip(stages, expected_kept, expected_dropped):
        bars = {rect.get("class"): float(rect.get("width")) for rect in group.iter(SVG + "rect")}
        assert set(bars) == {"kept", "dropped"}
        # Widths to one scale: the largest stage input (read: 1,000 pages) is the full bar.
        assert abs(bars["kept"] / (bars["kept"] + bars["dropped"]) - kept / (kept + dropped)) < 1e-3
        text = " ".join(element.text for element in group.iter(SVG + "text"))
        assert f"{kept:,} kept" in text
    widths = [float(group.find(f"{SVG}rect[@class='kept']").get("width")) for group in stages]
    assert abs(widths[1] / widths[0] - 960 / 1000) < 1e-3
    clean_text = " ".join(element.text for element in stages[2].iter(SVG + "text"))
    assert "too_few_sentences 300" in clean_text and "curly_bracket & <more> 60" in clean_text
    assert "files.skipped:not_wet 1" in " ".join(e.text for e in stages[0].iter(SVG + "text"))
    assert "pages.written:validation 5" in " ".join(e.text for e in stages[-1].iter(SVG + "text"))


def test_stages_without_page_counters_have_no_bar():
    assert _stages(funnel.funnel_svg({"domains": {"url_lists.read": 3}}, "C4")) == []


def _lines(group):
    return [element.text for element in group.iter(SVG + "text")]


def test_kept_pages_are_drawn_as_the_sum_of_the_counters_stats_json_names():
    """dedup counts the pages it passes whole (`pages.passed`) and those it shortened
    (`pages.passed:shortened`) apart (pipelines/steps/span_dedup.py, ApplyRemovals): the funnel's
    1,067 is their sum, said as such, on a line of its own, not among the drop reasons."""
    stats = {"dedup": {"pages.passed": 1050, "pages.passed:shortened": 17,
                       "pages.dropped:too_few_sentences_after_dedup": 3},
             "badwords": {"pages.passed": 900, "pages.dropped:badword": 167}}
    dedup, badwords = _stages(funnel.funnel_svg(stats, "C4 en"))
    assert int(dedup.get("data-kept")) == 1050 + 17
    lines = _lines(dedup)
    assert "kept 1,067 = pages.passed 1,050 + pages.passed:shortened 17" in lines
    reasons = [line for line in lines if "too_few_sentences_after_dedup" in line]
    assert reasons == ["too_few_sentences_after_dedup 3"]  # no kept counter among them
    # One kept counter, unqualified: the bar's "900 kept" is stats.json's number, no sum line.
    assert not any(line.startswith("kept ") for line in _lines(badwords))
    assert "900 kept, 167 dropped" in _lines(badwords)


def test_a_stage_counted_per_language_names_its_largest_languages_and_sums_the_rest():
    """mC4's language stage has a kept counter per language (108 of them at scale): the funnel
    names the largest and sums the others, so the picture keeps its size."""
    passed = {f"pages.passed:l{index:03d}": 1000 - index for index in range(100)}
    dropped = {f"pages.dropped:badword:l{index:03d}": 100 - index for index in range(100)}
    stats = {"language": dict(passed), "badwords": dropped}
    language, badwords = _stages(funnel.funnel_svg(stats, "mC4"))
    text = " ".join(_lines(language))
    named = 7  # Eight parts at most: the seven largest, then one for the rest.
    assert all(f"pages.passed:l{index:03d}" in text for index in range(named))
    assert f"pages.passed:l{named:03d}" not in text
    rest = sum(1000 - index for index in range(named, 100))
    assert f" + {100 - named} more counters: {rest:,} pages" in text
    assert int(language.get("data-kept")) == sum(passed.values())
    dropped_rest = sum(100 - index for index in range(named, 100))
    assert "badword:l000 100" in " ".join(_lines(badwords))
    assert f"{100 - named} more reasons: {dropped_rest:,} pages" in " ".join(_lines(badwords))
    assert len(_lines(language)) <= 6


def test_a_part_of_a_few_pages_beside_a_thousand_is_drawn_wide_enough_to_see():
    """3 pages of 1,000 are 1.6 px of the 520 px bar: drawn 2 px wide, so the picture shows
    what the numbers beside it say; the bar's whole width stays the stage's share."""
    stats = {"read": {"pages.passed": 1000},
             "dedup": {"pages.passed": 997, "pages.dropped:empty_after_dedup": 3},
             "write": {"pages.written:train": 1}}
    read, dedup, write = _stages(funnel.funnel_svg(stats, "C4"))
    widths = {rect.get("class"): float(rect.get("width")) for rect in dedup.iter(SVG + "rect")}
    assert widths["dropped"] == 2.0
    assert widths["kept"] == pytest.approx(520 * 997 / 1000, abs=0.05)  # Written to 0.1 px.
    assert float(write.find(f"{SVG}rect[@class='kept']").get("width")) == 2.0
    assert float(write.find(f"{SVG}rect[@class='dropped']").get("width")) == 0.0
