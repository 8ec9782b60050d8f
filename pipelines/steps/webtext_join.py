"""The OpenWebText join (webtextlike): the pages of a URL kept where the URL is in the
OpenWebText URL lists, which are read (and counted) under the same stage as the join's step.
"""
import logging

from pipelines.coders import PAGE_CODER
from pipelines.filters import domains
from pipelines.filters.rules import RuleSet
from pipelines.readers import files
from pipelines.steps.base import Counts, Drop, Step

_LOG = logging.getLogger("c4")
# The counter of an OpenWebText list that could not be read (a staged task that counts one gets
# no marker: most likely a passing failure).
URL_LIST_UNREADABLE = "url_lists.skipped:unreadable"


def webtext_urls_of_file(path: str, rules: RuleSet, counts: Counts):
    """(normalized URL, None) of each URL of an OpenWebText list file."""
    stage = KeepListedPages.stage
    try:
        text = files.read_all(path).decode("utf-8", errors="replace")
    except files.InputError as error:
        _LOG.error("skipping URL list: %s", error)
        counts.add(stage, URL_LIST_UNREADABLE)
        return
    counts.add(stage, "url_lists.read")
    skipped = 0
    for line in text.splitlines():
        url = domains.webtext_url_of_line(line, rules.normalize_url)
        if url is None:
            skipped += bool(line.strip())
            continue
        yield url, None
    if skipped:
        counts.add(stage, "url_lines.skipped", skipped)


class KeepListedPages(Step):
    """(URL, its pages as PageCoder bytes, whether the lists have the URL) -> the pages, where
    the lists have it."""
    stage = "domains"
    drops = (Drop("not_in_webtext_urls"),)

    def __call__(self, joined, counts: Counts):
        url, pages, listed = joined
        if not pages:
            return ()
        if not listed:
            if counts.records_drops_of(url):  # Decoded only to be recorded.
                for page in pages:
                    self.drop(counts, "not_in_webtext_urls", PAGE_CODER.decode(page))
            else:
                self.drop_unrecorded(counts, "not_in_webtext_urls", len(pages))
            return ()
        self.count(counts, value=len(pages))
        return [PAGE_CODER.decode(page) for page in pages]


class EncodedPage(Step):
    """(key, page as PageCoder bytes): a page sent to a join with messages of another type
    (Beam's coder for the union of two types would pickle it)."""

    def __call__(self, keyed, counts: Counts):
        key, page = keyed
        return ((key, PAGE_CODER.encode(page)),)


class UnpackJoin(Step):
    """JoinWebTextUrls's groups, (URL, {"pages": [...], "listed": [...]}), as KeepListedPages
    takes them: (URL, pages, whether listed)."""

    def __call__(self, joined, counts: Counts):
        url, grouped = joined
        return ((url, grouped["pages"], bool(grouped["listed"])),)
