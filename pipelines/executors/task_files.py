"""The files of a staged run's task (pipelines/executors/staged.py): their names, what it reads
and writes, a bucket too big to hold spread over parts, and where its shards go."""
import struct
import tempfile
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors.staged import (EXCLUDED_FOLDER, Input, StagedError, StagedRun, Task,
                                        TaskMarker)
from pipelines.writers import exclusions, output
from text.hashing import hash64


def bucket_name(kind: str, index: int) -> str:
    return f"{kind}-{index:05d}"


def destination_name(folder: str, split: str) -> str:
    return f"{folder}.{split}" if folder else split


def mismatch(path: str) -> StagedError:
    task = FileSystems.split(FileSystems.split(path)[0])[1]
    return StagedError(f"{path} does not match its task's marker (size or sha256): delete the "
                       f"folder of {task} and rerun the same command to redo it")


def read_input(each: Input) -> Iterator[bytes]:
    return records.read_records(each.path, each.file, mismatch)


def inputs_of(task: Task, role: str) -> List[Input]:
    return [each for each in task.inputs if each.role == role]


def read_role(task: Task, role: str) -> Iterator[bytes]:
    for each in inputs_of(task, role):
        yield from read_input(each)


class TaskFiles:
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


class Spread:
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


def parts_of(task: Task, roles: Sequence[str], run: StagedRun) -> int:
    """In how many parts a task takes its bucket: its input files' bytes over task_bytes."""
    size = sum(each.file.bytes for each in task.inputs if each.role in roles)
    return max(1, -(-size // run.layout.task_bytes))


def part_of_url(normalized_url: str, buckets: int, parts: int) -> int:
    # The hash above the URL bucket's: a bucket's URLs spread over its parts.
    return hash64(normalized_url) // buckets % parts


def part_of_page_key(key_of_page: bytes, buckets: int, parts: int) -> int:
    # Above the URL bucket's hash too: under the paper rules a page key is the URL's digest64.
    return int.from_bytes(key_of_page[:8], "big") // buckets % parts


def shard_counts(run: StagedRun, finish_markers: Sequence[TaskMarker]
                 ) -> Dict[Tuple[str, str], int]:
    """(folder, split) -> its number of hash buckets, from the pages the finish tasks wrote."""
    pages: Dict[str, int] = {}
    for marker in finish_markers:
        for name, count in marker.facts["pages"].items():
            pages[name] = pages.get(name, 0) + count
    return {destination_of(name): shards_for(run, *destination_of(name), count)
            for name, count in pages.items()}


def shards_for(run: StagedRun, folder: str, split: str, pages: int) -> int:
    if folder == EXCLUDED_FOLDER:
        return exclusions.max_shards(run.job.max_shards)[split]
    return output.shards_for(pages, run.job.pages_per_shard, run.job.max_shards[split])


def destination_of(name: str) -> Tuple[str, str]:
    folder, _, split = name.rpartition(".")
    return folder, split


def shard_path(run: StagedRun, relative: str) -> str:
    """Where a write task's shard is, from its name in the marker."""
    folder, _, name = relative.rpartition("/")
    if folder == EXCLUDED_FOLDER:
        return FileSystems.join(run.job.excluded.directory, name)
    return FileSystems.join(run.job.output_dir, relative)
