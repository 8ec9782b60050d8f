"""deploy/rehearse.py: jobs on portable-runner workers in a lean environment give the
DirectRunner's bytes, and what would break on Dataflow's workers breaks the rehearsal."""
import json
import pathlib
import sys
from typing import Iterator

import pytest

from deploy import rehearse, worker_env

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
TOYS_SHIPPED = REPO_ROOT / "tests" / "rehearsal_toys" / "shipped"
# One realistic WET file and the two small ones: a few seconds per run.
SAMPLE_WET = ("wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz",
              "wet/whirlwind-python/whirlwind.warc.wet.gz",
              "wet/eugeneware-warc/CC-MAIN-20140820021334-00006-ip-10-180-136-8.ec2.internal.warc.wet")
TIMEOUT_S = 300


@pytest.fixture(scope="module")
def pipeline_env(tmp_path_factory) -> worker_env.WorkerEnv:
    """A worker's environment: the pipeline extra and the project from this checkout."""
    env = worker_env.create(tmp_path_factory.mktemp("worker") / "pipeline", "pipeline")
    worker_env.install_project(env, REPO_ROOT)
    return env


@pytest.fixture(scope="module")
def toy_pool(pipeline_env) -> Iterator[int]:
    with rehearse.worker_pool(pipeline_env, extra_paths=[TOYS_SHIPPED]) as port:
        yield port


def toy_job(case: str) -> rehearse.Job:
    def command(options, output):
        return [sys.executable, "-c",
                "import sys; from tests import rehearsal_toys; rehearsal_toys.main(sys.argv[1:])",
                case, "--output", str(output), *options]
    return rehearse.Job(f"toy-{case}", command, "pipeline", {"PYTHONPATH": str(TOYS_SHIPPED)})


def test_c4_job_on_lean_workers_writes_the_direct_runners_bytes(pipeline_env, shared_data,
                                                                  tmp_path):
    job = rehearse.c4_job([str(shared_data / path) for path in SAMPLE_WET],
                          shared_data / "badwords" / "en")
    (verdict,) = rehearse.rehearse_in_env([job], pipeline_env, tmp_path, TIMEOUT_S)
    assert verdict.passed, verdict.report()
    # Shards, statistics (the workers' counters), run config and funnel.
    assert {"stats.json", "run_config.json", "validation-00000-of-00001.jsonl.gz"} <= set(
        verdict.direct.files)


def test_a_staged_c4_job_on_lean_workers_killed_once_resumes_to_the_direct_runners_bytes(
        pipeline_env, shared_data, tmp_path):
    """Each stage a Beam job on the portable runner's lean workers, the launcher killed once a
    URL bucket is done, the rerun reusing the tasks done: the bytes of the DirectRunner's run
    (whose tasks run on local worker processes)."""
    job = rehearse.c4_job([str(shared_data / path) for path in SAMPLE_WET],
                          shared_data / "badwords" / "en", "c4-en-staged", rehearse.STAGED,
                          killed_once=True)
    (verdict,) = rehearse.rehearse_in_env([job], pipeline_env, tmp_path, TIMEOUT_S)
    assert verdict.passed, verdict.report()
    assert "killed once and resumed" in verdict.report()
    markers = list((tmp_path / job.name / "workers" / "parts").glob("*/*/DONE.json"))
    assert {marker.parent.parent.name for marker in markers} >= {"read", "url", "write"}


@pytest.mark.slow  # The C4 job's rehearsal above checks the machinery; `make rehearse` runs this.
def test_mc4_job_on_lean_workers_writes_the_direct_runners_bytes(pipeline_env, shared_data,
                                                                   tmp_path):
    """mC4 on the pipeline extra's workers: CLD3 (cld3-py) is there, the lists per language
    travel with the job, and each language's folder comes out byte for byte."""
    job = rehearse.mc4_job([str(shared_data / path) for path in SAMPLE_WET],
                           shared_data / "badwords")
    (verdict,) = rehearse.rehearse_in_env([job], pipeline_env, tmp_path, TIMEOUT_S)
    assert verdict.passed, verdict.report()
    written = set(verdict.direct.files)
    assert {"stats.json", "en/stats.json", "und/validation-00000-of-00001.jsonl.gz"} <= written
    assert any(name.startswith("en/train-") for name in written)


def test_a_well_behaved_toy_passes(toy_pool, tmp_path):
    verdict = rehearse.rehearse(toy_job("clean"), toy_pool, tmp_path, TIMEOUT_S)
    assert verdict.passed, verdict.report()
    assert (tmp_path / "toy-clean" / "workers" / "words.txt").read_text().split() == [
        "BEAM", "C4", "SHARD", "WORKER"]


@pytest.mark.parametrize("case, error", [
    # A DoFn that imports a package the workers lack.
    ("missing_package", "No module named 'gin'"),
    # A DoFn class from a module the workers lack (cloudpickle pickles it by reference).
    ("launcher_only", "No module named 'tests'"),
])
def test_what_the_workers_cannot_import_fails_on_them_only(toy_pool, tmp_path, case, error):
    verdict = rehearse.rehearse(toy_job(case), toy_pool, tmp_path, TIMEOUT_S)
    assert verdict.direct.error is None and not verdict.passed
    assert error in verdict.workers.error


def test_module_state_set_by_the_launcher_is_caught_by_the_bytes(toy_pool, tmp_path):
    verdict = rehearse.rehearse(toy_job("module_state"), toy_pool, tmp_path, TIMEOUT_S)
    assert verdict.direct.error is None and verdict.workers.error is None
    assert verdict.differing == ["words.txt"] and not verdict.passed
    assert "c4=missing" in (tmp_path / "toy-module_state" / "workers" / "words.txt").read_text()


def test_what_cannot_be_pickled_fails(toy_pool, tmp_path):
    verdict = rehearse.rehearse(toy_job("unpicklable"), toy_pool, tmp_path, TIMEOUT_S)
    assert not verdict.passed
    assert "cannot pickle 'generator' object" in verdict.workers.error


def test_worker_pool_listens_on_loopback_only_and_is_killed(pipeline_env):
    import psutil
    with rehearse.worker_pool(pipeline_env) as port:
        listening = [connection for connection in psutil.net_connections("tcp")
                     if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port]
        # gRPC listens on IPv4's loopback through an IPv6 socket: ::ffff:127.0.0.1.
        assert listening and {connection.laddr.ip.removeprefix("::ffff:")
                              for connection in listening} == {"127.0.0.1"}
        (pid,) = {connection.pid for connection in listening}
        assert psutil.Process(pid).cmdline()[1] == str(rehearse.WORKER_POOL_SCRIPT)
    assert not psutil.pid_exists(pid)


@pytest.mark.slow  # TensorFlow on both sides: about a minute here
def test_tfds_build_on_lean_workers_writes_the_direct_runners_bytes(shared_data,
                                                                     tmp_path_factory):
    """The TFDS build's workers hold the tfds extra (TensorFlow and TFDS, no torch)."""
    root = tmp_path_factory.mktemp("tfds")
    env = worker_env.create(root / "worker", "tfds")
    worker_env.install_project(env, REPO_ROOT)
    job = rehearse.tfds_job(rehearse.manual_dir(root / "manual",
                                                [str(shared_data / p) for p in SAMPLE_WET],
                                                shared_data / "badwords" / "en"))
    (verdict,) = rehearse.rehearse_in_env([job], env, root, TIMEOUT_S)
    assert verdict.passed, verdict.report()
    assert any(name.endswith(".tfrecord-00000-of-00001") for name in verdict.direct.files)


@pytest.mark.slow  # Three runs of the C4 job, one of them killed: about a minute here.
def test_staged_beam_jobs_killed_and_resumed_on_lean_workers_write_the_one_jobs_bytes(
        pipeline_env, shared_data, tmp_path):
    """A staged run, a Beam job per stage on the portable runner's workers, SIGKILLed once a
    URL task is done and resumed there, writes what one job on the DirectRunner writes."""
    inputs = [str(shared_data / path) for path in SAMPLE_WET]
    badwords = shared_data / "badwords" / "en"
    one_job = rehearse.run(rehearse.c4_job(inputs, badwords), rehearse.direct_options(),
                           tmp_path / "one-job", TIMEOUT_S)
    assert one_job.error is None, one_job.error
    in_stages = rehearse.c4_job(inputs, badwords, "c4-en-staged", rehearse.STAGED)
    output = tmp_path / "staged"
    with rehearse.worker_pool(pipeline_env) as port:
        options = rehearse.worker_options(port)
        assert rehearse.run_killed(in_stages, options, output, TIMEOUT_S) is None
        resumed = rehearse.run(in_stages, options, output, TIMEOUT_S)
    assert resumed.error is None, resumed.error
    assert resumed.files == one_job.files
    stages = json.loads((output / "parts" / "progress.json").read_text())["stages"]
    assert stages["read"]["reused"] == len(SAMPLE_WET)
    assert stages["url"]["reused"] >= 1
    assert stages["write"]["reused"] == 0
