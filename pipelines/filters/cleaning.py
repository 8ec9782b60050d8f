"""The paper's cleaning heuristics (Section 2.2), per line and then per page, as pure functions."""
import collections
import dataclasses
import re
from typing import Counter, Dict, List, Optional, Tuple

from text.sentences import split_sentences
from text.splitters import Splitter

# A line survives only if it ends like a sentence: terminal punctuation or a closing quote.
_END_MARKS = (".", "!", "?", "\"", "\u201d")
_ELLIPSES = ("...", "\u2026")
# Wikipedia-style citation markers are removed before the line checks: [1], [edit], [citation
# needed].
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]", re.IGNORECASE)
_POLICY_PHRASES = (
    "terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
    "use cookies",
)


@dataclasses.dataclass(frozen=True)
class CleaningConfig:
    """Thresholds of the heuristics.

    The defaults are those of our design documents and of the public C4 code (5 words per line,
    3 sentences per page); `PAPER_TEXT_CLEANING` has the values the paper's text states.
    """
    min_words_per_line: int = 5
    min_sentences_per_page: int = 3
    max_word_length: int = 1000

    def __post_init__(self):
        for field in dataclasses.fields(self):
            if getattr(self, field.name) < 1:
                raise ValueError(f"CleaningConfig.{field.name} must be >= 1")


PUBLIC_C4_CLEANING = CleaningConfig(min_words_per_line=5, min_sentences_per_page=3)
PAPER_TEXT_CLEANING = CleaningConfig(min_words_per_line=3, min_sentences_per_page=5)
CLEANING_SETTINGS = {"public_c4": PUBLIC_C4_CLEANING, "paper_text": PAPER_TEXT_CLEANING}


@dataclasses.dataclass(frozen=True)
class CleaningResult:
    text: Optional[str]  # None when the page is dropped.
    page_drop_reason: Optional[str]
    lines_kept: int
    lines_dropped: Counter[str]
    # (reason, line as the page had it) of each line dropped, when asked for (keep_removed).
    removed: Tuple[Tuple[str, str], ...] = ()

    def removed_lines(self) -> Dict[str, List[str]]:
        by_reason: Dict[str, List[str]] = {}
        for reason, line in self.removed:
            by_reason.setdefault(reason, []).append(line)
        return by_reason


class DroppedLines:
    """The lines a cleaning drops: counted by reason, and kept whole when asked for."""

    def __init__(self, keep_removed: bool):
        self.counts: Counter[str] = collections.Counter()
        self._removed: Optional[List[Tuple[str, str]]] = [] if keep_removed else None

    def add(self, reason: str, line: str) -> None:
        self.counts[reason] += 1
        if self._removed is not None:
            self._removed.append((reason, line))

    def result(self, text: Optional[str], page_drop_reason: Optional[str],
               lines_kept: int) -> CleaningResult:
        return CleaningResult(text, page_drop_reason, lines_kept, self.counts,
                              tuple(self._removed or ()))


def line_drop_reason(line: str, config: CleaningConfig) -> Optional[str]:
    """Why a stripped, citation-free line is dropped, or None if it is kept."""
    if line.endswith(_ELLIPSES):
        return "ellipsis"
    if not line.endswith(_END_MARKS):
        return "no_terminal_punctuation"
    words = line.split()
    if len(words) < config.min_words_per_line:
        return "too_few_words"
    if len(max(words, key=len)) > config.max_word_length:
        return "word_too_long"
    lower = line.lower()
    if "javascript" in lower:
        return "javascript"
    if any(phrase in lower for phrase in _POLICY_PHRASES):
        return "policy"
    return None


def has_sentences(text: str, minimum: int, split: Splitter = split_sentences) -> bool:
    """Whether a page has at least `minimum` sentences, counted line by line (they never cross a
    line break); it stops splitting once it has counted them."""
    found = 0
    for line in text.split("\n"):
        if found >= minimum:
            break
        found += len(split(line))
    return found >= minimum


def clean_page(text: str, config: CleaningConfig, split: Splitter = split_sentences,
               keep_removed: bool = False) -> CleaningResult:
    """Applies the line rules, then the page rules, to the text of one page; with
    `keep_removed`, the result holds the lines dropped (CleaningResult.removed)."""
    dropped = DroppedLines(keep_removed)
    lower = text.lower()
    if "lorem ipsum" in lower:
        return dropped.result(None, "lorem_ipsum", 0)
    if "{" in text:
        return dropped.result(None, "curly_bracket", 0)

    kept_lines = []
    for raw_line in text.split("\n"):
        line = _CITATION.sub("", raw_line).strip()
        if not line:
            continue
        reason = line_drop_reason(line, config)
        if reason:
            dropped.add(reason, raw_line)
        else:
            kept_lines.append(line)

    cleaned = "\n".join(kept_lines)
    if not has_sentences(cleaned, config.min_sentences_per_page, split):
        return dropped.result(None, "too_few_sentences", len(kept_lines))
    return dropped.result(cleaned, None, len(kept_lines))
