"""URL normalisation (the paper rules' and the released C4's), URL dedup choice, and the
train/validation split by URL hash."""
import re

from pipelines.page import Page
from text.hashing import md5_int

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
# Everything from a query that starts with a tracking or feed parameter is dropped, as in the
# public C4 code: `?utm_source=...`, `?ref=...`, `?feed=...`.
_TRACKING_QUERY_TAIL = re.compile(r"\?(?:utm_|ref|feed).*$")


def normalize_url(url: str) -> str:
    """Maps the URLs of one page to one string: no scheme, no `www.`, lower-case host, no trailing
    /.

    >>> normalize_url("https://www.Example.com/a/?utm_source=x")
    'example.com/a'
    """
    url = url.strip()
    url = _SCHEME.sub("", url)
    # The host ends at the first `/`, `?` or `#`: a URL with no path keeps its query's case.
    host_end = re.match(r"[^/?#]*", url).end()
    host, rest = url[:host_end].lower(), url[host_end:]
    if host.startswith("www."):
        host = host[len("www."):]
    url = host + rest
    url = _TRACKING_QUERY_TAIL.sub("", url)
    return url.rstrip("/")


def newest_page(a: Page, b: Page) -> Page:
    """Of two pages with the same normalized URL, the one URL dedup keeps: the newest.

    Ties on the timestamp are broken by every other field, so the choice does not depend on the
    order in which a runner presents the pages.
    """
    return max(a, b, key=lambda page: (page.timestamp, page.url, page.text, page.content_type,
                                       page.content_length))


# The released C4's normalization: only an http(s) scheme and a `www.` right after it go, wherever
# they occur (also inside a query), and case is kept.
_RELEASED_SCHEME_AND_WWW = re.compile(r"https?://(www\.)?")
_RELEASED_TRACKING_QUERY_TAIL = re.compile(r"\?(utm_|ref|feed).*")


def released_normalize_url(url: str) -> str:
    """The URL key of the released C4 (TFDS c4_utils.normalize_url): used for URL dedup and the
    domain filters under `--rules released`, and for the split under every rule set.

    >>> released_normalize_url("https://www.Example.com/a/?utm_source=x")
    'Example.com/a'
    """
    url = _RELEASED_SCHEME_AND_WWW.sub("", url)
    url = _RELEASED_TRACKING_QUERY_TAIL.sub("", url)
    return url.rstrip("/")


def first_seen_newest_page(a: Page, b: Page) -> Page:
    """Of two pages with the same normalized URL, the one the released rules keep: the newest,
    and of equally new ones the first seen, that is the one with the smaller input position
    (position of its file in the input list, then of its page in the file), whatever order a
    runner presents them in."""
    return max(a, b, key=lambda page: (page.timestamp,
                                       tuple(-index for index in page.input_position)))


DEFAULT_VALIDATION_FRACTION = 0.001  # The paper's 0.1%.
_THOUSANDTHS = 1000
_WITHIN_THOUSANDTH = 1_000_000


# The places split_place gives: a page's place in [0, 1) in billionths.
SPLIT_PLACES = _THOUSANDTHS * _WITHIN_THOUSANDTH


def split_place(url: str) -> int:
    """A page's place in [0, SPLIT_PLACES) by the hash of its raw URL (split_of)."""
    h = md5_int(released_normalize_url(url))
    return (h % _THOUSANDTHS) * _WITHIN_THOUSANDTH + (h // _THOUSANDTHS) % _WITHIN_THOUSANDTH


def split_of(url: str, validation_fraction: float = DEFAULT_VALIDATION_FRACTION) -> str:
    """'validation' or 'train' for a page's raw URL, under every rule set.

    At the default 0.1% this is the released C4's split: validation iff the MD5 of the released
    normalized URL, read as an integer h, has h % 1000 == 0, so every released C4 validation page
    that survives our filters is in our validation split. Other fractions extend the same hash:
    a page's place in [0, 1) is (h % 1000 + (h // 1000 % 10**6) / 10**6) / 1000, and validation
    is every place below the fraction; the 0.1% set is inside every larger fraction's.
    """
    if not 0 <= validation_fraction <= 1:
        raise ValueError(f"the validation fraction must be in [0, 1], not {validation_fraction}")
    return split_at(split_place(url), validation_fraction)


def split_at(place: int, validation_fraction: float) -> str:
    """The split of a page at `place` (split_place), the fraction checked by split_of."""
    limit = validation_fraction * _THOUSANDTHS * _WITHIN_THOUSANDTH
    return "validation" if place < limit else "train"
