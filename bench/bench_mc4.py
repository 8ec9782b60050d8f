"""Pages per CPU-second of our mC4 job against TFDS's own `multilingual` chain, on the same input,
and what all 86 dumps would cost at that rate.

    python bench/bench_mc4.py [--repeats 3] [--synthetic] [--tfds_beam] [--input_pages N]
    python bench/bench_mc4.py --stages   # where TFDS's chain spends its time

Every measurement is a fresh child process pinned to one core, with one thread for numpy and
TensorFlow, measured by its own CPU time and peak RSS (`os.wait4`). The runs are interleaved (ours,
TFDS, each on two inputs, then again), so a busy machine slows both sides alike. The sides:

- ours: `python -m pipelines.c4 --variant multilingual --badwords_dir ../shared/data/badwords`
  (DirectRunner, one in-memory worker), writing DIR/<lang>/{train,validation}-*.jsonl.gz;
- TFDS: the public `c4_utils` functions chained as TFDS's c4.py wires `multilingual`
  (tests/support/tfds_reference.py, `tfds_mc4`): WET parsing, URL dedup, the paragraph filter,
  line dedup, CLD3 (`gcld3`, the `detect_languages` DoFn called directly), the per-language bad
  words at 0.999, the split; offline, in plain Python, no Beam runner (so TFDS pays none of
  Beam's per-element cost here: a lower bound on what its Beam job costs);
- with `--tfds_beam`, also "TFDS Beam": c4.py's own Beam graph of `multilingual`
  (`_get_pages_pcollection`, and `_build_pcollection` for each of its 216 splits, every one a
  Filter over all pages, as TFDS builds them), on the same DirectRunner settings as ours, its
  examples written as gzipped JSON lines (tests/support/tfds_reference.py, `tfds_mc4_beam`;
  TFDS's own tfrecord writer left out): what TFDS's job costs per page, short of its writer.

Two figures per side: the whole process on the three realistic WET samples (`--synthetic` adds
tests/support/multilingual_wet.py's two files; `--input_pages N` instead takes one synthetic WET
file of N pages made by bench/synthetic_wet.py from the samples' pages, for a steadier margin),
start-up included, and the marginal cost per page: the
CPU time on the samples less the CPU time on a one-record WET file, per page of difference (the
start-up taken out), which is what a worker that reads thousands of WET files pays.

From the marginal rate: the CPU-days of all dumps of TFDS's ALL_CC_VERSIONS and their Dataflow
cost. The assumptions are constants below, to be checked and edited: pages per dump (Common Crawl
announces 2.5-3 billion pages per dump in these years; 2.75 billion taken, the range printed) and
Dataflow's list prices for batch jobs in us-central1 ($0.056 per vCPU-hour, $0.003557 per GB-hour
of memory, n1-standard's 3.75 GB per vCPU); one vCPU is taken to do what one pinned core does
here. Left out: shuffle (Dataflow Shuffle is billed per GB), disk, the download of the WET files
and storage of the output.

Until `python -m pipelines.c4 --variant multilingual` works (with `--badwords_dir` and the
per-language folders), the script stops before measuring, saying what failed.
"""
import argparse
import glob
import gzip
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
BADWORDS_DIR = str(SHARED / "badwords")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
              "TF_CPP_MIN_LOG_LEVEL": "3"}
SIDES = ("ours", "TFDS")
TFDS_BEAM = "TFDS Beam"

# Assumptions of the estimate (see the module's docstring).
PAGES_PER_DUMP = 2.75e9
PAGES_PER_DUMP_RANGE = (2.5e9, 3.0e9)
PRICE_VCPU_HOUR = 0.056  # Dataflow batch, us-central1, list price (USD).
PRICE_GB_MEMORY_HOUR = 0.003557  # Dataflow batch, us-central1, list price (USD).
MEMORY_GB_PER_VCPU = 3.75  # n1-standard.


def run_tfds_chain(paths):
    """The child's work on the TFDS side (imports included in its CPU time)."""
    from tests.support.tfds_reference import tfds_mc4
    pages = tfds_mc4(paths, BADWORDS_DIR)
    print(json.dumps({"pages_out": len(pages)}))


def run_tfds_beam_job(paths):
    """The child's work on the TFDS Beam side (imports included in its CPU time)."""
    from tests.support.tfds_reference import tfds_mc4_beam
    with tempfile.TemporaryDirectory() as folder:
        pages = tfds_mc4_beam(paths, BADWORDS_DIR, folder)
    print(json.dumps({"pages_out": len(pages)}))


def _timed(function):
    start = time.process_time()
    result = function()
    return result, time.process_time() - start


def tfds_stage_costs(paths):
    """CPU seconds of each stage of TFDS's chain (tfds_mc4's steps, one by one, in this process)
    on the pages of paths: where TFDS's marginal time goes. Start-up (TensorFlow's import on the
    first read, CLD3's model) is paid first, on the one-record file."""
    from tensorflow_datasets.text import c4_utils

    from tests.support import tfds_reference
    list(c4_utils.split_wet_file(SMALL_INPUT[0]))
    predict = tfds_reference.tfds_language_fn()
    list(predict.process(c4_utils.PageFeatures(url="u", text="Einige deutsche Worte. " * 10)))
    costs = {}
    pages, costs["read WET"] = _timed(lambda: [
        page for path in paths for page in c4_utils.split_wet_file(str(path))])
    read = len(pages)

    def newest():
        by_url = {}
        for page in pages:
            if c4_utils.is_valid_length(page):
                by_url.setdefault(page.normalized_url, []).append(page)
        return [c4_utils.select_newest_page(group) for group in by_url.values()]
    pages, costs["length, URL dedup"] = _timed(newest)
    pages, costs["paragraph filter"] = _timed(lambda: [
        page for page in pages if c4_utils.paragraph_filter(page)])
    pages, costs["line dedup"] = _timed(lambda: tfds_reference._tfds_dedup(pages, 0))
    pages, costs["CLD3"] = _timed(lambda: [kept for page in pages
                                           for kept in predict.process(page)])
    keep = c4_utils.get_badwords_filter_fn(tfds_reference.tfds_mc4_badwords(BADWORDS_DIR), 0.999)
    pages, costs["bad words"] = _timed(lambda: [page for page in pages if keep(page)])
    _, costs["split"] = _timed(lambda: [tfds_reference.tfds_mc4_split(page) for page in pages])
    return read, costs


def command(side, paths, output):
    if side == "TFDS":
        return [sys.executable, __file__, "--tfds_child", *paths]
    if side == TFDS_BEAM:
        return [sys.executable, __file__, "--tfds_beam_child", *paths]
    return [sys.executable, "-m", "pipelines.c4", "--variant", "multilingual", "--input", *paths,
            "--badwords_dir", BADWORDS_DIR, "--output", output,
            "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def _one_core():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def our_pages_out(output):
    """Records in DIR/<lang>/{train,validation}-*.jsonl.gz, or None where there is no such file."""
    shards = sorted(pathlib.Path(output).glob("*/train-*.jsonl.gz")) + sorted(
        pathlib.Path(output).glob("*/validation-*.jsonl.gz"))
    if not shards:
        return None
    count = 0
    for shard in shards:
        with gzip.open(shard, "rt", encoding="utf-8") as records:
            count += sum(1 for line in records if line.strip())
    return count


def measure(side, paths):
    """(CPU seconds, peak RSS in MB, pages out) of one child process, its output to files (so
    nothing blocks), reaped by os.wait4 for its usage."""
    with tempfile.TemporaryDirectory() as output, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command(side, paths, output), cwd=REPO,
                                 env={**os.environ, **ONE_THREAD}, preexec_fn=_one_core,
                                 stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            sys.exit(f"{side} failed (exit {child.returncode}):\n"
                     f"{err.read().decode(errors='replace')[-3000:]}")
        if side != "ours":
            pages_out = json.loads(out.read().decode().strip().splitlines()[-1])["pages_out"]
        else:
            pages_out = our_pages_out(output)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, pages_out


def input_pages(paths):
    """Conversion records of the WET files and their payload in MB, counted from the headers."""
    pages, payload = 0, 0
    for path in paths:
        with gzip.open(path, "rb") as wet_file:
            conversion = False
            for line in wet_file:
                if line.startswith(b"WARC-Type:"):
                    conversion = line.split(b":", 1)[1].strip() == b"conversion"
                    pages += conversion
                elif conversion and line.startswith(b"Content-Length:"):
                    payload += int(line.split(b":", 1)[1])
                    conversion = False
    return pages, payload / 1e6


def check_ours_ready():
    """Stops with what failed unless our multilingual job runs and writes per-language folders."""
    with tempfile.TemporaryDirectory() as folder:
        wet = pathlib.Path(folder) / "check.warc.wet.gz"
        from tests.support.multilingual_wet import write_multilingual_wet
        write_multilingual_wet(wet)
        output = pathlib.Path(folder) / "out"
        done = subprocess.run(command("ours", [str(wet)], str(output)), cwd=REPO,
                              env={**os.environ, **ONE_THREAD}, capture_output=True)
        if done.returncode != 0:
            sys.exit("our side is not ready: `python -m pipelines.c4 --variant multilingual "
                     "--badwords_dir ...` failed on the synthetic multilingual WET file (exit "
                     f"{done.returncode}):\n{done.stderr.decode(errors='replace')[-3000:]}")
        folders = sorted(path.name for path in output.glob("*/")
                         if list(path.glob("train-*.jsonl.gz")))
        if our_pages_out(output) is None or "de" not in folders:
            sys.exit("our side is not ready: `python -m pipelines.c4 --variant multilingual` ran "
                     f"but wrote no DIR/<lang>/train-*.jsonl.gz for German (found {folders}, "
                     f"files {sorted(str(p.relative_to(output)) for p in output.rglob('*'))[:20]})")


def estimate(rate, label):
    """Prints the CPU-days and the Dataflow cost of every dump at `rate` marginal pages/CPU-s."""
    from tensorflow_datasets.text import c4
    dumps = len(c4.ALL_CC_VERSIONS)
    price = PRICE_VCPU_HOUR + MEMORY_GB_PER_VCPU * PRICE_GB_MEMORY_HOUR
    low, high = (dumps * pages / rate / 3600 for pages in PAGES_PER_DUMP_RANGE)
    vcpu_hours = dumps * PAGES_PER_DUMP / rate / 3600
    print(f"  {label}: {dumps} dumps x {PAGES_PER_DUMP / 1e9:.2f} billion pages / {rate:,.0f} "
          f"pages per CPU-s = {vcpu_hours:,.0f} vCPU-hours = {vcpu_hours / 24:,.0f} CPU-days "
          f"({low / 24:,.0f}-{high / 24:,.0f} for {PAGES_PER_DUMP_RANGE[0] / 1e9:.1f}-"
          f"{PAGES_PER_DUMP_RANGE[1] / 1e9:.1f} billion pages per dump); at ${price:.5f} per "
          f"vCPU-hour with its memory: ${vcpu_hours * price:,.0f} "
          f"(${low * price:,.0f}-${high * price:,.0f})")
    return dumps


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--synthetic", action="store_true",
                        help="add tests/support/multilingual_wet.py's two files to the samples")
    parser.add_argument("--tfds_beam", action="store_true",
                        help="also measure c4.py's own Beam graph (about 10x TFDS's chain)")
    parser.add_argument("--input_pages", type=int, default=0,
                        help="instead of the samples, one synthetic WET file of this many pages "
                             "(bench/synthetic_wet.py)")
    parser.add_argument("--stages", action="store_true",
                        help="only print the CPU cost of each stage of TFDS's chain")
    parser.add_argument("--tfds_child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--tfds_beam_child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tfds_child:
        run_tfds_chain(args.tfds_child)
        return
    if args.tfds_beam_child:
        run_tfds_beam_job(args.tfds_beam_child)
        return
    if args.stages:
        read, costs = tfds_stage_costs(FULL_INPUT)
        print(f"TFDS's chain, CPU ms per page read ({read:,} pages of the samples), one process: "
              + ", ".join(f"{stage} {seconds / read * 1000:.2f}"
                          for stage, seconds in costs.items()))
        return
    sides = SIDES + ((TFDS_BEAM,) if args.tfds_beam else ())
    check_ours_ready()
    with tempfile.TemporaryDirectory() as folder:
        full_input = list(FULL_INPUT)
        if args.input_pages:
            sys.path.insert(0, str(REPO / "bench"))
            import synthetic_wet  # A script beside this one.
            full_input = [str(path) for path in synthetic_wet.make_files(
                pathlib.Path(folder), 1, synthetic_wet.SyntheticConfig(pages=args.input_pages))]
        if args.synthetic:
            from tests.support.multilingual_wet import write_multilingual_wet, write_second_wet
            for name, write in (("mc4-synthetic", write_multilingual_wet),
                                ("mc4-synthetic-2", write_second_wet)):
                synthetic = pathlib.Path(folder) / f"{name}.warc.wet.gz"
                write(synthetic)
                full_input.append(str(synthetic))
        full_pages, full_mb = input_pages(full_input)
        small_pages, _ = input_pages(SMALL_INPUT)
        print(f"input: {len(full_input)} WET files, {full_pages:,} pages, {full_mb:.2f} MB of "
              f"payload; start-up baseline: {small_pages} page(s). One core, one thread, median "
              f"of {args.repeats} interleaved runs.\n")
        runs = {(side, size): [] for side in sides for size in ("full", "small")}
        for _ in range(args.repeats):
            for side in sides:
                for size, paths in (("full", full_input), ("small", SMALL_INPUT)):
                    runs[side, size].append(measure(side, paths))
    figures = {}
    for side in sides:
        whole = statistics.median(cpu for cpu, _, _ in runs[side, "full"])
        start_up = statistics.median(cpu for cpu, _, _ in runs[side, "small"])
        marginal = (whole - start_up) / (full_pages - small_pages)
        peak = max(rss for _, rss, _ in runs[side, "full"])
        pages_out = {out for _, _, out in runs[side, "full"]}
        figures[side] = whole, start_up, marginal, peak, pages_out
    tfds_whole, _, tfds_marginal, _, _ = figures["TFDS"]
    print(f"{'side':<10}{'CPU s':>8}{'start-up s':>12}{'pages/CPU-s':>13}{'MB/CPU-s':>10}"
          f"{'ms/page':>9}{'marginal pages/s':>18}{'peak MB':>9}{'pages out':>11}"
          f"{'x TFDS whole':>14}{'x TFDS marginal':>17}")
    for side, (whole, start_up, marginal, peak, pages_out) in figures.items():
        out = ",".join(str(count) for count in sorted(pages_out, key=str))
        print(f"{side:<10}{whole:>8.2f}{start_up:>12.2f}{full_pages / whole:>13.0f}"
              f"{full_mb / whole:>10.2f}{marginal * 1000:>9.2f}{1 / marginal:>18.0f}{peak:>9.0f}"
              f"{out:>11}{tfds_whole / whole:>14.2f}{tfds_marginal / marginal:>17.2f}")
    if len({frozenset(figures[side][4]) for side in sides}) > 1:
        print("\nnote: the two sides wrote different page counts "
              "(tests/pipelines/test_mc4_oracle.py compares them page for page)")
    print("\nall of mC4 at the marginal rate (assumptions in the module's docstring):")
    for side in sides:
        estimate(1 / figures[side][2], side)
    print(f"  prices: Dataflow batch list prices in us-central1, assumed: ${PRICE_VCPU_HOUR} per "
          f"vCPU-hour, ${PRICE_GB_MEMORY_HOUR} per GB-hour, {MEMORY_GB_PER_VCPU} GB per vCPU "
          "(n1-standard); shuffle, disk, downloads and storage left out")


if __name__ == "__main__":
    main()
