"""Pages per CPU-second of our C4 job against the public TFDS code, on the same WET input.

    python bench/bench_vs_tfds.py [--repeats 3] [--variants]

Every measurement is a fresh child process on one core (pinned where the OS allows) with one
thread for numpy and TensorFlow, measured by its own CPU time and peak RSS (`os.wait4`). The
runs are interleaved (ours paper, ours released, TFDS, each on two inputs, then again), so a
busy machine slows all sides alike. The sides:

- ours: `python -m pipelines.c4 --variant en --rules paper|released` (DirectRunner, one
  in-memory worker), writing its shards;
- TFDS: the public `c4_utils` functions chained as TFDS's c4.py wires them for `en`
  (tests/support/tfds_reference.py), offline, with our sentence splitter patched in and langdetect
  (the library, seeded) doing language detection.

Two figures per side: the whole process on the three realistic WET samples, start-up included
(what a user waits for), and the marginal cost per page: the CPU time on the samples less the
CPU time on a one-record WET file, per page of difference (the start-up taken out), with each
round's own ratio to TFDS (the spread). `--variants` adds en.noclean, realnewslike and
webtextlike (paper rules) to the rounds, per page read against `en`.
"""
import argparse
import glob
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = REPO.parent / "shared" / "data"
FULL_INPUT = sorted(glob.glob(str(SHARED / "wet" / "realistic" / "*.warc.wet.gz")))
SMALL_INPUT = [str(SHARED / "wet" / "whirlwind-python" / "whirlwind.warc.wet.gz")]
BADWORDS = str(SHARED / "badwords" / "en")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
              "TF_CPP_MIN_LOG_LEVEL": "3"}
SIDES = ("ours paper", "ours released", "TFDS")
# The other English variants (paper rules), with --variants: the lists each reads.
VARIANT_LISTS = {
    "en.noclean": [],
    "realnewslike": ["--realnews_domains",
                     str(SHARED / "realnews" / "domain_to_allowed_subdomains.json")],
    "webtextlike": ["--webtext_urls", *sorted(glob.glob(str(SHARED / "openwebtext_urls" / "*"
                                                            / "*")))],
}


def run_tfds_chain(paths):
    """The child's work on the TFDS side (imports included in its CPU time)."""
    import langdetect
    from tensorflow_datasets.text import c4_utils

    from tests.support.tfds_reference import tfds_c4
    from text.sentences import split_sentences
    c4_utils._get_sentences = split_sentences
    langdetect.DetectorFactory.seed = 0  # The library's seed, as ours: deterministic output.
    pages = tfds_c4(paths, "en", BADWORDS, None, ())
    print(json.dumps({"pages_out": len(pages)}))


def command(side, paths, output):
    if side == "TFDS":
        return [sys.executable, __file__, "--tfds_child", *paths]
    name = side.split()[1]
    variant, rules = (name, "paper") if name in VARIANT_LISTS else ("en", name)
    return [sys.executable, "-m", "pipelines.c4", "--variant", variant, "--rules", rules,
            "--input", *paths, "--output", output, "--badwords", BADWORDS,
            *VARIANT_LISTS.get(variant, ()), "--direct_running_mode=in_memory",
            "--direct_num_workers=1"]


def _one_core():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def measure(side, paths):
    """(CPU seconds, peak RSS in MB) of one child process."""
    with tempfile.TemporaryDirectory() as output:
        child = subprocess.Popen(command(side, paths, output), cwd=REPO,
                                 env={**os.environ, **ONE_THREAD}, preexec_fn=_one_core,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{side} failed:\n{stderr.decode(errors='replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def input_pages(paths):
    """Conversion records of the WET files and their text in MB (our reader)."""
    from pipelines.readers import wet
    from pipelines.readers.files import open_raw
    from pipelines.page import Page
    pages = [item for path in paths for item in wet.read_wet(lambda: open_raw(path), 760_000)
             if isinstance(item, Page)]
    return len(pages), sum(len(page.text.encode("utf-8")) for page in pages) / 1e6


def dedup_shuffle_bytes(paths):
    """Bytes per window (span or line) that dedup moves through its shuffles, encoded as Beam
    encodes them, under each rule set, on the pages that reach dedup: as DedupText sends them
    from one worker buffer (one bucket per input file), the winners' blocks to the buckets, and
    with the worker's own losses sent back to their pages as well; then the latter per page
    read (every page of the input, as a dump's page count counts them)."""
    import apache_beam as beam

    from pipelines import config
    from pipelines.filters import dedup, released
    from pipelines.readers import wet
    from pipelines.steps import span_dedup
    from pipelines.readers.files import open_raw
    from pipelines.page import Page
    from text.sentences import split_sentences
    block_coder = beam.coders.registry.get_coder(beam.typehints.Tuple[int, bytes]).get_impl()
    loser_coder = beam.coders.registry.get_coder(beam.typehints.Tuple[bytes, bytes]).get_impl()
    raw = [item for path in paths for item in wet.read_wet(lambda: open_raw(path), 760_000)
           if isinstance(item, Page)]
    figures = {}
    for rules in ("paper", "released"):
        variant = config.variant("en", rules)
        mode = variant.dedup.mode
        pages = [page for record in raw for page in released.wet_pages(record)
                 ] if variant.rule_set.reads_released_text else raw
        clean = variant.rule_set.clean_page
        records, windows = bytearray(), 0
        for page in pages:
            text = clean(page.text, variant.cleaning, split_sentences).text
            if text is None:
                continue
            units = dedup.units_of(text, mode, split_sentences)
            keys, _ = dedup.distinct_span_keys(units, variant.dedup)
            key_of_page = span_dedup._page_key(page, variant.dedup)
            records += dedup.page_records(keys, key_of_page)
            windows += max(len(units) - variant.dedup.span_units + 1, 0)
        winners, losers = dedup.resolve_records(bytes(records), mode)
        to_buckets = sum(len(block_coder.encode_nested(block))
                         for block in dedup.bucket_blocks(winners, mode, len(paths)))
        back = sum(len(loser_coder.encode_nested(loser)) for loser in losers)
        figures[rules] = (to_buckets / windows, (to_buckets + back) / windows,
                          (to_buckets + back) / len(raw))
    return figures


def _timed(function):
    start = time.process_time()
    result = function()
    return result, time.process_time() - start


def stage_costs(paths):
    """CPU ms per page read of each stage's work on both sides, in this process (no Beam):
    where the marginal time goes. Our language detector starts with an empty word cache, as
    in a job; 'warm' is the same pages again, as most pages of a long run find it."""
    import dataclasses

    import langdetect
    from tensorflow_datasets.text import c4_utils

    from pipelines.filters import badwords, cleaning, dedup, language
    from pipelines.readers import wet
    from pipelines.writers import output
    from pipelines.readers.files import open_raw
    from pipelines.page import Page
    from tests.support.tfds_reference import _tfds_dedup
    from text.sentences import split_sentences
    c4_utils._get_sentences = split_sentences
    langdetect.DetectorFactory.seed = 0
    ours, tfds = {}, {}
    pages, ours["read WET"] = _timed(lambda: [
        item for path in paths for item in wet.read_wet(lambda: open_raw(path), 760_000)
        if isinstance(item, Page)])
    results, ours["clean"] = _timed(lambda: [
        cleaning.clean_page(page.text, cleaning.PUBLIC_C4_CLEANING) for page in pages])
    cleaned = [dataclasses.replace(page, text=result.text)
               for page, result in zip(pages, results) if result.text]
    _, ours["dedup (span keys)"] = _timed(lambda: [dedup.distinct_span_keys(
        dedup.units_of(page.text, "spans", split_sentences), dedup.PAPER_SPAN_DEDUP)
        for page in cleaned])
    detector = language.LanguageDetector()
    texts = [page.text for page in cleaned]

    def detect_all():
        return [detector.detect(text) for text in texts]
    _, ours["language (cold word cache)"] = _timed(detect_all)
    _, ours["language (warm word cache)"] = _timed(detect_all)
    matcher = badwords.compile_badwords(
        badwords.parse_badwords(pathlib.Path(BADWORDS).read_bytes(), BADWORDS))
    _, ours["bad words"] = _timed(lambda: [badwords.contains_badword(text, matcher)
                                           for text in texts])
    _, ours["write (JSON + gzip)"] = _timed(lambda: output.encode_shard(cleaned))

    # TFDS imports TensorFlow on its first read and langdetect loads its profiles on its first
    # page: start-up, left out here as our detector's loading is.
    list(c4_utils.split_wet_file(SMALL_INPUT[0]))
    list(c4_utils.detect_english(c4_utils.PageFeatures(url="u", text="Some English words.")))
    tfds_pages, tfds["read WET"] = _timed(lambda: [
        page for path in paths for page in c4_utils.split_wet_file(path)])
    clean_page = c4_utils.get_clean_page_fn()
    tfds_cleaned, tfds["clean"] = _timed(lambda: [
        kept for page in tfds_pages for kept in clean_page(page)])
    tfds_deduped, tfds["dedup (line keys)"] = _timed(
        lambda: _tfds_dedup(tfds_cleaned, c4_utils._MIN_NUM_SENTENCES))
    english, tfds["language (langdetect)"] = _timed(lambda: [
        kept for page in tfds_deduped for kept in c4_utils.detect_english(page)])
    with open(BADWORDS, encoding="utf-8") as lines:
        keep = c4_utils.get_badwords_filter_fn({"en": {line.strip() for line in lines}}, 1.0)
    _, tfds["bad words"] = _timed(lambda: [keep(page) for page in english])
    return len(pages), ours, tfds


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", action="store_true",
                        help="also measure " + ", ".join(VARIANT_LISTS) + " (paper rules), "
                             "per page read, in the same interleaved rounds")
    parser.add_argument("--tfds_child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tfds_child:
        run_tfds_chain(args.tfds_child)
        return
    full_pages, full_mb = input_pages(FULL_INPUT)
    small_pages, _ = input_pages(SMALL_INPUT)
    print(f"input: {len(FULL_INPUT)} realistic WET files, {full_pages:,} pages, {full_mb:.2f} MB "
          f"of text; start-up baseline: {small_pages} page(s). One core, one thread, median of "
          f"{args.repeats} interleaved runs.\n")
    variant_sides = tuple(f"ours {variant}" for variant in VARIANT_LISTS if args.variants)
    sides = SIDES + variant_sides
    runs = {(side, size): [] for side in sides for size in ("full", "small")}
    for _ in range(args.repeats):
        for side in sides:
            for size, paths in (("full", FULL_INPUT), ("small", SMALL_INPUT)):
                runs[side, size].append(measure(side, paths))
    figures, spread = {}, {}
    for side in sides:
        whole = statistics.median(cpu for cpu, _ in runs[side, "full"])
        start_up = statistics.median(cpu for cpu, _ in runs[side, "small"])
        marginal = (whole - start_up) / (full_pages - small_pages)
        peak = max(rss for _, rss in runs[side, "full"])
        figures[side] = whole, start_up, marginal, peak
        # Each round's own marginal cost, for the spread of the ratio.
        spread[side] = [(full - small) / (full_pages - small_pages) for (full, _), (small, _)
                        in zip(runs[side, "full"], runs[side, "small"])]
    tfds_whole, _, tfds_marginal, _ = figures["TFDS"]
    print(f"{'side':<15}{'CPU s':>8}{'start-up s':>12}{'pages/CPU-s':>13}{'MB/CPU-s':>10}"
          f"{'ms/page':>9}{'marginal pages/s':>18}{'peak MB':>9}{'x TFDS whole':>14}"
          f"{'x TFDS marginal':>17}")
    for side, (whole, start_up, marginal, peak) in figures.items():
        print(f"{side:<15}{whole:>8.2f}{start_up:>12.2f}{full_pages / whole:>13.0f}"
              f"{full_mb / whole:>10.2f}{marginal * 1000:>9.2f}{1 / marginal:>18.0f}{peak:>9.0f}"
              f"{tfds_whole / whole:>14.2f}{tfds_marginal / marginal:>17.2f}")
    print("\nx TFDS marginal, round by round (each round's TFDS over its own):")
    for side in ("ours paper", "ours released"):
        ratios = [tfds / ours for ours, tfds in zip(spread[side], spread["TFDS"])]
        print(f"  {side}: " + ", ".join(f"{ratio:.2f}" for ratio in ratios)
              + f" (median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, "
              f"max {max(ratios):.2f})")
    for side in variant_sides:
        print(f"{side}: marginal {figures[side][2] * 1000:.2f} ms per page read, "
              f"{figures[side][2] / figures['ours paper'][2]:.2f}x en's")
    pages, ours, tfds = stage_costs(FULL_INPUT)
    print(f"\nwhere the marginal time goes, CPU ms per page read ({pages:,} pages), pure "
          "functions without Beam, one process:")
    for side, costs in (("ours", ours), ("TFDS", tfds)):
        print(f"  {side}: " + ", ".join(f"{stage} {seconds / pages * 1000:.2f}"
                                        for stage, seconds in costs.items()))
    shuffle = dedup_shuffle_bytes(FULL_INPUT)
    for rules, record in (("paper", "3-sentence spans, 8-byte key + 8-byte page key"),
                          ("released", "lines, 16-byte MD5 key + 16-byte MD5 page key")):
        to_buckets, with_losses, per_page = shuffle[rules]
        print(f"dedup shuffle per window, encoded, {rules} ({record}): {to_buckets:.2f} bytes to "
              f"the buckets, {with_losses:.2f} with the worker's own losses sent back "
              f"({per_page:.0f} bytes per page read)")


if __name__ == "__main__":
    main()
