"""The warning `python -m pipelines.c4` (and `make run`) gives before it starts when the embedded
DirectRunner cannot hold the input in this machine's memory."""
import gzip
import logging

import pytest

from pipelines import c4
from pipelines.beam import embedded
from pipelines.readers import common_crawl, inputs

GB = 10**9


@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_the_estimate_grows_with_the_input_and_the_warning_names_the_way_beyond(mode):
    file_bytes = common_crawl.REMOTE_WET_FILE_BYTES
    one, ten = embedded.embedded_peak_bytes(file_bytes, mode), embedded.embedded_peak_bytes(10 * file_bytes, mode)
    assert one < ten
    assert embedded.memory_warning(file_bytes, 24 * GB, mode) is None
    # A whole dump (56,000 files) never fits a machine.
    warning = embedded.memory_warning(56_000 * file_bytes, 24 * GB, mode)
    assert warning and "Dataflow" in warning and "--runner" in warning
    assert f"on the embedded DirectRunner ({mode})" in warning and "this machine has 24 GB" in warning
    # The limit: the most input whose estimate fits in the headroom.
    fits = int((embedded.MEMORY_HEADROOM * 24 * GB - embedded.EMBEDDED_MEMORY[mode].fixed_bytes)
               / embedded.EMBEDDED_MEMORY[mode].bytes_per_input_byte)
    assert embedded.memory_warning(fits, 24 * GB, mode) is None
    assert embedded.memory_warning(fits + 10**6, 24 * GB, mode) is not None


def test_remote_inputs_count_as_full_size_files_and_local_ones_by_their_size(tmp_path):
    local = tmp_path / "a.warc.wet.gz"
    local.write_bytes(b"x" * 1234)
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress(b"crawl-data/x/a.warc.wet.gz\ncrawl-data/x/b.warc.wet.gz\n"))
    plan = inputs.plan_inputs([str(local), "https://data.commoncrawl.org/a.warc.wet.gz",
                               str(manifest)], None, "https://data.commoncrawl.org/")
    assert plan.estimated_bytes() == 1234 + 3 * common_crawl.REMOTE_WET_FILE_BYTES


@pytest.mark.parametrize("beam_args, mode", [
    ([], "in_memory"),
    (["--direct_running_mode=multi_processing", "--direct_num_workers=2"], "multi_processing"),
    (["--runner", "DirectRunner"], "in_memory"),
    (["--runner", "DataflowRunner"], None),
    (["--runner=PortableRunner"], None),
])
def test_only_the_embedded_runner_is_warned_about(beam_args, mode):
    assert embedded.embedded_running_mode(beam_args) == mode


def test_a_one_job_run_asked_for_is_warned_before_the_job_starts(shared_data, tmp_path,
                                                                 monkeypatch, caplog):
    """On a machine too small for even one sample file, a one-job run asked for (--no-staged;
    without it the run is staged: tests/pipelines/test_staged.py) is warned before the build."""
    monkeypatch.setattr(c4, "machine_memory_bytes", lambda: 1000)
    with caplog.at_level(logging.INFO, logger="c4"):
        c4.main(["--input", str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"),
                 "--output", str(tmp_path), "--badwords", str(shared_data / "badwords/en"),
                 "--no-staged"])
    messages = [record.getMessage() for record in caplog.records if record.name == "c4"]
    (warning,) = [index for index, message in enumerate(messages) if "Dataflow" in message]
    building = next(index for index, message in enumerate(messages)
                    if message.startswith("building"))
    assert warning < building and "this machine has 0 GB" in messages[warning]
