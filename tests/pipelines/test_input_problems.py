"""Damaged and unreadable WET files: named in a warning with what was lost, listed in stats.json's
`file_problems` (the same in one job and in a run in parts), and a run that could read no input
fails without leaving a dataset."""
import io
import json
import logging
import pathlib
import subprocess
import sys

import pytest

from pipelines import c4
from pipelines.readers import wet

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = "wet/realistic/CC-MAIN-2019-30-part-1.warc.wet.gz"


def _run(shared_data, inputs, output, *extra):
    return c4.main(["--variant", "en.noclean", "--input", *map(str, inputs),
                    "--output", str(output), "--validation_fraction", "0.05", *extra])


def _pages_in_members(data: bytes) -> int:
    """How many conversion records the whole gzip members of `data` hold."""
    count = 0
    for item in wet.read_wet(lambda: io.BytesIO(data), 10**7):
        count += not isinstance(item, wet.Skipped)
    return count


@pytest.fixture(scope="module")
def damaged_inputs(shared_data, tmp_path_factory):
    """A truncated copy of a real sample (its first third), a copy with 64 bytes zeroed in the
    middle (one corrupt gzip member), and an intact small file."""
    directory = tmp_path_factory.mktemp("damaged")
    source = (shared_data / SAMPLE).read_bytes()
    truncated = source[:len(source) // 3]
    corrupt = bytearray(source)
    middle = len(corrupt) // 2
    corrupt[middle:middle + 64] = bytes(64)
    (directory / "truncated.warc.wet.gz").write_bytes(truncated)
    (directory / "corrupt.warc.wet.gz").write_bytes(bytes(corrupt))
    (directory / "whirlwind.warc.wet.gz").write_bytes(
        (shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz").read_bytes())
    return directory, len(truncated)


def test_a_truncated_or_corrupt_file_is_named_with_what_it_lost(damaged_inputs, shared_data,
                                                              tmp_path, caplog, capsys):
    directory, truncated_bytes = damaged_inputs
    caplog.set_level(logging.INFO, logger="c4")
    counters = _run(shared_data, sorted(directory.iterdir()), tmp_path / "out")
    truncated, corrupt = (str(directory / name) for name in
                          ("truncated.warc.wet.gz", "corrupt.warc.wet.gz"))
    warnings = {record.getMessage() for record in caplog.records if record.levelname == "WARNING"}
    truncated_warning = [message for message in warnings if truncated in message]
    assert len(truncated_warning) == 1, warnings
    assert "to its end" in truncated_warning[0]
    assert "the records after its first 72 pages are lost" in truncated_warning[0]
    assert [message for message in warnings if corrupt in message and
            "1 corrupt record skipped" in message], warnings
    # No "done" line for a damaged file: that line is for files read whole.
    assert not any(truncated in record.getMessage() and "done" in record.getMessage()
                   for record in caplog.records)
    problems = json.loads((tmp_path / "out/stats.json").read_text())["file_problems"]
    assert [problem["file"] for problem in problems] == [corrupt, truncated]
    corrupt_problem, truncated_problem = problems
    assert corrupt_problem["corrupt_records"] == 1
    assert corrupt_problem["unreadable_from_byte"] is None
    assert corrupt_problem["pages_read"] == 244  # Of 250 records: 5 empty pages, 1 corrupt.
    assert truncated_problem["corrupt_records"] == 0
    # The truncated copy holds 72 pages in whole members; its last member is cut.
    assert truncated_problem["pages_read"] == 72 == _pages_in_members(
        (directory / "truncated.warc.wet.gz").read_bytes())
    start = truncated_problem["unreadable_from_byte"]
    assert 0 < start < truncated_bytes
    assert truncated_problem["unreadable_bytes"] == truncated_bytes - start
    # The table's counters stay as they were; the list is printed after it.
    assert counters["read"]["records.skipped:corrupt_record"] == 2
    printed = capsys.readouterr().out
    assert "2 input files with a problem (file_problems in stats.json):" in printed
    assert f"  {truncated}: unreadable from byte {start:,} to its end" in printed


def test_the_file_problems_of_a_run_in_stages_are_those_of_one_job(damaged_inputs, shared_data,
                                                                   tmp_path):
    directory, _ = damaged_inputs
    inputs = sorted(directory.iterdir())
    _run(shared_data, inputs, tmp_path / "one")
    _run(shared_data, inputs, tmp_path / "staged", "--staged", "--read_files", "2")
    # A rerun reuses both read tasks: their problems come from the markers.
    _run(shared_data, inputs, tmp_path / "staged", "--staged", "--read_files", "2")
    one, in_stages = (json.loads((tmp_path / name / "stats.json").read_text())
                      for name in ("one", "staged"))
    assert len(one["file_problems"]) == 2
    assert in_stages["file_problems"] == one["file_problems"]
    assert in_stages["stages"] == one["stages"]


def test_a_run_that_reads_no_input_fails_naming_the_files(tmp_path):
    """From the command line, as a user runs it: random bytes named .warc.wet.gz."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "x.warc.wet.gz").write_bytes(bytes(range(256)) * 20)
    output = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "pipelines.c4", "--variant", "en.noclean",
         "--input", str(inputs / "x.warc.wet.gz"), "--output", str(output)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert finished.returncode != 0
    assert (f"error: no input could be read: 1 input file ({inputs / 'x.warc.wet.gz'})"
            in finished.stderr), finished.stderr
    assert "No dataset was written" in finished.stderr
    assert not list(output.glob("*.jsonl.gz"))
    record = json.loads((output / "stats.json").read_text())
    assert record["error"].startswith("no input could be read")
    assert [problem["file"] for problem in record["file_problems"]] == [
        str(inputs / "x.warc.wet.gz")]


def test_a_run_in_stages_that_reads_no_input_fails_and_keeps_no_task(tmp_path):
    """A gzip header then random bytes (a file of which no byte can be read) and a file of
    random bytes; the rerun reads both again, nothing of the failed run is reused."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.warc.wet.gz").write_bytes(b"\x1f\x8b\x08" + bytes(range(256)) * 20)
    (inputs / "b.warc.wet.gz").write_bytes(bytes(range(255, -1, -1)) * 20)
    argv = ["--variant", "en.noclean", "--input", str(inputs / "*.gz"),
            "--output", str(tmp_path / "out"), "--staged", "--read_files", "1"]
    for _ in range(2):
        with pytest.raises(SystemExit) as exit_info:
            c4.main(argv)
        message = str(exit_info.value)
        assert message.startswith("error: no input could be read: 2 input files "
                                  f"({inputs / 'a.warc.wet.gz'}, {inputs / 'b.warc.wet.gz'})")
        assert not list((tmp_path / "out").rglob("*.jsonl.gz"))
        assert not list((tmp_path / "out").rglob("DONE.json"))
        record = json.loads((tmp_path / "out/stats.json").read_text())
        assert record["stages"]["read"]["files.skipped:not_wet"] == 1
        assert "progress" not in record


def test_one_readable_file_is_enough(damaged_inputs, tmp_path):
    """A run with an unreadable file beside a readable one builds its dataset: the file is in
    file_problems, and the run succeeds."""
    directory, _ = damaged_inputs
    (tmp_path / "x.warc.wet.gz").write_bytes(bytes(range(256)) * 20)
    counters = c4.main(["--variant", "en.noclean", "--input", str(tmp_path / "x.warc.wet.gz"),
                        str(directory / "whirlwind.warc.wet.gz"),
                        "--output", str(tmp_path / "out")])
    assert counters["read"]["files.read"] == 1
    assert list((tmp_path / "out").glob("train-*.jsonl.gz"))


def test_file_damage_merges_a_stretch_that_fails_where_it_resumed():
    """A resync onto a false gzip header inside the corrupt bytes fails at once: one record
    lost, not two; a stretch with no record after it is the file's unreadable end."""
    damage = wet.FileDamage()
    damage.add(wet.Skipped("corrupt_record", 100, 150), pages_read=3)
    damage.add(wet.Skipped("corrupt_record", 150, 300), pages_read=3)
    assert (damage.corrupt_records, damage.corrupt_bytes, damage.unreadable_from) == (1, 200, None)
    damage.add(wet.Skipped("corrupt_record", 500, None, 900), pages_read=7)
    assert (damage.corrupt_records, damage.unreadable_from) == (1, 500)
    assert damage.describe() == (
        "1 corrupt record skipped (200 bytes); unreadable from byte 500 to its end (400 of its "
        "900 bytes; truncated, or corrupt): the records after its first 7 pages are lost")
