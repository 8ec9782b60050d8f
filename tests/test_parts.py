"""A job in parts (pipelines/parts.py): killed (SIGKILL) in each phase and resumed, it writes
the bytes of an uninterrupted run, redoing only the groups that were not done; the bad states
of its folder are detected and redone or refused."""
import dataclasses
import gzip
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from deploy.rehearse import file_digests
from tests.support.outputs import assert_same_output
from tests.support.references import build_reference
from pipelines import c4, files, inputs, parts
from pipelines.page import Page
from tests.support import killing
from tests.support.variant_runs import variant_args

REPO = pathlib.Path(__file__).resolve().parents[1]
GROUP_FILES = "1"  # Five groups of the five shared WET files.


def progress(output: pathlib.Path) -> dict:
    try:
        return json.loads((output / parts.PARTS_FOLDER / parts.PROGRESS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def markers(output: pathlib.Path) -> int:
    return len(list((output / parts.PARTS_FOLDER).glob(f"group-*/{parts.MARKER_FILE}")))


def command(args: list, output: pathlib.Path, extra=()) -> list:
    return [sys.executable, "-m", "pipelines.c4", *args, "--output", str(output),
            "--in_parts", "--group_files", GROUP_FILES, *extra]


def run_killed(args: list, output: pathlib.Path, when, extra=()) -> bool:
    return killing.run_killed(command(args, output, extra), REPO, lambda: when(output))


def run_to_end(args: list, output: pathlib.Path, extra=()) -> dict:
    finished = subprocess.run(command(args, output, extra), cwd=REPO, capture_output=True,
                              text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return progress(output)


def after_groups(count: int):
    return lambda output: markers(output) >= count


def writing_shards(output):
    """Once the global stage has written a shard (the first of several)."""
    return progress(output).get("phase") == "global" and any(output.rglob("train-*.jsonl.gz"))


def in_global_stage(delay: float):
    started = []

    def when(output):
        if progress(output).get("phase") != "global":
            return False
        started.append(started[0] if started else time.monotonic())
        return time.monotonic() - started[0] >= delay
    return when


def test_a_run_in_parts_writes_the_bytes_of_one_job_and_a_rerun_reuses_every_group(
        shared_data, one_job, tmp_path):
    args = variant_args(shared_data, "en")
    assert run_to_end(args, tmp_path)["groups"] == {
        "total": 5, "done": 5, "running": 0, "left": 0, "reused": 0, "computed": 5}
    assert_same_output(tmp_path, one_job("en"))
    assert not (tmp_path / parts.LOCK_FILE).exists()
    assert run_to_end(args, tmp_path)["groups"]["computed"] == 0
    assert_same_output(tmp_path, one_job("en"))


def _kill_and_resume(shared_data, one_job, tmp_path, variant, when, done_before):
    args = variant_args(shared_data, variant)
    assert run_killed(args, tmp_path, when), "the run ended before the kill"
    done = markers(tmp_path)
    assert done >= done_before
    resumed = run_to_end(args, tmp_path)
    assert resumed["groups"]["reused"] == done
    assert resumed["groups"]["computed"] == 5 - done
    assert_same_output(tmp_path, one_job(variant))


@pytest.mark.parametrize("when,done_before", [
    (after_groups(2), 2),
    (in_global_stage(0.3), 5),
], ids=["in-groups", "in-global"])
def test_en_killed_and_resumed_writes_the_same_bytes(shared_data, one_job, tmp_path, when,
                                                     done_before):
    _kill_and_resume(shared_data, one_job, tmp_path, "en", when, done_before)


@pytest.mark.slow  # Four variants, four kill points: about two minutes here.
@pytest.mark.parametrize("variant", ["en", "realnewslike", "webtextlike", "multilingual"])
@pytest.mark.parametrize("when,done_before", [
    (after_groups(1), 1), (after_groups(4), 4), (in_global_stage(0.0), 5),
    (writing_shards, 5),
], ids=["after-1-group", "after-4-groups", "global-start", "writing-shards"])
def test_each_variant_killed_and_resumed_writes_the_same_bytes(shared_data, one_job, tmp_path,
                                                               variant, when, done_before):
    _kill_and_resume(shared_data, one_job, tmp_path, variant, when, done_before)


@pytest.mark.slow  # The matrix above kills in each phase; this kills in both, one after the other.
def test_killed_twice_once_per_phase_and_resumed(shared_data, one_job, tmp_path):
    args = variant_args(shared_data, "en")
    assert run_killed(args, tmp_path, after_groups(3))
    assert run_killed(args, tmp_path, in_global_stage(0.2))
    assert run_to_end(args, tmp_path)["groups"]["computed"] == 0
    assert_same_output(tmp_path, one_job("en"))


# The bad states of a parts folder, on a run done in parts once.

@pytest.fixture(scope="module")
def done_run_once(shared_data, tmp_path_factory):
    output = tmp_path_factory.mktemp("done-run")
    c4.main(variant_args(shared_data, "en") + ["--output", str(output), "--in_parts",
                                               "--group_files", GROUP_FILES])
    return output


@pytest.fixture
def done_run(shared_data, done_run_once, tmp_path):
    """A run in parts that has ended, in a folder of its own: (its arguments, its output)."""
    output = tmp_path / "output"
    shutil.copytree(done_run_once, output)
    return variant_args(shared_data, "en"), output


def rerun(args, output, *extra) -> dict:
    c4.main(args + ["--output", str(output), "--in_parts", "--group_files", GROUP_FILES,
                    *extra])
    return progress(output)["groups"]


def group_folder(output, index) -> pathlib.Path:
    return output / parts.PARTS_FOLDER / f"group-{index:05d}"


def test_a_group_without_its_marker_is_redone(done_run):
    args, output = done_run
    expected = file_digests(output)
    (group_folder(output, 3) / parts.MARKER_FILE).unlink()
    (group_folder(output, 3) / "file-0000003.pages").write_bytes(b"half")
    assert rerun(args, output)["computed"] == 1
    assert file_digests(output) == expected


@pytest.mark.parametrize("damage", ["truncated marker", "missing part", "truncated part"])
def test_a_marker_whose_files_are_not_whole_is_detected_and_its_group_redone(done_run, damage,
                                                                            capsys):
    args, output = done_run
    expected = file_digests(output)
    folder = group_folder(output, 2)
    marker = folder / parts.MARKER_FILE
    part = next(folder.glob("*.pages"))
    if damage == "truncated marker":
        marker.write_bytes(marker.read_bytes()[:40])
    elif damage == "missing part":
        part.unlink()
    else:
        part.write_bytes(part.read_bytes()[:-100])
    assert rerun(args, output)["computed"] == 1
    assert file_digests(output) == expected


def test_a_part_file_changed_in_place_fails_the_global_job_naming_its_group(done_run):
    args, output = done_run
    part = next(group_folder(output, 4).glob("*.pages"))
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match="does not match its group's marker.*group-00004"):
        rerun(args, output)


def test_parts_of_another_configuration_are_refused_and_restart_starts_afresh(done_run,
                                                                             capsys):
    args, output = done_run
    with pytest.raises(SystemExit, match="another configuration.*validation_fraction.*--restart"):
        rerun(args, output, "--validation_fraction", "0.5")
    groups = rerun(args, output, "--validation_fraction", "0.5", "--restart")
    assert groups["computed"] == 5 and groups["reused"] == 0


def test_a_second_run_into_the_same_folder_refuses_to_start(shared_data, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pipelines import parts\n"
        "with parts.OutputLock(sys.argv[1]):\n"
        "    print('locked', flush=True); time.sleep(60)"), str(tmp_path)], cwd=REPO,
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
    assert not (tmp_path / parts.LOCK_FILE).exists()


def test_the_dry_run_prints_the_plan_and_writes_nothing(done_run, capsys):
    args, output = done_run
    (group_folder(output, 1) / parts.MARKER_FILE).unlink()
    before = file_digests(output), sorted(os.listdir(output / parts.PARTS_FOLDER))
    capsys.readouterr()
    c4.main(args + ["--output", str(output), "--in_parts", "--group_files", GROUP_FILES,
                    "--dry_run"])
    printed = capsys.readouterr().out
    assert ("5 groups of up to 1 WET file; 4 done (reused), 1 to compute, 1 of them redone "
            "(1 file) in 1 job of up to 1 group") in printed
    assert f"  redo group-00001: {parts.STOPPED_WHILE_WRITTEN}" in printed
    assert (file_digests(output), sorted(os.listdir(output / parts.PARTS_FOLDER))) == before


def test_progress_and_the_counters_so_far_are_in_stats_json_while_the_job_runs(shared_data,
                                                                              tmp_path):
    args = variant_args(shared_data, "en")
    seen = {}

    def when(output):
        try:
            record = json.loads((output / "stats.json").read_text())
        except (OSError, ValueError):
            return False
        if record.get("progress", {}).get("groups", {}).get("done", 0) >= 2:
            seen.update(record)
            return True
        return False
    assert run_killed(args, tmp_path, when)
    assert seen["progress"]["groups"]["total"] == 5
    assert seen["progress"]["pages_per_second"] > 0
    assert seen["stages"]["read"]["files.read"] == seen["progress"]["groups"]["done"]


def test_part_files_round_trip_pages_and_refuse_other_bytes(tmp_path):
    pages = [Page(f"http://example.com/{index}", f"example.com/{index}", "2019-04-18T10:13:24Z",
                  "text/plain", index, "text \u00e9 " * index, input_position=(3, index))
             for index in range(300)]
    path = str(tmp_path / parts.part_name(3))
    record = parts.write_part(path, pages)
    assert record.pages == 300 and record.bytes == os.path.getsize(path)
    assert list(parts.read_part(path, record)) == pages
    with open(path, "r+b") as part:
        part.truncate(record.bytes - 1)
    with pytest.raises(parts.PartsError):
        list(parts.read_part(path, record))


def test_groups_cover_the_input_list_in_order():
    groups = parts.plan_groups(10, 4)
    assert [(group.name, group.files) for group in groups] == [
        ("group-00000", range(0, 4)), ("group-00001", range(4, 8)), ("group-00002", range(8, 10))]
    with pytest.raises(ValueError):
        parts.plan_groups(10, 0)


def test_bad_wet_files_in_parts_are_skipped_counted_and_the_output_is_one_jobs(shared_data,
                                                                              tmp_path, caplog):
    source = (shared_data / "wet/realistic/CC-MAIN-2019-30-part-1.warc.wet.gz").read_bytes()
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a-truncated.warc.wet.gz").write_bytes(source[:len(source) // 3])
    (inputs / "b-text.warc.wet.gz").write_bytes(b"this is not a gzip file" * 100)
    shutil.copy(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz", inputs)
    args = ["--variant", "en", "--input", str(inputs / "*"),
            "--badwords", str(shared_data / "badwords/en")]
    one = build_reference(tmp_path / "references", args).folder
    in_parts = c4.main(args + ["--output", str(tmp_path / "parts"), "--in_parts",
                               "--group_files", GROUP_FILES])
    assert in_parts["read"]["files.skipped:not_wet"] == 1
    assert_same_output(tmp_path / "parts", one)  # stats.json's counters and problems too.
    assert any("group-00001 skipped 1 unreadable WET file (" in record.getMessage()
               for record in caplog.records)


def test_a_manifest_the_workers_cannot_read_leaves_its_group_to_the_rerun(shared_data, tmp_path,
                                                                          monkeypatch):
    # Paths relative to --cc_base_url, as Common Crawl's are: a small sample, three times.
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress("\n".join(["whirlwind.warc.wet.gz"] * 3).encode()))
    args = ["--variant", "en", "--input", str(manifest), str(manifest),
            "--cc_base_url", str(shared_data / "wet/whirlwind-python"),
            "--badwords", str(shared_data / "badwords/en"), "--output", str(tmp_path / "out"),
            "--in_parts", "--group_files", "3"]
    listings = []
    listed = inputs.manifest_paths

    def first_listing_only(path, base_url):
        # The launcher's listings (one a manifest) and the first group's; the second group's
        # fails.
        listings.append(path)
        if len(listings) > 3:
            raise files.InputError(f"cannot read {path}")
        return listed(path, base_url)
    monkeypatch.setattr(inputs, "manifest_paths", first_listing_only)
    with pytest.raises(SystemExit, match="group-00001 could not read a manifest"):
        c4.main(args)
    assert markers(tmp_path / "out") == 1
    monkeypatch.setattr(inputs, "manifest_paths", listed)
    c4.main(args)
    assert progress(tmp_path / "out")["groups"] == {
        "total": 2, "done": 2, "running": 0, "left": 0, "reused": 1, "computed": 1}


def test_several_manifests_run_in_parts_by_default_and_one_in_one_job(shared_data, tmp_path,
                                                                      capsys):
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress(str(shared_data / "wet/whirlwind-python/"
                                           "whirlwind.warc.wet.gz").encode()))
    base = ["--variant", "en", "--badwords", str(shared_data / "badwords/en"),
            "--output", str(tmp_path / "out"), "--dry_run"]
    for manifests, plan in ((2, "in parts: 1 group of"), (1, "one job")):
        capsys.readouterr()
        c4.main(base + ["--input", *[str(manifest)] * manifests])
        assert plan in capsys.readouterr().out
    capsys.readouterr()
    c4.main(base + ["--input", str(manifest), str(manifest), "--no-in_parts"])
    assert "one job" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_progress_line_says_groups_rate_and_time_left_and_is_a_bar_on_a_terminal(tmp_path):
    (tmp_path / parts.PARTS_FOLDER).mkdir()
    group = parts.Marker(0, 0, 1, "sha", (parts.PartFile("file-0000000.pages", 10, "x", 400),),
                         {"read": {"pages.passed": 400}}, 2.0)
    lines = io.StringIO()
    progress = parts.Progress(str(tmp_path), "en", total=4, reused=[group],
                              global_to_groups=3.0, stream=lines)
    progress.start_groups(1)
    progress.groups_done([dataclasses.replace(group, group=1)], seconds=2.0)
    # One group computed in 2 s: 2 groups left and the global stage, 3 x 4 groups' worth.
    assert lines.getvalue().splitlines() == [
        "groups: 1 done (1 reused), 1 running, 2 left",
        "groups: 2 done (1 reused), 0 running, 2 left; 200 pages/s; about 28 s left"]
    assert progress.counters == {"read": {"pages.passed": 800}}
    terminal = _Terminal()
    progress = parts.Progress(str(tmp_path), "en", total=4, reused=[group, group],
                              global_to_groups=3.0, stream=terminal)
    progress.start_groups(2)
    assert terminal.getvalue() == ("\r[###############...............] groups: 2 done "
                                   "(2 reused), 2 running, 0 left\033[K")


def test_a_rerun_with_another_group_files_is_refused_as_another_configuration(done_run):
    """Issue 48, behaviour 10: the groups' size is part of a run in parts' configuration (its
    groups cover other files): another --group_files is refused, naming it, and nothing is
    written; --restart is the way to it."""
    args, output = done_run
    before = file_digests(output)
    with pytest.raises(SystemExit, match=r"another configuration \(differing: group_files\).*"
                                         r"--restart"):
        rerun(args, output, "--group_files", "2")
    assert file_digests(output) == before
    assert len(list((output / parts.PARTS_FOLDER).glob(f"group-*/{parts.MARKER_FILE}"))) == 5
