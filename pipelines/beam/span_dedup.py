"""The span dedup on Beam: the keys sent by SpanRecords resolved by bucket, and the pages
joined with the keys they lost, for ApplyRemovals (pipelines/steps/span_dedup.py).
"""
from typing import Optional, Sequence

import apache_beam as beam

from pipelines.beam.phases import SampleOutputs, apply_phase
from pipelines.filters import dedup
from pipelines.steps.base import Step
from pipelines.steps.span_dedup import WINNERS, ApplyRemovals, SpanRecords, lost_key_messages
from text.splitters import Splitter


def losers_of_bucket(bucket_and_blocks, mode: str):
    """The messages to each page that has a key of the bucket and does not keep it."""
    _, blocks = bucket_and_blocks
    _, losers = dedup.resolve_records(b"".join(blocks), mode)
    return lost_key_messages(losers)


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
                  | "PickLosers" >> beam.FlatMap(losers_of_bucket, self._mode))
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
