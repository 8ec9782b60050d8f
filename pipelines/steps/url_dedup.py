"""URL dedup: every page keyed by its normalized URL, the newest page of each URL kept (the rule
set's keep_of_two), the older ones counted and, in the exclusions' sample, recorded. The
steps and the choice; the Beam transform is pipelines/beam/url_dedup.py.
"""
import dataclasses
from typing import Iterable, Optional, Tuple

from pipelines.exclusion_sample import in_sample
from pipelines.page import Page
from pipelines.steps.base import Counts, Drop, Step


class KeyByUrl(Step):
    """(normalized URL, page): the key of URL dedup."""

    def __call__(self, page: Page, counts: Counts):
        return ((page.normalized_url, page),)


# What URL dedup keeps of a normalized URL: its newest page, how many pages had the URL, and the
# pages it dropped where the URL is in the exclusions' sample (none elsewhere).
NewestOfUrl = Tuple[Optional[Page], int, Tuple[Page, ...]]
NO_PAGE: NewestOfUrl = (None, 0, ())


def with_page(newest: NewestOfUrl, page: Page, choose,
              sample_fraction: Optional[float]) -> NewestOfUrl:
    """`newest` with one more page of its URL; `choose` picks one of two pages."""
    best, count, losers = newest
    if best is None:
        return page, count + 1, losers
    kept = choose(best, page)
    if sample_fraction is not None and in_sample(page.normalized_url, sample_fraction):
        losers += (page if kept is best else best,)
    return kept, count + 1, losers


def merged_newest(newests: Iterable[NewestOfUrl], choose,
                  sample_fraction: Optional[float]) -> NewestOfUrl:
    total = NO_PAGE
    for page, count, losers in newests:
        if page is not None:
            best, total_count, total_losers = with_page(total, page, choose, sample_fraction)
            total = best, total_count - 1 + count, total_losers + losers
    return total


class CountUrlDuplicates(Step):
    """(normalized URL, NewestOfUrl) -> its newest page; the older ones counted (and recorded
    where they are in the exclusions' sample)."""
    stage = "url_dedup"
    drops = (Drop("older_duplicate"),)

    def __call__(self, keyed, counts: Counts):
        _, (page, count, losers) = keyed
        self.count(counts)
        if count > 1:
            # Those not in the sample, counted at once; the sample's, each recorded below.
            self.drop_unrecorded(counts, "older_duplicate", count - 1 - len(losers))
        # In an order of their own: the runner's merges give them in any.
        for loser in sorted(losers, key=dataclasses.astuple):
            self.drop(counts, "older_duplicate", loser)
        return (page,)
