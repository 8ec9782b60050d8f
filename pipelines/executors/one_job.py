"""A job run in one Beam job (small runs, tests, the TFDS builder's graph), and what every run
says when it could read none of its input."""
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from pipelines.beam.graph import build_pipeline
from pipelines.executors.job import Job
from pipelines.stats import stats
from pipelines.wording import counted
from pipelines.writers.output import shard_glob


class NothingRead(Exception):
    """A run that could read no input file: the message names them; `counters` are the run's."""

    def __init__(self, message: str, counters: stats.Stats):
        super().__init__(message)
        self.counters = counters


# The unreadable files a message names; the rest are counted (all are in stats.json).
NAMED_FILES = 10


def nothing_read_error(counters: stats.Stats) -> Optional[str]:
    """Why a run could read none of its input files (each skipped whole, or unreadable from its
    first byte; or a manifest the workers could not read), naming them; None when a file was
    read. A run of only the files the public C4 code skips (known corrupt) is not refused."""
    read = counters.get("read", {})
    unreadable, damaged_read = [], 0
    for problem in stats.file_problems(counters):
        if problem.get("skipped"):
            unreadable.append(problem["file"])
        elif problem.get("unreadable_from_byte") == 0:
            # Opened as a WET file (counted in files.read), yet no byte of it could be read.
            unreadable.append(problem["file"])
            damaged_read += 1
    manifests = read.get("manifests.skipped:unreadable", 0)
    if read.get("files.read", 0) > damaged_read or not (unreadable or manifests):
        return None
    named = ", ".join(unreadable[:NAMED_FILES])
    if len(unreadable) > NAMED_FILES:
        named += f" and {counted(len(unreadable) - NAMED_FILES, 'more file')}"
    what = [f"{counted(len(unreadable), 'input file')} ({named})"] if unreadable else []
    if manifests:
        what.append(counted(manifests, "manifest") + " the workers could not read")
    return (f"no input could be read: {' and '.join(what)}; see the warnings above, and "
            f"file_problems in {stats.STATS_FILE}. No dataset was written: fix or replace the "
            "files, then rerun")


def _remove_shards(job: Job) -> None:
    """Deletes the split files a job wrote (empty, for a run that read nothing)."""
    folders = [""] + list(job.config.language_folders or ())
    patterns = [FileSystems.join(job.output_dir, folder, shard_glob(split, job.shard_format))
                if folder else FileSystems.join(job.output_dir,
                                                shard_glob(split, job.shard_format))
                for folder in folders for split in job.max_shards]
    found = [metadata.path for match in FileSystems.match(patterns)
             for metadata in match.metadata_list]
    if found:
        FileSystems.delete(found)


def run_one_job(job: Job) -> stats.Stats:
    """The job in one; NothingRead (its split files deleted) when it could read no input."""
    pipeline = job.pipeline()
    build_pipeline(pipeline, job.config, job.resources, job.plan, job.output_dir, job.max_shards,
                   job.validation_fraction, job.pages_per_shard, job.shard_format, job.excluded)
    result = pipeline.run()
    result.wait_until_finish()
    counters = stats.collect_counters(result)
    error = nothing_read_error(counters)
    if error:
        _remove_shards(job)
        raise NothingRead(error, counters)
    return counters
