"""The domain filters of the paper's Section 3.4: RealNews-like and WebText-like."""
import json
from typing import Callable, Dict, Optional, Union

import tldextract

from pipelines.filters.urls import normalize_url

AllowedSubdomains = Union[bool, list]


def parse_realnews_domains(content: bytes, source: str) -> Dict[str, AllowedSubdomains]:
    """The RealNews JSON: registered domain -> true (any subdomain) or a list of subdomains."""
    try:
        domains = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"RealNews domain list {source} is not valid JSON: {error}") from None
    if not isinstance(domains, dict) or not domains:
        raise ValueError(f"RealNews domain list {source} must be a non-empty JSON object")
    for domain, allowed in domains.items():
        valid = isinstance(allowed, bool) or (
            isinstance(allowed, list) and all(isinstance(s, str) for s in allowed))
        if not valid:
            raise ValueError(f"RealNews domain list {source}: the value of {domain!r} must be "
                             f"true, false or a list of subdomains, not {allowed!r}")
    return domains


def offline_domain_extractor() -> tldextract.TLDExtract:
    """Splits hosts with the public suffix list bundled in tldextract; never goes online."""
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def is_realnews_url(url: str, domains: Dict[str, AllowedSubdomains],
                    extractor: tldextract.TLDExtract) -> bool:
    parts = extractor(url)
    allowed = domains.get(f"{parts.domain}.{parts.suffix}".lower())
    if isinstance(allowed, list):
        subdomain = parts.subdomain.lower()
        subdomain = subdomain[len("www."):] if subdomain.startswith("www.") else subdomain
        return subdomain in allowed
    return bool(allowed)


_MIN_REDDIT_SCORE = 3  # WebText: outbound Reddit links with at least 3 karma.


def webtext_url_of_line(line: str, normalize: Callable[[str], str] = normalize_url
                        ) -> Optional[str]:
    """The normalized URL of one line of an OpenWebText URL list, or None to skip the line.
    `normalize` is the rule set's URL normalization.

    Accepts plain lists (one URL per line), the `{"u": url, "k": karma}` lines of pre-filtered
    lists, and raw pushshift submissions (`url`, `score`, `is_self`), which are filtered here.
    """
    line = line.strip()
    if not line:
        return None
    if not line.startswith("{"):
        return normalize(line) if "." in line else None
    try:
        submission = json.loads(line)
    except json.JSONDecodeError:
        return None
    url = submission.get("u") or submission.get("url")
    if not isinstance(url, str) or submission.get("is_self"):
        return None
    score = submission.get("k", submission.get("score", _MIN_REDDIT_SCORE))
    if not isinstance(score, (int, float)) or score < _MIN_REDDIT_SCORE:
        return None
    return normalize(url)
