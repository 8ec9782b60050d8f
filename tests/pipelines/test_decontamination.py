"""--decontaminate (pipelines/steps/filter_steps.py Decontaminate): the pages that hold an
example of the index's tasks leave the corpus, counted per task and recorded in the exclusions;
the rest of the corpus is the run without it, line for line; the method decides which; the examples too short
for it are said before any work; a staged run writes the same bytes; a file that is no index is
refused before any work. Expected pages are found by a brute-force search
(tests/support/contamination_reference.py), not by the index."""
import gzip
import json
import pathlib
import subprocess
import sys

import pytest

from model.tasks import contamination as contamination_command
from pipelines import c4
from pipelines.steps import plan
from tests.support.contamination_reference import ngram_set, reference_words
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args
from text.contamination import ContaminationIndex

REPO = pathlib.Path(__file__).resolve().parents[2]


def lines_of(folder: pathlib.Path) -> list:
    return [line for path in sorted(folder.glob("*.jsonl.gz"))
            for line in gzip.decompress(path.read_bytes()).splitlines()]


# GPT-3's 13-gram, and its least N (8 words), the exact method's minimum (text/contamination.py).
NGRAM, MIN_EXACT = 13, 8
MADE_UP = ("zorblat quinties vex the marmoset", "nobody flurbs a gazunder weekly")
LONG = ("the committee met on a rainy tuesday to discuss the budget for the new library "
        "building and its many shelves")  # 19 words


def planted_examples(one_job_output: pathlib.Path) -> list:
    """Runs of words of four pages the run kept, as a benchmark's test set could hold them: a
    20-word run (found by both methods); a 10-word run (by the exact method only: too short for
    13-grams); 20 words of a page between made-up words (the page holds the example's middle
    only: found by 13-grams only); "Good." and a 5-word run (too short for both)."""
    kept = [json.loads(line)["text"] for line in lines_of(one_job_output)]
    pages = [text.split() for text in kept if len(text.split()) > 60][:4]
    return [("task_a", "sentence", "0", " ".join(pages[0][30:50])),
            ("task_a", "sentence", "1", " ".join(pages[1][30:40])),
            ("task_b", "premise", "0", f"{MADE_UP[0]} {' '.join(pages[2][30:50])} {MADE_UP[1]}"),
            ("task_c", "en", "0", "Good."),
            ("task_c", "en", "1", " ".join(pages[3][30:35]))]


def planted_index(one_job_output: pathlib.Path, path: pathlib.Path) -> list:
    examples = planted_examples(one_job_output)
    ContaminationIndex.build(examples).save(str(path))
    return examples


def holds(page: list, example: list, method: str) -> bool:
    """By brute force over normalised words: the whole example between word boundaries (8
    words or more), or a shared 13-gram."""
    if method == "exact":
        return len(example) >= MIN_EXACT and f" {' '.join(example)} " in f" {' '.join(page)} "
    return bool(ngram_set(example, NGRAM) & ngram_set(page, NGRAM))


def holding(lines: list, examples: list, method: str) -> dict:
    """Line -> the first task (by name) of an example it holds, for each line holding one."""
    found = {}
    for line in lines:
        page = reference_words(json.loads(line)["text"])
        tasks = [task for task, _, _, text in examples
                 if holds(page, reference_words(text), method)]
        if tasks:
            found[line] = min(tasks)
    return found


def notice(examples: list, method: str) -> str:
    """What the run prints of the examples too short for the method, per task, counted here."""
    least = MIN_EXACT if method == "exact" else NGRAM
    counts = {}
    for task, _, _, text in examples:
        short, total = counts.get(task, (0, 0))
        counts[task] = (short + (len(reference_words(text)) < least), total + 1)
    return (f"decontamination by {method}: left out as too short to match, per task: "
            + "; ".join(f"{task}: {short} of {total}"
                        for task, (short, total) in sorted(counts.items())) + " (")


@pytest.mark.parametrize("method, leaving, staying", [
    ("exact", (0, 1), (2, 3)),  # the 20- and 10-word runs; not the middle, nor the 5 words
    ("ngram13", (0, 2), (1, 3)),  # the 20-word run and the middle; not the 10 nor the 5 words
])
def test_the_method_decides_which_pages_leave_and_nothing_else_changes(
        shared_data, one_job, tmp_path, capsys, method, leaving, staying):
    expected = one_job("en")
    examples = planted_index(expected, tmp_path / "index.json.gz")
    output, excluded = tmp_path / "out", tmp_path / "excluded"
    counters = c4.main(variant_args(shared_data, "en") + [
        "--output", str(output), "--decontaminate", str(tmp_path / "index.json.gz"),
        "--decontamination_method", method, "--exclusions", str(excluded),
        "--exclusion_fraction", "1"])
    printed = capsys.readouterr().out
    long_pages = [line for line in lines_of(expected)
                  if len(json.loads(line)["text"].split()) > 60]
    holders = holding(lines_of(expected), examples, method)
    assert {long_pages[page] for page in leaving} <= set(holders)
    assert not {long_pages[page] for page in staying} & set(holders)
    assert lines_of(output) == [line for line in lines_of(expected) if line not in holders]
    tasks = list(holders.values())
    dropped = {name: value for name, value in counters["decontamination"].items()
               if name.startswith("pages.dropped:")}
    assert dropped == {f"pages.dropped:example_of:{task}": tasks.count(task)
                       for task in set(tasks)}
    records = json.loads((excluded / "exclusions.json").read_text())["records"]
    assert records["decontamination"] == {f"page:example_of:{task}": tasks.count(task)
                                          for task in set(tasks)}
    config = json.loads((output / "run_config.json").read_text())
    assert config["decontamination"] == {"index_path": str(tmp_path / "index.json.gz"),
                                         "method": method}
    assert str(tmp_path / "index.json.gz") in config["lists_sha256"]
    order = plan.stage_order()
    assert order.index("decontamination") > order.index("badwords")
    assert notice(examples, method) in printed


CHINESE = ("黑豹队的防守只丢了三百零八分在联赛中排名第六同时也以二十四次拦截领先国家橄榄球联盟"
           "并且四次入选职业碗他的队友贡献了六次擒杀")


@pytest.mark.parametrize("method, short", [
    ("exact", "super_glue_wic: 1 of 1; wmt_en_de: 1 of 2; xquad: 1 of 3 (an example under 8 "
              "words, or under 31 characters in a script without spaces, matches pages by "
              "chance; GPT-3 used no n-gram under 8 words)"),
    ("ngram13", "super_glue_wic: 1 of 1; wmt_en_de: 1 of 2; xquad: 2 of 3 (an example under 13 "
                "words, and under 50 characters in a script without spaces, has no n-gram)"),
])
def test_the_examples_too_short_to_match_are_counted_per_task_before_any_work(
        shared_data, tmp_path, capsys, method, short):
    """WMT's "Good." and WiC's "Real life." (each on many pages of the samples when matched),
    and Chinese examples of 20, 40 and 60 characters (the exact method needs 31, 13-grams 50)."""
    assert len(CHINESE) >= 60
    examples = [("wmt_en_de", "en", "0", "Good."), ("wmt_en_de", "en", "1", LONG),
                ("super_glue_wic", "sentence1", "0", "Real life."),
                ("xquad", "question", "0", CHINESE[:20]), ("xquad", "context", "1", CHINESE[:40]),
                ("xquad", "context", "2", CHINESE[:60])]
    ContaminationIndex.build(examples).save(str(tmp_path / "index.json.gz"))
    c4.main(variant_args(shared_data, "en") + [
        "--output", str(tmp_path / "out"), "--decontaminate", str(tmp_path / "index.json.gz"),
        "--decontamination_method", method, "--dry_run"])
    assert (f"decontamination by {method}: left out as too short to match, per task: {short}\n"
            in capsys.readouterr().out)
    assert not (tmp_path / "out").exists()


def test_a_staged_run_decontaminates_as_the_one_job_run(shared_data, one_job, tmp_path):
    planted_index(one_job("en"), tmp_path / "index.json.gz")
    args = variant_args(shared_data, "en") + ["--decontaminate", str(tmp_path / "index.json.gz")]
    c4.main(args + ["--output", str(tmp_path / "one")])
    finished = subprocess.run(
        [sys.executable, "-m", "pipelines.c4", *args, "--output", str(tmp_path / "staged"),
         "--staged", "--workers", "2", "--buckets", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert_same_output(tmp_path / "staged", tmp_path / "one")


def test_a_file_that_is_no_index_is_refused_before_any_work(shared_data, tmp_path):
    (tmp_path / "index.json.gz").write_bytes(b"not gzip")
    with pytest.raises(SystemExit, match="is not a contamination index"):
        c4.main(variant_args(shared_data, "en") + [
            "--output", str(tmp_path / "out"), "--decontaminate",
            str(tmp_path / "index.json.gz")])
    # The output folder may have been made to check that it is writable; nothing is in it.
    assert not list((tmp_path / "out").glob("*"))


def test_the_index_the_contamination_command_writes_alone_is_what_the_stage_reads(
        shared_data, tmp_path):
    index = tmp_path / "index" / "rte.json.gz"
    contamination_command.main(["--tasks", str(shared_data / "tasks"), "--task", "glue_rte",
                                "--index", str(index)])
    counters = c4.main(variant_args(shared_data, "en") + [
        "--output", str(tmp_path / "out"), "--decontaminate", str(index)])
    assert ContaminationIndex.load(str(index)).stats.examples > 0
    kept = counters["decontamination"]["pages.passed"]
    assert kept + sum(value for name, value in counters["decontamination"].items()
                      if name.startswith("pages.dropped:")) == counters["badwords"]["pages.passed"]
    assert kept == sum(counters["write"].values())
