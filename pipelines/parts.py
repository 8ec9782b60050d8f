"""A job in parts, which a rerun resumes: the per-page work before the first shuffle (reading
the WET files, the released text, the length limit) runs per group of input files, and writes
each group's pages under `OUTPUT/parts/group-NNNNN/` with a marker written last; the global
stages (URL dedup onwards) then read every group's pages.

A group's marker (`DONE.json`) names the files of the input list it covers, the run
configuration's sha256, each part file's size and sha256, and the counters of its stages. A
rerun of the same command skips each group whose marker is valid and whose files have the sizes
it records; a group without a valid marker (a run killed while it was written) is redone from
an empty folder. A part file whose bytes do not match its marker's sha256 fails the global job
with the group to delete. The final output does not depend on which groups were reused: the
pages are the same, the global stages do not depend on the order of their input, and the
counters of the reused groups come from their markers.

A part file is the group's pages of one WET file, in input order, each as PageCoder bytes: a
file of records (pipelines/records.py).
"""
import dataclasses
import hashlib
import json
import os
import socket
import sys
import time
from typing import Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from pipelines import inputs, records, stats
from pipelines.provenance import json_default
from pipelines.page import Page
from pipelines.stages import (Counts, ListWetFiles, PageCoder, Step, read_wet_pages, run_steps)
from text.durations import duration

PARTS_FOLDER = "parts"
MARKER_FILE = "DONE.json"
PART_LIST_FILE = "parts.json"  # What the group's job wrote, which its marker records.
# The configuration the parts were made under, for the message that refuses another one.
PARTS_CONFIG_FILE = "parts_config.json"
PROGRESS_FILE = "progress.json"
LOCK_FILE = ".c4-run.lock"
# Why a group without a marker is computed: it was never done (not a problem to report).
NOT_DONE = "not done"
_PAGE_CODER = PageCoder()


class PartsError(Exception):
    """The parts under an output folder cannot be used as they are (another configuration, a
    corrupt part file, another run writing there); the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Group:
    """The files of the input list with an index in `files`."""
    index: int
    files: range

    @property
    def name(self) -> str:
        return f"group-{self.index:05d}"


def plan_groups(total_files: int, group_files: int) -> List[Group]:
    if group_files < 1:
        raise ValueError("--group_files must be >= 1")
    return [Group(index, range(first, min(first + group_files, total_files)))
            for index, first in enumerate(range(0, total_files, group_files))]


def config_sha256(run_config: dict, group_files: int) -> str:
    """The hash a marker names: of the whole run configuration (run_config.json's record) and
    the group size, so that parts are reused only by the command that made them."""
    record = {"run_config": run_config, "group_files": group_files}
    encoded = json.dumps(record, sort_keys=True, default=json_default).encode()
    return hashlib.sha256(encoded).hexdigest()


@dataclasses.dataclass(frozen=True)
class PartFile:
    name: str
    bytes: int
    sha256: str
    pages: int


@dataclasses.dataclass(frozen=True)
class Marker:
    group: int
    first_file: int
    files: int
    config_sha256: str
    part_files: Tuple[PartFile, ...]
    counters: stats.Stats
    seconds: float

    @property
    def pages(self) -> int:
        return sum(part.pages for part in self.part_files)

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "Marker":
        record = json.loads(data)
        record["part_files"] = tuple(PartFile(**part) for part in record["part_files"])
        return cls(**record)


def parts_dir(output_dir: str) -> str:
    return FileSystems.join(output_dir, PARTS_FOLDER)


def group_dir(output_dir: str, group: Group) -> str:
    return FileSystems.join(parts_dir(output_dir), group.name)


def marker_path(output_dir: str, group: Group) -> str:
    return FileSystems.join(group_dir(output_dir, group), MARKER_FILE)


def marker_problem(output_dir: str, group: Group, config_sha: str) -> Tuple[Optional[Marker],
                                                                            Optional[str]]:
    """(the group's marker, None) when the group is done and its files are whole; else
    (None, why it must be (re)done)."""
    try:
        data = records.read_all(marker_path(output_dir, group))
    except (IOError, OSError, BeamIOError):
        return None, NOT_DONE
    try:
        marker = Marker.from_json(data)
    except (ValueError, TypeError, KeyError):
        return None, "its marker is unreadable (truncated?)"
    if marker.config_sha256 != config_sha:
        return None, "made by a run of another configuration"
    if (marker.group, marker.first_file, marker.files) != (group.index, group.files.start,
                                                          len(group.files)):
        return None, "its marker covers other files"
    sizes = records.file_sizes(group_dir(output_dir, group))
    for part in marker.part_files:
        if part.name not in sizes:
            return None, f"{part.name} is missing"
        if sizes[part.name] != part.bytes:
            return None, f"{part.name} has {sizes[part.name]:,} bytes, not {part.bytes:,}"
    return marker, None


# Why a group without a marker whose folder holds files is redone.
STOPPED_WHILE_WRITTEN = ("its folder holds files but no marker: a run stopped while it wrote "
                         "the group (the folder is emptied first)")


def groups_with_files(output_dir: str) -> Set[str]:
    """The names of the group folders that hold a file, in one listing of the parts (a group
    without a marker among them was being written when a run stopped)."""
    pattern = FileSystems.join(parts_dir(output_dir), "group-*", "*")
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except BeamIOError:
        return set()
    return {FileSystems.split(FileSystems.split(metadata.path)[0])[1] for metadata in matched}


def part_name(file_index: int) -> str:
    return f"file-{file_index:07d}.pages"


def write_part(path: str, pages: Iterable[Page]) -> PartFile:
    """Writes the pages as a part file; a file of that name is replaced whole."""
    written = records.write_records(path, map(_PAGE_CODER.encode, pages))
    return PartFile(written.name, written.bytes, written.sha256, written.records)


def read_part(path: str, expected: PartFile) -> Iterator[Page]:
    """The pages of a part file; a PartsError if its bytes are not those its marker records."""
    as_records = records.RecordFile(expected.name, expected.bytes, expected.sha256,
                                    expected.pages)
    return map(_PAGE_CODER.decode, records.read_records(path, as_records, _not_its_marker))


def _not_its_marker(path: str) -> PartsError:
    group = FileSystems.split(FileSystems.split(path)[0])[1]
    return PartsError(f"{path} does not match its group's marker (size or sha256): delete the "
                      f"folder of {group} and rerun the same command to redo it")


class _WritePartFn(beam.DoFn):
    """(index, path) of a WET file -> its pages through `steps`, as a part file in the group's
    folder; outputs the part file's record."""

    def __init__(self, directory: str, max_record_bytes: int, steps: Sequence[Step]):
        self._directory = directory
        self._max_record_bytes = max_record_bytes
        self._steps = tuple(steps)

    def setup(self):
        for step in self._steps:
            step.setup()

    def process(self, indexed_path):
        file_index, path = indexed_path
        counts = Counts()
        pages = (passed for page in read_wet_pages(file_index, path, self._max_record_bytes,
                                                   counts)
                 for passed in run_steps(self._steps, page, counts))
        try:
            yield write_part(FileSystems.join(self._directory, part_name(file_index)), pages)
        finally:
            counts.report()


def _write_part_list(part_files: List[PartFile], directory: str) -> None:
    listed = sorted(part_files, key=lambda part: part.name)
    records.write_atomically(FileSystems.join(directory, PART_LIST_FILE),
                             json.dumps([dataclasses.asdict(part) for part in listed]).encode())


class WriteGroup(beam.PTransform):
    """The job of one group: its WET files read and through the per-page `steps`, a part file
    each, and the list of the part files (which the group's marker copies): one file for the
    launcher to read per group, not one per WET file."""

    def __init__(self, plan: inputs.InputPlan, group: Group, output_dir: str,
                 max_record_bytes: int, steps: Sequence[Step]):
        super().__init__()
        self._plan = plan
        self._group = group
        self._directory = group_dir(output_dir, group)
        self._max_record_bytes = max_record_bytes
        self._steps = tuple(steps)

    def expand(self, pipeline):
        return (pipeline
                | "ListWetFiles" >> ListWetFiles(self._plan, self._group.files)
                | "WritePart" >> beam.ParDo(_WritePartFn(self._directory, self._max_record_bytes,
                                                         self._steps))
                | "ListParts" >> beam.combiners.ToList()
                | "WritePartList" >> beam.Map(_write_part_list, self._directory))


def clear_group(output_dir: str, group: Group) -> None:
    """Removes what a run left of a group that has no valid marker, marker first."""
    records.clear_folder(group_dir(output_dir, group), MARKER_FILE)


def write_marker(output_dir: str, group: Group, config_sha: str, counters: stats.Stats,
                 seconds: float) -> Marker:
    """The group's marker, from the list of part files its job wrote; written last."""
    listed = json.loads(records.read_all(FileSystems.join(group_dir(output_dir, group),
                                                          PART_LIST_FILE)))
    part_files = tuple(PartFile(**record) for record in listed)
    marker = Marker(group.index, group.files.start, len(group.files), config_sha, part_files,
                    counters, round(seconds, 3))
    records.write_atomically(marker_path(output_dir, group), marker.to_json())
    return marker


def _part_files_of_marker(path: str):
    directory = FileSystems.split(path)[0]
    for part in Marker.from_json(records.read_all(path)).part_files:
        yield FileSystems.join(directory, part.name), part


def _pages_of_part(path_and_part):
    return read_part(*path_and_part)


class ReadGroups(beam.PTransform):
    """The pages of the groups whose markers are at `marker_paths`: the job holds one path per
    group, and the workers read the markers for their part files."""

    def __init__(self, marker_paths: Sequence[str]):
        super().__init__()
        self._marker_paths = list(marker_paths)

    def expand(self, pipeline):
        return (pipeline
                | "ListGroups" >> beam.Create(self._marker_paths)
                | "ListParts" >> beam.FlatMap(_part_files_of_marker)
                | "SpreadParts" >> beam.Reshuffle()
                | "ReadParts" >> beam.FlatMap(_pages_of_part))


def check_parts_config(output_dir: str, config_sha: str, record: dict, restart: bool,
                       write: bool = True) -> None:
    """Refuses parts of another configuration (naming what differs), or deletes them with
    `restart`; records this configuration for the parts to come (unless not `write`)."""
    path = FileSystems.join(parts_dir(output_dir), PARTS_CONFIG_FILE)
    current = {"config_sha256": config_sha, **record}
    try:
        previous = json.loads(records.read_all(path))
    except (IOError, OSError, BeamIOError, ValueError):
        previous = None
    if previous is not None and previous.get("config_sha256") == config_sha:
        return
    if previous is not None and not restart:
        differing = differing_fields(previous, current)
        raise PartsError(
            f"{parts_dir(output_dir)} holds the parts of a run of another configuration "
            f"(differing: {', '.join(differing) or 'versions'}): rerun that run's command "
            "to finish it, or pass --restart to delete its parts and start afresh")
    if not write:
        return
    if restart and FileSystems.exists(parts_dir(output_dir)):
        FileSystems.delete([parts_dir(output_dir)])
    if "://" not in output_dir:
        os.makedirs(parts_dir(output_dir), exist_ok=True)
    records.write_atomically(path, json.dumps(current, indent=1, sort_keys=True,
                                       default=json_default).encode())


def differing_fields(previous, current, prefix: str = "") -> List[str]:
    """The dotted names of the fields two records differ in, the deepest that differ."""
    def encoded(value):
        return json.dumps(value, sort_keys=True, default=json_default)
    if not (isinstance(previous, dict) and isinstance(current, dict)):
        return [prefix.rstrip(".")] if encoded(previous) != encoded(current) else []
    return [name for key in sorted(set(previous) | set(current)) if key != "config_sha256"
            for name in differing_fields(previous.get(key), current.get(key),
                                          f"{prefix}{key}.")]


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
                raise PartsError(
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
            raise PartsError(f"another run writes into this output folder ({holder}, "
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


class Progress:
    """What a job in parts has done and has left, for a person (a line per change, a bar that
    redraws itself on a terminal) and as `parts/progress.json` and `stats.json` (the counters
    of the groups done so far, with this record) while the job runs.

    Pages per second and the time left are of the groups this run computed; the global stage's
    time is estimated as `global_to_groups` times that of all the groups (the ratio of the two
    stages' CPU time that bench/bench_parts.py measures)."""

    def __init__(self, output_dir: str, variant: str, total: int, reused: Sequence[Marker],
                 global_to_groups: float, stream=None):
        self._output_dir = output_dir
        self._variant = variant
        self._total = total
        self._done = self._reused = len(reused)
        # Summed as groups end: stats.json is rewritten at every change, for thousands of groups.
        self.counters: stats.Stats = stats.merged(*(marker.counters for marker in reused))
        self._computed_seconds = 0.0
        self._computed_pages = 0
        self._running = 0
        self._phase = "groups"
        self._global_to_groups = global_to_groups
        self._stream = stream or sys.stderr
        self._bar = getattr(self._stream, "isatty", lambda: False)()

    def start_groups(self, count: int) -> None:
        self._running = count
        self._report()

    def groups_done(self, markers: Sequence[Marker], seconds: float) -> None:
        self._done += len(markers)
        self.counters = stats.merged(self.counters, *(marker.counters for marker in markers))
        self._running = 0
        self._computed_seconds += seconds
        self._computed_pages += sum(marker.pages for marker in markers)
        self._report()

    def start_global(self) -> None:
        self._phase = "global"
        self._report()

    def finish(self) -> None:
        self._phase = "done"
        self._report()
        if self._bar:
            self._stream.write("\n")

    def record(self) -> dict:
        done = self._done
        computed = done - self._reused
        per_group = self._computed_seconds / computed if computed else None
        left = self._total - done - self._running
        if self._phase == "done" or per_group is None:
            eta = 0.0 if self._phase == "done" else None
        else:
            groups_left = 0 if self._phase == "global" else left + self._running
            eta = per_group * (groups_left + self._global_to_groups * self._total)
        return {
            "phase": self._phase,
            "groups": {"total": self._total, "done": done, "running": self._running,
                       "left": left, "reused": self._reused, "computed": computed},
            "pages_per_second": (round(self._computed_pages / self._computed_seconds, 1)
                                 if self._computed_seconds else None),
            "eta_seconds": None if eta is None else round(eta, 1),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    def line(self, record: dict) -> str:
        groups = record["groups"]
        text = (f"groups: {groups['done']:,} done ({groups['reused']:,} reused), "
                f"{groups['running']:,} running, {groups['left']:,} left")
        if record["pages_per_second"] is not None:
            text += f"; {record['pages_per_second']:,.0f} pages/s"
        if record["phase"] == "global":
            text += "; global stage running"
        if record["eta_seconds"] is not None and record["phase"] != "done":
            text += f"; about {duration(record['eta_seconds'])} left"
        if record["phase"] == "done":
            text += "; done"
        if not self._bar:
            return text
        width = 30
        filled = width * groups["done"] // max(1, groups["total"])
        return f"\r[{'#' * filled}{'.' * (width - filled)}] {text}\033[K"

    def _report(self) -> None:
        record = self.record()
        self._stream.write(self.line(record) + ("" if self._bar else "\n"))
        self._stream.flush()
        records.write_json(FileSystems.join(parts_dir(self._output_dir), PROGRESS_FILE), record)
        if self._phase != "done":
            stats.write_stats(self.counters, self._variant, self._output_dir, progress=record)
