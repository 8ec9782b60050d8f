"""Throughput of each pipeline stage and of the whole job on the shared WET samples.

    python bench/bench_pipeline.py [--repeats 3]

Per stage: the pure function alone, one core, over every page that reaches that stage.
End to end: `python -m pipelines.c4 --variant en` with the DirectRunner (one process), timed
as a whole, with its peak memory. Also the bytes per page that the dedup shuffle moves, and
the peak memory of writing one large shard (`--shard_write_only` runs that alone).
"""
import argparse
import glob
import gzip
import hashlib
import io
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import apache_beam as beam  # noqa: E402
from langdetect import detector_factory as langdetect_factory  # noqa: E402

from pipelines.filters import badwords, cleaning, dedup, language, urls  # noqa: E402
from pipelines.page import Page  # noqa: E402
from pipelines.readers import wet  # noqa: E402
from pipelines.readers.files import open_raw  # noqa: E402
from text.sentences import split_sentences  # noqa: E402
from bench_vs_tfds import dedup_shuffle_bytes  # noqa: E402  (a script beside this one)

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
WET_GLOB = str(SHARED / "wet" / "*" / "*")


def timed(function, repeats):
    """Median seconds of `repeats` calls of function()."""
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations)


def read_pages(paths):
    return [item for path in paths
            for item in wet.read_wet(lambda: open_raw(path), 760_000) if isinstance(item, Page)]


def report(name, seconds, pages, megabytes):
    print(f"{name:<28}{pages / seconds:>12,.0f} pages/s{megabytes / seconds:>10.2f} MB/s"
          f"{seconds * 1000:>10.1f} ms")


def hot_span_child(count):
    """Span dedup alone on the DirectRunner over `count` pages that share one span (or, for a
    negative count, as many pages with a span each of their own)."""
    from pipelines.beam.span_dedup import DedupText
    from tests.support.pages import hot_span_pages
    pages = hot_span_pages(abs(count), shared=count > 0)
    options = beam.options.pipeline_options.PipelineOptions(
        ["--direct_running_mode=in_memory", "--direct_num_workers=1"])
    with beam.Pipeline(options=options) as pipeline:
        _ = (pipeline | beam.Create(pages)
             | DedupText(dedup.PAPER_SPAN_DEDUP, min_sentences=1, split=split_sentences))


def hot_span(count):
    """Runs hot_span_child in fresh processes, with the hot span and without it (the same pages
    and volume, each span its own: what the DirectRunner holds anyway, since it keeps every
    shuffle in memory), and prints their CPU time and peak memory."""
    for pages in (count // 10, -count // 10, count, -count):
        child = subprocess.Popen([sys.executable, __file__, "--hot_span_child", str(pages)],
                                 cwd=pathlib.Path(__file__).resolve().parents[1],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit("the hot-span run failed")
        what = f"hot span in {pages:,} pages" if pages > 0 else f"no hot span, {-pages:,} pages"
        print(f"{what}, span dedup alone (DirectRunner, one process): "
              f"{usage.ru_utime + usage.ru_stime:.1f} CPU s, peak memory "
              f"{usage.ru_maxrss / 1024:,.0f} MB")


def synthetic_shard(megabytes):
    """About `megabytes` of text in ~2 KB pages, in no URL order, generated as they are read
    (as a runner that pages its shuffle hands a shard's pages to the writer)."""
    import random
    rng = random.Random(0)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randrange(2, 10)))
             for _ in range(20_000)]
    sentences = [" ".join(rng.choices(words, k=15)).capitalize() + "." for _ in range(5_000)]
    for index in range(megabytes * 1_000_000 // 2_000):
        url = f"https://example{index % 97}.com/{rng.getrandbits(64):016x}"
        yield Page(url=url, normalized_url=url.replace("https://", "com."),
                   timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                   content_length=2_000, text=" ".join(rng.choices(sentences, k=20)),
                   language_probability=rng.random())


def shard_write_child(mode, megabytes):
    """Writes one synthetic shard to a local file the way `mode` says, and prints its size and
    sha256: "streamed" (pipelines.writers.output.write_shard), "listed" (the writer before it: the
    shard's pages listed, sorted, its whole gzip file built in memory), or "read" (the pages
    only, none written: the process's floor)."""
    from pipelines.writers import output
    pages = synthetic_shard(megabytes)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "shard.jsonl.gz")
        with open(path, "wb") as sink:
            if mode == "streamed":
                output.write_shard(pages, sink)
            elif mode == "listed":
                listed = sorted(pages, key=lambda page: (page.normalized_url, page.url,
                                                         page.timestamp))
                buffer = io.BytesIO()
                with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
                    for page in listed:
                        compressed.write(output.encode_line(page))
                sink.write(buffer.getvalue())
            else:
                for _ in pages:
                    pass
        with open(path, "rb") as written:
            digest = hashlib.file_digest(written, "sha256")
        print(os.path.getsize(path), digest.hexdigest())


def shard_write_memory(megabytes):
    """Peak memory and CPU time of writing one shard of `megabytes` of text, each way in a
    fresh process; the two writers must give the same bytes."""
    digests = {}
    for mode in ("read", "listed", "streamed"):
        child = subprocess.Popen([sys.executable, __file__, "--shard_write_child", mode,
                                  "--shard_mb", str(megabytes)],
                                 cwd=pathlib.Path(__file__).resolve().parents[1],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        stdout = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"the {mode} shard write failed")
        size, digests[mode] = stdout.split()
        what = {"read": "pages generated, none written",
                "listed": "pages listed, file built in memory (before)",
                "streamed": "write_shard, 64 MB sort budget (now)"}[mode]
        print(f"one shard of {megabytes} MB of text, {what}: "
              f"{usage.ru_utime + usage.ru_stime:.1f} CPU s, peak memory "
              f"{usage.ru_maxrss / 1024:,.0f} MB" + ("" if mode == "read" else
                                                     f", file {int(size) / 1e6:,.0f} MB"))
    if digests["listed"] != digests["streamed"]:
        sys.exit("the two shard writers wrote different bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hot_span", type=int, default=100_000,
                        help="pages that share one span in the hot-key run")
    parser.add_argument("--hot_span_child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--shard_mb", type=int, default=200,
                        help="MB of text in the one-shard write-memory run")
    parser.add_argument("--shard_write_only", action="store_true",
                        help="run only the one-shard write-memory comparison")
    parser.add_argument("--shard_write_child", choices=["read", "listed", "streamed"],
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hot_span_child:
        hot_span_child(args.hot_span_child)
        return
    if args.shard_write_child:
        shard_write_child(args.shard_write_child, args.shard_mb)
        return
    if args.shard_write_only:
        shard_write_memory(args.shard_mb)
        return
    paths = sorted(glob.glob(WET_GLOB))
    compressed_mb = sum(pathlib.Path(p).stat().st_size for p in paths) / 1e6
    pages = read_pages(paths)
    text_mb = sum(len(p.text.encode()) for p in pages) / 1e6
    print(f"input: {len(paths)} WET files, {compressed_mb:.2f} MB compressed, {len(pages)} pages, "
          f"{text_mb:.2f} MB of text\n")
    print(f"{'stage (one core)':<28}{'pages/s':>20}{'text MB/s':>15}{'time':>10}")

    report("read WET (gunzip+warcio)", timed(lambda: read_pages(paths), args.repeats),
           len(pages), text_mb)
    report("url normalisation", timed(lambda: [urls.normalize_url(p.url) for p in pages],
                                      args.repeats), len(pages), text_mb)
    config = cleaning.PUBLIC_C4_CLEANING
    report("cleaning heuristics", timed(lambda: [cleaning.clean_page(p.text, config)
                                                 for p in pages], args.repeats), len(pages), text_mb)
    cleaned = [r.text for r in (cleaning.clean_page(p.text, config) for p in pages) if r.text]
    cleaned_mb = sum(len(t.encode()) for t in cleaned) / 1e6

    def span_keys_of_all():
        return [list(dedup.span_keys(dedup.units_of(t, "spans", split_sentences),
                                     dedup.PAPER_SPAN_DEDUP)) for t in cleaned]
    report("dedup: span keys", timed(span_keys_of_all, args.repeats), len(cleaned), cleaned_mb)

    factory = language.sorted_profiles_factory()  # The library, languages in our order.
    factory.seed = language.LANGDETECT_SEED

    def reference_langdetect(text):
        detector = factory.create()
        detector.append(text)
        try:
            return detector.get_probabilities()
        except langdetect_factory.LangDetectException:
            return []
    report("langdetect (the library)", timed(lambda: [reference_langdetect(t) for t in cleaned],
                                             1), len(cleaned), cleaned_mb)
    detector = language.LanguageDetector()
    report("language (ours: langdetect-rs)", timed(lambda: [detector.detect(t) for t in cleaned],
                                                  args.repeats), len(cleaned), cleaned_mb)
    pattern = badwords.compile_badwords(
        badwords.parse_badwords((SHARED / "badwords" / "en").read_bytes(), "en"))
    report("bad words", timed(lambda: [badwords.contains_badword(t, pattern) for t in cleaned],
                              args.repeats), len(cleaned), cleaned_mb)

    shuffle = dedup_shuffle_bytes(paths)["paper"]
    print(f"\ndedup shuffle: {shuffle[0]:.2f} bytes per span to the buckets, {shuffle[1]:.2f} "
          f"with the worker's own losses sent back (bench_vs_tfds.dedup_shuffle_bytes)")
    hot_span(args.hot_span)
    print()
    shard_write_memory(args.shard_mb)

    with tempfile.TemporaryDirectory() as output:
        command = [sys.executable, "-m", "pipelines.c4", "--variant", "en", "--input", WET_GLOB,
                   "--output", output, "--badwords", str(SHARED / "badwords" / "en")]
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True,
                       cwd=pathlib.Path(__file__).resolve().parents[1])
        seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("\nend to end, variant en, DirectRunner, one process (includes ~5 s of start-up):")
    report("whole job", seconds, len(pages), text_mb)
    print(f"peak memory of the job: {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
