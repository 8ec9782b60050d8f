"""Rehearses Dataflow's workers here: runs a Beam job twice, once on the DirectRunner in this
environment and once through Beam's portable runner with its workers in a separate virtualenv
that holds only what a worker installs (deploy/worker_env.py), and checks the two outputs are
the same bytes.

    python -m deploy.rehearse            # or: make rehearse

rehearses the C4 job (in one, and in stages), the mC4 job (workers: the `pipeline` extra) and the
TFDS build of t5_c4/en
(workers: the `tfds` extra) on the shared WET samples; the worker environments go to .venv-worker/.
A remote worker imports the project and its packages afresh and receives every function of the
job pickled, so the rehearsal fails, as Dataflow would, where the DirectRunner (one process with
the launcher's whole environment) does not: a package the workers lack, state a module held in
the launcher, an object that does not survive pickling into another process. The worker pool
listens on 127.0.0.1 only and its workers reach the job at localhost (the embedded job service's
own gRPC ports are Beam's: they listen on every interface while a run lasts, with no option to
narrow them); every wait is bounded and the worker pool is always killed.
"""
import argparse
import contextlib
import dataclasses
import glob
import hashlib
import os
import pathlib
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator, Mapping, Optional, Sequence

from deploy import REPO_ROOT, worker_env
from deploy.dataflow import PICKLING_OPTIONS
from pipelines.executors.base import PARTS_FOLDER

SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
WORKER_POOL_SCRIPT = pathlib.Path(__file__).resolve().parent / "worker_pool.py"
POOL_START_TIMEOUT_S = 60
JOB_TIMEOUT_S = 600
# How much of a failed run's standard error a verdict keeps.
ERROR_TAIL_CHARS = 3000

# A staged run (pipelines/executors/staged.py) in two URL buckets: on the DirectRunner its tasks run
# on local worker processes, on the portable runner each stage is a Beam job on the lean workers.
STAGED = ("--staged", "--buckets", "2")
# A staged run on the workers is killed once this stage has a task done, then rerun.
KILLED_AFTER_STAGE = "url"
# A job's command line from its Beam options (`--name=value` words) and its output folder.
Command = Callable[[Sequence[str], pathlib.Path], list[str]]


@dataclasses.dataclass(frozen=True)
class Job:
    name: str
    command: Command
    # The worker install it needs: an extra of setup.py.
    extra: str
    # Set for the launcher's process (e.g. PYTHONPATH).
    environ: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Whether the run on the workers is killed once (SIGKILL) and rerun to its end.
    killed_once: bool = False


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One run: its error (the end of its standard error) or None, and the sha256 of every file
    it wrote, by path relative to its output folder."""
    error: Optional[str]
    files: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Verdict:
    job: str
    direct: Outcome
    workers: Outcome
    # The run on the workers was killed once and rerun to its end.
    killed_once: bool = False

    @property
    def differing(self) -> list[str]:
        """Files written by one run only, or with other bytes."""
        names = self.direct.files.keys() | self.workers.files.keys()
        return sorted(name for name in names
                      if self.direct.files.get(name) != self.workers.files.get(name))

    @property
    def passed(self) -> bool:
        return (self.direct.error is None and self.workers.error is None
                and bool(self.direct.files) and not self.differing)

    def report(self) -> str:
        if self.passed:
            resumed = " (the workers' run killed once and resumed)" if self.killed_once else ""
            return f"{self.job}: the same {len(self.direct.files)} files, byte for byte{resumed}"
        lines = [f"{self.job}: FAILED"]
        for runner, outcome in (("DirectRunner", self.direct), ("remote workers", self.workers)):
            if outcome.error is not None:
                lines.append(f"  {runner} failed:\n{outcome.error}")
        if self.direct.error is None and self.workers.error is None:
            lines.append("  files that differ: " + (", ".join(self.differing) or "none written"))
        return "\n".join(lines)


def direct_options() -> list[str]:
    return ["--runner=DirectRunner", *PICKLING_OPTIONS]


def worker_options(port: int) -> list[str]:
    """The portable runner, its job service in this process, its workers from the pool."""
    return ["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
            f"--environment_config=127.0.0.1:{port}", *PICKLING_OPTIONS]


def _first_line(process: subprocess.Popen, timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"the worker pool did not start within {timeout:.0f} s")
    return process.stdout.readline()


def _kill_group(process: subprocess.Popen) -> None:
    """Kills the process and the workers it started (its process group), politely first."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def worker_pool(env: worker_env.WorkerEnv, extra_paths: Sequence[pathlib.Path] = (),
                timeout: float = POOL_START_TIMEOUT_S) -> Iterator[int]:
    """A worker pool of env's Python on 127.0.0.1; yields its port. Its workers run in an empty
    folder with no PYTHONPATH (only what env installs is importable), but extra_paths."""
    with tempfile.TemporaryDirectory(prefix="worker-pool-") as folder:
        environ = env.environ()
        if extra_paths:
            environ["PYTHONPATH"] = os.pathsep.join(str(path) for path in extra_paths)
        log_path = pathlib.Path(folder) / "pool.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [str(env.python), str(WORKER_POOL_SCRIPT)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, cwd=folder, env=environ, text=True,
                start_new_session=True)
        try:
            line = _first_line(process, timeout)
            if not line.strip().isdigit():
                raise RuntimeError("the worker pool did not start:\n"
                                   + log_path.read_text()[-ERROR_TAIL_CHARS:])
            yield int(line)
        finally:
            process.stdin.close()
            _kill_group(process)
            process.stdout.close()


def file_digests(folder: pathlib.Path) -> dict[str, str]:
    """sha256 of each output file, but those of the tasks a staged run keeps (their markers
    hold the tasks' times)."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and PARTS_FOLDER not in path.relative_to(folder).parts}


def run(job: Job, options: Sequence[str], output: pathlib.Path,
        timeout: float = JOB_TIMEOUT_S) -> Outcome:
    """Runs the job's launcher in this environment, from the checkout, within timeout."""
    environ = {**os.environ, **job.environ}
    try:
        finished = subprocess.run(job.command(options, output), cwd=REPO_ROOT, env=environ,
                                  capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(f"timed out after {timeout:.0f} s", {})
    if finished.returncode != 0:
        return Outcome(finished.stderr[-ERROR_TAIL_CHARS:], {})
    return Outcome(None, file_digests(output) if output.is_dir() else {})


def run_killed(job: Job, options: Sequence[str], output: pathlib.Path,
               timeout: float = JOB_TIMEOUT_S) -> Optional[str]:
    """Runs the job's launcher and SIGKILLs it (its process group) once a task of the
    KILLED_AFTER_STAGE stage has its marker; an error if the run ended before, or timed out."""
    environ = {**os.environ, **job.environ}
    process = subprocess.Popen(job.command(options, output), cwd=REPO_ROOT, env=environ,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + timeout
    markers = output / PARTS_FOLDER / KILLED_AFTER_STAGE
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if any(markers.glob("*/DONE.json")):
                return None
            time.sleep(0.05)
        if process.poll() is None:
            return f"timed out after {timeout:.0f} s before the kill"
        return ("the run ended before the kill:\n"
                + process.stderr.read().decode(errors="replace")[-ERROR_TAIL_CHARS:])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()


def rehearse(job: Job, port: int, workdir: pathlib.Path,
             timeout: float = JOB_TIMEOUT_S) -> Verdict:
    """The job on the DirectRunner and on the pool's workers, each into its own folder (on the
    workers killed once first, for a job that is)."""
    direct = run(job, direct_options(), workdir / job.name / "direct", timeout)
    output = workdir / job.name / "workers"
    error = job.killed_once and run_killed(job, worker_options(port), output, timeout)
    workers = Outcome(error, {}) if error else run(job, worker_options(port), output, timeout)
    return Verdict(job.name, direct, workers, job.killed_once)


def c4_job(inputs: Sequence[str], badwords: pathlib.Path, name: str = "c4-en",
           arguments: Sequence[str] = (), killed_once: bool = False) -> Job:
    """C4 `en`; `arguments`: more of the pipeline's (STAGED)."""
    def command(options: Sequence[str], output: pathlib.Path) -> list[str]:
        return [sys.executable, "-m", "pipelines.c4", "--variant", "en", "--input", *inputs,
                "--badwords", str(badwords), "--output", str(output), *arguments, *options]
    return Job(name, command, "pipeline", killed_once=killed_once)


def mc4_job(inputs: Sequence[str], badwords_dir: pathlib.Path) -> Job:
    """mC4 (`--variant multilingual`): CLD3 and the lists per language on the workers."""
    def command(options: Sequence[str], output: pathlib.Path) -> list[str]:
        return [sys.executable, "-m", "pipelines.c4", "--variant", "multilingual",
                "--input", *inputs, "--badwords_dir", str(badwords_dir),
                "--output", str(output), *options]
    return Job("c4-multilingual", command, "pipeline")


def tfds_job(manual_dir: pathlib.Path) -> Job:
    """`tfds build t5_c4/en` from a manual_dir (tfds_c4/inputs.py's layout); 5% validation so
    that the samples put pages in both splits."""
    def command(options: Sequence[str], output: pathlib.Path) -> list[str]:
        return [sys.executable, "-m", "tensorflow_datasets.scripts.cli.main", "build",
                "--imports", "tfds_c4", "t5_c4/en/validation_fraction=0.05",
                "--data_dir", str(output), "--manual_dir", str(manual_dir),
                "--beam_pipeline_options", ",".join(option.removeprefix("--")
                                                    for option in options)]
    return Job("tfds-t5_c4-en", command, "tfds")


def manual_dir(folder: pathlib.Path, wet_files: Sequence[str],
               badwords: pathlib.Path) -> pathlib.Path:
    """A TFDS manual_dir holding links to the WET files and the bad-words list."""
    from tfds_c4 import inputs  # imports TFDS: only for the TFDS job
    (folder / inputs.MANUAL_WET_DIR).mkdir(parents=True)
    for path in wet_files:
        (folder / inputs.MANUAL_WET_DIR / pathlib.Path(path).name).symlink_to(
            pathlib.Path(path).resolve())
    (folder / inputs.MANUAL_BADWORDS).parent.mkdir(parents=True)
    (folder / inputs.MANUAL_BADWORDS).symlink_to(badwords.resolve())
    return folder


def rehearse_in_env(jobs: Sequence[Job], env: worker_env.WorkerEnv,
                    workdir: pathlib.Path, timeout: float = JOB_TIMEOUT_S) -> list[Verdict]:
    with worker_pool(env) as port:
        return [rehearse(job, port, workdir, timeout) for job in jobs]


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deploy.rehearse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", nargs="+",
                        default=sorted(glob.glob(str(SHARED_DATA / "wet" / "*" / "*"))),
                        help="WET files (default: the shared samples)")
    parser.add_argument("--badwords", type=pathlib.Path, default=SHARED_DATA / "badwords" / "en")
    parser.add_argument("--badwords_dir", type=pathlib.Path, default=SHARED_DATA / "badwords",
                        help="mC4's lists per language")
    parser.add_argument("--jobs", nargs="+",
                        choices=("c4", "c4-staged", "mc4", "tfds"),
                        default=["c4", "c4-staged", "mc4", "tfds"])
    parser.add_argument("--envs", type=pathlib.Path, default=REPO_ROOT / ".venv-worker",
                        help="where the worker environments are made (one folder per extra)")
    parser.add_argument("--timeout", type=float, default=JOB_TIMEOUT_S,
                        help="seconds each run may take")
    args = parser.parse_args(argv)
    if not args.input:
        parser.error("no WET file given and none in the shared samples")
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as workdir:
        workdir = pathlib.Path(workdir)
        jobs = {"c4": lambda: c4_job(args.input, args.badwords),
                "c4-staged": lambda: c4_job(args.input, args.badwords, "c4-en-staged", STAGED,
                                            killed_once=True),
                "mc4": lambda: mc4_job(args.input, args.badwords_dir),
                "tfds": lambda: tfds_job(manual_dir(workdir / "manual", args.input,
                                                    args.badwords))}
        for name in args.jobs:
            job = jobs[name]()
            env = worker_env.create(args.envs / job.extra, job.extra)
            worker_env.install_project(env, REPO_ROOT)
            print(f"{job.name}: workers from {env.root} ({job.extra} extra)", flush=True)
            verdicts += rehearse_in_env([job], env, workdir, args.timeout)
            print(verdicts[-1].report(), flush=True)
    if not all(verdict.passed for verdict in verdicts):
        sys.exit(1)


if __name__ == "__main__":
    main()
