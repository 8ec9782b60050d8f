"""The seven tasks of a staged run (pipelines/executors/staged.py), each a plain function over
files, and how one runs: from an empty folder, its marker written last."""
import hashlib
import os
import logging
import time
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import counters, exclusion_sample, records
from pipelines.beam import wet_input
from pipelines.coders import PageCoder
from pipelines.executors.staged import (EXCLUDED_FOLDER, MARKER_FILE, StagedError, StagedRun, Task,
                                        TaskMarker)
from pipelines.executors.task_files import (TaskFiles, Spread, bucket_name, destination_name,
                                            destination_of, inputs_of, parts_of, part_of_page_key,
                                            part_of_url, read_input, read_role, shard_path)
from pipelines.filters import dedup
from pipelines.filters.urls import split_of
from pipelines.page import Page
from pipelines.stats import stats
from pipelines.steps import plan, url_dedup
from pipelines.steps.base import Counts, Routed, run_steps, setup_all
from pipelines.steps.span_dedup import LOST_KEY_MESSAGE, PAGE_MESSAGE
from pipelines.steps.webtext_join import URL_LIST_UNREADABLE, KeepListedPages, webtext_urls_of_file
from pipelines.wording import counted
from pipelines.writers import exclusions, output

_LOG = logging.getLogger("c4")
_TUPLES = beam.coders.FastPrimitivesCoder()
_PAGES = PageCoder()


def _phases(run: StagedRun) -> plan.Phases:
    return plan.phases(run.job.config, run.job.resources, run.layout.span_buckets)


def _read_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    wanted = range(task.index * run.layout.read_files,
                   min((task.index + 1) * run.layout.read_files, run.job.plan.files))
    steps = _phases(run).read
    setup_all(steps)
    # A file per URL bucket, written as the pages come: the task holds no page.
    writers: Dict[str, records.RecordWriter] = {}

    def add(kind: str, normalized_url: str, record: bytes) -> None:
        name = bucket_name(kind, output.url_bucket(normalized_url, run.layout.url_buckets))
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


def _url_lists_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    path = run.job.resources.webtext_url_files[task.index]
    buckets: Dict[int, set] = {}
    for url, _ in webtext_urls_of_file(path, run.job.config.rule_set, counts):
        buckets.setdefault(output.url_bucket(url, run.layout.url_buckets), set()).add(url)
    for bucket in sorted(buckets):
        files.write(bucket_name("url", bucket),
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
    parts = parts_of(task, ("pages",), run)
    if parts == 1:
        yield map(_PAGES.decode, read_role(task, "pages"))
        return
    spread = Spread(parts)
    for encoded in read_role(task, "pages"):
        spread.add(part_of_url(_PAGES.decode(encoded).normalized_url, run.layout.url_buckets,
                                parts), encoded)
    for part in range(parts):
        yield map(_PAGES.decode, spread.part(part))


def _url_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    """URL dedup of a URL bucket, then the plan's url_dedup and url phases (with the OpenWebText
    join, the bucket's listed URLs are its URL lists'); the span records resolved within the
    task."""
    phases = _phases(run)
    listed = {encoded.decode() for encoded in read_role(task, "listed")}
    setup_all(phases.url_dedup + phases.url)
    # Everything goes out as it comes: the pages, their lost keys, the winners per span bucket,
    # the exclusion records (the read tasks' of the bucket's pages, then its own).
    pages, lost, winners = files.writer("pages"), files.writer("lost"), {}
    excluded = files.writer("excluded")
    for encoded in read_role(task, "excluded"):
        excluded.add(encoded)

    def route(outputs):
        for each in outputs:
            if isinstance(each, Routed):  # To stages.WINNERS: a span-key bucket's block.
                bucket, block = each.value
                if bucket not in winners:
                    winners[bucket] = files.writer(bucket_name("spans", bucket))
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


def _spans_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    senders = inputs_of(task, "winners")
    blocks = [b"".join(read_input(each)) for each in senders]
    for each, losers in zip(senders, dedup.losers_of_blocks(blocks, run.job.config.dedup.mode)):
        files.write(bucket_name("url", each.source), map(_TUPLES.encode, losers))
    return {}


def _finish_parts(run: StagedRun, task: Task) -> Iterator[Tuple[Dict[bytes, list], Iterator]]:
    """(the lost keys of each page key, its (page key, page) records), a part of the bucket at
    a time: every record of a page key in one part."""
    parts = parts_of(task, ("pages", "lost"), run) if run.job.config.dedup else 1
    if parts == 1:
        yield _lost_keys(read_role(task, "lost")), read_role(task, "pages")
        return
    spread_lost, spread_pages = Spread(parts), Spread(parts)
    for role, spread in (("lost", spread_lost), ("pages", spread_pages)):
        for encoded in read_role(task, role):
            spread.add(part_of_page_key(_TUPLES.decode(encoded)[0], run.layout.url_buckets,
                                         parts), encoded)
    for part in range(parts):
        yield _lost_keys(spread_lost.part(part)), spread_pages.part(part)


def _lost_keys(encoded_losses: Iterable[bytes]) -> Dict[bytes, list]:
    lost_of: Dict[bytes, list] = {}
    for encoded in encoded_losses:
        key_of_page, key = _TUPLES.decode(encoded)
        lost_of.setdefault(key_of_page, []).append((LOST_KEY_MESSAGE, key))
    return lost_of


def _finish_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    """The plan's finish phase over a URL bucket's pages (with the span dedup, each page with
    the keys it lost); its pages' output lines by destination."""
    phases = _phases(run)
    setup_all(phases.finish)
    language_folders = run.job.config.language_folders is not None
    # A file per destination, written as the pages come.
    writers: Dict[Tuple[str, str], records.RecordWriter] = {}

    def add(destination: Tuple[str, str], entry: output.SortEntry) -> None:
        if destination not in writers:
            writers[destination] = files.writer(destination_name(*destination))
        writers[destination].add(_TUPLES.encode(entry))

    def add_pages(kept: Iterable[Page]) -> None:
        for page in kept:
            add((page.language if language_folders else "",
                 split_of(page.url, run.job.validation_fraction)), output.sort_entry(page))

    def add_excluded(excluded: Iterable[exclusion_sample.Excluded]) -> None:
        for record in excluded:
            add((EXCLUDED_FOLDER, record.split), exclusions.sort_entry(record))

    add_excluded(map(_decode_excluded, read_role(task, "excluded")))
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
        pages[destination_name(*destination)] = files.written[-1].records
    return {"pages": pages, "pages_in": pages_in, "parts": parts}


def _partition_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    """A finish task's lines to the file of their shard's hash bucket, as they come (the write
    task sorts a shard's lines)."""
    shards = {(folder, split): buckets for folder, split, buckets in task.params}
    occupied, lines = [], 0
    for each in inputs_of(task, "entries"):
        destination = destination_of(each.file.name)
        writers: Dict[int, records.RecordWriter] = {}
        for encoded in read_input(each):
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


def _write_task(run: StagedRun, task: Task, files: TaskFiles, counts: Counts) -> dict:
    folder, split, _, index, num_shards = task.params
    # The exclusions are JSON lines whatever the output's format.
    shard_format = output.JSONL if folder == EXCLUDED_FOLDER else run.job.shard_format
    relative = output.shard_name(split, index, num_shards, shard_format)
    relative = f"{folder}/{relative}" if folder else relative
    path = shard_path(run, relative)
    temporary = path + ".tmp" if "://" not in path else path
    if "://" not in path:
        os.makedirs(FileSystems.split(path)[0], exist_ok=True)
    entries = (_TUPLES.decode(encoded) for encoded in read_role(task, "shard"))
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
    files = TaskFiles(run.task_dir(task))
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
