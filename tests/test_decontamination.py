"""--decontaminate (pipelines/stages.py Decontaminate): the pages that hold an example of the
index's tasks leave the corpus, counted per task and recorded in the exclusions; the rest of the
corpus is the run without it, line for line; a staged run writes the same bytes; a file that is
no index is refused before any work."""
import gzip
import json
import pathlib
import subprocess
import sys

import pytest

from model.tasks import contamination as contamination_command
from pipelines import c4, stats
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args
from text.contamination import ContaminationIndex

REPO = pathlib.Path(__file__).resolve().parents[1]


def lines_of(folder: pathlib.Path) -> list:
    return [line for path in sorted(folder.glob("*.jsonl.gz"))
            for line in gzip.decompress(path.read_bytes()).splitlines()]


def planted_index(one_job_output: pathlib.Path, path: pathlib.Path) -> ContaminationIndex:
    """An index whose "examples" are 20-word runs of three pages the run kept (two of task_a,
    one of task_b), as a benchmark's test set could be."""
    kept = [json.loads(line)["text"] for line in lines_of(one_job_output)]
    texts = [text.split() for text in kept if len(text.split()) > 60][:3]
    examples = [("task_a", "sentence", "0", " ".join(texts[0][30:50])),
                ("task_a", "sentence", "1", " ".join(texts[1][30:50])),
                ("task_b", "premise", "0", " ".join(texts[2][30:50]))]
    index = ContaminationIndex.build(examples)
    index.save(str(path))
    return index


@pytest.mark.parametrize("method", ["ngram13", "exact"])
def test_the_pages_holding_an_example_leave_and_nothing_else_changes(shared_data, one_job,
                                                                    tmp_path, method):
    expected = one_job("en")
    index = planted_index(expected, tmp_path / "index.json.gz")
    output, excluded = tmp_path / "out", tmp_path / "excluded"
    counters = c4.main(variant_args(shared_data, "en") + [
        "--output", str(output), "--decontaminate", str(tmp_path / "index.json.gz"),
        "--decontamination_method", method, "--exclusions", str(excluded),
        "--exclusion_fraction", "1"])
    holding = {}
    for line in lines_of(expected):
        found = getattr(index.matches(json.loads(line)["text"]), method)
        if found:
            holding[line] = min(key.task for key in found)
    assert set(holding.values()) == {"task_a", "task_b"}
    assert lines_of(output) == [line for line in lines_of(expected) if line not in holding]
    dropped = {name: value for name, value in counters["decontamination"].items()
               if name.startswith("pages.dropped:")}
    assert dropped == {f"pages.dropped:example_of:{task}": list(holding.values()).count(task)
                       for task in set(holding.values())}
    records = json.loads((excluded / "exclusions.json").read_text())["records"]
    assert records["decontamination"] == {
        f"page:example_of:{task}": count for task, count in
        ((task, list(holding.values()).count(task)) for task in set(holding.values()))}
    config = json.loads((output / "run_config.json").read_text())
    assert config["decontamination"] == {"index_path": str(tmp_path / "index.json.gz"),
                                         "method": method}
    assert str(tmp_path / "index.json.gz") in config["lists_sha256"]
    assert stats.STAGE_ORDER.index("decontamination") > stats.STAGE_ORDER.index("badwords")


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
    assert not (tmp_path / "out").exists()


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
