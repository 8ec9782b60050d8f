"""The bad-words filter: any whole-word, case-insensitive match of a listed term drops the page."""
import re
from typing import Sequence


def parse_badwords(content: bytes, source: str) -> list:
    """The terms of a word list file (UTF-8, one term per line)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"bad-words list {source} is not UTF-8 text: {error}") from None
    terms = sorted({line.strip().lower() for line in text.splitlines() if line.strip()})
    if not terms:
        raise ValueError(f"bad-words list {source} holds no terms")
    return terms


def compile_badwords(terms: Sequence[str]) -> "re.Pattern":
    # Longest first, so that a multi-word term wins over its first word in the alternation.
    alternatives = "|".join(re.escape(term) for term in sorted(terms, key=lambda t: (-len(t), t)))
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)")


def contains_badword(text: str, pattern: "re.Pattern") -> bool:
    return pattern.search(text.lower()) is not None
