"""The references of the byte-for-byte tests are one-job runs built as users build them, whatever
the test that asks for one first has patched; a failed comparison keeps what it compared."""
import gzip
import json

import pytest

from pipelines import c4
from tests.support import references
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args


def test_a_reference_first_asked_for_inside_a_patched_test_is_still_one_job(
        shared_data, one_job, monkeypatch, tmp_path):
    """The patch that makes a run in this process too big for one job (issue 52's case) does not
    reach the reference: it is built in a subprocess with `--no-staged`."""
    monkeypatch.setattr(c4, "machine_memory_bytes", lambda: 1_000_000)
    args = variant_args(shared_data, "en") + ["--validation_shards", "2"]
    c4.main(args + ["--output", str(tmp_path / "patched"), "--workers", "1"])
    assert (tmp_path / "patched" / "parts").is_dir()  # In this process the patch makes it staged.
    folder = one_job("en", extra=("--validation_shards", "2"))  # Asked for first, here.
    assert not (folder / "parts").exists()
    built = references.build_record(folder)
    assert built["argv"][-3:] == ["--no-staged", "--output", str(folder)]
    assert "in stages" not in built["log_tail"] and "building en from" in built["log_tail"]
    assert_same_output(tmp_path / "patched", folder)


def test_a_reference_built_in_stages_is_refused_before_any_comparison(
        shared_data, tmp_path, monkeypatch):
    one_job_command = references.reference_command

    def staged_command(args, folder):
        return one_job_command(args, folder)[:-3] + [
            "--staged", "--workers", "1", "--output", str(folder)]
    monkeypatch.setattr(references, "reference_command", staged_command)
    args = variant_args(shared_data, "en")
    with pytest.raises(AssertionError, match="has a parts/ folder: it was run in stages"):
        references.build_reference(tmp_path, args)
    assert references.build_record(tmp_path / references.reference_name(args)) is None


def test_a_staged_log_or_an_unfinished_folder_is_no_reference(tmp_path):
    (tmp_path / "stats.json").write_text("{}")
    references.check_one_job(tmp_path, "c4 building en from 5 WET files")
    with pytest.raises(AssertionError, match="says it ran in stages"):
        references.check_one_job(tmp_path, "building en from 5 WET files in stages, on 1 worker")
    (tmp_path / "stats.json").write_text('{"progress": {"phase": "started"}}')
    with pytest.raises(AssertionError, match="no finished stats.json"):
        references.check_one_job(tmp_path, "c4 building en from 5 WET files")
    (tmp_path / "stats.json").unlink()
    with pytest.raises(AssertionError, match="no finished stats.json"):
        references.check_one_job(tmp_path, "c4 building en from 5 WET files")


def test_a_reference_is_built_once_and_shared(shared_data, tmp_path):
    args = variant_args(shared_data, "en") + ["--train_shards", "3"]
    first = references.build_reference(tmp_path, args)
    built_at = (first.folder / "stats.json").stat().st_mtime_ns
    second = references.build_reference(tmp_path, args)
    assert second == first
    assert (second.folder / "stats.json").stat().st_mtime_ns == built_at
    assert len(list(first.folder.glob("train-*-of-00003.jsonl.gz"))) == 3


def _shard(folder, lines):
    folder.mkdir()
    (folder / "train-00000-of-00001.jsonl.gz").write_bytes(gzip.compress(
        "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8"), mtime=0))


def test_a_failed_comparison_keeps_both_folders_and_the_facts_of_the_process(tmp_path,
                                                                            request):
    _shard(tmp_path / "run", [{"url": "a", "text": "one"}, {"url": "b", "text": "two"}])
    _shard(tmp_path / "reference", [{"url": "a", "text": "one"}, {"url": "b", "text": "2"}])
    (tmp_path / "reference.json").write_text(json.dumps({"argv": ["c4"], "hash_seed": "7",
                                                         "log_tail": ""}))
    with pytest.raises(AssertionError) as failure:
        assert_same_output(tmp_path / "run", tmp_path / "reference")
    message = str(failure.value)
    assert "line 1 differs" in message and "'text': ('two', '2')" in message
    kept = tmp_path / "run.reference"
    assert str(kept) in message and str(tmp_path / "run.failure.json") in message
    assert (kept / "train-00000-of-00001.jsonl.gz").read_bytes() == (
        tmp_path / "reference" / "train-00000-of-00001.jsonl.gz").read_bytes()
    assert (tmp_path / "run" / "train-00000-of-00001.jsonl.gz").is_file()
    facts = json.loads((tmp_path / "run.failure.json").read_text())
    assert "PYTHONHASHSEED" in facts and facts["reference_build"]["hash_seed"] == "7"
    assert facts["tests_started_in_this_worker"][-1] == request.node.nodeid
