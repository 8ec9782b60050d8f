"""A C4 run in stages of tasks: the shuffles of the one-job graph (pipelines/beam/graph.py) kept as
files of key buckets, each task's files kept under `OUTPUT/parts/<stage>/<task>/` with a marker
written last, so that memory is bounded by a bucket, not by the input, and a rerun of the same
command computes only the tasks without a valid marker.

    read       per group of WET files: the pages read, the plan's read phase (pipelines/
               plan.py); each page to the bucket of its URL key (output.url_bucket)
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
"""
import dataclasses
import hashlib
import json
import os
import struct
import sys
import tempfile
import logging
import time
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from pipelines import counters, exclusion_sample, records
from pipelines.executors import base
from pipelines.executors.base import NOT_DONE, STOPPED_WHILE_WRITTEN
from pipelines.beam import wet_input
from pipelines.filters import dedup
from pipelines.stats import stats
from pipelines.steps import plan, url_dedup
from pipelines.writers import exclusions, output
from pipelines.coders import PageCoder
from pipelines.executors.job import Job
from pipelines.executors.layout import STAGE_CPU_OVER_READ, Layout
from pipelines.page import Page
from pipelines.stats.provenance import json_default
from pipelines.steps.span_dedup import LOST_KEY_MESSAGE, PAGE_MESSAGE
from pipelines.steps.base import Counts, Routed, run_steps, setup_all
from pipelines.filters.urls import split_of
from pipelines.steps.webtext_join import URL_LIST_UNREADABLE, KeepListedPages, webtext_urls_of_file
from pipelines.wording import counted
from text.durations import duration
from text.hashing import hash64

MARKER_FILE = "DONE.json"
# The destination folder of the exclusion records (--exclusions): their files go to the
# exclusions' folder, not the output's ("+": no language folder has it).
EXCLUDED_FOLDER = "+excluded"
_LOG = logging.getLogger("c4")
_TUPLES = beam.coders.FastPrimitivesCoder()
_PAGES = PageCoder()


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


def _bucket_name(kind: str, index: int) -> str:
    return f"{kind}-{index:05d}"


def _destination_name(folder: str, split: str) -> str:
    return f"{folder}.{split}" if folder else split


def _mismatch(path: str) -> StagedError:
    task = FileSystems.split(FileSystems.split(path)[0])[1]
    return StagedError(f"{path} does not match its task's marker (size or sha256): delete the "
                       f"folder of {task} and rerun the same command to redo it")


def _read_input(each: Input) -> Iterator[bytes]:
    return records.read_records(each.path, each.file, _mismatch)


def _inputs(task: Task, role: str) -> List[Input]:
    return [each for each in task.inputs if each.role == role]


def _read(task: Task, role: str) -> Iterator[bytes]:
    for each in _inputs(task, role):
        yield from _read_input(each)


class _TaskFiles:
    """The files a task writes in its folder, each whole, recorded for its marker."""

    def __init__(self, directory: str):
        self._directory = directory
        self.written: List[records.RecordFile] = []

    def write(self, name: str, contents: Iterable[bytes]) -> None:
        self.written.append(records.write_records(FileSystems.join(self._directory, name),
                                                  contents))

    def writer(self, name: str) -> records.RecordWriter:
        """A file written as its records come; `closed` records it."""
        return records.RecordWriter(FileSystems.join(self._directory, name))

    def closed(self, writer: records.RecordWriter) -> None:
        self.written.append(writer.close())


class _Spread:
    """A bucket too big for a task to hold at once, spread over `parts` anonymous local
    temporary files by a key (raw records, each after its length), then read a part at a time:
    a task's memory is bounded by `task_bytes`, whatever its bucket's size."""
    _LENGTH = struct.Struct("<I")

    def __init__(self, parts: int):
        self._files = [tempfile.TemporaryFile() for _ in range(parts)]

    def add(self, part: int, record: bytes) -> None:
        self._files[part].write(self._LENGTH.pack(len(record)) + record)

    def part(self, part: int) -> Iterator[bytes]:
        """The records of one part, once; its file is closed (and gone) after."""
        with self._files[part] as source:
            source.seek(0)
            while True:
                header = source.read(self._LENGTH.size)
                if not header:
                    return
                yield source.read(self._LENGTH.unpack(header)[0])


def _parts_of(task: Task, roles: Sequence[str], run: StagedRun) -> int:
    """In how many parts a task takes its bucket: its input files' bytes over task_bytes."""
    size = sum(each.file.bytes for each in task.inputs if each.role in roles)
    return max(1, -(-size // run.layout.task_bytes))


def _part_of_url(normalized_url: str, buckets: int, parts: int) -> int:
    # The hash above the URL bucket's: a bucket's URLs spread over its parts.
    return hash64(normalized_url) // buckets % parts


def _part_of_page_key(key_of_page: bytes, buckets: int, parts: int) -> int:
    # Above the URL bucket's hash too: under the paper rules a page key is the URL's digest64.
    return int.from_bytes(key_of_page[:8], "big") // buckets % parts


# The tasks of each stage.

def _phases(run: StagedRun) -> plan.Phases:
    return plan.phases(run.job.config, run.job.resources, run.layout.span_buckets)


def _read_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    wanted = range(task.index * run.layout.read_files,
                   min((task.index + 1) * run.layout.read_files, run.job.plan.files))
    steps = _phases(run).read
    setup_all(steps)
    # A file per URL bucket, written as the pages come: the task holds no page.
    writers: Dict[str, records.RecordWriter] = {}

    def add(kind: str, normalized_url: str, record: bytes) -> None:
        name = _bucket_name(kind, output.url_bucket(normalized_url, run.layout.url_buckets))
        if name not in writers:
            writers[name] = files.writer(name)
        writers[name].add(record)

    pages = 0
    for source in run.job.plan.sources:
        if source.first_index >= wanted.stop or source.first_index + source.count <= wanted.start:
            continue
        for file_index, path in wet_input.listed_files(source, wanted, counts):
            for page in wet_input.read_wet_pages(file_index, path,
                                                 wet_input.max_record_bytes(run.job.config),
                                                 counts):
                for passed in run_steps(steps, page, counts):
                    add("url", passed.normalized_url, _PAGES.encode(passed))
                    pages += 1
                for record in _excluded(counts):
                    add("excluded", record.normalized_url, _encode_excluded(record))
    for name in sorted(writers):
        files.closed(writers.pop(name))
    return {"pages_in": pages}


def _url_lists_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    path = run.job.resources.webtext_url_files[task.index]
    buckets: Dict[int, set] = {}
    for url, _ in webtext_urls_of_file(path, run.job.config.rule_set, counts):
        buckets.setdefault(output.url_bucket(url, run.layout.url_buckets), set()).add(url)
    for bucket in sorted(buckets):
        files.write(_bucket_name("url", bucket),
                    (url.encode() for url in sorted(buckets.pop(bucket))))
    return {}


def _newest_pages(pages: Iterable[Page], keep_of_two, sample_fraction: Optional[float]
                  ) -> Dict[str, url_dedup.NewestOfUrl]:
    newest: Dict[str, url_dedup.NewestOfUrl] = {}
    for page in pages:
        newest[page.normalized_url] = url_dedup.with_page(
            newest.get(page.normalized_url, url_dedup.NO_PAGE), page, keep_of_two,
            sample_fraction)
    return newest


def _excluded(counts: Counts) -> List[exclusion_sample.Excluded]:
    """The exclusion records of the pages the steps have seen since the last call."""
    return [] if counts.sample is None else counts.sample.take()


def _encode_excluded(record: exclusion_sample.Excluded) -> bytes:
    return _TUPLES.encode(tuple(record))


def _decode_excluded(encoded: bytes) -> exclusion_sample.Excluded:
    return exclusion_sample.Excluded(*_TUPLES.decode(encoded))


def _url_parts(run: StagedRun, task: Task) -> Iterator[Iterator[Page]]:
    """The pages of a URL bucket, a part at a time (every page of a URL in one part)."""
    parts = _parts_of(task, ("pages",), run)
    if parts == 1:
        yield map(_PAGES.decode, _read(task, "pages"))
        return
    spread = _Spread(parts)
    for encoded in _read(task, "pages"):
        spread.add(_part_of_url(_PAGES.decode(encoded).normalized_url, run.layout.url_buckets,
                                parts), encoded)
    for part in range(parts):
        yield map(_PAGES.decode, spread.part(part))


def _url_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    """URL dedup of a URL bucket, then the plan's url_dedup and url phases (with the OpenWebText
    join, the bucket's listed URLs are its URL lists'); the span records resolved within the
    task."""
    phases = _phases(run)
    listed = {encoded.decode() for encoded in _read(task, "listed")}
    setup_all(phases.url_dedup + phases.url)
    # Everything goes out as it comes: the pages, their lost keys, the winners per span bucket,
    # the exclusion records (the read tasks' of the bucket's pages, then its own).
    pages, lost, winners = files.writer("pages"), files.writer("lost"), {}
    excluded = files.writer("excluded")
    for encoded in _read(task, "excluded"):
        excluded.add(encoded)

    def route(outputs):
        for each in outputs:
            if isinstance(each, Routed):  # To stages.WINNERS: a span-key bucket's block.
                bucket, block = each.value
                if bucket not in winners:
                    winners[bucket] = files.writer(_bucket_name("spans", bucket))
                winners[bucket].add(block)
            elif isinstance(each, Page):
                pages.add(_TUPLES.encode((b"", _PAGES.encode(each))))
            else:
                key_of_page, (kind, payload) = each
                (pages if kind == PAGE_MESSAGE else lost).add(
                    _TUPLES.encode((key_of_page, payload)))

    def newest_of_url(url: str, newest: url_dedup.NewestOfUrl) -> None:
        for page in run_steps(phases.url_dedup, (url, newest), counts):
            # The join's element: this task's URL bucket holds every page and listed URL of it.
            route(run_steps(phases.url, (url, [_PAGES.encode(page)], url in listed)
                            if phases.joins_url_lists else page, counts))
        for record in _excluded(counts):
            excluded.add(_encode_excluded(record))

    pages_in, parts = 0, 0
    sample_fraction = run.job.excluded and run.job.excluded.fraction
    for part in _url_parts(run, task):
        parts += 1
        newest = _newest_pages(part, run.job.config.rule_set.keep_of_two, sample_fraction)
        pages_in += sum(count for _, count, _ in newest.values())
        for url in sorted(newest):
            newest_of_url(url, newest.pop(url))
    if phases.url:  # What the phase's last step holds (SpanRecords: its unresolved records).
        route(phases.url[-1].finish(counts))
    files.closed(pages)
    files.closed(lost)
    files.closed(excluded)
    for bucket in sorted(winners):
        files.closed(winners.pop(bucket))
    return {"pages_in": pages_in, "parts": parts}


def _spans_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    senders = _inputs(task, "winners")
    blocks = [b"".join(_read_input(each)) for each in senders]
    for each, losers in zip(senders, dedup.losers_of_blocks(blocks, run.job.config.dedup.mode)):
        files.write(_bucket_name("url", each.source), map(_TUPLES.encode, losers))
    return {}


def _finish_parts(run: StagedRun, task: Task) -> Iterator[Tuple[Dict[bytes, list], Iterator]]:
    """(the lost keys of each page key, its (page key, page) records), a part of the bucket at
    a time: every record of a page key in one part."""
    parts = _parts_of(task, ("pages", "lost"), run) if run.job.config.dedup else 1
    if parts == 1:
        yield _lost_keys(_read(task, "lost")), _read(task, "pages")
        return
    spread_lost, spread_pages = _Spread(parts), _Spread(parts)
    for role, spread in (("lost", spread_lost), ("pages", spread_pages)):
        for encoded in _read(task, role):
            spread.add(_part_of_page_key(_TUPLES.decode(encoded)[0], run.layout.url_buckets,
                                         parts), encoded)
    for part in range(parts):
        yield _lost_keys(spread_lost.part(part)), spread_pages.part(part)


def _lost_keys(encoded_losses: Iterable[bytes]) -> Dict[bytes, list]:
    lost_of: Dict[bytes, list] = {}
    for encoded in encoded_losses:
        key_of_page, key = _TUPLES.decode(encoded)
        lost_of.setdefault(key_of_page, []).append((LOST_KEY_MESSAGE, key))
    return lost_of


def _finish_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    """The plan's finish phase over a URL bucket's pages (with the span dedup, each page with
    the keys it lost); its pages' output lines by destination."""
    phases = _phases(run)
    setup_all(phases.finish)
    language_folders = run.job.config.language_folders is not None
    # A file per destination, written as the pages come.
    writers: Dict[Tuple[str, str], records.RecordWriter] = {}

    def add(destination: Tuple[str, str], entry: output.SortEntry) -> None:
        if destination not in writers:
            writers[destination] = files.writer(_destination_name(*destination))
        writers[destination].add(_TUPLES.encode(entry))

    def add_pages(kept: Iterable[Page]) -> None:
        for page in kept:
            add((page.language if language_folders else "",
                 split_of(page.url, run.job.validation_fraction)), output.sort_entry(page))

    def add_excluded(excluded: Iterable[exclusion_sample.Excluded]) -> None:
        for record in excluded:
            add((EXCLUDED_FOLDER, record.split), exclusions.sort_entry(record))

    add_excluded(map(_decode_excluded, _read(task, "excluded")))
    pages_in, parts = 0, 0
    for lost_of, encoded_pages in _finish_parts(run, task):
        parts += 1
        for encoded in encoded_pages:
            pages_in += 1
            key_of_page, page_bytes = _TUPLES.decode(encoded)
            # get, not pop: pages whose page keys collide each get the key's losses, as the
            # one-job run's join by page key gives them.
            element = ((key_of_page, [(PAGE_MESSAGE, page_bytes), *lost_of.get(key_of_page, ())])
                       if phases.span_dedup else _PAGES.decode(page_bytes))
            add_pages(run_steps(phases.finish, element, counts))
            add_excluded(_excluded(counts))
    add_pages(phases.finish[-1].finish(counts))
    add_excluded(_excluded(counts))
    pages = {}
    for destination in sorted(writers):
        files.closed(writers.pop(destination))
        pages[_destination_name(*destination)] = files.written[-1].records
    return {"pages": pages, "pages_in": pages_in, "parts": parts}


def shard_counts(run: StagedRun, finish_markers: Sequence[TaskMarker]
                 ) -> Dict[Tuple[str, str], int]:
    """(folder, split) -> its number of hash buckets, from the pages the finish tasks wrote."""
    pages: Dict[str, int] = {}
    for marker in finish_markers:
        for name, count in marker.facts["pages"].items():
            pages[name] = pages.get(name, 0) + count
    return {_destination_of(name): _shards_for(run, *_destination_of(name), count)
            for name, count in pages.items()}


def _shards_for(run: StagedRun, folder: str, split: str, pages: int) -> int:
    if folder == EXCLUDED_FOLDER:
        return exclusions.max_shards(run.job.max_shards)[split]
    return output.shards_for(pages, run.job.pages_per_shard, run.job.max_shards[split])


def _destination_of(name: str) -> Tuple[str, str]:
    folder, _, split = name.rpartition(".")
    return folder, split


def _partition_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    """A finish task's lines to the file of their shard's hash bucket, as they come (the write
    task sorts a shard's lines)."""
    shards = {(folder, split): buckets for folder, split, buckets in task.params}
    occupied, lines = [], 0
    for each in _inputs(task, "entries"):
        destination = _destination_of(each.file.name)
        writers: Dict[int, records.RecordWriter] = {}
        for encoded in _read_input(each):
            bucket = output.url_bucket(_TUPLES.decode(encoded)[0], shards[destination])
            if bucket not in writers:
                writers[bucket] = files.writer(f"{each.file.name}.{bucket:05d}")
            writers[bucket].add(encoded)
            lines += 1
        for bucket in sorted(writers):
            occupied.append([*destination, bucket])
            files.closed(writers.pop(bucket))
    return {"occupied": occupied, "pages_in": lines}


class _HashingSink:
    def __init__(self, sink):
        self._sink = sink
        self.digest = hashlib.sha256()
        self.bytes = 0

    def write(self, data: bytes) -> None:
        self.digest.update(data)
        self.bytes += len(data)
        self._sink.write(data)


def _shard_path(run: StagedRun, relative: str) -> str:
    """Where a write task's shard is, from its name in the marker."""
    folder, _, name = relative.rpartition("/")
    if folder == EXCLUDED_FOLDER:
        return FileSystems.join(run.job.excluded.directory, name)
    return FileSystems.join(run.job.output_dir, relative)


def _write_task(run: StagedRun, task: Task, files: _TaskFiles, counts: Counts) -> dict:
    folder, split, _, index, num_shards = task.params
    # The exclusions are JSON lines whatever the output's format.
    shard_format = output.JSONL if folder == EXCLUDED_FOLDER else run.job.shard_format
    relative = output.shard_name(split, index, num_shards, shard_format)
    relative = f"{folder}/{relative}" if folder else relative
    path = _shard_path(run, relative)
    temporary = path + ".tmp" if "://" not in path else path
    if "://" not in path:
        os.makedirs(FileSystems.split(path)[0], exist_ok=True)
    entries = (_TUPLES.decode(encoded) for encoded in _read(task, "shard"))
    try:
        with FileSystems.create(temporary, compression_type="uncompressed") as sink:
            hashed = _HashingSink(sink)
            # Sorted within the output's memory budget, spilling sorted runs to local files.
            shard = output.write_entries(entries, hashed, shard_format=shard_format)
    except BaseException:
        if temporary != path and os.path.exists(temporary):
            os.remove(temporary)
        raise
    if temporary != path:
        os.replace(temporary, path)
    written = shard.pages
    if folder != EXCLUDED_FOLDER:  # The exclusions are not the output's: not in stats.json.
        counts.add(counters.WRITE_STAGE, counters.written(folder, split), written)
        if shard.spilled_runs:
            counts.add(counters.WRITE_STAGE, f"runs.spilled:{split}", shard.spilled_runs)
    # The shard is in the output folder, not the task's: its record names it from there.
    files.written.append(records.RecordFile(relative, hashed.bytes, hashed.digest.hexdigest(),
                                            written))
    return {"pages_in": written}


_TASKS = {"read": _read_task, "url_lists": _url_lists_task, "url": _url_task,
          "spans": _spans_task, "finish": _finish_task, "partition": _partition_task,
          "write": _write_task}


def run_task(run: StagedRun, task: Task) -> TaskMarker:
    """Runs a task from an empty folder and writes its marker last."""
    started = time.monotonic()
    records.clear_folder(run.task_dir(task), MARKER_FILE)
    files = _TaskFiles(run.task_dir(task))
    counts = Counts(run.job.excluded and exclusion_sample.Sample(run.job.excluded.fraction))
    facts = _TASKS[task.stage](run, task, files, counts)
    task_counters = stats.merged(counts.as_stats())
    _check_read(task, task_counters)
    marker = TaskMarker(task.stage, task.index, run.config_sha256, tuple(files.written),
                        task_counters, round(time.monotonic() - started, 3), facts)
    records.write_atomically(run.marker_path(task), marker.to_json())
    return marker


# A passing failure to read what the launcher read, which a marker would make permanent.
_NOT_READ = {(wet_input.READ, wet_input.MANIFEST_UNREADABLE): "a manifest",
             (KeepListedPages.stage, URL_LIST_UNREADABLE): "an OpenWebText URL list"}


def _check_read(task: Task, task_counters: stats.Stats) -> None:
    """A task that could not read a manifest or a URL list gets no marker (a rerun reads it
    again: most likely a passing failure); one that skipped unreadable WET files (most likely
    corrupt: a rerun would skip them again) gets its marker, with a warning saying how to redo
    it."""
    for (stage, name), what in _NOT_READ.items():
        if task_counters.get(stage, {}).get(name):
            raise StagedError(f"{task.name} could not read {what} (see the log): rerun the same "
                              "command to redo the task")
    read = task_counters.get(wet_input.READ, {})
    skipped = read.get("files.skipped:unreadable", 0) + read.get("files.skipped:not_wet", 0)
    if skipped:
        _LOG.warning("%s skipped %s (counted in stats.json); if they can be read now, delete "
                     "its folder and rerun to redo it", task.name,
                     counted(skipped, "unreadable WET file"))


# Planning: a stage's tasks from the markers of the stages before it.

class _Written:
    """The files the tasks of one stage wrote, by name, as inputs of the next: indexed once,
    not searched once per task (a stage writes about tasks x buckets files)."""

    def __init__(self, run: StagedRun, stage: str, markers: Sequence[TaskMarker]):
        self._by_name: Dict[str, List[Tuple[str, int, records.RecordFile]]] = {}
        for marker in markers:
            directory = run.task_dir(Task(stage, marker.index))
            for each in marker.files:
                self._by_name.setdefault(each.name, []).append(
                    (FileSystems.join(directory, each.name), marker.index, each))

    def inputs(self, role: str, name: str) -> List[Input]:
        return [Input(role, index, path, each)
                for path, index, each in self._by_name.get(name, ())]


def stage_tasks(run: StagedRun, stage: str, markers: Dict[str, List[TaskMarker]]) -> List[Task]:
    """The tasks of `stage`, given the markers of every stage before it."""
    cut = run.layout
    if stage == "read":
        return [Task(stage, index) for index in range(-(-run.job.plan.files // cut.read_files))]
    if stage == "url_lists":
        return [Task(stage, index) for index in range(len(run.job.resources.webtext_url_files))]
    if stage == "url":
        pages = _Written(run, "read", markers["read"])
        listed = _Written(run, "url_lists", markers.get("url_lists", ()))
        return [Task(stage, bucket, tuple(
            pages.inputs("pages", _bucket_name("url", bucket))
            + pages.inputs("excluded", _bucket_name("excluded", bucket))
            + listed.inputs("listed", _bucket_name("url", bucket))))
                for bucket in range(cut.url_buckets)]
    if stage == "spans":
        winners = _Written(run, "url", markers["url"])
        return [Task(stage, bucket, tuple(winners.inputs("winners", _bucket_name("spans", bucket))))
                for bucket in range(cut.span_buckets)]
    if stage == "finish":
        losses = _Written(run, "spans", markers.get("spans", ()))
        tasks = []
        for marker in markers["url"]:
            own = _Written(run, "url", [marker])
            tasks.append(Task(stage, marker.index, tuple(
                own.inputs("pages", "pages") + own.inputs("lost", "lost")
                + own.inputs("excluded", "excluded")
                + losses.inputs("lost", _bucket_name("url", marker.index)))))
        return tasks
    if stage == "partition":
        shards = tuple((*destination, buckets) for destination, buckets
                       in sorted(shard_counts(run, markers["finish"]).items()))
        tasks = []
        for marker in markers["finish"]:
            own = _Written(run, "finish", [marker])
            tasks.append(Task(stage, marker.index, tuple(
                each for destination in marker.facts["pages"]
                for each in own.inputs("entries", destination)), shards))
        return tasks
    if stage == "write":
        return _write_tasks(run, markers["partition"])
    raise ValueError(f"no stage {stage!r}")


def _write_tasks(run: StagedRun, partition_markers: Sequence[TaskMarker]) -> List[Task]:
    occupied = output.occupied_buckets({tuple(each) for marker in partition_markers
                                        for each in marker.facts["occupied"]})
    excluded = {destination: buckets for destination, buckets in occupied.items()
                if destination[0] == EXCLUDED_FOLDER}
    pages = {destination: buckets for destination, buckets in occupied.items()
             if destination not in excluded}
    folders = ("",) if run.job.config.language_folders is None else run.job.config.language_folders
    shards = [(folder, split, bucket, *output.shard_numbering(bucket, buckets))
              for (folder, split), buckets in occupied.items() for bucket in buckets]
    shards += [(folder, split, bucket, 0, 1) for (folder, split, bucket), _ in
               output.empty_splits(pages, folders, tuple(run.job.max_shards))]
    if run.job.excluded:
        shards += [(folder, split, bucket, 0, 1) for (folder, split, bucket), _ in
                   output.empty_splits(excluded, (EXCLUDED_FOLDER,),
                                       tuple(exclusions.max_shards(run.job.max_shards)))]
    written = _Written(run, "partition", partition_markers)
    tasks = []
    for index, shard in enumerate(sorted(shards)):
        folder, split, bucket = shard[:3]
        name = f"{_destination_name(folder, split)}.{bucket:05d}"
        tasks.append(Task("write", index, tuple(written.inputs("shard", name)), shard))
    return tasks


def task_state(run: StagedRun, task: Task) -> Tuple[Optional[TaskMarker], str]:
    """(the task's marker, "") when it is done and its files are whole; else (None, why it is
    (re)done)."""
    directory = run.task_dir(task)
    names = records.file_sizes(directory)
    if MARKER_FILE not in names:
        return None, STOPPED_WHILE_WRITTEN if names else NOT_DONE
    try:
        marker = TaskMarker.from_json(records.read_all(run.marker_path(task)))
    except (ValueError, TypeError, KeyError, IOError, OSError, BeamIOError):
        return None, "its marker is unreadable (truncated?)"
    if marker.config_sha256 != run.config_sha256:
        return None, "made by a run of another configuration"
    if (marker.stage, marker.index) != (task.stage, task.index):
        return None, "its marker is another task's"
    if task.stage == "write":
        names = _shard_sizes(run, marker)
    for each in marker.files:
        if each.name not in names:
            return None, f"{each.name} is missing"
        if names[each.name] != each.bytes:
            return None, f"{each.name} has {names[each.name]:,} bytes, not {each.bytes:,}"
    return marker, ""


def _shard_sizes(run: StagedRun, marker: TaskMarker) -> Dict[str, int]:
    sizes = {}
    for each in marker.files:
        matched = FileSystems.match([_shard_path(run, each.name)])[0]
        sizes.update((each.name, metadata.size_in_bytes) for metadata in matched.metadata_list)
    return sizes


class Progress:
    """What a staged run has done and has left, per stage, for a person (a line per change)
    and as `parts/progress.json` and `stats.json` (the counters of the tasks done so far)."""

    def __init__(self, output_dir: str, variant: str, stage_names: Sequence[str],
                 workers: Optional[int], stream=None):
        """`workers`: the processes that run the tasks, None for a runner's own."""
        self._output_dir = output_dir
        self._variant = variant
        self._stage_names = list(stage_names)
        self._workers = workers
        self._stream = stream or sys.stderr
        self._stages: Dict[str, dict] = {}
        # Summed as tasks end (a dump's run has thousands), not kept.
        self.counters: stats.Stats = {}
        self._seconds: Dict[str, List[float]] = {}  # Of the tasks computed, by stage.
        self._stage_seconds: Dict[str, float] = {}  # Of every task done, by stage.
        self._stage = None
        self._started = time.monotonic()
        self._computed_pages = 0

    def start_stage(self, stage: str, tasks: int, reused: Sequence[TaskMarker]) -> None:
        self._stage = stage
        self._started = time.monotonic()
        self._stages[stage] = {"tasks": tasks, "done": len(reused), "running": 0,
                               "left": tasks - len(reused), "reused": len(reused)}
        self.counters = stats.merged(self.counters, *(marker.counters for marker in reused))
        self._seconds[stage] = []
        self._stage_seconds[stage] = sum(marker.seconds for marker in reused)
        self._computed_pages = 0
        self._report()

    def running(self, count: int) -> None:
        counts = self._stages[self._stage]
        counts["running"] = count
        counts["left"] = counts["tasks"] - counts["done"] - count
        self._report()

    def task_done(self, marker: TaskMarker) -> None:
        counts = self._stages[self._stage]
        counts["done"] += 1
        counts["running"] = max(0, counts["running"] - 1)
        counts["left"] = counts["tasks"] - counts["done"] - counts["running"]
        self.counters = stats.merged(self.counters, marker.counters)
        self._seconds[self._stage].append(marker.seconds)
        self._stage_seconds[self._stage] += marker.seconds
        self._computed_pages += marker.facts.get("pages_in", 0)
        self._report()

    def finish(self) -> None:
        self._stage = "done"
        self._report()

    def record(self) -> dict:
        elapsed = time.monotonic() - self._started
        counts = self._stages.get(self._stage)
        record = {"stage": self._stage,
                  "stages": {name: self._stages.get(name) for name in self._stage_names}}
        if counts is None:
            return {**record, "eta_seconds": 0.0}
        computed = counts["done"] - counts["reused"]
        seconds = self._seconds[self._stage]
        per_task = sum(seconds) / len(seconds) if seconds else None
        record["pages_per_second"] = (round(self._computed_pages / elapsed, 1)
                                      if computed and elapsed > 0 else None)
        record["workers_busy"] = (f"{counts['running']} of {self._workers}" if self._workers
                                  else f"{counts['running']} on the runner's workers")
        if per_task is None:
            record["eta_seconds"] = None
            return record
        # A runner's workers are not counted here: its time left is counted as on one.
        workers = self._workers or 1
        left = per_task * (counts["left"] + counts["running"]) / workers
        # The later stages, from their CPU over the read stage's (all of it, once it is known).
        read_seconds = (per_task * counts["tasks"] if self._stage == "read" else
                        self._stage_seconds.get("read", 0.0))
        later = self._stage_names[self._stage_names.index(self._stage) + 1:]
        left += sum(STAGE_CPU_OVER_READ[name] for name in later) * read_seconds / workers
        record["eta_seconds"] = round(left, 1)
        return record

    def line(self, record: dict) -> str:
        if record["stage"] == "done":
            return "stages: done"
        counts = record["stages"][record["stage"]]
        text = (f"stage {record['stage']} ({self._stage_names.index(record['stage']) + 1} of "
                f"{len(self._stage_names)}): {counts['done']:,} of {counts['tasks']:,} tasks "
                f"done ({counts['reused']:,} reused), {counts['running']:,} running, "
                f"{counts['left']:,} left; workers busy {record['workers_busy']}")
        if record.get("pages_per_second"):
            text += f"; {record['pages_per_second']:,.0f} pages/s"
        if record.get("eta_seconds") is not None:
            text += f"; about {duration(record['eta_seconds'])} left"
        return text

    def _report(self) -> None:
        record = self.record()
        self._stream.write(self.line(record) + "\n")
        self._stream.flush()
        # stats.json first: a reader of progress.json finds stats.json as far along at least.
        if record["stage"] != "done":
            stats.write_stats(self.counters, self._variant, self._output_dir, progress=record)
        records.write_json(FileSystems.join(base.parts_dir(self._output_dir),
                                            base.PROGRESS_FILE), record)
