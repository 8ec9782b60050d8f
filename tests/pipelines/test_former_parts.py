"""Runs in parts are retired (issue 49): their options still parse for one release, each given
named in one notice that says what replaced it, and the run goes on in stages; a folder a run in
parts left is refused before any work, with what to do (a new --output, or --restart, which
deletes its parts)."""
import gzip
import json
import logging

import pytest

from deploy.rehearse import file_digests
from pipelines import c4
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args


def notices(caplog) -> list:
    return [record.getMessage() for record in caplog.records
            if record.getMessage().startswith("note: retired")]


def test_in_parts_and_group_files_give_one_notice_and_a_staged_run_of_the_one_jobs_bytes(
        shared_data, one_job, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="c4")
    c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path), "--in_parts",
                                               "--group_files", "2", "--workers", "1"])
    assert notices(caplog) == ["note: retired with runs in parts: --in_parts (now --staged), "
                               "--group_files (now --read_files); running in stages"]
    # Five WET files, two a read task (--group_files is --read_files): three read tasks.
    assert sorted(path.name for path in (tmp_path / "parts" / "read").iterdir()) == [
        "read-00000", "read-00001", "read-00002"]
    assert not list((tmp_path / "parts").glob("group-*"))
    assert_same_output(tmp_path, one_job("en"))


@pytest.mark.parametrize("given, notice, plan", [
    (["--groups_per_job", "3"], "--groups_per_job (now nothing: a stage is one Beam job); "
                                "running in stages", "staged: "),
    (["--stages_as_beam_jobs"], "--stages_as_beam_jobs (now --executor beam); running in stages",
     "staged: "),
    (["--no-in_parts"], "--no-in_parts (now nothing: runs in parts are gone); running in one "
                        "job", "one job"),
    (["--in_parts", "--no-staged"], "--in_parts (now --staged); running in one job", "one job"),
])
def test_each_retired_option_is_named_with_what_replaced_it(shared_data, tmp_path, caplog,
                                                            capsys, given, notice, plan):
    c4.main(variant_args(shared_data, "en") + ["--output", str(tmp_path / "out"), "--dry_run",
                                               *given])
    assert notices(caplog) == [f"note: retired with runs in parts: {notice}"]
    assert capsys.readouterr().out.splitlines()[1].startswith(plan)
    assert not (tmp_path / "out").exists()


def test_several_manifests_run_in_stages_by_default_and_one_in_one_job(shared_data, tmp_path,
                                                                       capsys):
    """Several dumps ran in parts by default; they run in stages now."""
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress(str(shared_data / "wet/whirlwind-python/"
                                           "whirlwind.warc.wet.gz").encode()))
    base = ["--variant", "en", "--badwords", str(shared_data / "badwords/en"),
            "--output", str(tmp_path / "out"), "--dry_run"]
    for manifests, plan in ((2, "staged: "), (1, "one job")):
        c4.main(base + ["--input", *[str(manifest)] * manifests])
        assert capsys.readouterr().out.splitlines()[1].startswith(plan)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def former_run(tmp_path):
    """A folder as a run in parts (killed after its first group) left it: its configuration
    record, written before any group, and a group's part file and marker."""
    output = tmp_path / "out"
    group = output / "parts" / "group-00000"
    group.mkdir(parents=True)
    (output / "parts" / "parts_config.json").write_text(json.dumps(
        {"config_sha256": "0" * 64, "group_files": 1000, "run_config": {"variant": "en"}}))
    (group / "file-0000000.pages").write_bytes(b"\x00" * 10)
    (group / "DONE.json").write_text("{}")
    (output / "stats.json").write_text(json.dumps({"progress": {"phase": "groups"}}))
    return output


def forbid_any_run(monkeypatch):
    def no_run(*args):
        raise AssertionError("a run started")
    monkeypatch.setattr(c4, "run_one_job", no_run)
    monkeypatch.setattr(c4, "run_staged", no_run)


@pytest.mark.parametrize("how", [["--staged", "--workers", "1"], ["--no-staged"]])
def test_a_folder_a_run_in_parts_left_is_refused_before_any_work_saying_what_to_do(
        shared_data, former_run, monkeypatch, how):
    before = file_digests(former_run)
    forbid_any_run(monkeypatch)
    with pytest.raises(SystemExit) as refused:
        c4.main(variant_args(shared_data, "en") + ["--output", str(former_run), *how])
    assert str(refused.value.code) == (
        f"error: {former_run / 'parts'} holds the parts of a run in parts, which this version no "
        "longer runs (a run in pieces runs in stages): rerun into a new --output, or pass "
        "--restart to delete them and start afresh")
    assert file_digests(former_run) == before


def test_restart_deletes_the_parts_of_a_run_in_parts_and_runs_in_stages(shared_data, one_job,
                                                                        former_run):
    c4.main(variant_args(shared_data, "en") + ["--output", str(former_run), "--staged",
                                               "--workers", "1", "--restart"])
    assert not (former_run / "parts" / "group-00000").exists()
    assert (former_run / "parts" / "write").is_dir()
    assert_same_output(former_run, one_job("en"))


def test_restart_lets_a_one_job_run_delete_them_too(shared_data, one_job, former_run):
    c4.main(variant_args(shared_data, "en") + ["--output", str(former_run), "--no-staged",
                                               "--restart"])
    assert not (former_run / "parts").exists()
    assert_same_output(former_run, one_job("en"))
