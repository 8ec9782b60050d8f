"""Deterministic sharded output: `<dir>/<split>-NNNNN-of-NNNNN.jsonl.gz`, gzipped JSON lines.

Beam's text sink numbers shards and orders lines by bundling, so two runs of the same input
could differ. Here a page's shard is a hash of its URL, a shard's lines are sorted by URL, and
gzip writes no time stamp, so the files are byte-identical on any runner and any bundling.
A retried shard rewrites the same bytes.
"""
import gzip
import io
import json
from typing import Iterable, List

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from pipelines.page import Page
from text.hashing import hash64


def shard_name(split: str, index: int, num_shards: int) -> str:
    return f"{split}-{index:05d}-of-{num_shards:05d}.jsonl.gz"


def encode_shard(pages: Iterable[Page]) -> bytes:
    """The gzipped JSON lines of a shard's pages, in URL order."""
    ordered = sorted(pages, key=lambda page: (page.normalized_url, page.url, page.timestamp))
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
        for page in ordered:
            line = json.dumps(page.to_json_record(), ensure_ascii=False) + "\n"
            compressed.write(line.encode("utf-8"))
    return buffer.getvalue()


class _WriteShardFn(beam.DoFn):

    def __init__(self, directory: str, split: str, num_shards: int):
        self._directory = directory
        self._split = split
        self._num_shards = num_shards

    def process(self, keyed):
        index, pages = keyed
        pages: List[Page] = [page for page in pages if page is not None]
        path = FileSystems.join(self._directory, shard_name(self._split, index, self._num_shards))
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as sink:
            sink.write(encode_shard(pages))
        Metrics.counter("c4.write", f"pages.written:{self._split}").inc(len(pages))
        yield path


class WriteShards(beam.PTransform):
    """Pages of one split -> `num_shards` files in `directory` (empty shards are written too)."""

    def __init__(self, directory: str, split: str, num_shards: int):
        super().__init__()
        if num_shards < 1:
            raise ValueError("the number of shards must be >= 1")
        self._directory = directory
        self._split = split
        self._num_shards = num_shards

    def expand(self, pages):
        num_shards = self._num_shards
        every_shard = (pages.pipeline
                       | "AllShards" >> beam.Create([(i, None) for i in range(num_shards)]))
        keyed = pages | "ShardByUrl" >> beam.Map(
            lambda page: (hash64(page.normalized_url) % num_shards, page))
        return ((keyed, every_shard)
                | "Merge" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteShardFn(self._directory, self._split, num_shards)))
