"""Opening inputs wherever they are: local paths, any Beam filesystem (gs://, s3://), https://."""
import bz2
import gzip
import io
import lzma
import os
import urllib.error
import urllib.request
from typing import BinaryIO, List

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_HTTP_PREFIXES = ("http://", "https://")
_DECOMPRESSORS = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw),
    ".bz2": bz2.BZ2File,
    ".xz": lzma.LZMAFile,
}


class InputError(Exception):
    """A user error about an input: a missing path, an unreachable URL, an unreadable file."""


class FetchError(InputError):
    """An http(s) input that could not be downloaded (offline, a moved file): the caller knows
    which local copies would do instead (pipelines.c4.offline_hint)."""


def is_url(path: str) -> bool:
    return path.startswith(_HTTP_PREFIXES)


def open_raw(path: str) -> BinaryIO:
    """A binary stream of the file's bytes as stored (no decompression)."""
    if is_url(path):
        try:
            return urllib.request.urlopen(path, timeout=60)
        except (urllib.error.URLError, OSError) as error:
            raise FetchError(f"cannot fetch {path}: {error}") from None
    try:
        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    except (OSError, IOError, ValueError) as error:
        raise InputError(f"cannot open {path}: {error}") from None


def open_decompressed(path: str) -> BinaryIO:
    """A binary stream of the file's content, decompressed by the name's extension."""
    raw = open_raw(path)
    for extension, decompressor in _DECOMPRESSORS.items():
        if path.endswith(extension):
            return decompressor(raw)
    return raw


def read_all(path: str) -> bytes:
    """The whole decompressed content of a small file (a word list, a domain list)."""
    return decompress(path, read_stored(path))


def read_stored(path: str) -> bytes:
    """The whole content of a small file as stored (not decompressed): what a checksum covers."""
    try:
        with open_raw(path) as stream:
            return stream.read()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error}") from None


def decompress(path: str, stored: bytes) -> bytes:
    """The content of a file from its stored bytes, decompressed by the name's extension."""
    for extension, decompressor in _DECOMPRESSORS.items():
        if path.endswith(extension):
            try:
                with decompressor(io.BytesIO(stored)) as stream:
                    return stream.read()
            except (OSError, EOFError, lzma.LZMAError) as error:
                raise InputError(f"cannot read {path}: {error}") from None
    return stored


def expand(pattern: str) -> List[str]:
    """The files a path or glob names, sorted; an InputError if it names none."""
    if is_url(pattern):
        return [pattern]
    try:
        matches = FileSystems.match([pattern])[0].metadata_list
    except Exception as error:  # Beam raises BeamIOError, or ValueError for unknown schemes.
        raise InputError(f"cannot list {pattern}: {error}") from None
    paths = sorted(metadata.path for metadata in matches)
    if not paths:
        raise InputError(f"no file matches {pattern}")
    # Beam matches a local folder as if it were a file; reading it would fail on the workers and
    # give an empty output, so the user hears it here.
    folders = [path for path in paths if os.path.isdir(path)]
    if folders:
        raise InputError(f"{pattern} names the folder {folders[0]}: pass the files in it, "
                         f"e.g. '{os.path.join(folders[0], '*.warc.wet.gz')}'")
    return paths
