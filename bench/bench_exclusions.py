"""What --exclusions costs: CPU seconds per page of a one-job `en` run without exclusions, at the
default fraction and at fraction 1, interleaved round by round, one worker (the DirectRunner in
memory, one thread), on full-size synthetic WET files (bench/synthetic_wet.py) or the shared
samples.

    .venv/bin/python bench/bench_exclusions.py [--files 2] [--rounds 3] [--samples]

Prints each run's CPU seconds (the child process's user + system time), the median ratio of each
setting to the run without, and the records and bytes the exclusions wrote.
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pipelines import exclusion_sample
from pipelines.writers import exclusions  # noqa: E402
import synthetic_wet  # noqa: E402  (a script beside this one)

SHARED = REPO_ROOT.parent / "shared" / "data"
SETTINGS = {"none": None,
            f"default ({exclusion_sample.DEFAULT_FRACTION:g})": exclusion_sample.DEFAULT_FRACTION,
            "all (1)": 1.0}
# One thread everywhere: these machines are shared, and 1-thread timings are the steady ones.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(inputs: list, fraction, work: pathlib.Path) -> float:
    output, excluded = work / "out", work / "excluded"
    command = [sys.executable, "-m", "pipelines.c4", "--variant", "en", "--input", *inputs,
               "--badwords", str(SHARED / "badwords/en"), "--output", str(output),
               "--no-staged", "--direct_running_mode", "in_memory"]
    if fraction is not None:
        command += ["--exclusions", str(excluded), "--exclusion_fraction", str(fraction)]
    before = child_cpu_seconds()
    subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True,
                   env={**os.environ, **ONE_THREAD})
    return child_cpu_seconds() - before


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--files", type=int, default=2, help="synthetic WET files")
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--samples", action="store_true",
                         help="the shared samples instead of synthetic files")
    args = options.parse_args()
    if args.samples:
        inputs = sorted(str(path) for path in (SHARED / "wet").glob("*/*"))
    else:
        inputs = [str(path) for path in synthetic_wet.make_files(
            synthetic_wet.DEFAULT_FOLDER, args.files, synthetic_wet.SyntheticConfig())]
    seconds = {name: [] for name in SETTINGS}
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            for name, fraction in SETTINGS.items():
                work = pathlib.Path(scratch) / f"{round_number}-{fraction}"
                seconds[name].append(run(inputs, fraction, work))
                print(f"round {round_number + 1}: {name:<15} {seconds[name][-1]:7.1f} CPU-s",
                      flush=True)
                if fraction is not None:
                    excluded = work / "excluded"
                    summary = json.loads((excluded / exclusions.SUMMARY_FILE).read_text())
                    records = sum(sum(by_reason.values())
                                  for by_reason in summary["records"].values())
                    size = sum(path.stat().st_size for path in excluded.iterdir())
                    print(f"          {records:,} records and {summary['kept']:,} kept pages, "
                          f"{size / 1e6:.1f} MB")
    base = seconds["none"]
    for name in SETTINGS:
        ratios = [each / without for each, without in zip(seconds[name], base)]
        print(f"{name:<15} median {statistics.median(seconds[name]):7.1f} CPU-s, "
              f"x{statistics.median(ratios):.3f} of the run without exclusions")


if __name__ == "__main__":
    main()
