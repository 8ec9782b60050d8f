"""Stable hashes of text: the same value on every machine, process and Python version.

Python's `hash()` is salted per process, so every choice the pipeline makes by hashing (which
copy of a duplicate survives, which split or shard a page goes to) uses these instead.
"""
import hashlib

DIGEST64_BYTES = 8


def digest64(text: str) -> bytes:
    """An 8-byte BLAKE2b digest of the UTF-8 text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=DIGEST64_BYTES).digest()


def hash64(text: str) -> int:
    """`digest64` as an unsigned big-endian integer."""
    return int.from_bytes(digest64(text), "big")


def md5_hex(text: str) -> str:
    """The MD5 hex digest of the UTF-8 text: the hash the public C4 code uses for its choices."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def md5_int(text: str) -> int:
    """`md5_hex` read as a 128-bit integer (the validation split is `md5_int(url) % 1000`)."""
    return int(md5_hex(text), 16)


def md5_digest(text: str) -> bytes:
    """The 16 bytes of `md5_hex`; they sort as the hex digests do."""
    return hashlib.md5(text.encode("utf-8")).digest()
