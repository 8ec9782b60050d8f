"""The exclusions' sample (`--exclusions`, `--exclusion_fraction`): which pages are in it (by
the hash of their normalized URL), and the records of what the steps dropped from them or kept,
as the steps collect them (Counts.drop). Below the steps and the writers, without Beam: the
files these records go to are pipelines/writers/exclusions.py's.
"""
import dataclasses
from typing import Dict, Iterable, List, NamedTuple, Optional

from pipelines.page import Page, json_line
from text.hashing import hash64

EXCLUSIONS_SPLIT = "exclusions"
KEPT_SPLIT = "kept"
DEFAULT_FRACTION = 0.1
# A different hash from the shards' and the split's, so the sample is not one shard's pages.
_SAMPLE_SALT = "exclusions\t"
_HASH_RANGE = 1 << 64



@dataclasses.dataclass(frozen=True)
class ExclusionConfig:
    directory: str
    fraction: float = DEFAULT_FRACTION

    def __post_init__(self):
        if not 0 < self.fraction <= 1:
            raise ValueError(f"the exclusion fraction must be in (0, 1], not {self.fraction}")


class Excluded(NamedTuple):
    """The records of one page and stage, as the shard writer sorts them: the file they go to
    (EXCLUSIONS_SPLIT or KEPT_SPLIT), then output.SortEntry's fields, whose `line` is their
    JSON lines, in the order the stage dropped what they record. One element for a page's
    records, not one each, is what keeps their cost low: a runner's shuffle costs per element."""
    split: str
    normalized_url: str
    url: str
    timestamp: str
    line: bytes


def in_sample(normalized_url: str, fraction: float) -> bool:
    return fraction >= 1 or hash64(_SAMPLE_SALT + normalized_url) < fraction * _HASH_RANGE


def dropped_line(page: Page, stage: str, reason: str, level: str, text: str) -> bytes:
    return json_line({"url": page.url, "timestamp": page.timestamp, "stage": stage,
                      "reason": reason, "level": level, "text": text})


def kept_line(page: Page) -> bytes:
    return json_line({"url": page.url, "timestamp": page.timestamp, "language": page.language,
                      "chars": len(page.text)})


class Sample:
    """The records of the sampled pages the steps drop or keep, collected until taken."""

    def __init__(self, fraction: float):
        self.fraction = fraction
        # ((split, normalized URL, URL, timestamp, stage), JSON line) in the order recorded.
        self._records: List[tuple] = []

    def has(self, normalized_url: str) -> bool:
        return in_sample(normalized_url, self.fraction)

    def drop(self, page: Page, stage: str, reason: str, level: str = "page",
             texts: Optional[Iterable[str]] = None) -> None:
        """Records `page` (level `page`: its text) or `texts` removed from it: a page in the
        sample (Counts.drop asks)."""
        key = EXCLUSIONS_SPLIT, page.normalized_url, page.url, page.timestamp, stage
        for text in ([page.text] if texts is None else texts):
            self._records.append((key, dropped_line(page, stage, reason, level, text)))

    def keep(self, page: Page) -> None:
        if self.has(page.normalized_url):
            key = KEPT_SPLIT, page.normalized_url, page.url, page.timestamp, "kept"
            self._records.append((key, kept_line(page)))

    def take(self) -> List[Excluded]:
        """What was recorded since the last call, one Excluded per page and stage."""
        by_page_and_stage: Dict[tuple, List[bytes]] = {}
        for key, line in self._records:
            by_page_and_stage.setdefault(key, []).append(line)
        self._records = []
        return [Excluded(*key[:4], b"".join(lines)) for key, lines in by_page_and_stage.items()]
