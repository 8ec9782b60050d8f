"""Per-core throughput of the C4 `en` pipeline, and what it implies for a full Dataflow run.

Runs `pipelines.c4` on one core (DirectRunner in_memory, one worker) over the realistic WET
sample, several times, and prints the median CPU seconds, pages per CPU-second (all pages
read, since every stage up to language detection sees most of them), and the WET text volume
per page. The same runs on a one-record WET file give the start-up; the marginal throughput
(start-up taken out) is what a Dataflow worker, which starts once and then reads thousands of
pages per file, sustains. It then scales that to one Common Crawl dump for deploy/README.md's
cost table.

    .venv/bin/python bench/bench_scale.py [--repeats 3]

With --synthetic FILES..., it runs the job instead on full-size synthetic WET files (40,000 pages
each, real lines recombined: bench/synthetic_wet.py), once per DirectRunner running mode
(in_memory, one worker; multi_processing, two) and per file count given, each in a fresh process,
and prints pages per CPU-second, the peak memory of the whole process tree (sampled) and per
input file, and the dedup shuffle bytes per page of one such file. pipelines/c4.py's warning of
what the embedded runner can hold comes from these peaks.

    .venv/bin/python bench/bench_scale.py --synthetic 1 2 [--synthetic_dir /tmp/c4-synthetic-wet]

The scale figures are Common Crawl's published numbers for CC-MAIN-2019-18 and the prices are
Dataflow's us-central1 batch list prices: both are constants below, to be checked and edited.
"""
import argparse
import contextlib
import dataclasses
import gzip
import io
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pipelines import c4  # noqa: E402
import synthetic_wet  # noqa: E402  (a script beside this one)
from bench_vs_tfds import dedup_shuffle_bytes  # noqa: E402

SAMPLE = REPO_ROOT.parent / "shared" / "data" / "wet" / "realistic"
ONE_RECORD = SAMPLE.parent / "whirlwind-python" / "whirlwind.warc.wet.gz"
BADWORDS = REPO_ROOT.parent / "shared" / "data" / "badwords" / "en"

# Common Crawl's announcement of CC-MAIN-2019-18 (April 2019): about 2.5 billion pages; its
# wet.paths.gz lists 56,000 WET files.
DUMP_PAGES = 2.5e9
DUMP_WET_FILES = 56_000
# Dataflow batch list prices, us-central1 (USD): per vCPU-hour, per GB-hour of memory, per
# GB-hour of standard persistent disk, per GB of data through Dataflow Shuffle.
PRICE_VCPU_HOUR = 0.056
PRICE_GB_MEMORY_HOUR = 0.003557
PRICE_GB_DISK_HOUR = 0.000054
PRICE_SHUFFLE_GB = 0.011
# The launcher's defaults: n2-standard-4 (4 vCPUs, 16 GB), 50 GB disk, 500 workers.
WORKER_VCPUS, WORKER_MEMORY_GB, WORKER_DISK_GB, MAX_WORKERS = 4, 16, 50, 500
# Page text crosses the shuffle twice (URL dedup groups every page; span dedup joins the
# surviving English pages back to their removals): counted as twice the WET text, an upper bound.
SHUFFLE_PASSES = 2
# Span dedup moves keys, not text: at most 16 bytes per distinct span, packed records
# (bench/bench_pipeline.py), about 23 spans per page, on the 83% of pages that reach dedup in the
# sample.
SPAN_KEY_BYTES_PER_PAGE = 16 * 23 * 0.83


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(wet_files: list) -> tuple:
    """CPU seconds, wall seconds and pages read for one single-core run."""
    with tempfile.TemporaryDirectory() as output, contextlib.redirect_stdout(io.StringIO()):
        cpu, wall = cpu_seconds(), time.perf_counter()
        stats = c4.main(["--variant", "en", "--input", *wet_files, "--output", output,
                         "--badwords", str(BADWORDS), "--direct_running_mode=in_memory",
                         "--direct_num_workers=1"])
        cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    return cpu, wall, stats["read"]["pages.passed"]


def wet_text_bytes(wet_files: list) -> int:
    """Uncompressed bytes, streamed: gzip.decompress copies the rest of its input for each
    member, quadratic in a real WET file's 40,000 members."""
    total = 0
    for path in wet_files:
        with gzip.open(path, "rb") as text:
            while chunk := text.read(1 << 20):
                total += len(chunk)
    return total


@dataclasses.dataclass(frozen=True)
class TreeRun:
    """A child process run to its end: CPU seconds (its own and its waited-for children's),
    wall seconds, and the peak of its process tree's summed resident memory."""
    cpu_seconds: float
    wall_seconds: float
    peak_bytes: int


def tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += member.memory_info().rss
    return total


def run_tree(command: list[str], interval: float = 0.2) -> TreeRun:
    """Runs command, sampling its tree's memory every `interval` seconds (multi_processing's
    workers are children: one process's maxrss would miss them)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    process, peak = psutil.Process(child.pid), 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        with contextlib.suppress(psutil.NoSuchProcess):
            peak = max(peak, tree_rss(process))
        time.sleep(interval)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed:\n{child.stderr.read().decode()[-3000:]}")
    return TreeRun(usage.ru_utime + usage.ru_stime, time.perf_counter() - start, peak)


RUNNING_MODES = {"in_memory": ["--direct_running_mode=in_memory", "--direct_num_workers=1"],
                 "multi_processing": ["--direct_running_mode=multi_processing",
                                      "--direct_num_workers=2"]}


def synthetic_scale(file_counts: list[int], folder: pathlib.Path) -> None:
    paths = synthetic_wet.make_files(folder, max(file_counts), synthetic_wet.SyntheticConfig())
    one = paths[0]
    print(f"synthetic WET file: {synthetic_wet.PAGES_PER_WET_FILE:,} pages, "
          f"{one.stat().st_size / 1e6:,.0f} MB gzipped, {wet_text_bytes([one]) / 1e6:,.0f} MB "
          f"of WET text ({folder})")
    print(f"{'mode':<18}{'files':>6}{'pages':>9}{'CPU s':>8}{'wall s':>8}{'pages/CPU-s':>13}"
          f"{'peak MB':>9}{'MB/file':>9}  dedup")
    for mode, options in RUNNING_MODES.items():
        for files in file_counts:
            with tempfile.TemporaryDirectory() as output:
                run = run_tree([sys.executable, "-m", "pipelines.c4", "--variant", "en",
                                "--input", *map(str, paths[:files]), "--output", output,
                                "--badwords", str(BADWORDS), *options])
                stages = json.loads((pathlib.Path(output) / "stats.json").read_text())["stages"]
            pages = stages["read"]["pages.passed"]
            dedup = stages["dedup"]
            print(f"{mode:<18}{files:>6}{pages:>9,}{run.cpu_seconds:>8.0f}{run.wall_seconds:>8.0f}"
                  f"{pages / run.cpu_seconds:>13.0f}{run.peak_bytes / 1e6:>9,.0f}"
                  f"{run.peak_bytes / 1e6 / files:>9,.0f}  "
                  f"{dedup.get('spans.dropped:duplicate', 0):,} spans dropped, "
                  f"{dedup.get('pages.dropped:empty_after_dedup', 0):,} pages emptied", flush=True)
    to_buckets, with_losses, per_page = dedup_shuffle_bytes([str(one)])["paper"]
    print(f"dedup shuffle on one file: {to_buckets:.2f} bytes per span to the buckets, "
          f"{with_losses:.2f} with the losses sent back: {per_page:.0f} bytes per page read")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--synthetic", type=int, nargs="+", metavar="FILES",
                        help="run on this many full-size synthetic WET files instead (each "
                             "count in turn, in each running mode)")
    parser.add_argument("--synthetic_dir", type=pathlib.Path, default=synthetic_wet.DEFAULT_FOLDER,
                        help="where the synthetic files are made (and reused)")
    args = parser.parse_args()
    if args.synthetic:
        synthetic_scale(args.synthetic, args.synthetic_dir)
        return
    wet_files = sorted(str(path) for path in SAMPLE.glob("*.warc.wet.gz"))
    if not wet_files:
        sys.exit(f"no WET sample under {SAMPLE}")

    run_once(wet_files[:1])  # warm-up: imports, langdetect profiles, Beam start-up
    runs, start_ups = [], []
    for _ in range(args.repeats):  # Interleaved, so that a busy machine slows both alike.
        runs.append(run_once(wet_files))
        start_ups.append(run_once([str(ONE_RECORD)]))
    cpu = statistics.median(run[0] for run in runs)
    wall = statistics.median(run[1] for run in runs)
    start_up = statistics.median(run[0] for run in start_ups)
    pages = runs[0][2]
    whole_job_pages_per_cpu_second = pages / cpu
    pages_per_cpu_second = (pages - start_ups[0][2]) / (cpu - start_up)
    bytes_per_page = wet_text_bytes(wet_files) / pages

    print(f"sample: {len(wet_files)} WET files, {pages:,} pages, "
          f"{bytes_per_page / 1000:.1f} KB of WET text per page")
    print(f"one core: median {cpu:.1f} CPU s, {wall:.1f} wall s over {args.repeats} runs "
          f"(CPU s: {', '.join(f'{run[0]:.1f}' for run in runs)})")
    print(f"throughput: {whole_job_pages_per_cpu_second:.0f} pages per CPU-second for the whole "
          f"job (start-up included, a lower bound); start-up {start_up:.1f} CPU s; marginal "
          f"{pages_per_cpu_second:.0f} pages per CPU-second (start-up taken out)")

    vcpu_hours = DUMP_PAGES / pages_per_cpu_second / 3600
    worker_hours = vcpu_hours / WORKER_VCPUS
    hours_at_max = worker_hours / MAX_WORKERS
    worker_hour_price = (WORKER_VCPUS * PRICE_VCPU_HOUR + WORKER_MEMORY_GB * PRICE_GB_MEMORY_HOUR
                         + WORKER_DISK_GB * PRICE_GB_DISK_HOUR)
    compute = worker_hours * worker_hour_price
    shuffle_gb = SHUFFLE_PASSES * DUMP_PAGES * bytes_per_page / 1e9
    print(f"one dump ({DUMP_PAGES:.2g} pages in {DUMP_WET_FILES:,} WET files), at the marginal "
          "throughput:")
    print(f"  {DUMP_PAGES:.3g} pages / {pages_per_cpu_second:.0f} pages/s = "
          f"{vcpu_hours:,.0f} vCPU-hours = {worker_hours:,.0f} n2-standard-4 worker-hours")
    print(f"  at {MAX_WORKERS} workers: {hours_at_max:.1f} hours of processing")
    print(f"  compute: {worker_hours:,.0f} worker-hours x ${worker_hour_price:.4f} "
          f"= ${compute:,.0f}")
    span_keys_gb = DUMP_PAGES * SPAN_KEY_BYTES_PER_PAGE / 1e9
    shuffle = (shuffle_gb + span_keys_gb) * PRICE_SHUFFLE_GB
    print(f"  shuffle: {SHUFFLE_PASSES} x {DUMP_PAGES:.3g} pages x {bytes_per_page / 1000:.1f} KB "
          f"= {shuffle_gb:,.0f} GB, span keys {SPAN_KEY_BYTES_PER_PAGE:.0f} bytes per page = "
          f"{span_keys_gb:,.0f} GB; x ${PRICE_SHUFFLE_GB}/GB = ${shuffle:,.0f}")
    print(f"  total: about ${compute + shuffle:,.0f}; {vcpu_hours / 24:,.0f} CPU-days")


if __name__ == "__main__":
    main()
