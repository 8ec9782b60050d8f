"""The plan (pipelines/steps/plan.py): a filter added as one step and one plan line runs in one job
and in stages, with its counters in stats.json, its drops in the exclusions and its row in the
datasheet, and both runs write the same bytes; the stage order and the drop reasons follow from
the steps' declarations."""
import gzip
import json
import pathlib

import pytest

from pipelines import c4, counters
from pipelines.audit import datasheet, datasheet_sample
from pipelines.filters import dedup
from pipelines.page import Page
from pipelines.stats import stats
from pipelines.steps import plan
from pipelines.steps.base import Counts, Drop, Step
from pipelines.steps.filter_steps import Clean, WithinLength
from pipelines.steps.span_dedup import SpanRecords
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args
from text.sentences import split_sentences

WORD = "family"


class DropsPagesWithTheWord(Step):
    """The toy filter: drops a page with WORD among its words."""
    stage = "toy_word"
    drops = (Drop("has_the_word"),)

    def __call__(self, page: Page, counts: Counts):
        if WORD in page.text.split():
            self.drop(counts, "has_the_word", page)
            return ()
        self.count(counts)
        return (page,)


def _with_toy_line() -> tuple:
    """PLAN with the toy filter's line after the cleaning (in the phase that sends the span
    dedup's keys)."""
    lines = list(plan.PLAN)
    after = next(number for number, line in enumerate(lines) if line.kinds == (Clean,))
    lines.insert(after + 1, plan.PlanLine(plan.URL, (DropsPagesWithTheWord,),
                                          lambda setting: DropsPagesWithTheWord()))
    return tuple(lines)


def _exclusion_records(folder: pathlib.Path) -> list:
    return [json.loads(line) for path in sorted(folder.glob("exclusions-*.jsonl.gz"))
            for line in gzip.decompress(path.read_bytes()).splitlines()]


def _run(shared_data, output: pathlib.Path, excluded: pathlib.Path, *extra) -> None:
    c4.main(variant_args(shared_data, "en") + [
        "--output", str(output), "--exclusions", str(excluded), "--exclusion_fraction", "1",
        *extra])


def test_a_filter_added_by_one_plan_line_runs_in_one_job_and_in_stages_alike(
        shared_data, tmp_path, monkeypatch):
    monkeypatch.setattr(plan, "PLAN", _with_toy_line())
    one_job, in_stages, excluded = tmp_path / "one_job", tmp_path / "staged", tmp_path / "excluded"
    # Both runs name the same exclusions folder (run_config.json records it): the first's moved.
    _run(shared_data, one_job, excluded)
    excluded.rename(tmp_path / "one_job_excluded")
    _run(shared_data, in_stages, excluded, "--staged", "--workers", "1", "--buckets", "2")

    counters = json.loads((in_stages / stats.STATS_FILE).read_text())["stages"]
    toy = counters["toy_word"]
    assert toy["pages.dropped:has_the_word"] > 0 and toy["pages.passed"] > 0
    # Its counters sit where its line is: between the cleaning's and the span dedup's.
    order = list(counters)
    assert order.index("clean") < order.index("toy_word") < order.index("dedup")
    # Every page it passed on reached the span dedup, and it dropped only pages with the word.
    assert toy["pages.passed"] == sum(counters["dedup"].values()) - sum(
        value for name, value in counters["dedup"].items() if name.startswith("spans."))
    records = [record for record in _exclusion_records(excluded)
               if record["stage"] == "toy_word"]
    assert len(records) == toy["pages.dropped:has_the_word"]
    assert all(record["reason"] == "has_the_word" and record["level"] == "page"
               and WORD in record["text"].split() for record in records)
    assert_same_output(in_stages, one_job)
    assert_same_output(excluded, tmp_path / "one_job_excluded")

    # Its row in the datasheet's drop reasons: counted, and as many in the sample (fraction 1).
    html = pathlib.Path(datasheet.build_datasheet(str(in_stages))).read_text()
    dropped = f"{toy['pages.dropped:has_the_word']:,}"
    assert (f"<tr><td>toy_word</td><td>pages</td><td>has_the_word</td><td class=n>{dropped}</td>"
            f"<td class=n>{dropped}</td></tr>") in html


def test_the_stage_order_follows_the_plans_declarations(monkeypatch):
    assert plan.stage_order() == (
        "read", "released_text", "length", "url_dedup", "domains", "paragraphs", "clean",
        "dedup", "language", "badwords", "decontamination", "write")
    monkeypatch.setattr(plan, "PLAN", _with_toy_line())
    assert plan.stage_order() == (
        "read", "released_text", "length", "url_dedup", "domains", "paragraphs", "clean",
        "toy_word", "dedup", "language", "badwords", "decontamination", "write")
    # stats.json's stages, and so the funnel's bars and the datasheet's reasons, in that order.
    merged = stats.merged({"write": {"pages.written:train": 1}, "toy_word": {"pages.passed": 2},
                           "length": {"pages.dropped:too_long": 3}})
    assert list(merged) == ["length", "toy_word", "write"]
    assert [drop.stage for drop in datasheet_sample.drop_reasons(
        stats.merged({"toy_word": {"pages.dropped:has_the_word": 1},
                      "clean": {"lines.dropped:policy": 4},
                      "dedup": {"spans.dropped:duplicate": 2}}))] == ["clean", "toy_word", "dedup"]


def test_the_plan_declares_every_reason_its_steps_drop_for():
    assert [(stage, drop.level, drop.reason, drop.per) for stage, drop in plan.declared_drops()
            if stage in ("length", "dedup", "badwords")] == [
        ("length", "page", "too_long", None),
        ("dedup", "span", "duplicate", None),
        ("dedup", "page", "empty_after_dedup", None),
        ("dedup", "page", "too_few_sentences_after_dedup", None),
        ("badwords", "page", "badword", "language")]


def test_a_step_refuses_a_reason_it_does_not_declare():
    page = Page(url="https://a.example/x", normalized_url="a.example/x",
                timestamp="2019-04-18T10:13:24Z", content_type="text/plain", content_length=3,
                text="abc")
    counts = Counts()
    with pytest.raises(ValueError, match="WithinLength drops pages for 'too_short', which its "
                                         "`drops` does not declare: add it there"):
        WithinLength(1).drop(counts, "too_short", page)
    assert counts.as_stats() == {}
    WithinLength(1).drop(counts, "too_long", page)
    assert counts.as_stats() == {"length": {"pages.dropped:too_long": 1}}


def test_the_span_dedup_step_routes_its_winners_as_plain_data():
    """No step gives a Beam type: SpanRecords' winners leave as steps.Routed, which each
    executor routes."""
    step = SpanRecords(dedup.PAPER_SPAN_DEDUP, split_sentences, 2)
    step.start()
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    page = Page(url="https://a.example/x", normalized_url="a.example/x",
                timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                content_length=len(text), text=text)
    step(page, Counts())
    routed = list(step.finish(Counts()))
    assert routed and {type(each).__module__ for each in routed} == {"pipelines.steps.base"}
    assert {each.to for each in routed} == {"winners"}


def test_the_counter_names_are_built_and_parsed_by_one_module():
    assert counters.dropped("line", "policy") == "lines.dropped:policy"
    assert counters.parse_dropped("pages.dropped:badword:de") == ("page", "badword:de")
    assert counters.parse_dropped("spans.dropped:duplicate") == ("span", "duplicate")
    for other in ("pages.passed", "records.skipped:empty_page", "words.dropped:x"):
        assert counters.parse_dropped(other) is None
    assert counters.written("", "train") == "pages.written:train"
    assert counters.written("de", "validation") == "pages.written:validation:de"
    assert counters.parse_written("pages.written:validation:de") == ("validation", "de")
    assert counters.parse_written("pages.written:train") == ("train", "")
    assert counters.parse_written("runs.spilled:train") is None
    assert counters.drops_at("line", {"lines.dropped:policy": 2, "pages.dropped:too_long": 1,
                                      "lines.passed": 9}) == {"policy": 2}
    assert [name for name in ("pages.passed", "pages.passed:de", "pages.written:train",
                              "pages.dropped:x", "lines.passed") if counters.is_kept(name)] == [
        "pages.passed", "pages.passed:de", "pages.written:train"]
    assert counters.stage_of_namespace(counters.namespace("clean")) == "clean"
    assert counters.stage_of_namespace("exclusions.write") is None
