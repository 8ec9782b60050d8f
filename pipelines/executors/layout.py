"""How a staged run (pipelines/executors/staged.py) cuts its work: its stages, its tasks and
buckets, and what each stage costs. Imports no Beam, so that a launcher's dry run
(deploy/dataflow.py) plans with it.
"""
import dataclasses
import resource
from typing import Dict, List, Optional

from pipelines.config import VariantConfig

STAGE_NAMES = ("read", "url_lists", "url", "spans", "finish", "partition", "write")
# The input (gzipped WET bytes) of a URL bucket by default, half a full-size WET file, and what a
# task holds at once of a bigger bucket, which it takes in parts of this size: a task's memory
# follows its bucket (2 full-size files in one bucket: 695 MB at the peak; in four: 314 MB,
# bench/bench_staged.py's runs of 2026-12-04), and this keeps it near the latter.
BUCKET_INPUT_BYTES = 32_000_000
# Buckets at most by default: a stage writes a file per pair of buckets (URL and span-key
# buckets; read tasks and URL buckets), so a dump's input makes buckets bigger, not more.
MAX_BUCKETS = 1024
# Read tasks by default at most: a read task writes a file per URL bucket, so that the files a
# stage keeps are about this many times the buckets; up to this many WET files, one file a task.
MAX_READ_TASKS = 1000
# Open files a process keeps beside a read task's writers (one per URL bucket).
OTHER_OPEN_FILES = 64
# The CPU time of each stage over that of the read stage (bench/bench_staged.py --workers 16, en
# on 16 full-size synthetic WET files, 2026-12-04; mC4's url and finish are 0.67 and 3.1), for the
# time left a run prints and what a failed stage costs. url_lists: not measured, small.
STAGE_CPU_OVER_READ = {"read": 1.0, "url_lists": 0.05, "url": 2.7, "spans": 0.05, "finish": 1.9,
                       "partition": 0.13, "write": 0.17}


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a staged run cuts its work; part of its configuration (another layout is another
    run), and of no effect on the output."""
    read_files: int  # WET files per read task.
    url_buckets: int
    span_buckets: int
    # The bytes of its input files a task holds at once: a bigger bucket is spread over local
    # temporary files by a second hash and taken a part at a time.
    task_bytes: int = BUCKET_INPUT_BYTES


def default_layout(files: int, input_bytes: int, read_files: Optional[int] = None,
                   buckets: Optional[int] = None,
                   task_bytes: int = BUCKET_INPUT_BYTES) -> Layout:
    """A bucket per BUCKET_INPUT_BYTES of input, at most MAX_BUCKETS, and at most
    MAX_READ_TASKS read tasks, unless `buckets` and `read_files` say; as many span-key
    buckets as URL buckets."""
    if buckets is None:
        buckets = min(MAX_BUCKETS, max(1, -(-input_bytes // BUCKET_INPUT_BYTES)))
    if read_files is None:
        read_files = max(1, -(-files // MAX_READ_TASKS))
    if min(buckets, read_files, task_bytes) < 1:
        raise ValueError("--buckets, --read_files and --task_bytes must be >= 1")
    return Layout(read_files, buckets, buckets, task_bytes)


def allow_open_files(layout: Layout) -> None:
    """Raises this process's limit of open files to what a read task keeps open (a file per
    URL bucket; forked workers inherit it); a ValueError where the system allows fewer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = layout.url_buckets + OTHER_OPEN_FILES
    if needed > hard:
        raise ValueError(f"{layout.url_buckets:,} buckets need a read task to keep "
                         f"{layout.url_buckets:,} files open, and this system allows {hard:,} "
                         "(ulimit -Hn): pass fewer --buckets, or raise the limit")
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def stages_of(config: VariantConfig) -> List[str]:
    """The stages a variant runs (url_lists for webtextlike, spans where it dedups text)."""
    return [stage for stage in STAGE_NAMES
            if (stage != "url_lists" or config.domain_filter == "webtext")
            and (stage != "spans" or config.dedup)]


def task_counts(config: VariantConfig, layout: Layout, files: int,
                url_lists: int) -> Dict[str, Optional[int]]:
    """Each stage's tasks (None for the write stage: a task per shard, known when the
    partition stage is done)."""
    counts = {"read": -(-files // layout.read_files), "url_lists": url_lists,
              "url": layout.url_buckets, "spans": layout.span_buckets,
              "finish": layout.url_buckets, "partition": layout.url_buckets, "write": None}
    return {stage: counts[stage] for stage in stages_of(config)}


def cpu_shares(config: VariantConfig) -> Dict[str, float]:
    """Each stage's share of a run's CPU: what a failure of its job costs at most."""
    names = stages_of(config)
    total = sum(STAGE_CPU_OVER_READ[name] for name in names)
    return {name: STAGE_CPU_OVER_READ[name] / total for name in names}
