"""A run into a folder that already holds one, and what reads a run's folder (issue 48): a
finished run rerun with another configuration is refused before any work, naming the fields
that differ, and --restart removes its dataset first; the same configuration rewrites the same
bytes. Readers (pre-training input, the dataset card's `datasets` config, the TFDS builder) read
the shards the finished run lists, never another run's left beside them; a run killed mid-way is
refused as training data. The paths run_config.json records are absolute; an --output or
--exclusions that cannot be written is an error before any work."""
import glob
import gzip
import json
import os
import pathlib
import shutil
import sys
import types

import pytest

from deploy.rehearse import file_digests
from model.data import inputs
from pipelines import c4
from pipelines.executors.base import start_afresh
from pipelines.config import variant
from tests.support import killing
from tfds_c4 import published

REPO = pathlib.Path(__file__).resolve().parents[2]
STRAY_TEXT = "A page of another run, left beside this one's shards."
STRAYS = ["train-00000-of-00002.jsonl.gz", "train-00001-of-00002.jsonl.gz"]


def wet_files(shared_data: pathlib.Path) -> list:
    return sorted(glob.glob(str(shared_data / "wet/*/*")))


@pytest.fixture(scope="module")
def finished(shared_data, tmp_path_factory):
    """A finished one-job run of en with an exclusions sample, launched from its parent folder
    with relative paths: (that folder, the run's options with absolute paths)."""
    base = tmp_path_factory.mktemp("reruns")
    relative = ["--variant", "en",
                "--input", *(os.path.relpath(path, base) for path in wet_files(shared_data)),
                "--badwords", os.path.relpath(shared_data / "badwords/en", base),
                "--exclusions", "exclusions"]
    launch_folder = os.getcwd()
    os.chdir(base)
    try:
        c4.main(relative + ["--output", "run"])
    finally:
        os.chdir(launch_folder)
    absolute = ["--variant", "en", "--input", *wet_files(shared_data),
                "--badwords", str(shared_data / "badwords/en"),
                "--exclusions", str(base / "exclusions")]
    return base, absolute


@pytest.fixture
def copied(finished, tmp_path):
    """The finished run, copied to a folder of its own: (its options, the copy)."""
    base, args = finished
    shutil.copytree(base / "run", tmp_path / "out")
    return args, tmp_path / "out"


def forbid_the_job(monkeypatch):
    def no_job(job):
        raise AssertionError("the Beam job started")
    monkeypatch.setattr(c4, "run_one_job", no_job)


def shard_names(folder: pathlib.Path, split: str) -> list:
    return sorted(path.name for path in folder.glob(f"{split}-*.jsonl.gz"))


def texts_of(paths) -> list:
    return [json.loads(line)["text"] for path in paths
            for line in gzip.open(path, "rt", encoding="utf-8")]


def test_run_config_records_the_paths_it_was_given_as_absolute_paths(finished, shared_data):
    base, _ = finished
    record = json.loads((base / "run" / "run_config.json").read_text())
    assert record["exclusions"]["directory"] == str(base / "exclusions")
    assert record["inputs"]["first"] == wet_files(shared_data)[0]
    assert record["inputs"]["last"] == wet_files(shared_data)[-1]
    assert list(record["lists_sha256"]) == [str(shared_data / "badwords/en")]


def test_another_configuration_is_refused_before_any_work_naming_the_fields(copied,
                                                                            monkeypatch):
    args, output = copied
    before = file_digests(output)
    forbid_the_job(monkeypatch)
    with pytest.raises(SystemExit) as refused:
        c4.main(args + ["--output", str(output), "--train_shards", "2", "--rules", "released"])
    message = str(refused.value.code)
    assert message.startswith("error: ") and "another configuration" in message
    assert "max_shards.train" in message and "config.rules" in message
    assert str(output) in message and "--restart" in message
    assert file_digests(output) == before


def test_restart_removes_the_earlier_runs_shards(copied, tmp_path):
    args, output = copied
    assert len(shard_names(output, "train")) > 2
    c4.main(args + ["--output", str(output), "--train_shards", "2", "--restart",
                    "--exclusions", str(tmp_path / "exclusions")])
    assert shard_names(output, "train") == STRAYS
    assert json.loads((output / "stats.json").read_text())["shards"] == {"train": 2,
                                                                        "validation": 1}


def test_a_fresh_start_removes_the_earlier_runs_dataset_and_nothing_else(tmp_path):
    """Its shards of any format, in the folder and its language folders, its reports and the
    language folders' stats.json; not a run's parts, nor a folder's files that are no shard."""
    earlier = ["train-00000-of-00008.jsonl.gz", "validation-00000-of-00001.parquet",
               "de/train-00000-of-00001.jsonl.gz", "de/stats.json", "stats.json",
               "run_config.json", "README.md", "funnel.svg"]
    kept = ["notes/stats.json", "parts/write/train-00000-of-00001.jsonl.gz", "de/notes.txt"]
    for name in earlier + kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("earlier\n")
    run = types.SimpleNamespace(output_dir=str(tmp_path), config=variant("multilingual"),
                                max_shards={"train": 8, "validation": 1})
    start_afresh(run)
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")
                  if path.is_file()) == sorted(kept + ["stats.json"])
    assert json.loads((tmp_path / "stats.json").read_text())["progress"] == {"phase": "started"}


def test_the_same_configuration_rerun_writes_the_same_bytes(copied):
    args, output = copied
    before = file_digests(output)
    c4.main(args + ["--output", str(output)])
    assert file_digests(output) == before


def plant_strays(folder: pathlib.Path) -> None:
    """Two shards of another run (of two train files) beside the run's own."""
    record = json.loads(gzip.open(next(folder.glob("train-*.jsonl.gz")), "rt").readline())
    for name in STRAYS:
        with gzip.open(folder / name, "wt", encoding="utf-8") as stray:
            stray.write(json.dumps({**record, "text": STRAY_TEXT}) + "\n")


def test_readers_read_only_the_shards_the_finished_run_lists(copied, tmp_path):
    _, output = copied
    own = sorted(output.glob("train-*.jsonl.gz"))
    expected = texts_of(own)
    assert len(own) > 2 and not set(STRAYS) & {path.name for path in own}
    plant_strays(output)
    pretraining = [text.decode() for text in
                   inputs.text_dataset_from_source(str(output)).as_numpy_iterator()]
    assert pretraining == expected
    shards = published.split_shards(str(output), variant("en"), {}, (), "jsonl")
    assert [pathlib.Path(path).name for path in shards["train", None]] == [
        path.name for path in own]
    import datasets
    loaded = datasets.load_dataset(str(output), split="train", cache_dir=str(tmp_path / "hf"))
    assert sorted(loaded["text"]) == sorted(expected)


def test_a_run_killed_mid_way_is_refused_as_training_data(shared_data, tmp_path):
    output = tmp_path / "out"
    command = [sys.executable, "-m", "pipelines.c4", "--variant", "en",
               "--input", *wet_files(shared_data), "--badwords", str(shared_data / "badwords/en"),
               "--output", str(output)]
    assert killing.run_killed(command, REPO, lambda: any(output.glob("train-*.jsonl.gz"))), \
        "the run ended before the kill"
    with pytest.raises(ValueError) as refused:
        inputs.text_dataset_from_source(str(output))
    message = str(refused.value)
    assert f"pipeline output {output}: could not find a finished run" in message
    assert "has not finished" in message and "rerun the same command" in message


def test_shards_without_a_finished_runs_stats_json_are_refused(copied):
    """What a run of an earlier version killed mid-way leaves: shards and a .tmp file."""
    _, output = copied
    (output / "stats.json").rename(output / "stats.json.tmp")
    with pytest.raises(ValueError, match=r"could not find a finished run .* no stats\.json"):
        inputs.text_dataset_from_source(str(output))
    # Its files can still be read as they are, by the glob the message gives.
    read = inputs.text_dataset_from_source(str(output / "train-*.jsonl.gz"))
    assert next(read.as_numpy_iterator())


@pytest.mark.parametrize("flag", ["--output", "--exclusions"])
@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_folder_that_cannot_be_written_is_an_error_before_any_work(shared_data, tmp_path,
                                                                     monkeypatch, capsys, flag,
                                                                     where):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    folder = blocker if where == "a file" else blocker / "folder"
    given = {"--output": str(tmp_path / "out"), "--exclusions": str(tmp_path / "excluded"),
             flag: str(folder)}
    forbid_the_job(monkeypatch)
    with pytest.raises(SystemExit) as refused:
        c4.main(["--variant", "en", "--input", *wet_files(shared_data), "--badwords",
                 str(shared_data / "badwords/en"), "--output", given["--output"],
                 "--exclusions", given["--exclusions"]])
    message = str(refused.value.code)
    assert message.startswith(f"error: {flag} {folder} ")
    assert ("is a file, not a folder" if where == "a file" else "cannot be written") in message
    assert blocker.read_text() == "not a folder\n"
    assert not (tmp_path / "out" / "stats.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder: no run as "
                                               "root can be refused one")
def test_a_read_only_output_folder_is_an_error_before_any_work(shared_data, tmp_path,
                                                               monkeypatch):
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    forbid_the_job(monkeypatch)
    with pytest.raises(SystemExit, match=f"error: --output {read_only} cannot be written"):
        c4.main(["--variant", "en", "--input", *wet_files(shared_data), "--badwords",
                 str(shared_data / "badwords/en"), "--output", str(read_only)])
