"""pipelines/executors/: an executor is one class registered by name in base.EXECUTORS, and a
toy one defined here (the staged tasks run in this process, one after another) writes the
one-job run's bytes and is handed only the tasks without a valid marker, as it does running each
stage's tasks last first; the lock of the output folder keeps a second run out."""
import shutil
import signal
import subprocess
import sys
from typing import List

import pytest

from pipelines import c4
from pipelines.executors import base
from pipelines.executors import staged
from pipelines.executors.tasks import run_task
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args

# The tasks each stage handed the toy executor, by stage, in the order it ran them.
HANDED: dict = {}


class InProcess:
    """Runs a stage's tasks in this process, one after another."""
    workers = 1

    def __init__(self, run: staged.StagedRun, workers: int):
        HANDED.clear()

    def run(self, run: staged.StagedRun, stage: str, tasks, progress) -> List[
            staged.TaskMarker]:
        HANDED[stage] = [task.name for task in tasks]
        markers = []
        for task in tasks:
            progress.running(1)
            markers.append(run_task(run, task))
            progress.task_done(markers[-1])
        return markers


class InReverse(InProcess):
    """Runs a stage's tasks last first: no byte of the output may depend on which task of a
    stage ends first (how workers finish under load)."""

    def run(self, run: staged.StagedRun, stage: str, tasks, progress) -> List[
            staged.TaskMarker]:
        return super().run(run, stage, list(reversed(tasks)), progress)


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(base.EXECUTORS, "toy", f"{__name__}:InProcess")


def test_a_toy_executor_in_the_registry_writes_the_one_job_runs_bytes_and_honours_markers(
        shared_data, one_job, tmp_path, toy):
    args = variant_args(shared_data, "en") + ["--output", str(tmp_path), "--staged",
                                              "--executor", "toy", "--buckets", "2"]
    c4.main(args)
    assert HANDED["read"] == [f"read-{index:05d}" for index in range(5)]
    assert HANDED["url"] == ["url-00000", "url-00001"]
    assert_same_output(tmp_path, one_job("en"))
    # A task whose folder is gone is the only one a rerun computes: the rest keep their markers.
    shutil.rmtree(tmp_path / "parts" / "finish" / "finish-00001")
    c4.main(args)
    assert HANDED == {"finish": ["finish-00001"]}
    assert_same_output(tmp_path, one_job("en"))


def test_the_executor_option_offers_what_the_registry_holds(toy):
    choices = next(action.choices for action in c4.parser()._actions
                   if action.dest == "executor")
    assert choices == ["beam", "local", "toy"]


def test_a_second_run_into_the_same_folder_refuses_to_start(shared_data, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pipelines.executors import base\n"
        "with base.OutputLock(sys.argv[1]):\n"
        "    print('locked', flush=True); time.sleep(60)"), str(tmp_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SystemExit, match="another run writes into this output folder"):
            c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path)])
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The lock of a killed run goes with its process.
    c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path), "--max_files", "1"])
    assert not (tmp_path / ".c4-run.lock").exists()


def test_tasks_run_last_first_write_the_one_job_runs_bytes(shared_data, one_job, tmp_path,
                                                            monkeypatch):
    monkeypatch.setitem(base.EXECUTORS, "reversed", f"{__name__}:InReverse")
    c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path), "--staged",
                                              "--executor", "reversed", "--buckets", "3"])
    assert HANDED["read"] == [f"read-{index:05d}" for index in reversed(range(5))]
    assert HANDED["url"] == ["url-00002", "url-00001", "url-00000"]
    assert_same_output(tmp_path, one_job("en"))


def test_webtextlike_in_stages_keeps_the_listed_pages_and_their_drops_as_one_job(
        shared_data, one_job, tmp_path, toy, monkeypatch):
    """The OpenWebText join inside a URL task, with lists that name pages of the samples (the
    shared lists name none of them), and the read tasks' drops (pages over a length limit
    lowered to 5,000 characters) passed on to the finish tasks: the pages kept and the
    exclusions are the one-job run's, byte for byte."""
    import dataclasses
    import gzip
    import json
    configure = c4.configure
    monkeypatch.setattr(c4, "configure", lambda args: dataclasses.replace(
        configure(args), max_page_chars=5_000))
    urls = sorted(json.loads(line)["url"]
                  for path in sorted(one_job("en").glob("train-*.jsonl.gz"))
                  for line in gzip.decompress(path.read_bytes()).splitlines())[:30]
    assert len(urls) == 30
    url_list = tmp_path / "urls.txt"
    url_list.write_text("\n".join(urls) + "\n")
    args = variant_args(shared_data, "webtextlike", "released") + [
        "--webtext_urls", str(url_list), "--exclusion_fraction", "1"]
    # One exclusions folder, the first run's moved aside: run_config.json records its path.
    excluded = tmp_path / "excluded"
    c4.main(args + ["--output", str(tmp_path / "one"), "--exclusions", str(excluded),
                    "--no-staged"])
    excluded.rename(tmp_path / "excluded-one")
    c4.main(args + ["--output", str(tmp_path / "staged"), "--exclusions", str(excluded),
                    "--staged", "--executor", "toy", "--buckets", "2"])
    kept = [json.loads(line)["url"] for path in sorted((tmp_path / "one").glob("*.jsonl.gz"))
            for line in gzip.decompress(path.read_bytes()).splitlines()]
    assert kept and set(kept) <= set(urls)
    stages = json.loads((tmp_path / "one/stats.json").read_text())["stages"]
    assert stages["length"]["pages.dropped:too_long"] > 0
    assert_same_output(tmp_path / "staged", tmp_path / "one")
    assert ({path.name: path.read_bytes() for path in sorted(excluded.iterdir())}
            == {path.name: path.read_bytes()
                for path in sorted((tmp_path / "excluded-one").iterdir())})
