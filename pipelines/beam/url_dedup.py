"""URL dedup on Beam: the newest page of each normalized URL kept by a CombineFn over the
steps of pipelines/steps/url_dedup.py.
"""
from typing import Optional, Sequence, Tuple

import apache_beam as beam

from pipelines.beam.phases import SampleOutputs, apply_phase
from pipelines.coders import PageCoder
from pipelines.filters.rules import RuleSet
from pipelines.page import Page
from pipelines.steps.base import Step
from pipelines.steps.url_dedup import NO_PAGE, merged_newest, with_page


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
