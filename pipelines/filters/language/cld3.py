"""CLD3 as the public C4 code runs it for mC4: gcld3's NNetLanguageIdentifier with mC4's byte
limits (pipelines/filters/mc4.py). The `gcld3` module comes from cld3-py (the `pipeline` extra); it
is
imported when an identifier is made, so the English variants' workers never need it."""
from typing import NamedTuple, Optional

from pipelines.filters import mc4


class Cld3Answer(NamedTuple):
    language: str
    probability: float
    is_reliable: bool


class Cld3Identifier:
    """One gcld3 identifier (not thread-safe: one per DoFn instance)."""

    def __init__(self, min_bytes: int = mc4.CLD3_MIN_BYTES, max_bytes: int = mc4.CLD3_MAX_BYTES):
        import gcld3
        self._identifier = gcld3.NNetLanguageIdentifier(min_num_bytes=min_bytes,
                                                        max_num_bytes=max_bytes)

    def find_language(self, text: str) -> Optional[Cld3Answer]:
        """CLD3's answer for `text`, or None for text its binding cannot take (a lone
        surrogate, which no UTF-8 encodes)."""
        try:
            result = self._identifier.FindLanguage(text)
        except (TypeError, UnicodeError):
            return None
        return Cld3Answer(result.language, result.probability, result.is_reliable)
