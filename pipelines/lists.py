"""The external lists the variants use, pinned by URL and checksum, and their provenance.

The one owner of the pins: the CLI's defaults (pipelines.c4) and the TFDS builder's downloads
(tfds_c4) come from here. A list read from a pinned URL must have the pinned sha256 (a changed
or truncated download is an error, not a silently different corpus); a list read from anywhere
else is hashed and the hash recorded in run_config.json, not checked.
"""
import dataclasses
import hashlib
from typing import Dict, Tuple

from pipelines import files

_HASH_BLOCK = 1 << 20


@dataclasses.dataclass(frozen=True)
class PinnedList:
    url: str
    size: int  # Bytes, as stored.
    sha256: str


# The LDNOOBW English list and Grover's RealNews domains at the commits the public TFDS C4 pins.
LDNOOBW_EN = PinnedList(
    url="https://raw.githubusercontent.com/LDNOOBW/"
        "List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words/"
        "25e679f03d96baa721cde20db9944649e8d0a844/en",
    size=3566,
    sha256="a506cbcf8a31935b122299f3bb1d32be6db3d0ad498765d28f365dfc4f4d7b8c")
REALNEWS_DOMAINS = PinnedList(
    url="https://raw.githubusercontent.com/rowanz/grover/"
        "38f7184bd87237ae2d3bc330b99f1e2e246f6d51/realnews/domain_to_allowed_subdomains.json",
    size=141626,
    sha256="75681899371acbf57b502ca8be48b3ca2d3339a276c396f3001b6a14da691ff3")
PINNED_LISTS: Dict[str, PinnedList] = {pinned.url: pinned
                                       for pinned in (LDNOOBW_EN, REALNEWS_DOMAINS)}


class ChecksumMismatch(files.InputError):
    """A list read from a pinned URL whose bytes are not the pinned ones."""


def read_list(path: str) -> Tuple[bytes, str]:
    """The decompressed content of a list and the sha256 of its stored bytes.

    Raises ChecksumMismatch if `path` is a pinned URL and the bytes differ from the pin.
    """
    stored = files.read_stored(path)
    digest = hashlib.sha256(stored).hexdigest()
    pinned = PINNED_LISTS.get(path)
    if pinned is not None and digest != pinned.sha256:
        raise ChecksumMismatch(
            f"{path} has sha256 {digest} ({len(stored):,} bytes), but the pinned list has "
            f"{pinned.sha256} ({pinned.size:,} bytes): the file there changed or the download "
            "is incomplete. Pass a copy you have checked as a local path instead.")
    return files.decompress(path, stored), digest


def file_sha256(path: str) -> str:
    """The sha256 of a file's stored bytes, read in blocks (URL lists can be large)."""
    digest = hashlib.sha256()
    try:
        with files.open_raw(path) as stream:
            for block in iter(lambda: stream.read(_HASH_BLOCK), b""):
                digest.update(block)
    except OSError as error:
        raise files.InputError(f"cannot read {path}: {error}") from None
    return digest.hexdigest()
