"""The files a resumable run keeps between its jobs or stages: records (bytes) each after its
length (4 bytes, little-endian), the whole deflated by ISA-L at level 1 (zlib format).

A file is written whole or not at all (a local file is renamed into place; an object store's
upload is whole on close), and its size and sha256 go into the marker of the task that wrote
it, which a reader checks: a file that does not match is an error that names it.
"""
import dataclasses
import hashlib
import json
import os
import struct
from typing import Callable, Dict, Iterable, Iterator

from apache_beam.io.filesystems import FileSystems
from isal import isal_zlib

_LEVEL = 1
_LENGTH = struct.Struct("<I")
_READ_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class RecordFile:
    """What a marker records of a file: its name (in its task's folder), size, sha256 and
    number of records."""
    name: str
    bytes: int
    sha256: str
    records: int


def write_atomically(path: str, data: bytes) -> None:
    """Writes `data` at `path` so that a reader sees all of it or nothing."""
    if "://" in path:
        with FileSystems.create(path) as sink:
            sink.write(data)
        return
    temporary = path + ".tmp"
    with open(temporary, "wb") as sink:
        sink.write(data)
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(temporary, path)


def read_all(path: str) -> bytes:
    with FileSystems.open(path, compression_type="uncompressed") as source:
        return source.read()


def write_json(path: str, record) -> None:
    write_atomically(path, json.dumps(record, indent=1).encode())


class RecordWriter:
    """A file of records written as they come (one compressor's state, about 350 KB once data
    flows, and an open file): a task writes to many at once. `close` gives its marker's record;
    the file appears whole at its path then."""

    def __init__(self, path: str):
        self._path = path
        self._temporary = path + ".tmp" if "://" not in path else path
        self._sink = FileSystems.create(self._temporary, compression_type="uncompressed")
        self._compressor = isal_zlib.compressobj(_LEVEL)
        self._digest = hashlib.sha256()
        self._size = 0
        self._count = 0

    def _put(self, chunk: bytes) -> None:
        if chunk:
            self._digest.update(chunk)
            self._sink.write(chunk)
            self._size += len(chunk)

    def add(self, record: bytes) -> None:
        self._put(self._compressor.compress(_LENGTH.pack(len(record)) + record))
        self._count += 1

    def close(self) -> RecordFile:
        self._put(self._compressor.flush())
        self._sink.close()
        if self._temporary != self._path:
            os.replace(self._temporary, self._path)
        return RecordFile(FileSystems.split(self._path)[1], self._size,
                          self._digest.hexdigest(), self._count)


def write_records(path: str, records: Iterable[bytes]) -> RecordFile:
    """Writes the records as a file at `path`; a file of that name is replaced whole."""
    writer = RecordWriter(path)
    for record in records:
        writer.add(record)
    return writer.close()


def read_records(path: str, expected: RecordFile,
                 mismatch: Callable[[str], Exception]) -> Iterator[bytes]:
    """The records of a file; `mismatch(path)` is raised when its bytes are not those its
    marker records (`expected`)."""
    decompressor = isal_zlib.decompressobj()
    digest, size, buffer = hashlib.sha256(), 0, b""
    with FileSystems.open(path, compression_type="uncompressed") as source:
        while True:
            chunk = source.read(_READ_BYTES)
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
            try:
                buffer += decompressor.decompress(chunk)
            except isal_zlib.error:
                raise mismatch(path) from None
            offset = 0
            while len(buffer) - offset >= _LENGTH.size:
                (length,) = _LENGTH.unpack_from(buffer, offset)
                if len(buffer) - offset - _LENGTH.size < length:
                    break
                start = offset + _LENGTH.size
                yield buffer[start:start + length]
                offset = start + length
            buffer = buffer[offset:]
    if (size != expected.bytes or digest.hexdigest() != expected.sha256 or buffer
            or not decompressor.eof):
        raise mismatch(path)


def file_sizes(directory: str) -> Dict[str, int]:
    """{file name: size} of the files in a folder (none if it does not exist)."""
    matched = FileSystems.match([FileSystems.join(directory, "*")])[0].metadata_list
    return {FileSystems.split(metadata.path)[1]: metadata.size_in_bytes for metadata in matched}


def clear_folder(directory: str, last: str) -> None:
    """Removes the files of a folder, `last` (a marker) first when it is there, and makes sure
    the folder exists."""
    names = file_sizes(directory)
    if last in names:
        FileSystems.delete([FileSystems.join(directory, last)])
    stale = [FileSystems.join(directory, name) for name in names if name != last]
    if stale:
        FileSystems.delete(stale)
    if "://" not in directory:
        os.makedirs(directory, exist_ok=True)
