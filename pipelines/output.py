"""Deterministic sharded output: `<dir>/<split>-NNNNN-of-NNNNN.jsonl.gz`, gzipped JSON lines.

Beam's text sink numbers shards and orders lines by bundling, so two runs of the same input
could differ. Here a page's shard is a hash of its URL, a shard's lines are sorted by URL, and
gzip writes no time stamp, so the files are byte-identical on any runner and any bundling.
A retried shard rewrites the same bytes.

The URL hash puts each page in one of `max_shards` buckets; only the buckets that hold pages
become files, numbered in bucket order, so a small split (a few pages of realnewslike) writes
as many files as it fills, never an empty one beside them. Which buckets hold pages depends on
the pages alone, so the number of files does too. A split with no page writes one empty file.

A shard is written in one pass over its pages with memory bounded by a budget, not by the
shard's size (a shard of C4 en from a whole dump is hundreds of MB): lines are sorted in memory
up to the budget, beyond it sorted runs go to temporary files and are merged while the gzip
stream goes straight to the sink.
"""
import contextlib
import dataclasses
import gzip
import heapq
import io
import json
import pickle
import tempfile
from typing import BinaryIO, Iterable, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from pipelines.page import Page
from text.hashing import hash64

# Encoded lines and sort keys a shard writer holds before it spills a sorted run to disk.
DEFAULT_SORT_BUDGET_BYTES = 64 * 2**20

# (normalized URL, URL, timestamp, encoded line): the order of a shard's lines. URL dedup
# leaves one page per normalized URL, so the first three already decide in the pipeline; the
# line itself makes the order total for any input (equal entries are equal lines), so it never
# depends on the order in which the pages arrive.
SortEntry = Tuple[str, str, str, bytes]


def shard_name(split: str, index: int, num_shards: int) -> str:
    return f"{split}-{index:05d}-of-{num_shards:05d}.jsonl.gz"


def bucket_of(page: Page, num_buckets: int) -> int:
    return hash64(page.normalized_url) % num_buckets


def shard_numbering(bucket: int, occupied: Sequence[int]) -> Optional[Tuple[int, int]]:
    """(index, number of shards) of the file of hash bucket `bucket`, or None for a bucket that
    gets no file. `occupied`: the buckets that hold pages, sorted; they are shards 0, 1, ... in
    that order. A split with no page is one empty shard, bucket 0's, so that it still has a file
    (a reader of the split finds it empty rather than missing)."""
    if not occupied:
        return (0, 1) if bucket == 0 else None
    if bucket not in occupied:
        return None
    return occupied.index(bucket), len(occupied)


def encode_line(page: Page) -> bytes:
    """A page's line in the output: its JSON record, UTF-8, newline-terminated."""
    return (json.dumps(page.to_json_record(), ensure_ascii=False) + "\n").encode("utf-8")


def sort_entry(page: Page) -> SortEntry:
    return (page.normalized_url, page.url, page.timestamp, encode_line(page))


def _entry_bytes(entry: SortEntry) -> int:
    """What an entry costs against the budget: its line and key text (Python's per-object
    overhead comes on top)."""
    normalized_url, url, timestamp, line = entry
    return len(normalized_url) + len(url) + len(timestamp) + len(line)


@dataclasses.dataclass(frozen=True)
class ShardWritten:
    pages: int
    spilled_runs: int  # Sorted runs that went to temporary files (0: sorted in memory).


def _spill(entries: List[SortEntry], spill_dir: Optional[str], runs: contextlib.ExitStack):
    """Sorts entries into an anonymous temporary file (closed, and so deleted, with `runs`)."""
    entries.sort()
    run = runs.enter_context(tempfile.TemporaryFile(dir=spill_dir))
    # One pickle per entry: a shared (un)pickler's memo would keep every entry of the run alive.
    for entry in entries:
        pickle.dump(entry, run, protocol=pickle.HIGHEST_PROTOCOL)
    run.seek(0)
    return run


def _read_run(run: BinaryIO) -> Iterator[SortEntry]:
    while True:
        try:
            yield pickle.load(run)
        except EOFError:
            return


def write_shard(pages: Iterable[Page], sink: BinaryIO,
                sort_budget_bytes: int = DEFAULT_SORT_BUDGET_BYTES,
                spill_dir: Optional[str] = None) -> ShardWritten:
    """Writes the gzipped JSON lines of a shard's pages to `sink`, in URL order.

    Reads `pages` once. Holds at most about `sort_budget_bytes` of lines and keys; past that,
    sorted runs are spilled to temporary files in `spill_dir` (the system's temporary folder
    by default). They have no name on POSIX, so even a killed worker leaves none behind, and
    are closed when the shard is written or fails; each is open (a file descriptor) until
    then. The bytes do not depend on the budget: gzip with no name, time stamp 0 and level 9.
    """
    with contextlib.ExitStack() as runs:
        spilled: List[BinaryIO] = []
        held: List[SortEntry] = []
        held_bytes = 0
        count = 0
        for page in pages:
            entry = sort_entry(page)
            held.append(entry)
            held_bytes += _entry_bytes(entry)
            count += 1
            if held_bytes > sort_budget_bytes:
                spilled.append(_spill(held, spill_dir, runs))
                held, held_bytes = [], 0
        held.sort()
        with gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0) as compressed:
            for *_, line in heapq.merge(*(_read_run(run) for run in spilled), held):
                compressed.write(line)
    return ShardWritten(pages=count, spilled_runs=len(spilled))


def encode_shard(pages: Iterable[Page]) -> bytes:
    """A shard's whole file in memory (for small inputs: tests, benchmarks)."""
    buffer = io.BytesIO()
    write_shard(pages, buffer)
    return buffer.getvalue()


class _WriteShardFn(beam.DoFn):

    def __init__(self, directory: str, split: str, sort_budget_bytes: int):
        self._directory = directory
        self._split = split
        self._sort_budget_bytes = sort_budget_bytes

    def process(self, keyed, occupied):
        bucket, pages = keyed
        numbering = shard_numbering(bucket, occupied)
        if numbering is None:
            return
        index, num_shards = numbering
        path = FileSystems.join(self._directory, shard_name(self._split, index, num_shards))
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as sink:
            # The grouped pages are streamed, never listed: a runner that pages its shuffle
            # (Dataflow) keeps the worker's memory within the sort budget.
            written = write_shard((page for page in pages if page is not None), sink,
                                  self._sort_budget_bytes)
        Metrics.counter("c4.write", f"pages.written:{self._split}").inc(written.pages)
        if written.spilled_runs:
            Metrics.counter("c4.write", f"runs.spilled:{self._split}").inc(written.spilled_runs)
        yield path


class WriteShards(beam.PTransform):
    """Pages of one split -> at most `max_shards` files in `directory`: one per URL-hash bucket
    that holds pages (shard_numbering), or one empty file for a split with no page.

    `sort_budget_bytes`: the lines and keys a shard's writer holds in memory before it spills
    sorted runs to local temporary files; the output is the same whatever the budget.
    """

    def __init__(self, directory: str, split: str, max_shards: int,
                 sort_budget_bytes: int = DEFAULT_SORT_BUDGET_BYTES):
        super().__init__()
        if max_shards < 1:
            raise ValueError("the number of shards must be >= 1")
        if sort_budget_bytes < 1:
            raise ValueError("the sort budget must be >= 1 byte")
        self._directory = directory
        self._split = split
        self._max_shards = max_shards
        self._sort_budget_bytes = sort_budget_bytes

    def expand(self, pages):
        max_shards = self._max_shards
        keyed = pages | "BucketByUrl" >> beam.Map(lambda page: (bucket_of(page, max_shards), page))
        # At most max_shards numbers: a side input every writer can hold.
        occupied = (keyed
                    | "Buckets" >> beam.Keys()
                    | "DistinctBuckets" >> beam.Distinct()
                    | "ListBuckets" >> beam.combiners.ToList()
                    | "SortBuckets" >> beam.Map(sorted))
        # Bucket 0 always has a group, so that a split with no page still writes its empty file.
        first_bucket = pages.pipeline | "FirstBucket" >> beam.Create([(0, None)])
        return ((keyed, first_bucket)
                | "Merge" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(
                    _WriteShardFn(self._directory, self._split, self._sort_budget_bytes),
                    occupied=beam.pvalue.AsSingleton(occupied)))
