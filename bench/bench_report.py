"""The datasheet's cost (pipelines/audit/datasheet.py) does not grow with the corpus.

    .venv/bin/python bench/bench_report.py [--files 4 16] [--fraction 0.1] [--repeats 3]

Runs `en` with an exclusions sample (`--exclusions OUT/exclusions --exclusion_fraction F`) on the
shared samples and on each count of full-size synthetic WET files (40,000 pages each,
bench/synthetic_wet.py; those already in its folder are used, the missing ones made, about 8 s a
file), the synthetic runs staged on one worker so that their memory stays flat. Those runs are
set-up, not measured. Then `python -m pipelines.report OUT`, each time in a fresh process as a
user runs it, `--repeats` times: the median wall and CPU seconds (os.wait4) and the peak RSS, with
the pages the run read and the sample's records against those the report read.
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

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import synthetic_wet  # noqa: E402  (a script beside this one)

PYTHON = sys.executable
SHARED = REPO_ROOT.parent / "shared" / "data"
SAMPLES = sorted(glob.glob(str(SHARED / "wet" / "*" / "*")))
BADWORDS = str(SHARED / "badwords" / "en")


def synthetic_files(count: int) -> list:
    """`count` synthetic WET files from synthetic_wet.py's folder, made where missing."""
    folder = synthetic_wet.DEFAULT_FOLDER
    present = sorted(glob.glob(str(folder / "synthetic-*.warc.wet.gz")))
    if len(present) < count:
        print(f"making {count - len(present)} synthetic WET files in {folder} "
              "(about 8 s a file)", flush=True)
        subprocess.run([PYTHON, str(REPO_ROOT / "bench" / "synthetic_wet.py"),
                        "--files", str(count)], check=True, cwd=REPO_ROOT)
        present = sorted(glob.glob(str(folder / "synthetic-*.warc.wet.gz")))
    return present[:count]


def run_pipeline(inputs: list, output: pathlib.Path, fraction: float, staged: bool) -> float:
    start = time.monotonic()
    run = subprocess.run([PYTHON, "-m", "pipelines.c4", "--variant", "en", "--input", *inputs,
                          "--badwords", BADWORDS, "--output", str(output),
                          "--exclusions", str(output / "exclusions"),
                          "--exclusion_fraction", str(fraction),
                          *(["--staged", "--workers", "1"] if staged else [])],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"the run on {len(inputs)} files failed:\n{run.stderr[-3000:]}")
    return time.monotonic() - start


def timed_report(output: pathlib.Path) -> dict:
    """One `python -m pipelines.report OUT` in a fresh process: wall, CPU, peak RSS."""
    start = time.monotonic()
    child = subprocess.Popen([PYTHON, "-m", "pipelines.report", str(output)], cwd=REPO_ROOT,
                             stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"the report of {output} failed")
    return {"wall": time.monotonic() - start, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024}


def read_figures(output: pathlib.Path) -> dict:
    """The pages the run read, the sample's records, and what the page says it read."""
    stats = json.loads((output / "stats.json").read_text())["stages"]
    summary = json.loads((output / "exclusions" / "exclusions.json").read_text())
    page = (output / "report" / "index.html").read_text(encoding="utf-8")
    said = page[page.index("Exclusions sample:"):]
    return {"pages": stats["read"]["pages.passed"],
            "records": sum(n for counts in summary["records"].values() for n in counts.values()),
            "kept": summary["kept"],
            "read": said[:said.index("</p>")]}


def main() -> None:
    command_line = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    command_line.add_argument("--files", type=int, nargs="+", default=[4, 16],
                              help="counts of synthetic WET files, one run each")
    command_line.add_argument("--fraction", type=float, default=0.1,
                              help="the runs' --exclusion_fraction")
    command_line.add_argument("--repeats", type=int, default=3)
    args = command_line.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as scratch:
        runs = [("samples", SAMPLES, False)] + [
            (f"{count} synthetic", synthetic_files(count), True) for count in args.files]
        for name, inputs, staged in runs:
            output = pathlib.Path(scratch) / name.replace(" ", "-")
            seconds = run_pipeline(inputs, output, args.fraction, staged)
            print(f"{name}: the run took {seconds:.0f} s", flush=True)
            times = [timed_report(output) for _ in range(args.repeats)]
            rows.append({"name": name, **read_figures(output),
                         **{key: statistics.median(t[key] for t in times)
                            for key in ("wall", "cpu", "rss_mb")}})
    print(f"\n`python -m pipelines.report OUT`, median of {args.repeats}, fresh processes; "
          f"runs of `en` with --exclusion_fraction {args.fraction:g}:\n")
    print("| input | pages read | sample records (dropped, kept) | report wall s | CPU s "
          "| peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['name']} | {row['pages']:,} | {row['records']:,}, {row['kept']:,} "
              f"| {row['wall']:.2f} | {row['cpu']:.2f} | {row['rss_mb']:.0f} |")
    print()
    for row in rows:
        print(f"{row['name']}: {row['read']}")


if __name__ == "__main__":
    main()
