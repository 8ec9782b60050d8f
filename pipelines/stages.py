"""Span dedup (the paper's three-sentence spans, or the released code's lines): one occurrence
of every repeated span across the whole dataset kept. SpanRecords sends the keys, ApplyRemovals
takes each page with the keys it lost (dedup.py has the rules, and how only keys cross the
shuffle).

The module keeps its former name, `stages`, and the names other modules and tests import from
it, which the step machinery, the filters and the other shuffles were split out of: steps.py
(Step, Counts), beam_phases.py (PhaseFn, the page's coder), resources.py (the lists a variant
reads), wet_input.py (reading WET files), url_dedup.py, webtext_join.py, filter_steps.py, and
plan.py (which step runs in which phase). New code imports those from their modules.
"""
import dataclasses
from typing import Iterable, Optional, Sequence, Set, Tuple

import apache_beam as beam

from pipelines import counters, dedup
from pipelines.beam_phases import PAGE_CODER, PageCoder, PhaseFn, SampleOutputs, apply_phase
from pipelines.filter_steps import Cld3Language, RealNewsDomains
from pipelines.page import Page
from pipelines.resources import (DECONTAMINATION_METHODS, Decontamination, Resources,
                                 load_resources)
from pipelines.steps import Counts, Drop, Routed, Step
from pipelines.url_dedup import CountUrlDuplicates, DedupUrls, KeyByUrl
from pipelines.url_dedup import NewestPageFn as _NewestPageFn
from text.splitters import Splitter

# The names imported from here by modules and tests written before the split (re-exported),
# then the span dedup's.
__all__ = ["PageCoder", "PhaseFn", "Cld3Language", "RealNewsDomains", "DECONTAMINATION_METHODS",
           "Decontamination", "Resources", "load_resources", "Counts", "CountUrlDuplicates",
           "DedupUrls", "KeyByUrl", "_NewestPageFn",
           "WINNERS", "PAGE_MESSAGE", "LOST_KEY_MESSAGE", "SpanRecords", "ApplyRemovals",
           "SpanDedup", "DedupText"]

# Where SpanRecords routes the winners of its buffer, one block per bucket of keys: to the
# shuffle by span-key bucket.
WINNERS = "winners"


def _page_key(page: Page, config: dedup.DedupConfig) -> bytes:
    return dedup.page_key(page.url, page.normalized_url, config.mode)


# What goes to the dedup join, keyed by page key: (PAGE_MESSAGE, the page as PageCoder bytes) or
# (LOST_KEY_MESSAGE, a key the page does not keep).
PAGE_MESSAGE, LOST_KEY_MESSAGE = 0, 1
# The key a page is sent when it repeats one of its own keys: check me at the join.
_REPEATS_IN_PAGE = b""
# Records a worker buffers before it resolves them and sends the winners on: 16 MB of span records.
_RECORDS_PER_FLUSH = 1 << 20


class SpanRecords(Step):
    """Pages -> the dedup join's messages (main output): each page, and each key a page loses in
    its worker's buffer (dedup.resolve_records) or repeats; the buffer's winners go out as one
    block per bucket (routed to WINNERS). A buffer mixes the pages of a bundle."""

    def __init__(self, config: dedup.DedupConfig, split: Splitter, buckets: int):
        self._config = config
        self._split = split
        self._buckets = buckets
        self._flush_bytes = _RECORDS_PER_FLUSH * sum(dedup.record_widths(config.mode))
        self._records = bytearray()

    def start(self):
        self._records = bytearray()

    def __call__(self, page: Page, counts: Counts):
        key_of_page = _page_key(page, self._config)
        keys, repeats = dedup.distinct_span_keys(
            dedup.units_of(page.text, self._config.mode, self._split), self._config)
        self._records += dedup.page_records(keys, key_of_page)
        outputs = [(key_of_page, (PAGE_MESSAGE, PAGE_CODER.encode(page)))]
        if repeats:
            outputs.append((key_of_page, (LOST_KEY_MESSAGE, _REPEATS_IN_PAGE)))
        if len(self._records) >= self._flush_bytes:
            outputs.extend(self._flush())
        return outputs

    def finish(self, counts: Counts):
        return self._flush()

    def _flush(self):
        records, self._records = bytes(self._records), bytearray()
        winners, losers = dedup.resolve_records(records, self._config.mode)
        outputs = _lost_key_messages(losers)
        outputs.extend(Routed(WINNERS, block)
                       for block in dedup.bucket_blocks(winners, self._config.mode,
                                                        self._buckets))
        return outputs


def _lost_key_messages(losers: Iterable[Tuple[bytes, bytes]]) -> list:
    """The dedup join's message to each (page key, key) of `losers`: the key it does not keep."""
    return [(key_of_page, (LOST_KEY_MESSAGE, key)) for key_of_page, key in losers]


def _losers_of_bucket(bucket_and_blocks, mode: str):
    """The messages to each page that has a key of the bucket and does not keep it."""
    _, blocks = bucket_and_blocks
    _, losers = dedup.resolve_records(b"".join(blocks), mode)
    return _lost_key_messages(losers)


class ApplyRemovals(Step):
    """A page key's messages from the dedup join -> its page with the spans it lost removed,
    unless too little is left."""
    stage = "dedup"
    drops = (Drop("duplicate", "span"), Drop("empty_after_dedup"),
             Drop("too_few_sentences_after_dedup"))

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter):
        self._config = config
        self._min_sentences = min_sentences
        self._split = split

    def __call__(self, joined, counts: Counts):
        _, messages = joined
        pages, lost = [], set()
        for kind, payload in messages:
            if kind == PAGE_MESSAGE:
                pages.append(PAGE_CODER.decode(payload))
            else:
                lost.add(payload)
        return [kept for page in pages for kept in self._removed_from(page, lost, counts)]

    def _removed_from(self, page: Page, lost: Set[bytes], counts: Counts):
        if not dedup.needs_check(self._config, bool(lost), self._min_sentences):
            # Most pages lose nothing, and passed the sentence minimum when they were cleaned.
            self.count(counts)
            return (page,)
        text = page.text
        if lost:  # Without a lost key, the page lost nothing: only its sentences are checked.
            units = dedup.units_of(page.text, self._config.mode, self._split)
            removed = dedup.removed_starts(units, self._config, lost - {_REPEATS_IN_PAGE})
            if removed:
                self.drop(counts, "duplicate", page, "span", len(removed),
                            lambda: dedup.window_texts(units, self._config, removed))
            text = dedup.remove_units(page.text, units, self._config, removed)
        reason = dedup.drop_reason_after_dedup(text, self._config, self._split,
                                               self._min_sentences)
        if reason:
            self.drop(counts, reason, page)
            return ()
        self.count(counts, counters.passed("shortened") if text != page.text
                  else counters.PASSED)
        return (dataclasses.replace(page, text=text),)


class SpanDedup(beam.PTransform):
    """Keeps one occurrence of every repeated span (or line) across the whole dataset.

    Only keys cross the shuffle (dedup.py): each worker resolves the (key, page key) records of
    its pages and sends their winners, packed per bucket of keys, to be resolved by bucket;
    (page key, key) goes back to each page that loses a key; then the pages join what they lost
    by page key. A bucket holds about 1/buckets of the dataset's keys: pipelines.c4 uses one
    bucket per input file, so a bucket's memory stays that of about one file's keys.

    `send`: the steps of the DoFn that sends the keys, ending in SpanRecords; `remove`: those
    of the DoFn that removes the spans, starting with ApplyRemovals. `sample`: where the
    phases' exclusion records go.
    """

    def __init__(self, mode: str, send: Sequence[Step], remove: Sequence[Step],
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._mode = mode
        self._send = tuple(send)
        self._remove = tuple(remove)
        self._sample = sample

    def expand(self, pages):
        sent = apply_phase(pages, "SendKeys", self._send, self._sample, WINNERS)
        losses = (sent[WINNERS]
                  | "GroupBuckets" >> beam.GroupByKey()
                  | "PickLosers" >> beam.FlatMap(_losers_of_bucket, self._mode))
        joined = ((sent.main, losses)
                  | "AllMessages" >> beam.Flatten()
                  | "JoinByPage" >> beam.GroupByKey())
        return apply_phase(joined, "RemoveSpans", self._remove, self._sample).main


class DedupText(SpanDedup):
    """The span dedup of `config` over pages, with SpanRecords and ApplyRemovals made here;
    `before` and `after`: steps run before the keys are sent and after the spans are removed."""

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter,
                 buckets: int = 1, before: Sequence[Step] = (), after: Sequence[Step] = (),
                 sample: Optional[SampleOutputs] = None):
        if buckets < 1:
            raise ValueError("the number of dedup buckets must be >= 1")
        super().__init__(config.mode, [*before, SpanRecords(config, split, buckets)],
                         [ApplyRemovals(config, min_sentences, split), *after], sample)
