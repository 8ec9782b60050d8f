"""Deterministic sharded output: `<dir>/<split>-NNNNN-of-NNNNN.jsonl.gz`, gzipped JSON lines (in
a folder per language, `<dir>/<language>/...`, for the variants that write languages apart), or
with the `parquet` format the same rows in the same shards and order as
`<split>-NNNNN-of-NNNNN.parquet` (pipelines/writers/parquet_shards.py).

Beam's text sink numbers shards and orders lines by bundling, so two runs of the same input
could differ. Here a page's shard is a hash of its URL, a shard's lines are sorted by URL, and
gzip writes no time stamp, so the files are byte-identical on any runner and any bundling.
A retried shard rewrites the same bytes.

The lines are what `json.dumps(record, ensure_ascii=False)` writes, built with orjson (several
times faster; the same bytes: tests/pipelines/test_output.py). The deflate stream is ISA-L's (isal)
at level 2, about 15 times faster than zlib's level 9 for files about 10% larger. Its bytes depend
on how the input is cut into calls, so it is fed in blocks of a fixed size (`GzipWriter`), and
they are the same whichever vector extensions the CPU has (tested with AVX-512 hidden), which
ISA-L's level 3 is not.

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
import heapq
import io
import pickle
import struct
import tempfile
from typing import BinaryIO, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows
from isal import isal_zlib

from pipelines import counters
from pipelines.page import Page, json_line
from pipelines.writers.parquet_shards import ParquetLinesWriter
from text.hashing import hash64

# ISA-L's levels 0 to 2 give the same bytes on every x86-64 CPU; 2 compresses the most of them.
GZIP_LEVEL = 2
GZIP_BLOCK_BYTES = 1 << 16  # On the samples, 1 MiB blocks compress 0.001% better.
# A gzip member's header (RFC 1952): deflate, no flags, time stamp 0, no extra flags, OS unknown.
_GZIP_HEADER = struct.pack("<4sIBB", b"\x1f\x8b\x08\x00", 0, 0, 255)
# Encoded lines and sort keys a shard writer holds before it spills a sorted run to disk.
DEFAULT_SORT_BUDGET_BYTES = 64 * 2**20

# (normalized URL, URL, timestamp, encoded line): the order of a shard's lines. URL dedup
# leaves one page per normalized URL, so the first three already decide in the pipeline; the
# line itself makes the order total for any input (equal entries are equal lines), so it never
# depends on the order in which the pages arrive.
SortEntry = Tuple[str, str, str, bytes]

# The formats a shard can be written in (--format), each with its files' suffix.
JSONL = "jsonl"
PARQUET = "parquet"
SHARD_SUFFIXES = {JSONL: ".jsonl.gz", PARQUET: ".parquet"}


def shard_name(split: str, index: int, num_shards: int, shard_format: str = JSONL) -> str:
    return f"{split}-{index:05d}-of-{num_shards:05d}{SHARD_SUFFIXES[shard_format]}"


def shard_glob(split: str, shard_format: str = JSONL, num_shards: Optional[int] = None) -> str:
    """The pattern that matches every shard_name of `split` in `shard_format`; of a split of
    `num_shards` files only, if given (a run's own files, not those another run left beside)."""
    count = "*" if num_shards is None else f"{num_shards:05d}"
    return f"{split}-*-of-{count}{SHARD_SUFFIXES[shard_format]}"


def bucket_of(page: Page, num_buckets: int) -> int:
    return url_bucket(page.normalized_url, num_buckets)


def url_bucket(normalized_url: str, num_buckets: int) -> int:
    """The hash bucket of a normalized URL: its shard's, and a staged run's URL bucket's."""
    return hash64(normalized_url) % num_buckets


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
    return json_line(page.to_json_record())


def sort_entry(page: Page) -> SortEntry:
    return (page.normalized_url, page.url, page.timestamp, encode_line(page))


def _entry_bytes(entry: SortEntry) -> int:
    """What an entry costs against the budget: its line and key text (Python's per-object
    overhead comes on top)."""
    normalized_url, url, timestamp, line = entry
    return len(normalized_url) + len(url) + len(timestamp) + len(line)


class GzipWriter:
    """Writes one gzip member to `sink`, whose bytes depend on the bytes written alone, not on
    how they are cut into writes: ISA-L deflates them in blocks of exactly GZIP_BLOCK_BYTES."""

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self._deflate = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED,
                                              -isal_zlib.MAX_WBITS)
        self._pending = bytearray()
        self._crc = 0
        self._size = 0
        sink.write(_GZIP_HEADER)

    def write(self, data: bytes) -> None:
        self._pending += data
        while len(self._pending) >= GZIP_BLOCK_BYTES:
            self._deflate_block(bytes(self._pending[:GZIP_BLOCK_BYTES]))
            del self._pending[:GZIP_BLOCK_BYTES]

    def _deflate_block(self, block: bytes) -> None:
        self._crc = isal_zlib.crc32(block, self._crc)
        self._size += len(block)
        self._sink.write(self._deflate.compress(block))

    def close(self) -> None:
        self._deflate_block(bytes(self._pending))
        self._pending = bytearray()
        self._sink.write(self._deflate.flush())
        self._sink.write(struct.pack("<II", self._crc, self._size % 2**32))


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
                spill_dir: Optional[str] = None, shard_format: str = JSONL) -> ShardWritten:
    """Writes a shard's pages to `sink` (gzipped JSON lines, or `shard_format`), in URL order
    (write_entries)."""
    return write_entries(map(sort_entry, pages), sink, sort_budget_bytes, spill_dir,
                         shard_format)


# The writer of each format: `write(line)` per line in the shard's order, then `close()`.
_LINE_WRITERS = {JSONL: GzipWriter, PARQUET: ParquetLinesWriter}


def write_entries(entries: Iterable[SortEntry], sink: BinaryIO,
                  sort_budget_bytes: int = DEFAULT_SORT_BUDGET_BYTES,
                  spill_dir: Optional[str] = None, shard_format: str = JSONL) -> ShardWritten:
    """Writes a shard's lines (the pages' sort entries) to `sink`, gzipped (or as Parquet rows,
    for `shard_format` parquet), in entry order.

    Reads `entries` once. Holds at most about `sort_budget_bytes` of lines and keys; past that,
    sorted runs are spilled to temporary files in `spill_dir` (the system's temporary folder
    by default). They have no name on POSIX, so even a killed worker leaves none behind, and
    are closed when the shard is written or fails; each is open (a file descriptor) until
    then. The bytes do not depend on the budget (GzipWriter).
    """
    with contextlib.ExitStack() as runs:
        spilled: List[BinaryIO] = []
        held: List[SortEntry] = []
        held_bytes = 0
        count = 0
        for entry in entries:
            held.append(entry)
            held_bytes += _entry_bytes(entry)
            count += 1
            if held_bytes > sort_budget_bytes:
                spilled.append(_spill(held, spill_dir, runs))
                held, held_bytes = [], 0
        held.sort()
        writer = _LINE_WRITERS[shard_format](sink)
        for *_, line in heapq.merge(*(_read_run(run) for run in spilled), held):
            writer.write(line)
        writer.close()
    return ShardWritten(pages=count, spilled_runs=len(spilled))


def encode_shard(pages: Iterable[Page]) -> bytes:
    """A shard's whole file in memory (for small inputs: tests, benchmarks)."""
    buffer = io.BytesIO()
    write_shard(pages, buffer)
    return buffer.getvalue()


# (folder under the output directory, "" for the directory itself; split): one set of files.
Destination = Tuple[str, str]


def shards_for(pages: int, pages_per_shard: Optional[int], max_shards: int) -> int:
    """How many hash buckets a destination of `pages` pages has: `max_shards`, or with a target
    of `pages_per_shard`, as many as that takes, from 1 to `max_shards`."""
    if pages_per_shard is None:
        return max_shards
    return min(max_shards, max(1, -(-pages // pages_per_shard)))


def _destination(page: Page, folder_of: Callable[[Page], str],
                 split_of: Callable[[Page], str]) -> Destination:
    return folder_of(page), split_of(page)


class _BucketFn(beam.DoFn):
    """Page (or any record `entry_of` knows) -> ((folder, split, bucket), its sort entry): the
    line leaves encoded, so the shuffle carries bytes. The bundle's distinct keys go to
    `buckets`, once each."""

    def __init__(self, folder_of: Callable[[Page], str], split_of: Callable[[Page], str],
                 max_shards: Dict[str, int], pages_per_shard: Optional[int],
                 entry_of: Callable[[Page], SortEntry]):
        self._folder_of = folder_of
        self._split_of = split_of
        self._max_shards = max_shards
        self._pages_per_shard = pages_per_shard
        self._entry_of = entry_of
        self._keys = set()

    def start_bundle(self):
        self._keys = set()

    def process(self, page: Page, pages_of: Optional[Dict[Destination, int]] = None):
        folder, split = _destination(page, self._folder_of, self._split_of)
        buckets = shards_for(pages_of[folder, split] if pages_of is not None else 0,
                             self._pages_per_shard, self._max_shards[split])
        entry = self._entry_of(page)
        key = folder, split, url_bucket(entry[0], buckets)
        self._keys.add(key)
        yield key, entry

    def finish_bundle(self):
        for key in sorted(self._keys):
            yield beam.pvalue.TaggedOutput("buckets", GlobalWindows.windowed_value(key))


def in_output_dir(page: Page) -> str:
    return ""


def occupied_buckets(keys: Iterable[Tuple[str, str, int]]) -> Dict[Destination, List[int]]:
    occupied: Dict[Destination, List[int]] = {}
    for folder, split, bucket in keys:
        occupied.setdefault((folder, split), []).append(bucket)
    return {destination: sorted(buckets) for destination, buckets in sorted(occupied.items())}


def empty_splits(occupied: Dict[Destination, List[int]], folders: Sequence[str],
                  splits: Sequence[str]):
    """((folder, split, bucket 0), no entry) for each split with no page of a folder that gets
    files (one of `folders`, or one that holds a page): it is written as one empty file."""
    for folder in sorted(set(folders) | {folder for folder, _ in occupied}):
        for split in splits:
            if (folder, split) not in occupied:
                yield (folder, split, 0), ()


class _WriteShardFn(beam.DoFn):

    def __init__(self, output_dir: str, sort_budget_bytes: int, shard_format: str,
                 counter_namespace: str):
        self._output_dir = output_dir
        self._sort_budget_bytes = sort_budget_bytes
        self._shard_format = shard_format
        self._counter_namespace = counter_namespace

    def process(self, keyed, occupied):
        (folder, split, bucket), entries = keyed
        numbering = shard_numbering(bucket, occupied.get((folder, split), []))
        if numbering is None:
            return
        index, num_shards = numbering
        directory = FileSystems.join(self._output_dir, folder) if folder else self._output_dir
        path = FileSystems.join(directory, shard_name(split, index, num_shards,
                                                      self._shard_format))
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as sink:
            # The grouped lines are streamed, never listed: a runner that pages its shuffle
            # (Dataflow) keeps the worker's memory within the sort budget.
            written = write_entries(entries, sink, self._sort_budget_bytes,
                                    shard_format=self._shard_format)
        Metrics.counter(self._counter_namespace,
                        counters.written(folder, split)).inc(written.pages)
        if written.spilled_runs:
            Metrics.counter(self._counter_namespace,
                            f"runs.spilled:{split}").inc(written.spilled_runs)
        yield path


class WriteShards(beam.PTransform):
    """Pages -> their files under `output_dir`, in one shuffle whatever the number of folders:
    each page goes to the split `split_of` names, in the folder `folder_of` names (a language;
    by default the output directory itself), at most `max_shards[split]` files a split: one per
    URL-hash bucket that holds pages (shard_numbering). Every split of a folder in `folders` or
    of one that holds a page has files: a split with no page is one empty file.

    With `pages_per_shard`, a destination's pages are counted first and it gets as many buckets
    as that many pages a shard takes, at most `max_shards[split]` (mC4's languages range from
    thousands of pages to billions: one count of shards for all would make the small ones a
    file a page, or the large ones files of terabytes). The counts depend on the pages alone,
    so the files do too.

    `sort_budget_bytes`: the lines and keys a shard's writer holds in memory before it spills
    sorted runs to local temporary files; the output is the same whatever the budget.
    `shard_format`: the files' format (SHARD_SUFFIXES), gzipped JSON lines by default.
    `entry_of`: an element's sort entry (whose first field, a normalized URL, picks its
    bucket): a page's by default; `counter_namespace`: where the lines written are counted.
    """

    def __init__(self, output_dir: str, max_shards: Dict[str, int],
                 split_of: Callable[[Page], str],
                 folder_of: Callable[[Page], str] = in_output_dir,
                 folders: Sequence[str] = ("",),
                 pages_per_shard: Optional[int] = None,
                 sort_budget_bytes: int = DEFAULT_SORT_BUDGET_BYTES,
                 shard_format: str = JSONL,
                 entry_of: Callable[[Page], SortEntry] = sort_entry,
                 counter_namespace: str = counters.namespace(counters.WRITE_STAGE)):
        super().__init__()
        if not max_shards or min(max_shards.values()) < 1:
            raise ValueError("the number of shards must be >= 1")
        if sort_budget_bytes < 1:
            raise ValueError("the sort budget must be >= 1 byte")
        if pages_per_shard is not None and pages_per_shard < 1:
            raise ValueError("the pages per shard must be >= 1")
        if shard_format not in SHARD_SUFFIXES:
            raise ValueError(f"unknown shard format {shard_format!r}; choose one of "
                             f"{sorted(SHARD_SUFFIXES)}")
        self._output_dir = output_dir
        self._pages_per_shard = pages_per_shard
        self._max_shards = dict(max_shards)
        self._split_of = split_of
        self._folder_of = folder_of
        self._folders = tuple(folders)
        self._sort_budget_bytes = sort_budget_bytes
        self._shard_format = shard_format
        self._entry_of = entry_of
        self._counter_namespace = counter_namespace

    def expand(self, pages):
        pages_of = None
        if self._pages_per_shard is not None:
            pages_of = beam.pvalue.AsDict(
                pages
                | "Destinations" >> beam.Map(_destination, self._folder_of, self._split_of)
                | "CountPages" >> beam.combiners.Count.PerElement())
        keyed = pages | "BucketByUrl" >> beam.ParDo(
            _BucketFn(self._folder_of, self._split_of, self._max_shards, self._pages_per_shard,
                      self._entry_of), pages_of).with_outputs("buckets", main="entries")
        # At most max_shards numbers per split and folder: a side input every writer can hold.
        occupied = (keyed.buckets
                    | "DistinctBuckets" >> beam.Distinct()
                    | "ListBuckets" >> beam.combiners.ToList()
                    | "ByDestination" >> beam.Map(occupied_buckets))
        writer = _WriteShardFn(self._output_dir, self._sort_budget_bytes, self._shard_format,
                               self._counter_namespace)
        written = (keyed.entries
                   | "GroupShards" >> beam.GroupByKey()
                   | "WriteShard" >> beam.ParDo(writer, occupied=beam.pvalue.AsSingleton(occupied)))
        empty = (occupied
                 | "EmptySplits" >> beam.FlatMap(empty_splits, self._folders,
                                                 tuple(self._max_shards))
                 | "WriteEmptySplit" >> beam.ParDo(writer,
                                                   occupied=beam.pvalue.AsSingleton(occupied)))
        return (written, empty) | "AllShards" >> beam.Flatten()
