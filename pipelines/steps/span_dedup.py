"""Span dedup (the paper's three-sentence spans, or the released code's lines): one occurrence
of every repeated span across the whole dataset kept. SpanRecords sends the keys, ApplyRemovals
takes each page with the keys it lost (dedup.py has the rules, and how only keys cross the
shuffle); the Beam transform that joins them is pipelines/beam/span_dedup.py.
"""
import dataclasses
from typing import Iterable, Set, Tuple

from pipelines import counters
from pipelines.coders import PAGE_CODER
from pipelines.filters import dedup
from pipelines.page import Page
from pipelines.steps.base import Counts, Drop, Routed, Step
from text.splitters import Splitter

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
        outputs = lost_key_messages(losers)
        outputs.extend(Routed(WINNERS, block)
                       for block in dedup.bucket_blocks(winners, self._config.mode,
                                                        self._buckets))
        return outputs


def lost_key_messages(losers: Iterable[Tuple[bytes, bytes]]) -> list:
    """The dedup join's message to each (page key, key) of `losers`: the key it does not keep."""
    return [(key_of_page, (LOST_KEY_MESSAGE, key)) for key_of_page, key in losers]


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
