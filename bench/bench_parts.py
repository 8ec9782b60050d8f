"""The CPU cost of a C4 job run in parts (pipelines/parts.py) against the same job in one, on
the same input, one process each (DirectRunner in_memory, one worker), interleaved rounds.

    python bench/bench_parts.py [--files 4] [--pages 10000] [--group_files 1] [--rounds 3]
                                [--variant en]

The input is synthetic full-shape WET files (bench/synthetic_wet.py). Each round runs, in turn:
the job in one; the job in parts from nothing (groups of --group_files files); the same command again,
which reuses every group and runs the global stage alone. The last gives the split of a run in
parts between its groups and its global stage, and so what a rerun after a failure costs.
"""
import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import synthetic_wet  # noqa: E402  (scripts beside this one)
from bench_scale import BADWORDS, run_tree  # noqa: E402

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
ONE_PROCESS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


def variant_args(variant: str) -> list:
    if variant == "multilingual":
        return ["--variant", variant, "--badwords_dir", str(SHARED / "badwords")]
    return ["--variant", variant, "--badwords", str(BADWORDS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--pages", type=int, default=10_000, help="pages per synthetic file")
    parser.add_argument("--group_files", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", default="en", choices=("en", "multilingual"))
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.gettempdir()) / f"c4-bench-parts-{args.pages}"
    wet_files = [str(path) for path in synthetic_wet.make_files(
        folder, args.files, synthetic_wet.SyntheticConfig(pages=args.pages))]
    base = [sys.executable, "-m", "pipelines.c4", *variant_args(args.variant), "--input",
            *wet_files, *ONE_PROCESS]
    in_parts = ["--in_parts", "--group_files", str(args.group_files)]
    runs = {"one job": [], "in parts": [], "global alone": []}
    groups = -(-args.files // args.group_files)
    print(f"{args.variant}: {args.files} synthetic WET files of {args.pages:,} pages, in "
          f"{groups} groups; CPU seconds of each run (the process and its children)")
    print(f"{'round':<7}{'one job':>9}{'in parts':>10}{'global':>8}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            one, parted = pathlib.Path(scratch) / "one", pathlib.Path(scratch) / "parts"
            for output in (one, parted):
                shutil.rmtree(output, ignore_errors=True)
            runs["one job"].append(run_tree(base + ["--output", str(one)]).cpu_seconds)
            runs["in parts"].append(
                run_tree(base + ["--output", str(parted), *in_parts]).cpu_seconds)
            runs["global alone"].append(
                run_tree(base + ["--output", str(parted), *in_parts]).cpu_seconds)
            print(f"{round_index + 1:<7}{runs['one job'][-1]:>9.1f}{runs['in parts'][-1]:>10.1f}"
                  f"{runs['global alone'][-1]:>8.1f}"
                  f"{runs['in parts'][-1] / runs['one job'][-1]:>8.3f}", flush=True)
    one, parted, global_alone = (statistics.median(runs[name]) for name in runs)
    ratios = [p / o for p, o in zip(runs["in parts"], runs["one job"])]
    group_seconds = parted - global_alone
    print(f"in parts against one job: {statistics.median(ratios) - 1:+.1%} at the median of "
          f"the rounds ({min(ratios) - 1:+.1%} to {max(ratios) - 1:+.1%}); medians of each: "
          f"one job {one:.1f} CPU s, in parts {parted:.1f} ({parted / one - 1:+.1%})")
    print(f"in parts: the groups {group_seconds:.1f} CPU s ({group_seconds / parted:.0%}, "
          f"{group_seconds / groups:.1f} a group), the global stage {global_alone:.1f} "
          f"({global_alone / parted:.0%}, {global_alone / group_seconds:.2f} times the groups)")


if __name__ == "__main__":
    main()
