"""A C4 run in stages of tasks: the shuffles of the one-job graph (pipelines/beam/graph.py) kept as
files of key buckets, each task's files kept under `OUTPUT/parts/<stage>/<task>/` with a marker
written last, so that memory is bounded by a bucket, not by the input, and a rerun of the same
command computes only the tasks without a valid marker.

    read       per group of WET files: the pages read, the plan's read phase (steps/plan.py);
               each page to the bucket of its URL key (output.url_bucket)
    url_lists  webtextlike, per OpenWebText list file: its URLs to the same buckets
    url        per URL bucket: URL dedup (all pages of a URL are in its bucket), the plan's
               url_dedup and url phases (the OpenWebText join within the bucket); the span
               records, resolved within the bucket, their winners to the buckets of their span
               keys
    spans      per span-key bucket: the winners across every URL bucket, and to each URL bucket
               the keys its pages lose
    finish     per URL bucket: the plan's finish phase (the spans removed, language, bad
               words, ...); the pages' output lines by split (and language)
    partition  per URL bucket: the lines to the hash bucket of their shard (the number of
               shards follows from every split's pages, for --pages_per_shard)
    write      per shard: its lines, merged in order, gzipped: the file the one-job run writes

With --exclusions, the read and url tasks pass their exclusion records on to the finish task
of their URL bucket, which writes them with its own as two more destinations (EXCLUDED_FOLDER):
the partition and write stages shard them into the exclusions' folder as the one-job run does.

The output (shards, stats.json, run_config.json, funnel.svg) is byte-identical to the one-job
run's: every choice the stages make is by hash or an associative rule (URL dedup's keep_of_two,
the span dedup's smallest page key, dedup.losers_of_blocks), never by the order of the input or
the cut into tasks, and the counters of the tasks sum to the job's.

Tasks are plain functions over files, run by an executor (pipelines/executors/): local worker
processes, or a Beam job per stage on any runner (Dataflow). A task's marker records its files'
sizes and sha256, its counters and facts its later stages need (pages per destination, the
shard buckets written), and the run configuration's sha256.

Here the task and marker types; the files a task reads and writes are task_files.py's, the
seven tasks tasks.py's, a stage's tasks from the markers before it planning.py's, and what the
run has done and has left progress.py's.
"""
import dataclasses
import hashlib
import json
from typing import NamedTuple, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors import base
from pipelines.executors.job import Job
from pipelines.executors.layout import Layout
from pipelines.stats import stats
from pipelines.stats.provenance import json_default

MARKER_FILE = "DONE.json"
# The destination folder of the exclusion records (--exclusions): their files go to the
# exclusions' folder, not the output's ("+": no language folder has it).
EXCLUDED_FOLDER = "+excluded"


class StagedError(Exception):
    """A staged run's files cannot be used as they are; the message says what to do."""


class Input(NamedTuple):
    """A file a task reads: what it holds (`role`), the index of the task of the earlier stage
    that wrote it, its path and its record in that task's marker."""
    role: str
    source: int
    path: str
    file: records.RecordFile


@dataclasses.dataclass(frozen=True)
class Task:
    stage: str
    index: int
    inputs: Tuple[Input, ...] = ()
    # partition: ((folder, split, hash buckets), ...) of every destination; write: its shard,
    # (folder, split, hash bucket, shard index, number of shards).
    params: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.stage}-{self.index:05d}"

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "Task":
        record = json.loads(data)
        inputs = tuple(Input(role, source, path, records.RecordFile(**each))
                       for role, source, path, each in record["inputs"])
        params = tuple(tuple(each) if isinstance(each, list) else each
                       for each in record["params"])
        return cls(record["stage"], record["index"], inputs, params)


@dataclasses.dataclass(frozen=True)
class TaskMarker:
    stage: str
    index: int
    config_sha256: str
    files: Tuple[records.RecordFile, ...]
    counters: stats.Stats
    seconds: float
    # "pages_in": the pages (or lines) the task took in; "parts": in how many parts it took its
    # bucket (url, finish); what later stages plan with: "pages" {destination: pages} (finish),
    # "occupied" [[folder, split, bucket]] (partition).
    facts: dict

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "TaskMarker":
        record = json.loads(data)
        record["files"] = tuple(records.RecordFile(**each) for each in record["files"])
        return cls(**record)


@dataclasses.dataclass(frozen=True)
class StagedRun:
    """What every task of a run reads: the checked and loaded job, its layout, its hash."""
    job: Job
    layout: Layout
    config_sha256: str

    def task_dir(self, task: Task) -> str:
        return FileSystems.join(base.parts_dir(self.job.output_dir), task.stage, task.name)

    def marker_path(self, task: Task) -> str:
        return FileSystems.join(self.task_dir(task), MARKER_FILE)

    def task_file(self, stage: str, index: int) -> str:
        """Where a stage run as a Beam job keeps a task for its workers (its inputs would make
        the job's graph too big to submit: thousands of files a task)."""
        return FileSystems.join(base.parts_dir(self.job.output_dir), stage, "tasks",
                                f"{stage}-{index:05d}.json")


def config_sha256(run_config: dict, layout: Layout) -> str:
    """The hash a marker names: of the run configuration and the layout, but --task_bytes (in
    how many parts a task takes its bucket changes none of its files: a rerun after a task ran
    out of memory may lower it)."""
    record = {"run_config": run_config,
              "staged": {**dataclasses.asdict(layout), "task_bytes": None}}
    return hashlib.sha256(json.dumps(record, sort_keys=True,
                                     default=json_default).encode()).hexdigest()
