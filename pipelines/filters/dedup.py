"""Dedup across the whole dataset, as pure functions over one page (its steps:
pipelines/steps/span_dedup.py).

Two modes, one machinery. A page is cut into units: sentences (the paper's rule, `spans` mode)
or lines (the released C4's rule, `lines` mode). A key is the hash of a window of `span_units`
consecutive units; windows overlap and run across line breaks. Every key that occurs more than
once anywhere in the dataset keeps one occurrence, the smallest by (page key, position), and every
other occurrence has its units removed. The page key is a hash of the page's URL, so the surviving
copy does not depend on runner, bundling or input order.

- `spans`: units are the splitter's sentences of each line, a key is the 64-bit BLAKE2b of the
  window's sentences lower-cased with white space collapsed, the page key the 64-bit BLAKE2b of
  the normalized URL. Only pages that lost a unit are checked again (their sentences counted
  line by line).
- `lines` (the released C4, TFDS c4_utils.remove_duplicate_text): units are the page's lines,
  windows of 1, a key is the MD5 of `line.strip().lower()`, the page key the MD5 of the raw URL,
  so the surviving copy is the first in the page whose URL has the smallest MD5 hex digest and
  repeats inside a page are removed too. Every page is checked again, its sentences counted by
  the splitter over the joined text, as the released code does.

The shuffle moves keys, not text, as fixed-width records: a key then the page key (`spans`:
8 + 8 bytes; `lines`: 16 + 16, MD5s as the released C4). Choosing survivors is associative: the
records of any part of the dataset resolve to their winners (each key once, with its smallest page
key) and their losers (every other record), and the winners of the parts resolve as the records
would have. So a worker resolves the records of its own pages first and sends only their winners
on, packed into one block per bucket of keys: a key in a million pages crosses the shuffle once
per worker buffer, not a million times. Each page that loses a key is sent the key back, and a
page's repeats of its own keys are found in the page, so positions never travel.
"""
import dataclasses
from typing import Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

from pipelines.filters.cleaning import has_sentences
from text.hashing import digest64, md5_digest
from text.splitters import Splitter

@dataclasses.dataclass(frozen=True)
class DedupConfig:
    mode: str = "spans"  # "spans": the paper's three-sentence spans; "lines": the released C4's.
    span_units: int = 3

    def __post_init__(self):
        if self.mode not in ("spans", "lines"):
            raise ValueError(f"DedupConfig.mode must be 'spans' or 'lines', not {self.mode!r}")
        if self.span_units < 1:
            raise ValueError("DedupConfig.span_units must be >= 1")


PAPER_SPAN_DEDUP = DedupConfig(mode="spans", span_units=3)
RELEASED_LINE_DEDUP = DedupConfig(mode="lines", span_units=1)


class Unit(NamedTuple):  # A tuple: pages have dozens, made on every dedup pass.
    line_index: int
    text: str


def units_of(text: str, mode: str, split: Splitter) -> List[Unit]:
    """The units of a page's text in order: its sentences, or its non-blank lines (stripped)."""
    units = []
    for line_index, line in enumerate(text.split("\n")):
        if mode == "lines":
            if line.strip():
                units.append(Unit(line_index, line.strip()))
        else:
            units.extend(Unit(line_index, sentence) for sentence in split(line))
    return units


def page_key(url: str, normalized_url: str, mode: str) -> bytes:
    return md5_digest(url) if mode == "lines" else digest64(normalized_url)


def span_keys(units: Sequence[Unit], config: DedupConfig) -> Iterator[Tuple[bytes, int]]:
    """(key, position of the window's first unit) for every window of `span_units` units."""
    if config.mode == "lines":
        normalized = [unit.text.lower() for unit in units]
        digest = md5_digest
    else:
        normalized = [" ".join(unit.text.lower().split()) for unit in units]
        digest = digest64
    for start in range(len(units) - config.span_units + 1):
        yield digest("\n".join(normalized[start:start + config.span_units])), start


def distinct_span_keys(units: Sequence[Unit], config: DedupConfig) -> Tuple[List[bytes], bool]:
    """The page's window keys once each, in order, and whether a window repeats in the page.

    A page takes part in the dataset-wide choice once per key: its first occurrence of a key is
    its candidate (the smallest position), and its repeats of a key always lose.
    """
    keys = list(dict.fromkeys(key for key, _ in span_keys(units, config)))
    return keys, len(keys) < max(len(units) - config.span_units + 1, 0)


def record_widths(mode: str) -> Tuple[int, int]:
    """The bytes of a key and of a page key in a record: 8 and 8, or MD5s under `lines`."""
    return (16, 16) if mode == "lines" else (8, 8)


def page_records(keys: Sequence[bytes], key_of_page: bytes) -> bytes:
    """A page's records: each of its distinct keys followed by its page key."""
    return key_of_page.join(keys) + key_of_page if keys else b""


def _rows_of(records: bytes, mode: str) -> np.ndarray:
    """Records as rows of big-endian 64-bit words: rows sort as the records' bytes do."""
    key_width, page_width = record_widths(mode)
    if len(records) % (key_width + page_width):
        raise ValueError(f"a block of {len(records)} bytes is not whole {mode} records")
    return np.frombuffer(records, dtype=">u8").reshape(-1, (key_width + page_width) // 8)


def resolve_records(records: bytes, mode: str
                    ) -> Tuple[bytes, Iterator[Tuple[bytes, bytes]]]:
    """Splits a block of (key, page key) records into its winners, each key once with its
    smallest page key (a block, sorted), and its losers, (page key, key) of every other page,
    made one at a time from a packed block (a buffer of boilerplate loses most of its records).

    Associative: resolving the winners of several blocks gives what resolving all their records
    at once gives, which lets workers resolve their own records before the shuffle.
    """
    rows = _rows_of(records, mode)
    if not len(rows):
        return b"", iter(())
    order, first_of_key, losing = _choice(rows, mode)
    rows = rows[order]
    return (rows[first_of_key].tobytes(),
            _losers_of_rows(rows[losing], record_widths(mode)[0]))


def _choice(rows: np.ndarray, mode: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the order that sorts the records, then over the sorted records: whether each is its
    key's winner, the first of its key with the smallest page key; whether it loses, another
    page holding its key)."""
    order = np.lexsort(rows.T[::-1])
    rows = rows[order]
    key_words = record_widths(mode)[0] // 8
    keys, pages = rows[:, :key_words], rows[:, key_words:]
    first_of_key = np.ones(len(rows), dtype=bool)
    first_of_key[1:] = np.any(keys[1:] != keys[:-1], axis=1)
    winner_row = np.maximum.accumulate(np.where(first_of_key, np.arange(len(rows)), 0))
    return order, first_of_key, np.any(pages != pages[winner_row], axis=1)


def losers_of_blocks(blocks: Sequence[bytes], mode: str) -> List[Iterator[Tuple[bytes, bytes]]]:
    """For each block of (key, page key) records, (page key, key) of its records whose key a
    smaller page key holds in any of the blocks: how a span-key bucket answers each URL bucket
    that sent it its winners. One sort of all the blocks, not one per block. A (key, page key)
    pair is in one block at most (a page's records are in its URL bucket's)."""
    arrays = [_rows_of(block, mode) for block in blocks]
    if not any(len(rows) for rows in arrays):
        return [iter(()) for _ in blocks]
    rows = np.concatenate(arrays)
    source = np.repeat(np.arange(len(arrays)), [len(each) for each in arrays])
    order, _, losing = _choice(rows, mode)
    lost_rows, lost_source = rows[order][losing], source[order][losing]
    by_source = np.argsort(lost_source, kind="stable")
    counts = np.bincount(lost_source, minlength=len(blocks))
    return [_losers_of_rows(part, record_widths(mode)[0])
            for part in np.split(lost_rows[by_source], np.cumsum(counts)[:-1])]


def _losers_of_rows(rows: np.ndarray, key_width: int) -> Iterator[Tuple[bytes, bytes]]:
    """(page key, key) of each row, made one at a time from one packed block."""
    # Big-endian, as the records were: numpy's concatenation gives the machine's byte order.
    packed, width = rows.astype(">u8", copy=False).tobytes(), rows.shape[1] * 8
    return ((packed[start + key_width:start + width], packed[start:start + key_width])
            for start in range(0, len(packed), width))


def bucket_blocks(records: bytes, mode: str, buckets: int) -> Iterator[Tuple[int, bytes]]:
    """(bucket, block) for each bucket that has records: a key's bucket is its first eight
    bytes modulo `buckets`, so all records of a key meet in one bucket."""
    rows = _rows_of(records, mode)
    bucket_of_row = rows[:, 0] % np.uint64(buckets)
    # One stable sort, not one pass over the rows per bucket: pipelines.c4 has a bucket per input
    # file, tens of thousands for a whole dump.
    order = np.argsort(bucket_of_row, kind="stable")
    present, starts = np.unique(bucket_of_row[order], return_index=True)
    for bucket, block in zip(present.tolist(), np.split(rows[order], starts[1:])):
        yield bucket, block.tobytes()


def removed_starts(units: Sequence[Unit], config: DedupConfig, lost_keys: Set[bytes]
                   ) -> List[int]:
    """The windows a page loses: those whose key another page keeps (`lost_keys`), and every
    repeat of a window earlier in the page."""
    seen: Set[bytes] = set()
    removed = []
    for key, start in span_keys(units, config):
        if key in lost_keys or key in seen:
            removed.append(start)
        seen.add(key)
    return removed


def window_texts(units: Sequence[Unit], config: DedupConfig, starts: Iterable[int]) -> List[str]:
    """The text of each window that starts at `starts` (a removed span, for the exclusions)."""
    joiner = "\n" if config.mode == "lines" else " "
    return [joiner.join(unit.text for unit in units[start:start + config.span_units])
            for start in starts]


def remove_units(text: str, units: Sequence[Unit], config: DedupConfig,
                 removed_starts: Iterable[int]) -> str:
    """The page text without the units of the losing windows that start at `removed_starts`.

    `units` are the text's (`units_of`). Lines that lose nothing are kept verbatim; a line that
    loses some of its sentences is rebuilt from the rest, joined by one space; a line that loses
    all of them disappears.
    """
    removed: Set[int] = set()
    for start in removed_starts:
        removed.update(range(start, min(start + config.span_units, len(units))))
    if not removed:
        return text
    lines = text.split("\n")
    touched_lines = {units[i].line_index for i in removed}
    kept_units_by_line = {}
    for index, unit in enumerate(units):
        if index not in removed:
            kept_units_by_line.setdefault(unit.line_index, []).append(unit.text)
    rebuilt = []
    for line_index, line in enumerate(lines):
        if line_index not in touched_lines:
            if line.strip():
                rebuilt.append(line)
        elif line_index in kept_units_by_line:
            rebuilt.append(" ".join(kept_units_by_line[line_index]))
    return "\n".join(rebuilt)


def needs_check(config: DedupConfig, may_lose_units: bool, min_sentences: int) -> bool:
    """Whether a page must be cut and pass the sentence minimum again after dedup: where it may
    have lost a unit, and under `lines` where sentences are counted again (not with no minimum,
    as mC4's)."""
    return may_lose_units or (config.mode == "lines" and min_sentences > 0)


def drop_reason_after_dedup(text: str, config: DedupConfig, split: Splitter,
                            min_sentences: int) -> Optional[str]:
    """Why a page is dropped after dedup (nothing left, too few sentences), or None."""
    if not text.strip():
        return "empty_after_dedup"
    if not min_sentences:
        return None
    enough = (len(split(text)) >= min_sentences if config.mode == "lines"
              else has_sentences(text, min_sentences, split))
    if not enough:
        return "too_few_sentences_after_dedup"
    return None
