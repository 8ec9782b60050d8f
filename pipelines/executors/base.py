"""What every run shares, whatever runs it: the folder a staged run keeps its tasks in, the lock
of the output folder, the check of the configuration found there (a finished run's, a staged
run's kept tasks', a former run in parts'), and the registry of the executors that run a staged
run's tasks."""
import dataclasses
import importlib
import json
import os
import socket
import time
from typing import List, Optional

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors.job import Job
from pipelines.stats import funnel, provenance, stats
from pipelines.stats.provenance import json_default
from pipelines.writers import dataset_card, output

PARTS_FOLDER = "parts"
# The configuration the kept tasks were made under, for the message that refuses another one.
PARTS_CONFIG_FILE = "parts_config.json"
PROGRESS_FILE = "progress.json"
# A task without a valid marker whose folder holds files: a run stopped while it wrote it.
STOPPED_WHILE_WRITTEN = ("its folder holds files but no marker: a run stopped while it wrote "
                         "the task (the folder is emptied first)")
NOT_DONE = "not done"
LOCK_FILE = ".c4-run.lock"
# The field of PARTS_CONFIG_FILE that only a run in parts (retired) wrote.
FORMER_PARTS_FIELD = "group_files"

# The executors of a staged run's tasks, by the name --executor gives: "module:class", imported
# when chosen. A class takes (the staged run, --workers); its `workers` are the processes that
# run tasks side by side (None: a runner's own), and `run(run, stage, tasks, progress)` runs a
# stage's tasks and returns their markers.
EXECUTORS = {
    "local": "pipelines.executors.local:LocalWorkers",
    "beam": "pipelines.executors.beam_stages:BeamStages",
}


class OutputError(Exception):
    """The output folder cannot be used as it is (another configuration, another run writing
    there, the parts of a former run in parts); the message says what to do."""


def executor(name: str, run, workers: int):
    """The executor registered as `name`, made for `run`."""
    module, _, attribute = EXECUTORS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)(run, workers)


def parts_dir(output_dir: str) -> str:
    return FileSystems.join(output_dir, PARTS_FOLDER)


def _parts_config_path(output_dir: str) -> str:
    return FileSystems.join(parts_dir(output_dir), PARTS_CONFIG_FILE)


def has_parts(output_dir: str) -> bool:
    """Whether `output_dir` keeps the tasks of a staged run (that a rerun resumes)."""
    return FileSystems.exists(_parts_config_path(output_dir))


def _kept_config(output_dir: str) -> Optional[dict]:
    try:
        return json.loads(records.read_all(_parts_config_path(output_dir)))
    except (IOError, OSError, BeamIOError, ValueError):
        return None


def _encoded(value) -> str:
    return json.dumps(value, sort_keys=True, default=json_default)


def differing_fields(previous, current, prefix: str = "") -> List[str]:
    """The dotted names of the fields two records differ in, the deepest that differ."""
    if not (isinstance(previous, dict) and isinstance(current, dict)):
        return [prefix.rstrip(".")] if _encoded(previous) != _encoded(current) else []
    return [name for key in sorted(set(previous) | set(current)) if key != "config_sha256"
            for name in differing_fields(previous.get(key), current.get(key),
                                          f"{prefix}{key}.")]


def former_parts(output_dir: str) -> Optional[str]:
    """Why a run may not write into a folder that keeps the parts of a run in parts (retired:
    the parts of its groups are of no use to a staged run), or None."""
    kept = _kept_config(output_dir)
    if kept is None or FORMER_PARTS_FIELD not in kept:
        return None
    return (f"{parts_dir(output_dir)} holds the parts of a run in parts, which this version no "
            "longer runs (a run in pieces runs in stages): rerun into a new --output, or pass "
            "--restart to delete them and start afresh")


def earlier_run_config(output_dir: str) -> Optional[dict]:
    """The run_config.json a finished run left in `output_dir`, or None."""
    path = FileSystems.join(output_dir, provenance.RUN_CONFIG_FILE)
    if not FileSystems.exists(path):
        return None
    try:
        return json.loads(records.read_all(path))
    except ValueError:
        return None  # Not a finished run's record: nothing to compare with.


def other_configuration(job: Job) -> Optional[str]:
    """Why `job` may not write into a folder that holds a finished run of another
    configuration (naming the fields that differ), or None."""
    earlier = earlier_run_config(job.output_dir)
    if earlier is None:
        return None
    differing = differing_fields(earlier, json.loads(_encoded(job.run_config())))
    if not differing:
        return None
    return (f"{job.output_dir} holds a finished run of another configuration (differing: "
            f"{', '.join(differing)}): rerun with that run's options, give another --output, "
            "or pass --restart to delete its dataset and start afresh")


def other_kept_configuration(output_dir: str, kept: dict) -> Optional[str]:
    """Why a staged run whose configuration is `kept` may not resume the tasks kept in
    `output_dir` (another configuration's, naming the fields that differ), or None."""
    previous = _kept_config(output_dir)
    if previous is None or previous.get("config_sha256") == kept["config_sha256"]:
        return None
    differing = differing_fields(previous, kept)
    return (f"{parts_dir(output_dir)} holds the parts of a run of another configuration "
            f"(differing: {', '.join(differing) or 'versions'}): rerun that run's command "
            "to finish it, or pass --restart to delete its parts and start afresh")


def _earlier_files(job: Job) -> List[str]:
    """What an earlier run left in the output folder: its shards (of any format) there and in
    its language folders, its reports, and the stats.json of each language folder."""
    shards = [path for shard_format in output.SHARD_SUFFIXES
              for path in dataset_card.shard_listing(job.output_dir, tuple(job.max_shards),
                                                     shard_format)]
    languages = sorted({path.rpartition("/")[0] for path in shards} - {""})
    reports = [stats.STATS_FILE, provenance.RUN_CONFIG_FILE, funnel.FUNNEL_FILE,
               dataset_card.CARD_FILE]
    reports += [f"{language}/{stats.STATS_FILE}" for language in languages]
    return [FileSystems.join(job.output_dir, path) for path in shards + reports
            if FileSystems.exists(FileSystems.join(job.output_dir, path))]


def start_afresh(job: Job) -> None:
    """Removes what an earlier run left in the output folder (its shards and reports), and
    writes a stats.json that says this run has started: killed before its end, the folder is an
    unfinished run, never the earlier one."""
    earlier = _earlier_files(job)
    if earlier:
        FileSystems.delete(earlier)
    stats.write_stats({}, job.config.name, job.output_dir, progress={"phase": "started"})


def refusal(job: Job, restart: bool, kept: Optional[dict] = None) -> Optional[str]:
    """Why `job` may not write into its output folder as it is, or None: every check a run
    makes before any work (with `restart`, none refuses). `kept`: the record of a staged run's
    configuration (its config_sha256 among it), which its kept tasks must share."""
    if restart:
        return None
    return (former_parts(job.output_dir) or other_configuration(job)
            or (kept is not None and other_kept_configuration(job.output_dir, kept)) or None)


def prepare_output(job: Job, restart: bool, kept: Optional[dict] = None) -> None:
    """Refuses (OutputError) an output folder that `refusal` refuses; else makes it this run's:
    with `restart`, the parts kept there go; the dataset of an earlier run goes unless this is a
    staged run (`kept`) that resumes its kept tasks; a staged run records its configuration."""
    problem = refusal(job, restart, kept)
    if problem:
        raise OutputError(problem)
    if restart and FileSystems.exists(parts_dir(job.output_dir)):
        FileSystems.delete([parts_dir(job.output_dir)])
    if kept is None or not has_parts(job.output_dir):
        start_afresh(job)
    if kept is not None:
        if "://" not in job.output_dir:
            os.makedirs(parts_dir(job.output_dir), exist_ok=True)
        records.write_atomically(_parts_config_path(job.output_dir),
                                 json.dumps(kept, indent=1, sort_keys=True,
                                            default=json_default).encode())


def staged_record(job: Job, config_sha256: str, layout) -> dict:
    """The record of a staged run's configuration that its kept tasks are checked against."""
    return {"config_sha256": config_sha256, "run_config": job.run_config(),
            "staged": dataclasses.asdict(layout)}


class OutputLock:
    """Keeps a second run from writing into the same output folder. A local folder is locked
    with flock, which the system releases when the process dies (a killed run leaves no stale
    lock); an object store's folder holds a lock object naming its run, removed at the end, and
    one a dead run left is removed with --break_lock."""

    def __init__(self, output_dir: str, break_lock: bool = False):
        self._path = FileSystems.join(output_dir, LOCK_FILE)
        self._break = break_lock
        self._file = None

    def _holder(self) -> str:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return f"pid {os.getpid()} on {socket.gethostname()} since {since}"

    def __enter__(self):
        if "://" in self._path:
            if FileSystems.exists(self._path) and not self._break:
                raise OutputError(
                    "another run writes into this output folder "
                    f"({records.read_all(self._path).decode()}, "
                    f"{self._path}); if it is dead, pass --break_lock")
            with FileSystems.create(self._path) as sink:
                sink.write(self._holder().encode())
            return self
        import fcntl  # POSIX only, as the DirectRunner's local folders are.
        os.makedirs(os.path.dirname(self._path), exist_ok=True)
        self._file = open(self._path, "a+")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.seek(0)
            holder = self._file.read().strip() or "another process"
            self._file.close()
            raise OutputError(f"another run writes into this output folder ({holder}, "
                              f"{self._path}): wait for it to end, or use another --output")
        self._file.seek(0)
        self._file.truncate()
        self._file.write(self._holder())
        self._file.flush()
        return self

    def __exit__(self, *exc_info):
        if self._file is None:
            FileSystems.delete([self._path])
            return
        # Removed while still held, so that no run takes a lock on a file about to go.
        os.unlink(self._path)
        self._file.close()
