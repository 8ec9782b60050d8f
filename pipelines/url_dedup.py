"""URL dedup: every page keyed by its normalized URL, the newest page of each URL kept (the rule
set's keep_of_two), the older ones counted and, in the exclusions' sample, recorded.
"""
import dataclasses
from typing import Iterable, Optional, Sequence, Tuple

import apache_beam as beam

from pipelines import exclusions
from pipelines.beam_phases import PageCoder, SampleOutputs, apply_phase
from pipelines.page import Page
from pipelines.rules import RuleSet
from pipelines.steps import Counts, Drop, Step


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
    if sample_fraction is not None and exclusions.in_sample(page.normalized_url, sample_fraction):
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


class NewestPageFn(beam.CombineFn):
    """Keeps the newest page of a normalized URL (NewestOfUrl).

    `choose` picks one of two pages: urls.newest_page (paper rules) or
    urls.first_seen_newest_page (released rules)."""

    def __init__(self, choose, sample_fraction: Optional[float] = None):
        self._choose = choose
        self._sample_fraction = sample_fraction

    def create_accumulator(self):
        return NO_PAGE

    def add_input(self, accumulator, page):
        return with_page(accumulator, page, self._choose, self._sample_fraction)

    def merge_accumulators(self, accumulators):
        return merged_newest(accumulators, self._choose, self._sample_fraction)

    def extract_output(self, accumulator):
        return accumulator

    def get_accumulator_coder(self):
        return beam.coders.TupleCoder([beam.coders.NullableCoder(PageCoder()),
                                       beam.coders.VarIntCoder(),
                                       beam.coders.TupleSequenceCoder(PageCoder())])


class DedupUrls(beam.PTransform):
    """Pages -> (normalized URL, NewestOfUrl), after the per-page `before` steps in the same DoFn
    (which end in KeyByUrl)."""

    def __init__(self, rules: RuleSet, before: Sequence[Step],
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._choose = rules.keep_of_two
        self._before = tuple(before)
        self._sample = sample

    def expand(self, pages):
        keyed = apply_phase(pages, "KeyByUrl", self._before, self._sample,
                            output_type=Tuple[str, Page]).main
        return keyed | "KeepNewest" >> beam.CombinePerKey(
            NewestPageFn(self._choose, self._sample and self._sample.fraction))


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
