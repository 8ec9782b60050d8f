"""Counts in messages: `counted(1, "group")` is "1 group", `counted(2_000, "group")` "2,000
groups", so that no message says "1 groups" or "1 group(s)"."""
from typing import Optional


def counted(number: int, singular: str, plural: Optional[str] = None) -> str:
    """The number, with thousands separators, and the noun it counts in the right number;
    `plural` for a noun that does not take an s (`counted(2, "dump", ...)` needs none)."""
    noun = singular if number == 1 else plural or singular + "s"
    return f"{number:,} {noun}"
