"""--exclusions (pipelines/writers/exclusions.py): the records of what each stage dropped number its
counters, reason by reason; the sample is a deterministic choice of URLs; the kept output does
not change; the records say what they claim (a bad word in each page the bad-words filter
dropped, a page over the limit in each too-long one)."""
import functools
import gzip
import json
import pathlib
import subprocess
import sys

import pytest

from pipelines import c4, exclusion_sample
from pipelines.beam.url_dedup import NewestPageFn
from pipelines.config import variant
from pipelines.filters import badwords, urls
from pipelines.page import Page
from pipelines.stats import stats
from pipelines.steps.base import Counts
from pipelines.steps.resources import load_resources
from pipelines.steps.url_dedup import CountUrlDuplicates
from tests.support.references import build_reference
from tests.support.variant_runs import variant_args
from text.hashing import hash64

REPO = pathlib.Path(__file__).resolve().parents[2]
# The counters a record's level stands for, as the stages name them (pipelines/steps/span_dedup.py).
LEVELS_OF_COUNTERS = {"pages.dropped:": "page", "lines.dropped:": "line", "spans.dropped:": "span"}


def records(directory: pathlib.Path, split: str = "exclusions") -> list:
    return [json.loads(line) for path in sorted(directory.glob(f"{split}-*.jsonl.gz"))
            for line in gzip.decompress(path.read_bytes()).splitlines()]


def counted_drops(counters: stats.Stats) -> dict:
    """{stage: {"<level>:<reason>": value}} of every drop counter of a run."""
    drops = {}
    for stage, values in counters.items():
        for name, value in values.items():
            for prefix, level in LEVELS_OF_COUNTERS.items():
                if name.startswith(prefix) and value:
                    drops.setdefault(stage, {})[f"{level}:{name[len(prefix):]}"] = value
    return drops


def pages_written(counters: stats.Stats) -> int:
    return sum(value for name, value in counters.get("write", {}).items()
               if name.startswith("pages.written:"))


def shard_files(folder: pathlib.Path) -> dict:
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*.jsonl.gz"))}


def run(shared_data, tmp_path, variant_name, rules=None, fraction=1.0, extra=()):
    output, excluded = tmp_path / "out", tmp_path / "excluded"
    counters = c4.main(variant_args(shared_data, variant_name, rules) + [
        "--output", str(output), "--exclusions", str(excluded),
        "--exclusion_fraction", str(fraction), *extra])
    return output, excluded, counters


@pytest.mark.parametrize("variant_name,rules", [
    ("en", None), ("en", "released"), ("realnewslike", None), ("webtextlike", "released"),
    ("multilingual", None), ("en.linededup", None)])
def test_the_records_of_each_reason_number_its_counter_and_the_output_does_not_change(
        shared_data, one_job, tmp_path, capsys, variant_name, rules):
    output, excluded, counters = run(shared_data, tmp_path, variant_name, rules)
    said = capsys.readouterr().out
    assert (f"for 100% of the URLs, written to {excluded} (see exclusions.json); its datasheet: "
            f"python -m pipelines.report {output}") in said
    assert "README.md (the dataset card)" in said and (output / "README.md").exists()
    summary = json.loads((excluded / "exclusions.json").read_text())
    assert summary["records"] == counted_drops(counters)
    assert summary["kept"] == pages_written(counters) == len(records(excluded, "kept"))
    assert shard_files(output) == shard_files(one_job(variant_name, rules))
    assert (output / stats.STATS_FILE).read_bytes() == (
        one_job(variant_name, rules) / stats.STATS_FILE).read_bytes()
    assert json.loads((output / "run_config.json").read_text())["exclusions"] == {
        "directory": str(excluded), "fraction": 1.0}


@pytest.fixture(scope="session")
def one_job_exclusions(shared_data, references_root):
    """The exclusions (fraction 1) of one-job runs, by variant and rules: their folders, built
    with the session's references (tests/support/references.py)."""
    def of(variant_name, rules):
        excluded = references_root / f"exclusions-{variant_name}-{rules or 'paper'}"
        build_reference(references_root, variant_args(shared_data, variant_name, rules) + [
            "--exclusions", str(excluded), "--exclusion_fraction", "1"])
        return excluded
    return of


EXECUTORS = {"staged": ["--staged", "--workers", "2", "--buckets", "3"],
             "staged-beam-jobs": ["--staged", "--executor", "beam", "--buckets", "2"]}
QUICK = {("en", None, "staged"), ("webtextlike", "released", "staged"),
         ("multilingual", None, "staged")}


def _executor_cases():
    for variant_name, rules in [("en", None), ("en", "released"), ("webtextlike", "released"),
                                ("realnewslike", None), ("multilingual", None)]:
        for executor in EXECUTORS:
            marks = () if (variant_name, rules, executor) in QUICK else (pytest.mark.slow,)
            yield pytest.param(variant_name, rules, executor, marks=marks,
                               id=f"{variant_name}-{rules or 'paper'}-{executor}")


@pytest.mark.parametrize("variant_name,rules,executor", list(_executor_cases()))
def test_a_run_in_stages_writes_the_one_jobs_exclusions(
        shared_data, one_job, one_job_exclusions, tmp_path, variant_name, rules, executor):
    output, excluded = tmp_path / "out", tmp_path / "excluded"
    args = variant_args(shared_data, variant_name, rules) + [
        "--output", str(output), "--exclusions", str(excluded), "--exclusion_fraction", "1",
        *EXECUTORS[executor]]
    finished = subprocess.run([sys.executable, "-m", "pipelines.c4", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    expected = one_job_exclusions(variant_name, rules)
    assert {path.name: path.read_bytes() for path in sorted(excluded.iterdir())} == {
        path.name: path.read_bytes() for path in sorted(expected.iterdir())}
    assert shard_files(output) == shard_files(one_job(variant_name, rules))


def test_a_fraction_keeps_the_records_of_the_urls_its_hash_picks(shared_data, tmp_path):
    """The sample is the URLs whose salted 64-bit hash falls in the fraction's share of the
    range (the salt makes it another choice than the shards' and the split's)."""
    _, everything, _ = run(shared_data, tmp_path / "all", "en")
    _, sampled, _ = run(shared_data, tmp_path / "part", "en", fraction=0.3)
    normalize = variant("en").rule_set.normalize_url
    for split in ("exclusions", "kept"):
        picked = [record for record in records(everything, split)
                  if hash64("exclusions\t" + normalize(record["url"])) < 0.3 * 2 ** 64]
        assert 0 < len(picked) < len(records(everything, split))
        assert sorted(map(json.dumps, records(sampled, split))) == sorted(map(json.dumps, picked))


def test_the_records_say_what_they_claim(shared_data, tmp_path):
    _, excluded, _ = run(shared_data, tmp_path, "en")
    found = records(excluded)
    assert {record["level"] for record in found} == {"page", "line", "span"}
    terms = load_resources(variant("en"), str(shared_data / "badwords/en")).badwords["en"]
    matcher = badwords.compile_badwords(terms)
    dropped_for_badwords = [record for record in found if record["stage"] == "badwords"]
    assert dropped_for_badwords and all(badwords.contains_badword(record["text"], matcher)
                                        for record in dropped_for_badwords)
    assert all(record["text"] and "\n" not in record["text"]
               for record in found if record["level"] == "line")
    assert all(record["text"] for record in found if record["level"] == "page")


def test_a_kept_pages_chars_are_the_characters_of_its_text_in_the_output(shared_data,
                                                                          tmp_path):
    """`chars` counts characters, not bytes: on mC4's pages in other scripts (Greek, Cyrillic,
    CJK, ...) the kept records agree with the text the output holds for the same URL."""
    output, excluded, _ = run(shared_data, tmp_path, "multilingual")
    texts = {}
    for path in output.glob("*/*-of-*.jsonl.gz"):
        for line in gzip.decompress(path.read_bytes()).splitlines():
            page = json.loads(line)
            texts[page["url"]] = page["text"]
    kept = records(excluded, "kept")
    assert len(kept) == len(texts)
    non_ascii = [record for record in kept if not texts[record["url"]].isascii()]
    assert len(non_ascii) >= 50
    assert len({record["language"] for record in non_ascii}) >= 10
    assert [record["chars"] for record in non_ascii] == [
        len(texts[record["url"]]) for record in non_ascii]
    # Where bytes and characters differ, which is every non-ASCII page.
    assert all(len(texts[record["url"]].encode("utf-8")) > record["chars"]
               for record in non_ascii)


@pytest.mark.slow
def test_the_records_are_the_same_on_the_direct_runners_processes(shared_data, tmp_path):
    _, in_memory, _ = run(shared_data, tmp_path / "memory", "en")
    args = variant_args(shared_data, "en") + [
        "--output", str(tmp_path / "processes/out"), "--exclusions",
        str(tmp_path / "processes/excluded"), "--exclusion_fraction", "1",
        "--direct_running_mode", "multi_processing", "--direct_num_workers", "2"]
    finished = subprocess.run([sys.executable, "-m", "pipelines.c4", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert shard_files(tmp_path / "processes/excluded") == shard_files(in_memory)


def test_a_fraction_outside_zero_to_one_or_without_exclusions_is_refused(shared_data, tmp_path):
    with pytest.raises(SystemExit, match="exclusion fraction"):
        run(shared_data, tmp_path, "en", fraction=0)
    with pytest.raises(SystemExit, match="give both"):
        c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path / "out"),
                                                   "--exclusion_fraction", "0.5"])
    assert not (tmp_path / "out").exists()


def _pages_of_one_url(count: int) -> list:
    return [Page(url="http://a.example/x", normalized_url="a.example/x",
                 timestamp=f"2019-0{month}-01T00:00:00Z", content_type="text/plain",
                 content_length=1, text=f"text of month {month}")
            for month in range(1, count + 1)]


@pytest.mark.parametrize("fraction", [1.0, None])
def test_url_dedup_records_the_pages_it_drops_in_whatever_order_they_meet(fraction):
    pages = _pages_of_one_url(4)
    newest = NewestPageFn(urls.newest_page, fraction)
    one_by_one = functools.reduce(newest.add_input, pages, newest.create_accumulator())
    in_halves = newest.merge_accumulators(
        [functools.reduce(newest.add_input, half, newest.create_accumulator())
         for half in (pages[2:], pages[:2])])
    for best, count, losers in (one_by_one, in_halves):
        assert (best, count) == (pages[-1], 4)
        assert sorted(losers, key=lambda page: page.timestamp) == (pages[:3] if fraction else [])
    counts = Counts(exclusion_sample.Sample(1.0) if fraction else None)
    assert CountUrlDuplicates()(("a.example/x", in_halves), counts) == (pages[-1],)
    assert counts.as_stats()["url_dedup"]["pages.dropped:older_duplicate"] == 3
    if fraction:
        assert sorted(json.loads(record.line)["text"] for record in counts.sample.take()) == [
            page.text for page in pages[:3]]
