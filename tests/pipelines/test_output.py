"""Shard writing: the same bytes whatever the sort budget, and no temporary file left behind."""
import collections
import gzip
import io
import json
import os
import pathlib
import random
import shutil
import struct
import subprocess
import sys
import tracemalloc
import zlib

import apache_beam as beam
import pytest
from isal import isal_zlib
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.page import Page
from pipelines.writers.output import (GZIP_BLOCK_BYTES, GzipWriter, ShardWritten, WriteShards,
                                      bucket_of, encode_line, encode_shard, json_line, shards_for,
                                      shard_name, shard_numbering, write_shard)
from text.hashing import hash64

WORDS = ["alpha", "Beta", "gamma", "délta", "ε", "ζήτα", "\u2028", "\"quoted\"", "tab\there",
         "new\nline", "emoji 🙂", "back\\slash", "日本語"]


def synthetic_pages(count: int, seed: int = 0) -> list[Page]:
    """Pages in a random order whose URL order differs from their normalized URL order."""
    rng = random.Random(seed)
    pages = []
    for index in range(count):
        host = f"Example{rng.randrange(7)}.com"
        url = f"http://{host}/{rng.choice(WORDS)}/{index}"
        pages.append(Page(
            url=url, normalized_url=f"com.{host.lower()}/{index % 11}/{index}",
            timestamp=f"2019-04-{rng.randrange(1, 29):02d}T10:13:24Z",
            content_type="text/plain", content_length=rng.randrange(100_000),
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 60))),
            language_probability=rng.random()))
    return pages


def reference_shard(pages) -> bytes:
    """The file format, independently of the writer: each page's JSON record on a line (non-ASCII
    kept), sorted by (normalized URL, URL, timestamp), in one gzip member (RFC 1952) with no file
    name, time stamp 0, no extra flags and OS 255, deflated by ISA-L's stream at level 2, given
    64 KiB at a time."""
    ordered = sorted(pages, key=lambda page: (page.normalized_url, page.url, page.timestamp))
    text = "".join(json.dumps(page.to_json_record(), ensure_ascii=False) + "\n" for page in ordered)
    data = text.encode("utf-8")
    header = struct.pack("<4sIBB", b"\x1f\x8b\x08\x00", 0, 0, 255)
    trailer = struct.pack("<II", zlib.crc32(data), len(data) % 2**32)
    deflate = isal_zlib.compressobj(2, isal_zlib.DEFLATED, -zlib.MAX_WBITS)
    blocks = [deflate.compress(data[start:start + 65536]) for start in range(0, len(data), 65536)]
    return header + b"".join(blocks) + deflate.flush() + trailer


def written(pages, **budget) -> tuple[bytes, ShardWritten]:
    sink = io.BytesIO()
    result = write_shard(iter(pages), sink, **budget)
    return sink.getvalue(), result


def files_open_in(directory: pathlib.Path) -> list[str]:
    """This process's open files in `directory` (unlinked temporary files included)."""
    links = (os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
             if os.path.exists(f"/proc/self/fd/{fd}"))
    return [link for link in links if link.startswith(str(directory))]


PAGES = synthetic_pages(400)


@pytest.mark.parametrize("budget, runs", [(10**9, 0), (20_000, "several"), (1, len(PAGES))])
def test_spilled_runs_write_the_same_bytes_as_sorting_in_memory(budget, runs, tmp_path):
    content, result = written(PAGES, sort_budget_bytes=budget, spill_dir=str(tmp_path))
    assert result.pages == len(PAGES)
    if runs == "several":
        assert 3 <= result.spilled_runs < len(PAGES)
    else:
        assert result.spilled_runs == runs
    assert content == reference_shard(PAGES)
    assert list(tmp_path.iterdir()) == []


def test_encode_shard_is_the_file_in_memory():
    assert encode_shard(PAGES[:50]) == reference_shard(PAGES[:50])


def _json_texts():
    """Strings of every code point but the surrogates, in runs, with every control character
    and the characters JSON escapes, and the realistic samples' pages."""
    characters = [chr(code) for code in range(sys.maxunicode + 1)
                  if not 0xD800 <= code <= 0xDFFF]
    texts = ["".join(characters[start:start + 500]) for start in range(0, len(characters), 500)]
    return texts + ["", '"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029', "é🙂日本"]


def test_json_lines_are_those_of_json_dumps(shared_data):
    from pipelines.readers import wet
    from pipelines.readers.files import open_raw
    records = [{"text": text, "n": len(text), "p": index / 7} for index, text in
               enumerate(_json_texts())]
    records += [{"p": value} for value in (0.0, -0.0, 1.0, 1e-05, 0.9999995123162333, 5e-324,
                                           1.7976931348623157e308, 1e16, 123456789.0, 0.1)]
    records += [{"n": value} for value in (0, -1, 2**63, 10**30)]
    for path in sorted((shared_data / "wet" / "realistic").glob("*.warc.wet.gz")):
        records += [item.to_json_record() for item in wet.read_wet(lambda: open_raw(str(path)),
                                                                   10**6)
                    if isinstance(item, Page)]
    for record in records:
        assert json_line(record) == (json.dumps(record, ensure_ascii=False) + "\n").encode()


def test_gzip_bytes_do_not_depend_on_how_the_writes_are_cut():
    lines = [encode_line(page) for page in synthetic_pages(6000, seed=3)]
    data = b"".join(lines)
    assert len(data) > 2 * GZIP_BLOCK_BYTES
    outputs = []
    for cut in (len(data), 1, 4093, GZIP_BLOCK_BYTES + 1, "lines"):
        sink = io.BytesIO()
        writer = GzipWriter(sink)
        for piece in (lines if cut == "lines" else
                      (data[start:start + cut] for start in range(0, len(data), cut))):
            writer.write(piece)
        writer.close()
        outputs.append(sink.getvalue())
    assert len(set(outputs)) == 1
    assert gzip.decompress(outputs[0]) == data


_COMPRESS_IN_CHILD = """
import hashlib, io, sys
from numpy.core._multiarray_umath import __cpu_features__
from pipelines.writers.output import GzipWriter
sink = io.BytesIO()
writer = GzipWriter(sink)
writer.write(sys.stdin.buffer.read())
writer.close()
print(__cpu_features__["AVX512F"], hashlib.sha256(sink.getvalue()).hexdigest())
"""


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_gzip_bytes_do_not_depend_on_the_cpus_vector_extensions():
    # ISA-L picks its kernels by the CPU's extensions; valgrind's CPU has no AVX-512, so the
    # child under it runs other kernels than a native one on a machine that has it.
    data = b"".join(encode_line(page) for page in synthetic_pages(4000, seed=5))
    repo = pathlib.Path(__file__).resolve().parents[2]

    def compress(prefix):
        return subprocess.run([*prefix, sys.executable, "-c", _COMPRESS_IN_CHILD], input=data,
                              capture_output=True, check=True, cwd=repo).stdout.split()

    native_avx512, native = compress([])
    hidden_avx512, emulated = compress(["valgrind", "-q", "--error-exitcode=0"])
    assert hidden_avx512 == b"False"
    assert emulated == native


def test_empty_shard_is_an_empty_gzip_file():
    content, result = written([])
    assert result == ShardWritten(pages=0, spilled_runs=0)
    assert content == reference_shard([])
    assert gzip.decompress(content) == b""


@pytest.mark.parametrize("budget", [10**9, 1_000])
def test_pages_with_equal_keys_are_ordered_by_their_line_whatever_the_input_order(budget):
    twins = [Page(url="http://a.com/", normalized_url="com.a/", timestamp="2019-01-01T00:00:00Z",
                  content_type="text/plain", content_length=1, text=f"version {i} " * 30)
             for i in range(12)]
    shuffled = twins[:]
    random.Random(1).shuffle(shuffled)
    content, _ = written(twins + PAGES[:40], sort_budget_bytes=budget)
    assert written(PAGES[:40] + shuffled, sort_budget_bytes=budget)[0] == content
    lines = gzip.decompress(content).decode("utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines if '"url": "http://a.com/"' in line]
    assert texts == sorted(page.text for page in twins)


def test_runs_are_deleted_once_written_and_on_failure(tmp_path):
    seen_open = []

    def pages_then_failure():
        yield from PAGES[:200]
        seen_open.extend(files_open_in(tmp_path))
        raise RuntimeError("the shuffle broke")

    before = files_open_in(tmp_path)
    with pytest.raises(RuntimeError, match="the shuffle broke"):
        write_shard(pages_then_failure(), io.BytesIO(), sort_budget_bytes=5_000,
                    spill_dir=str(tmp_path))
    assert len(seen_open) >= 3, "the runs should have been spilled into the spill directory"
    assert files_open_in(tmp_path) == before == []
    assert list(tmp_path.iterdir()) == []

    _, result = written(PAGES, sort_budget_bytes=5_000, spill_dir=str(tmp_path))
    assert result.spilled_runs >= 3
    assert files_open_in(tmp_path) == [] and list(tmp_path.iterdir()) == []


def always(split):
    """A split_of that sends every page to `split`."""
    return lambda page: split


def test_write_shards_pipeline_output_does_not_depend_on_the_budget(tmp_path):
    num_shards = 4
    pages = PAGES[:240]
    with beam.Pipeline(options=PipelineOptions(["--direct_num_workers=1"])) as pipeline:
        created = pipeline | "Pages" >> beam.Create(pages)
        _ = created | "InMemory" >> WriteShards(str(tmp_path / "memory"), {"train": num_shards},
                                                               always("train"))
        _ = created | "Spilled" >> WriteShards(str(tmp_path / "spilled"), {"train": num_shards},
                                               always("train"), sort_budget_bytes=2_000)
        _ = (pipeline | "NoPages" >> beam.Create([]).with_output_types(Page)
             | "Empty" >> WriteShards(str(tmp_path / "empty"), {"validation": 2},
                                        always("validation")))
    metrics = pipeline.result.metrics().query(MetricsFilter().with_namespace("c4.write"))
    counters = collections.Counter()
    for counter in metrics["counters"]:
        counters[counter.key.metric.name] += counter.committed
    assert counters["pages.written:train"] == 2 * len(pages)
    assert counters["runs.spilled:train"] >= num_shards

    for index in range(num_shards):
        name = shard_name("train", index, num_shards)
        expected = reference_shard(page for page in pages
                                   if hash64(page.normalized_url) % num_shards == index)
        assert (tmp_path / "memory" / name).read_bytes() == expected
        assert (tmp_path / "spilled" / name).read_bytes() == expected
    # A split with no page: one empty file, whatever the number of shards asked for.
    assert sorted(path.name for path in (tmp_path / "empty").iterdir()) == [
        shard_name("validation", 0, 1)]
    assert (tmp_path / "empty" / shard_name("validation", 0, 1)).read_bytes() == reference_shard([])


def test_the_buckets_that_hold_pages_are_the_shards_in_bucket_order():
    assert shard_numbering(5, [2, 5, 9]) == (1, 3)
    assert shard_numbering(9, [2, 5, 9]) == (2, 3)
    assert shard_numbering(3, [2, 5, 9]) is None
    assert shard_numbering(0, []) == (0, 1)  # A split with no page: one empty shard.
    assert shard_numbering(1, []) is None


def test_a_small_split_writes_a_file_per_bucket_it_fills_and_no_empty_one(tmp_path):
    max_shards = 64
    pages = PAGES[:5]
    buckets = sorted({bucket_of(page, max_shards) for page in pages})
    assert len(buckets) < max_shards
    with beam.Pipeline(options=PipelineOptions(["--direct_num_workers=1"])) as pipeline:
        _ = (pipeline | "Pages" >> beam.Create(pages)
             | "Write" >> WriteShards(str(tmp_path / "given"), {"train": max_shards},
                                         always("train")))
        _ = (pipeline | "Reversed" >> beam.Create(pages[::-1])
             | "WriteReversed" >> WriteShards(str(tmp_path / "reversed"), {"train": max_shards},
                                                         always("train")))
    names = [shard_name("train", index, len(buckets)) for index in range(len(buckets))]
    for folder in ("given", "reversed"):
        assert sorted(path.name for path in (tmp_path / folder).iterdir()) == names
        for name, bucket in zip(names, buckets):
            assert (tmp_path / folder / name).read_bytes() == reference_shard(
                page for page in pages if bucket_of(page, max_shards) == bucket)


def test_pages_go_to_a_folder_each_in_one_write_and_every_split_of_a_folder_has_a_file(tmp_path):
    """mC4's output: a folder per language, in one shuffle. A folder named in `folders` has both
    splits even with no page; a folder that appears only through its pages gets both splits
    too, the one with no page as one empty file; a folder neither named nor holding a page has
    none."""
    pages = PAGES[:30]
    language = {page.url: ("de" if index % 3 else "fr") for index, page in enumerate(pages)}
    with beam.Pipeline(options=PipelineOptions(["--direct_num_workers=1"])) as pipeline:
        _ = (pipeline | "Pages" >> beam.Create(pages)
             | "Write" >> WriteShards(str(tmp_path), {"train": 2, "validation": 1},
                                      always("train"), lambda page: language[page.url],
                                      folders=("ro",)))
    metrics = pipeline.result.metrics().query(MetricsFilter().with_namespace("c4.write"))
    counters = {counter.key.metric.name: counter.committed for counter in metrics["counters"]}
    assert counters["pages.written:train:de"] == 20 and counters["pages.written:train:fr"] == 10
    assert sorted(path.name for path in tmp_path.iterdir()) == ["de", "fr", "ro"]
    for folder in ("de", "fr"):
        names = sorted(path.name for path in (tmp_path / folder).iterdir())
        assert names[-1] == shard_name("validation", 0, 1)
        assert (tmp_path / folder / names[-1]).read_bytes() == reference_shard([])
        written = [json.loads(line) for name in names[:-1] for line in
                   gzip.decompress((tmp_path / folder / name).read_bytes()).splitlines()]
        assert sorted(record["url"] for record in written) == sorted(
            page.url for page in pages if language[page.url] == folder)
    assert sorted(path.name for path in (tmp_path / "ro").iterdir()) == [
        shard_name("train", 0, 1), shard_name("validation", 0, 1)]


def test_with_pages_per_shard_each_folder_gets_the_shards_its_pages_need(tmp_path):
    """A large language gets many files, a small one one, from the same write: each
    destination's pages are counted first (output.shards_for), and the files do not depend on
    the order of the pages."""
    pages = PAGES[:90]
    language = {page.url: ("de" if index < 80 else "fr") for index, page in enumerate(pages)}
    for name, ordered in (("given", pages), ("reversed", pages[::-1])):
        with beam.Pipeline(options=PipelineOptions(["--direct_num_workers=1"])) as pipeline:
            _ = (pipeline | beam.Create(ordered)
                 | WriteShards(str(tmp_path / name), {"train": 64}, always("train"),
                               lambda page: language[page.url], folders=(), pages_per_shard=10))
    de = sorted(path.name for path in (tmp_path / "given" / "de").iterdir())
    buckets = sorted({hash64(page.normalized_url) % 8 for page in pages[:80]})
    assert de == [shard_name("train", index, len(buckets)) for index in range(len(buckets))]
    assert sorted(path.name for path in (tmp_path / "given" / "fr").iterdir()) == [
        shard_name("train", 0, 1)]
    for folder in ("de", "fr"):
        for path in (tmp_path / "given" / folder).iterdir():
            assert path.read_bytes() == (tmp_path / "reversed" / folder / path.name).read_bytes()
    assert [shards_for(pages, 10, 64) for pages in (0, 1, 10, 11, 80, 10_000)] == [
        1, 1, 1, 2, 8, 64]
    assert shards_for(5, None, 64) == 64


def test_the_sort_budget_must_be_positive():
    with pytest.raises(ValueError, match="sort budget"):
        WriteShards("out", {"train": 1}, always("train"), sort_budget_bytes=0)


def test_memory_is_bounded_by_the_budget_not_by_the_shard():
    budget = 200_000

    def lazy_pages(count):
        """Generated as they are read (as a runner that pages its shuffle hands them over), in
        no URL order, so that every run is read until the end of the merge."""
        for index in range(count):
            path = f"{hash64(str(index)):016x}"
            yield Page(url=f"http://b.com/{path}", normalized_url=f"com.b/{path}",
                       timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                       content_length=2_000, text=f"{index} " + "words " * 330)

    shard_bytes = sum(map(len, map(encode_line, lazy_pages(2_000))))
    tracemalloc.start()
    try:
        _, result = written(lazy_pages(2_000), sort_budget_bytes=budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert shard_bytes > 4_000_000 and result.spilled_runs >= 15
    # The budget's lines, the gzip writer's 64 KiB block and a read buffer per run.
    assert peak < 1_500_000, f"peak {peak:,} bytes for a {shard_bytes:,}-byte shard"
