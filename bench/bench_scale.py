"""Per-core throughput of the C4 `en` pipeline, and what it implies for a full Dataflow run.

Runs `pipelines.c4` on one core (DirectRunner in_memory, one worker) over the realistic WET
sample, several times, and prints the median CPU seconds, pages per CPU-second (all pages
read, since every stage up to language detection sees most of them), and the WET text volume
per page. The same runs on a one-record WET file give the start-up; the marginal throughput
(start-up taken out) is what a Dataflow worker, which starts once and then reads thousands of
pages per file, sustains. It then scales that to one Common Crawl dump for deploy/README.md's
cost table.

    .venv/bin/python bench/bench_scale.py [--repeats 3]

The scale figures are Common Crawl's published numbers for CC-MAIN-2019-18 and the prices are
Dataflow's us-central1 batch list prices: both are constants below, to be checked and edited.
"""
import argparse
import contextlib
import gzip
import io
import pathlib
import resource
import statistics
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pipelines import c4  # noqa: E402

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
    return sum(len(gzip.decompress(pathlib.Path(path).read_bytes())) for path in wet_files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
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
