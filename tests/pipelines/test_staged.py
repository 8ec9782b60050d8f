"""A staged run (pipelines/executors/staged.py): every variant, under both rule sets, on local
worker processes and as Beam jobs per stage, writes the one-job run's bytes; killed (SIGKILL) in any
stage, a rerun reuses every task done and writes the same bytes; the bad states of its folder are
redone or refused with a message; its progress, plan and memory are what it says."""
import io
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from deploy.rehearse import file_digests
from pipelines import c4
from pipelines.executors import base, layout, staged, task_files, tasks
from pipelines.executors.progress import Progress
from pipelines.filters import dedup
from tests.support import killing
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args

REPO = pathlib.Path(__file__).resolve().parents[2]
VARIANTS = [("en", None), ("en.noclean", None), ("en.linededup", None), ("realnewslike", None),
            ("webtextlike", None), ("en.noblocklist", None), ("de-fr-ro", None),
            ("multilingual", None), ("en", "released"), ("en.noclean", "released"),
            ("realnewslike", "released"), ("webtextlike", "released"),
            ("en.noblocklist", "released")]
EXECUTORS = {"two-workers": ["--workers", "2", "--buckets", "3"],
             "one-worker": ["--workers", "1", "--buckets", "2"],
             "beam-jobs": ["--executor", "beam", "--buckets", "2"]}
# What runs in `make test`: each executor, both rule sets, each kind of stage list (webtextlike's
# URL lists, en.noclean without spans, mC4's language folders); the rest is slow-marked.
QUICK = {("en", None, "two-workers"), ("multilingual", None, "one-worker"),
         ("webtextlike", "released", "beam-jobs"), ("en.noclean", None, "two-workers")}


def _cases():
    for variant, rules in VARIANTS:
        for executor in EXECUTORS:
            marks = () if (variant, rules, executor) in QUICK else (pytest.mark.slow,)
            yield pytest.param(variant, rules, executor, marks=marks,
                               id=f"{variant}-{rules or 'paper'}-{executor}")


def staged_command(args: list, output: pathlib.Path, *extra) -> list:
    return [sys.executable, "-m", "pipelines.c4", *args, "--output", str(output), "--staged",
            *extra]


def progress(output: pathlib.Path) -> dict:
    try:
        return json.loads((output / base.PARTS_FOLDER / base.PROGRESS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def run_to_end(args: list, output: pathlib.Path, *extra) -> dict:
    finished = subprocess.run(staged_command(args, output, *extra), cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return progress(output)


@pytest.mark.parametrize("variant,rules,executor", list(_cases()))
def test_a_staged_run_writes_the_bytes_of_the_one_job_run(shared_data, one_job, tmp_path,
                                                          variant, rules, executor):
    args = variant_args(shared_data, variant, rules)
    final = run_to_end(args, tmp_path, *EXECUTORS[executor])
    assert_same_output(tmp_path, one_job(variant, rules))
    assert final["stage"] == "done"
    assert all(counts["done"] == counts["tasks"] and counts["reused"] == 0
               for counts in final["stages"].values() if counts)


def test_pages_per_shard_gives_the_one_job_runs_files(shared_data, one_job, tmp_path):
    """The number of shards follows from every split's pages (the partition stage)."""
    args = variant_args(shared_data, "multilingual")
    run_to_end(args, tmp_path, "--buckets", "3", "--workers", "2", "--pages_per_shard", "40")
    expected = one_job("multilingual", extra=("--pages_per_shard", "40"))
    assert_same_output(tmp_path, expected)
    assert any("-of-00002" in path.name for path in expected.rglob("*"))  # Some language got two shards.


@pytest.mark.parametrize("variant,rules,stages", [
    ("en", None, ("url", "finish")), ("webtextlike", "released", ("url",)),
    ("multilingual", None, ("url", "finish"))])
def test_a_bucket_bigger_than_a_task_holds_is_taken_in_parts_with_the_same_bytes(
        shared_data, one_job, tmp_path, variant, rules, stages):
    """One bucket for the whole input, and a task that holds 50 KB of it at once: its URL
    task and finish task spread it over temporary files and take it a part at a time (the
    few pages webtextlike's lists keep fit a finish task at once)."""
    args = variant_args(shared_data, variant, rules)
    run_to_end(args, tmp_path, "--buckets", "1", "--task_bytes", "50000", "--workers", "1")
    assert_same_output(tmp_path, one_job(variant, rules))
    for stage in stages:
        marker = tmp_path / base.PARTS_FOLDER / stage / f"{stage}-00000" / staged.MARKER_FILE
        assert json.loads(marker.read_text())["facts"]["parts"] > 10


def test_a_rerun_reuses_every_task(shared_data, one_job, tmp_path):
    args = variant_args(shared_data, "en")
    run_to_end(args, tmp_path, "--buckets", "2", "--workers", "2")
    again = run_to_end(args, tmp_path, "--buckets", "2", "--workers", "2")
    assert all(counts["reused"] == counts["tasks"] for counts in again["stages"].values())
    assert_same_output(tmp_path, one_job("en"))


# Killed anywhere, resumed with the same bytes.

def markers_by_stage(output: pathlib.Path) -> dict:
    return {stage: len(list((output / base.PARTS_FOLDER / stage).glob(
        f"*/{staged.MARKER_FILE}"))) for stage in layout.STAGE_NAMES}


def after_markers(stage: str, count: int):
    return lambda output: markers_by_stage(output)[stage] >= count


def kill_and_resume(shared_data, one_job, tmp_path, variant, rules, when, extra) -> str:
    """Kills a staged run once `when` holds, reruns it to the end, and checks that the rerun
    reused every task done at the kill and wrote the one-job bytes; the stage it was killed in."""
    args = variant_args(shared_data, variant, rules)
    assert killing.run_killed(staged_command(args, tmp_path, *extra), REPO,
                              lambda: when(tmp_path)), "the run ended before the kill"
    done = markers_by_stage(tmp_path)
    killed_in = progress(tmp_path).get("stage")
    resumed = run_to_end(args, tmp_path, *extra)
    reused = {stage: (counts or {}).get("reused", 0) for stage, counts in resumed["stages"].items()}
    assert reused == {stage: done[stage] for stage in reused}, (killed_in, done)
    assert_same_output(tmp_path, one_job(variant, rules))
    return killed_in


KILL_OPTIONS = ("--workers", "1", "--buckets", "4")


@pytest.mark.parametrize("stage,count", [("read", 2), ("finish", 1)])
def test_en_killed_in_a_stage_and_resumed_reuses_every_task_done(shared_data, one_job, tmp_path,
                                                                 stage, count):
    kill_and_resume(shared_data, one_job, tmp_path, "en", None, after_markers(stage, count),
                    KILL_OPTIONS)


KILL_MATRIX = [(variant, rules, stage, count)
               for variant, rules in [("en", None), ("realnewslike", None),
                                      ("webtextlike", "released"), ("multilingual", None),
                                      ("en", "released")]
               for stage, count in [("read", 1), ("url", 2), ("spans", 1), ("finish", 3),
                                    ("partition", 1), ("write", 1)]]


@pytest.mark.slow  # Thirty kills: about three minutes here.
@pytest.mark.parametrize("variant,rules,stage,count", KILL_MATRIX)
def test_the_kill_matrix(shared_data, one_job, tmp_path, variant, rules, stage, count):
    kill_and_resume(shared_data, one_job, tmp_path, variant, rules, after_markers(stage, count),
                    KILL_OPTIONS)


# The bad states of a staged run's folder, on a run done once.

@pytest.fixture(scope="module")
def done_once(shared_data, tmp_path_factory):
    output = tmp_path_factory.mktemp("staged-done")
    c4.main(variant_args(shared_data, "en") + ["--output", str(output), "--staged",
                                               "--buckets", "2", "--workers", "1"])
    return output


@pytest.fixture
def done_run(shared_data, done_once, tmp_path):
    output = tmp_path / "output"
    shutil.copytree(done_once, output)
    return variant_args(shared_data, "en"), output


def rerun(args, output, *extra) -> dict:
    c4.main(args + ["--output", str(output), "--staged", "--buckets", "2", "--workers", "1",
                    *extra])
    return progress(output)["stages"]


def task_folder(output, stage, index) -> pathlib.Path:
    return output / base.PARTS_FOLDER / stage / f"{stage}-{index:05d}"


def test_a_task_without_its_marker_is_redone_alone(done_run, caplog):
    args, output = done_run
    expected = file_digests(output)
    (task_folder(output, "url", 1) / staged.MARKER_FILE).unlink()
    (task_folder(output, "url", 1) / "pages").write_bytes(b"half")
    stages = rerun(args, output)
    assert stages["url"]["reused"] == 1 and stages["read"]["reused"] == stages["read"]["tasks"]
    assert "stopped while it wrote" in caplog.text
    assert file_digests(output) == expected


@pytest.mark.parametrize("damage", ["truncated marker", "missing file", "truncated file",
                                    "other configuration's marker", "missing shard"])
def test_a_task_whose_marker_and_files_disagree_is_redone(done_run, damage, caplog):
    args, output = done_run
    expected = file_digests(output)
    folder = task_folder(output, "finish", 0)
    marker = folder / staged.MARKER_FILE
    record = json.loads(marker.read_text())
    if damage == "truncated marker":
        marker.write_bytes(marker.read_bytes()[:40])
    elif damage == "missing file":
        (folder / record["files"][0]["name"]).unlink()
    elif damage == "truncated file":
        path = folder / record["files"][0]["name"]
        path.write_bytes(path.read_bytes()[:-3])
    elif damage == "other configuration's marker":
        marker.write_text(json.dumps({**record, "config_sha256": "0" * 64}))
    else:
        folder = task_folder(output, "write", 0)
        name = json.loads((folder / staged.MARKER_FILE).read_text())["files"][0]["name"]
        (output / name).unlink()
    stages = rerun(args, output)
    redone = "write" if damage == "missing shard" else "finish"
    assert stages[redone]["reused"] == stages[redone]["tasks"] - 1
    assert "redoing" in caplog.text
    assert file_digests(output) == expected


def test_a_file_whose_bytes_are_not_its_markers_is_an_error_naming_the_task(done_run, capsys):
    """Same size, other bytes: found when read, and the message says what to delete."""
    args, output = done_run
    path = task_folder(output, "url", 0) / "pages"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    for stage in ("finish", "partition", "write"):
        shutil.rmtree(output / base.PARTS_FOLDER / stage)
    with pytest.raises(SystemExit) as exit_:
        rerun(args, output)
    assert "does not match its task's marker" in str(exit_.value)
    assert "url-00000" in str(exit_.value)


def test_another_configuration_is_refused_and_restart_starts_afresh(done_run, one_job):
    args, output = done_run
    with pytest.raises(SystemExit) as exit_:
        rerun(args + ["--validation_fraction", "0.5"], output)
    assert "another configuration" in str(exit_.value)
    assert "validation_fraction" in str(exit_.value)
    stages = rerun(args, output, "--restart", "--buckets", "3")
    assert stages["url"] == {"tasks": 3, "done": 3, "running": 0, "left": 0, "reused": 0}
    assert_same_output(output, one_job("en"))


def test_a_second_run_into_the_same_folder_is_refused(done_run):
    args, output = done_run
    with base.OutputLock(str(output)):
        with pytest.raises(SystemExit) as exit_:
            rerun(args, output)
    assert "another run writes into this output folder" in str(exit_.value)


def test_the_dry_run_prints_each_stage_with_its_tasks_done_and_writes_nothing(done_run, capsys):
    args, output = done_run
    shutil.rmtree(output / base.PARTS_FOLDER / "finish" / "finish-00001")
    before = file_digests(output)
    c4.main(args + ["--output", str(output), "--staged", "--buckets", "2", "--dry_run"])
    printed = capsys.readouterr().out
    assert "read: 5 tasks, 5 done" in printed
    assert "finish: 2 tasks, 1 done" in printed
    assert "write: a task per output shard" in printed
    assert "a failure costs at most its unfinished tasks" in printed
    assert file_digests(output) == before


def test_progress_and_the_counters_so_far_are_written_while_the_run_goes(shared_data, tmp_path):
    args = variant_args(shared_data, "en")
    seen = []

    def in_finish(output):
        record = progress(output)
        if record.get("stage") == "finish":
            seen.append((record, json.loads((output / "stats.json").read_text())))
            return True
        return False
    assert killing.run_killed(staged_command(args, tmp_path, *KILL_OPTIONS), REPO,
                              lambda: in_finish(tmp_path))
    record, stats_so_far = seen[0]
    assert record["stages"]["read"] == {"tasks": 5, "done": 5, "running": 0, "left": 0,
                                        "reused": 0}
    assert record["workers_busy"].endswith("of 1")
    assert stats_so_far["progress"]["stage"] == "finish"
    assert stats_so_far["stages"]["read"]["files.read"] == 5
    assert "language" not in stats_so_far["stages"] or record["stages"]["finish"]["done"]


def test_a_run_too_big_for_one_job_runs_in_stages(shared_data, one_job, tmp_path, monkeypatch,
                                                  caplog):
    """The memory warning of a one-job run becomes the choice of a staged run."""
    monkeypatch.setattr(c4, "machine_memory_bytes", lambda: 1_000_000)
    c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path), "--workers", "1"])
    assert "running in stages" in caplog.text
    assert (tmp_path / base.PARTS_FOLDER / "finish").is_dir()
    assert_same_output(tmp_path, one_job("en"))


def test_a_staged_run_that_reads_nothing_writes_no_dataset(tmp_path, shared_data):
    bad = tmp_path / "bad.warc.wet.gz"
    bad.write_bytes(b"not gzip at all")
    output = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        c4.main(["--variant", "en", "--input", str(bad), "--badwords",
                 str(shared_data / "badwords/en"), "--output", str(output), "--staged",
                 "--workers", "1"])
    assert "no input could be read" in str(exit_.value)
    assert not list(output.glob("*.jsonl.gz"))
    assert not (output / base.PARTS_FOLDER).exists()
    assert "error" in json.loads((output / "stats.json").read_text())


def test_a_tasks_memory_is_bounded_by_its_bucket(shared_data, tmp_path):
    """With 8 buckets, no URL or finish task holds more than a few times an eighth of the pages
    (a task holds its bucket's pages; the input is not held anywhere)."""
    run_to_end(variant_args(shared_data, "en"), tmp_path, "--buckets", "8", "--workers", "2")
    held = {}
    for stage in ("url", "finish"):
        for marker in (tmp_path / base.PARTS_FOLDER / stage).glob(f"*/{staged.MARKER_FILE}"):
            held.setdefault(stage, []).append(json.loads(marker.read_text())["facts"]["pages_in"])
    total = sum(held["url"])
    assert total == json.loads((tmp_path / "stats.json").read_text())["stages"]["read"][
        "pages.passed"]
    assert len(held["url"]) == 8 and max(held["url"]) <= 2 * total / 8
    assert max(held["finish"]) <= 2 * sum(held["finish"]) / 8


def test_each_blocks_losers_are_those_of_resolving_all_records_at_once():
    """A span bucket resolves the winners of every URL bucket, and tells each its losers: the
    losers of resolving all the blocks' records at once, each sent to the block it came from."""
    import random
    rng = random.Random(0)
    for mode in ("spans", "lines"):
        key_width, page_width = dedup.record_widths(mode)
        keys = [rng.randbytes(key_width) for _ in range(40)]
        pages = [rng.randbytes(page_width) for _ in range(60)]
        blocks, senders = [], {}
        for bucket in range(4):
            records = b"".join(key + page for page in pages[bucket * 15:(bucket + 1) * 15]
                               for key in rng.sample(keys, 6))
            blocks.append(dedup.resolve_records(records, mode)[0])
            senders.update((page, bucket) for page in pages[bucket * 15:(bucket + 1) * 15])
        blocks.append(b"")  # A URL bucket that sent nothing gets nothing.
        _, losers = dedup.resolve_records(b"".join(blocks), mode)
        answered = [list(each) for each in dedup.losers_of_blocks(blocks, mode)]
        assert sorted(loser for each in answered for loser in each) == sorted(losers)
        assert all(senders[page] == bucket for bucket, each in enumerate(answered)
                   for page, _ in each)
        assert answered[-1] == [] and all(answered[:4])


def test_the_time_left_counts_the_stage_left_and_the_later_stages_by_their_measured_cpu(
        tmp_path):
    names = ["read", "url", "finish"]
    (tmp_path / base.PARTS_FOLDER).mkdir()
    progress = Progress(str(tmp_path), "en", names, workers=2, stream=io.StringIO())
    progress.start_stage("read", 5, [])
    progress.running(2)
    progress.task_done(staged.TaskMarker("read", 0, "sha", (), {}, 4.0, {"pages_in": 100}))
    record = progress.record()
    # Four read tasks left at 4 s on 2 workers, then url and finish at their CPU over the
    # read stage's (20 s in all).
    later = (layout.STAGE_CPU_OVER_READ["url"] + layout.STAGE_CPU_OVER_READ["finish"]) * 20 / 2
    assert record["eta_seconds"] == pytest.approx(4 * 4 / 2 + later, abs=0.1)
    assert record["stages"]["read"] == {"tasks": 5, "done": 1, "running": 1, "left": 3,
                                        "reused": 0}
    assert record["workers_busy"] == "1 of 2"
    assert "stage read (1 of 3): 1 of 5 tasks done" in progress.line(record)
    written = json.loads((tmp_path / base.PARTS_FOLDER / base.PROGRESS_FILE).read_text())
    assert written["stages"] == record["stages"] and written["eta_seconds"] == record[
        "eta_seconds"]
    assert json.loads((tmp_path / "stats.json").read_text())["progress"]["stage"] == "read"


def test_more_buckets_than_the_system_lets_a_task_keep_open_is_refused_before_any_work(
        shared_data, tmp_path):
    import resource
    allowed = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with pytest.raises(SystemExit) as exit_:
        c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path), "--staged",
                                                   "--buckets", str(allowed)])
    assert "ulimit -Hn" in str(exit_.value) and "fewer --buckets" in str(exit_.value)
    assert not (tmp_path / base.PARTS_FOLDER).exists()


def test_a_failing_task_is_named_the_stage_stops_and_a_rerun_keeps_the_tasks_done(
        shared_data, one_job, tmp_path, monkeypatch, caplog):
    """The workers are forked from this process, so they run the broken finish task too."""
    def broken(*_):
        raise RuntimeError("a bug in this stage")
    args = variant_args(shared_data, "en") + ["--output", str(tmp_path), "--staged",
                                              "--buckets", "3", "--workers", "2"]
    with monkeypatch.context() as patch:
        patch.setitem(tasks._TASKS, "finish", broken)
        with pytest.raises(SystemExit) as exit_:
            c4.main(args)
    assert "finish-0000" in str(exit_.value) and "a bug in this stage" in str(exit_.value)
    assert "the tasks done are kept" in str(exit_.value)
    assert markers_by_stage(tmp_path)["finish"] == 0
    c4.main(args)
    resumed = progress(tmp_path)["stages"]
    assert resumed["url"]["reused"] == 3 and resumed["finish"]["reused"] == 0
    assert_same_output(tmp_path, one_job("en"))


def test_a_task_that_could_not_read_a_manifest_gets_no_marker_and_skipped_files_a_warning(
        caplog):
    task = staged.Task("read", 3)
    with pytest.raises(staged.StagedError, match="read-00003 could not read a manifest"):
        tasks._check_read(task, {"read": {"manifests.skipped:unreadable": 1}})
    with pytest.raises(staged.StagedError, match="could not read an OpenWebText URL list"):
        tasks._check_read(staged.Task("url_lists", 0),
                           {"domains": {"url_lists.skipped:unreadable": 1}})
    tasks._check_read(task, {"read": {"files.skipped:unreadable": 2, "files.read": 3}})
    assert "read-00003 skipped 2 unreadable WET files" in caplog.text


def test_the_parts_of_a_bucket_share_its_pages_whatever_the_number_of_buckets():
    """Under the paper rules a page key is the URL's hash, whose low digits chose the bucket:
    the part is taken from the digits above them, so a bucket's pages fill every part."""
    from text.hashing import digest64
    buckets, parts_count = 1024, 8
    keys = [digest64(f"example.com/{index}") for index in range(200_000)]
    in_bucket = [key for key in keys if int.from_bytes(key, "big") % buckets == 5]
    filled = {task_files.part_of_page_key(key, buckets, parts_count) for key in in_bucket}
    assert filled == set(range(parts_count))
    urls = [f"example.com/{index}" for index in range(200_000)]
    filled = {task_files.part_of_url(url, buckets, parts_count) for url in urls
              if int.from_bytes(digest64(url), "big") % buckets == 5}
    assert filled == set(range(parts_count))


def test_a_rerun_with_another_task_bytes_resumes_reusing_every_task_done(done_run):
    """Issue 48, behaviour 1: what a worker killed for memory is told (rerun with a smaller
    --task_bytes) resumes the run: every task done is reused, the tasks left take their bucket
    in more parts, and the output is the same bytes."""
    args, output = done_run
    expected = file_digests(output)
    for stage in ("finish", "partition", "write"):
        shutil.rmtree(output / base.PARTS_FOLDER / stage)
    stages = rerun(args, output, "--task_bytes", "20000")
    for stage in ("read", "url", "spans"):
        assert stages[stage]["reused"] == stages[stage]["tasks"] > 0, stage
    assert stages["finish"]["reused"] == 0 and stages["finish"]["tasks"] == 2
    finish = json.loads((task_folder(output, "finish", 0) / staged.MARKER_FILE).read_text())
    assert finish["facts"]["parts"] > 1
    assert file_digests(output) == expected
