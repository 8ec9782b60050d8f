"""Dedup across the whole dataset, as pure functions over one page (the Beam wiring is in stages.py).

A page is cut into units: sentences (the paper's rule, `spans` mode) or lines (the public TFDS C4
code, `lines` mode). A key is the hash of a window of `span_units` consecutive units, normalised
(lower case, white space collapsed); windows overlap and run across line breaks. Every key that
occurs more than once anywhere in the dataset keeps one occurrence, the smallest by
(page key, position), and every other occurrence has its units removed. The page key is a hash
of the normalized URL, so the surviving copy does not depend on runner, bundling or input order.

Keys and occurrences travel as fixed-size bytes: 8 bytes of key and 12 bytes of occurrence
(8 of page key, 4 of position), so the shuffle moves about 20 bytes per unit, not the text.
"""
import dataclasses
from typing import Iterable, Iterator, List, Sequence, Set, Tuple

from text.hashing import DIGEST64_BYTES, digest64
from text.sentences import split_sentences

KEY_BYTES = DIGEST64_BYTES
_POSITION_BYTES = 4


@dataclasses.dataclass(frozen=True)
class DedupConfig:
    mode: str = "spans"  # "spans": the paper's three-sentence spans; "lines": public TFDS C4.
    span_units: int = 3

    def __post_init__(self):
        if self.mode not in ("spans", "lines"):
            raise ValueError(f"DedupConfig.mode must be 'spans' or 'lines', not {self.mode!r}")
        if self.span_units < 1:
            raise ValueError("DedupConfig.span_units must be >= 1")


PAPER_SPAN_DEDUP = DedupConfig(mode="spans", span_units=3)
PUBLIC_C4_LINE_DEDUP = DedupConfig(mode="lines", span_units=1)


@dataclasses.dataclass(frozen=True)
class Unit:
    line_index: int
    text: str


def units_of(text: str, mode: str) -> List[Unit]:
    """The units of a page's text in order: its sentences, or its non-blank lines."""
    units = []
    for line_index, line in enumerate(text.split("\n")):
        if mode == "lines":
            if line.strip():
                units.append(Unit(line_index, line.strip()))
        else:
            units.extend(Unit(line_index, sentence) for sentence in split_sentences(line))
    return units


def page_key(normalized_url: str) -> bytes:
    return digest64(normalized_url)


def encode_occurrence(key_of_page: bytes, position: int) -> bytes:
    return key_of_page + position.to_bytes(_POSITION_BYTES, "big")


def decode_occurrence(occurrence: bytes) -> Tuple[bytes, int]:
    return occurrence[:KEY_BYTES], int.from_bytes(occurrence[KEY_BYTES:], "big")


def span_keys(units: Sequence[Unit], span_units: int) -> Iterator[Tuple[bytes, int]]:
    """(key, position of the window's first unit) for every window of `span_units` units."""
    normalized = [" ".join(unit.text.lower().split()) for unit in units]
    for start in range(len(units) - span_units + 1):
        yield digest64("\n".join(normalized[start:start + span_units])), start


def losing_occurrences(occurrences: Iterable[bytes]) -> Iterator[bytes]:
    """All occurrences of one key but the one that survives (the smallest).

    Streams over `occurrences` twice instead of holding them, because a boilerplate span can
    occur millions of times; Beam's grouped values may be iterated again.
    """
    survivor = min(occurrences)
    return (occurrence for occurrence in occurrences if occurrence != survivor)


def remove_units(text: str, mode: str, span_units: int, removed_starts: Iterable[int]) -> str:
    """The page text without the units of the losing windows that start at `removed_starts`.

    Lines that lose nothing are kept verbatim; a line that loses some of its sentences is
    rebuilt from the rest, joined by one space; a line that loses all of them disappears.
    """
    units = units_of(text, mode)
    removed: Set[int] = set()
    for start in removed_starts:
        removed.update(range(start, min(start + span_units, len(units))))
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
