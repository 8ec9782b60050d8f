"""The names of a run's counters, built and parsed here alone.

A counter lives in its stage's namespace (`c4.<stage>`) with one vocabulary: `pages.passed`
(and `pages.passed:<kind>` where a stage counts its kept pages apart), `<level>s.dropped:<reason>`
for what a step drops (a page, or a page's lines or spans), `pages.written:<split>` (and
`pages.written:<split>:<language>` for a language folder's) for what the writer writes.
"""
from typing import Dict, Mapping, Optional, Tuple

# What a step drops: a whole page, or lines or spans of a page it keeps.
LEVELS = ("page", "line", "span")
# The stages of the reader and of the writer, before and after every step's.
READ_STAGE = "read"
WRITE_STAGE = "write"
PASSED = "pages.passed"
WRITTEN = "pages.written"
# The counters whose sum is what a stage keeps: disjoint parts (by kind, split or language).
KEPT_PREFIXES = (PASSED, WRITTEN)
_DROPPED = ".dropped:"
_NAMESPACE_PREFIX = "c4."


def namespace(stage: str) -> str:
    """The Beam counter namespace of a stage's counters."""
    return _NAMESPACE_PREFIX + stage


def stage_of_namespace(name: str) -> Optional[str]:
    """The stage whose counters a Beam namespace holds, or None for another's."""
    return name[len(_NAMESPACE_PREFIX):] if name.startswith(_NAMESPACE_PREFIX) else None


def dropped(level: str, reason: str) -> str:
    """The counter of what is dropped for `reason` at `level` (`pages.dropped:too_long`)."""
    return f"{level}s{_DROPPED}{reason}"


def parse_dropped(name: str) -> Optional[Tuple[str, str]]:
    """(level, reason) of a drop counter, None for another counter."""
    head, found, reason = name.partition(_DROPPED)
    if not found or head[:-1] not in LEVELS or head[-1:] != "s":
        return None
    return head[:-1], reason


def drops_at(level: str, stage_counters: Mapping[str, int]) -> Dict[str, int]:
    """Reason -> count of a stage's drop counters at `level`."""
    drops = {}
    for name, value in stage_counters.items():
        parsed = parse_dropped(name)
        if parsed is not None and parsed[0] == level:
            drops[parsed[1]] = value
    return drops


def passed(kind: Optional[str] = None) -> str:
    """The counter of the pages a stage passes on, or of those of one kind (`pages.passed:de`,
    `pages.passed:shortened`)."""
    return PASSED if kind is None else f"{PASSED}:{kind}"


def written(folder: str, split: str) -> str:
    """The writer's counter of a destination's pages: `pages.written:train`, and with the folder
    (a language) `pages.written:train:de`."""
    return f"{WRITTEN}:{split}:{folder}" if folder else f"{WRITTEN}:{split}"


def parse_written(name: str) -> Optional[Tuple[str, str]]:
    """(split, folder) of a writer's counter of pages written (folder "" for the output folder),
    None for another counter."""
    head, _, rest = name.partition(":")
    if head != WRITTEN or not rest:
        return None
    split, _, folder = rest.partition(":")
    return split, folder


def is_kept(name: str) -> bool:
    """Whether a counter counts pages a stage keeps (KEPT_PREFIXES)."""
    return name.startswith(KEPT_PREFIXES)
