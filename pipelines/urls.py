"""URL normalisation, URL dedup choice, and the train/validation split by URL hash."""
import re

from pipelines.page import Page
from text.hashing import hash64

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
# Everything from a query that starts with a tracking or feed parameter is dropped, as in the
# public C4 code: `?utm_source=...`, `?ref=...`, `?feed=...`.
_TRACKING_QUERY_TAIL = re.compile(r"\?(?:utm_|ref|feed).*$")


def normalize_url(url: str) -> str:
    """Maps the URLs of one page to one string: no scheme, no `www.`, lower-case host, no trailing /.

    >>> normalize_url("https://www.Example.com/a/?utm_source=x")
    'example.com/a'
    """
    url = url.strip()
    url = _SCHEME.sub("", url)
    host, slash, path = url.partition("/")
    host = host.lower()
    if host.startswith("www."):
        host = host[len("www."):]
    url = host + slash + path
    url = _TRACKING_QUERY_TAIL.sub("", url)
    return url.rstrip("/")


def newest_page(a: Page, b: Page) -> Page:
    """Of two pages with the same normalized URL, the one URL dedup keeps: the newest.

    Ties on the timestamp are broken by every other field, so the choice does not depend on the
    order in which a runner presents the pages.
    """
    return max(a, b, key=lambda page: (page.timestamp, page.url, page.text, page.content_type,
                                       page.content_length))


DEFAULT_VALIDATION_FRACTION = 0.001  # The paper's 0.1%.
_SPLIT_BUCKETS = 1_000_000


def split_of(normalized_url: str, validation_fraction: float = DEFAULT_VALIDATION_FRACTION) -> str:
    """'validation' for a fraction of URLs chosen by a stable hash; 'train' for the rest."""
    if not 0 <= validation_fraction <= 1:
        raise ValueError(f"the validation fraction must be in [0, 1], not {validation_fraction}")
    bucket = hash64(normalized_url) % _SPLIT_BUCKETS
    return "validation" if bucket < validation_fraction * _SPLIT_BUCKETS else "train"
