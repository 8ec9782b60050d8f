"""The page record passed between the pipeline's stages, and the JSON line of a flat record."""
import dataclasses
from typing import List, Tuple

import orjson


@dataclasses.dataclass(frozen=True)
class Page:
    """One web page: a WET `conversion` record, then its cleaned text as the stages change it.

    Stages return new pages with `dataclasses.replace`; a page is never mutated.
    """
    url: str
    normalized_url: str
    timestamp: str  # WARC-Date, ISO 8601 (e.g. 2019-04-18T10:13:24Z), so it sorts as text.
    content_type: str
    content_length: int
    text: str
    language: str = ""  # Tagged by the language stage, which every variant runs.
    # The detector's probability of `language` (langdetect's, or CLD3's for mC4), written out,
    # so a stricter threshold can be applied later without rebuilding.
    language_probability: float = 0.0
    # (index of the WET file in the input list, index of the record in that file[, index of the
    # page in the record under the released rules]): "first seen" for the released rules' URL
    # dedup, the same on every runner. Not written out.
    input_position: Tuple[int, ...] = (0, 0)

    def to_json_record(self) -> dict:
        """The fields written to the output files, in a fixed order."""
        return {
                "text": self.text,
                "url": self.url,
                "timestamp": self.timestamp,
                "content-type": self.content_type,
                "content-length": self.content_length,
                "language": self.language,
                "language_probability": self.language_probability,
        }


def record_fields() -> List[Tuple[str, type]]:
    """The output record's field names, in order, each with the type of its values (str, int or
    float): what a typed format (Parquet, the dataset card's features) declares."""
    blank = Page(url="", normalized_url="", timestamp="", content_type="", content_length=0,
                 text="")
    return [(name, type(value)) for name, value in blank.to_json_record().items()]


def _json_value(value) -> bytes:
    if isinstance(value, str):
        return orjson.dumps(value)
    if isinstance(value, float):
        return float.__repr__(value).encode("ascii")  # json's float format; orjson's differs.
    if isinstance(value, int):
        return int.__repr__(value).encode("ascii")
    raise TypeError(f"no JSON encoding here for {type(value).__name__}")


def json_line(record: dict) -> bytes:
    """`json.dumps(record, ensure_ascii=False)` of a flat record of strings, ints and finite
    floats, UTF-8, and a newline."""
    return b"{" + b", ".join(orjson.dumps(key) + b": " + _json_value(value)
                             for key, value in record.items()) + b"}\n"
