"""The staged run (pipelines/executors/staged.py): memory flat in the input, the cores it uses, the
CPU of each stage, and the kill matrix.

    .venv/bin/python bench/bench_staged.py --memory 4 16 32 [--variants en multilingual]
    .venv/bin/python bench/bench_staged.py --workers 16 [--one_job]
    .venv/bin/python bench/bench_staged.py --kills

--memory: a staged run on one worker per count of full-size synthetic WET files (40,000 pages
each: bench/synthetic_wet.py), buckets by default (one per layout.BUCKET_INPUT_BYTES of input);
the peak resident memory of the largest process (sampled), of the tree, CPU and wall seconds,
and each stage's CPU over the read stage's (the tasks' seconds in their markers).

--workers: on that many synthetic files, `--workers 1` and `--workers 2` one after the other
(and with --one_job the one-job run on the local runner, in_memory): wall seconds, their
ratio, CPU per page.

--kills: SIGKILL at points spread over every stage (five variant and rule-set pairs, six points
each) on the shared samples; each rerun's tasks reused against the tasks done at the kill, and
whether it wrote the bytes of an uninterrupted run.
"""
import argparse
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import psutil

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from deploy.rehearse import file_digests  # noqa: E402
from pipelines.executors import base as executors  # noqa: E402
from pipelines.executors import layout, staged  # noqa: E402
import synthetic_wet  # noqa: E402  (a script beside this one)
from tests.support import killing  # noqa: E402
from tests.support.variant_runs import variant_args  # noqa: E402

SHARED = REPO_ROOT.parent / "shared" / "data"


def list_args(variant: str) -> list:
    if variant == "multilingual":
        return ["--badwords_dir", str(SHARED / "badwords")]
    return ["--badwords", str(SHARED / "badwords" / "en")]


def run_sampled(command: list, interval: float = 0.2) -> dict:
    """Runs `command` to its end: CPU seconds (with its children's), wall seconds, the peak
    resident memory of its largest process and of its tree."""
    start = time.perf_counter()
    # The log goes to a file: a pipe nobody reads while the run goes would fill and stop it.
    log = tempfile.TemporaryFile()
    child = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=log)
    process, largest, tree = psutil.Process(child.pid), 0, 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        sizes = []
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                sizes.append(member.memory_info().rss)
        if sizes:
            largest, tree = max(largest, max(sizes)), max(tree, sum(sizes))
        time.sleep(interval)
    if os.waitstatus_to_exitcode(status) != 0:
        log.seek(0)
        sys.exit(f"{' '.join(command)} failed:\n{log.read().decode()[-3000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - start,
            "largest": largest, "tree": tree}


def stage_seconds(output: pathlib.Path) -> dict:
    seconds = {}
    for marker in (output / executors.PARTS_FOLDER).glob(f"*/*/{staged.MARKER_FILE}"):
        record = json.loads(marker.read_text())
        seconds[record["stage"]] = seconds.get(record["stage"], 0.0) + record["seconds"]
    return seconds


def c4_command(variant: str, paths: list, output: str, *extra) -> list:
    return [sys.executable, "-m", "pipelines.c4", "--variant", variant,
            "--input", *map(str, paths), "--output", output, *list_args(variant), *extra]


def memory(counts: list, variants: list, folder: pathlib.Path) -> None:
    paths = synthetic_wet.make_files(folder, max(counts), synthetic_wet.SyntheticConfig())
    print(f"{'variant':<14}{'files':>6}{'buckets':>8}{'pages':>11}{'CPU s':>8}{'wall s':>8}"
          f"{'largest MB':>11}{'tree MB':>9}  stage CPU / read")
    for variant in variants:
        for files in counts:
            with tempfile.TemporaryDirectory() as output:
                run = run_sampled(c4_command(variant, paths[:files], output, "--staged",
                                             "--workers", "1"))
                stats = json.loads((pathlib.Path(output) / "stats.json").read_text())["stages"]
                seconds = stage_seconds(pathlib.Path(output))
                config = json.loads((pathlib.Path(output) / executors.PARTS_FOLDER /
                                     executors.PARTS_CONFIG_FILE).read_text())
            shares = ", ".join(f"{stage} {value / seconds['read']:.2f}"
                               for stage, value in seconds.items())
            print(f"{variant:<14}{files:>6}{config['staged']['url_buckets']:>8}"
                  f"{stats['read']['pages.passed']:>11,}{run['cpu']:>8.0f}{run['wall']:>8.0f}"
                  f"{run['largest'] / 1e6:>11,.0f}{run['tree'] / 1e6:>9,.0f}  {shares}",
                  flush=True)


def workers(files: int, one_job: bool, folder: pathlib.Path) -> None:
    paths = synthetic_wet.make_files(folder, files, synthetic_wet.SyntheticConfig())
    runs = {"staged, --workers 1": ["--staged", "--workers", "1"],
            "staged, --workers 2": ["--staged", "--workers", "2"]}
    if one_job:
        runs["one job (in_memory)"] = ["--direct_running_mode=in_memory",
                                       "--direct_num_workers=1"]
    results = {}
    input_bytes = sum(path.stat().st_size for path in paths)
    for name, extra in runs.items():
        with tempfile.TemporaryDirectory() as output:
            results[name] = run_sampled(c4_command("en", paths, output, *extra))
            output = pathlib.Path(output)
            results[name]["pages"] = json.loads(
                (output / "stats.json").read_text())["stages"]["read"]["pages.passed"]
            kept = sum(path.stat().st_size for path in (output / executors.PARTS_FOLDER).rglob("*")
                       if path.is_file()) if (output / executors.PARTS_FOLDER).exists() else 0
            seconds = stage_seconds(output) if kept else {}
        if seconds:
            print(f"{name}: stage CPU / read: " + ", ".join(
                f"{stage} {value / seconds['read']:.2f}" for stage, value in seconds.items()))
        run = results[name]
        print(f"{name:<22} {files} files: wall {run['wall']:,.0f} s, CPU {run['cpu']:,.0f} s, "
              f"{run['pages'] / run['cpu']:,.0f} pages per CPU-second, largest process "
              f"{run['largest'] / 1e6:,.0f} MB, tree {run['tree'] / 1e6:,.0f} MB, files kept "
              f"{kept / input_bytes:.2f} x the gzipped input", flush=True)
    one, two = results["staged, --workers 1"], results["staged, --workers 2"]
    print(f"--workers 2 over --workers 1, wall: {two['wall'] / one['wall']:.2f}")
    if one_job:
        base = results["one job (in_memory)"]
        print(f"CPU per page, staged (1 worker) over one job: {one['cpu'] / base['cpu']:.2f}")


KILL_POINTS = [("read", 1), ("url", 2), ("spans", 1), ("finish", 3), ("partition", 1),
               ("write", 1)]
KILL_RUNS = [("en", None), ("realnewslike", None), ("webtextlike", "released"),
             ("multilingual", None), ("en", "released")]
KILL_OPTIONS = ["--workers", "1", "--buckets", "4"]


def markers_by_stage(output: pathlib.Path) -> dict:
    return {stage: len(list((output / executors.PARTS_FOLDER / stage).glob(
        f"*/{staged.MARKER_FILE}"))) for stage in layout.STAGE_NAMES}


def kills() -> None:
    print(f"{'variant':<14}{'rules':<10}{'kill after':<14}{'killed in':<11}{'done':>6}"
          f"{'reused':>8}  same bytes")
    points, failures = 0, 0
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        for variant, rules in KILL_RUNS:
            args = variant_args(SHARED, variant, rules)
            whole = scratch / "whole"
            subprocess.run([sys.executable, "-m", "pipelines.c4", *args, "--output", str(whole)],
                           cwd=REPO_ROOT, check=True, capture_output=True)
            expected = file_digests(whole)
            for stage, count in KILL_POINTS:
                output = scratch / f"{variant}-{rules}-{stage}"
                command = [sys.executable, "-m", "pipelines.c4", *args, "--output", str(output),
                           "--staged", *KILL_OPTIONS]
                if not killing.run_killed(command, REPO_ROOT, lambda: markers_by_stage(
                        output)[stage] >= count):
                    print(f"{variant:<14}{rules or 'default':<10}{stage} {count}: ended first")
                    continue
                done = markers_by_stage(output)
                killed_in = json.loads((output / executors.PARTS_FOLDER /
                                        executors.PROGRESS_FILE).read_text())["stage"]
                subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True)
                resumed = json.loads((output / executors.PARTS_FOLDER /
                                      executors.PROGRESS_FILE).read_text())["stages"]
                reused = sum((counts or {}).get("reused", 0) for counts in resumed.values())
                same = file_digests(output) == expected
                points += 1
                failures += not same or reused != sum(done.values())
                print(f"{variant:<14}{rules or 'default':<10}{f'{stage} {count}':<14}"
                      f"{killed_in:<11}{sum(done.values()):>6}{reused:>8}  {same}", flush=True)
                shutil.rmtree(output)
            shutil.rmtree(whole)
    print(f"{points} kills; {failures} with a task redone or other bytes")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory", type=int, nargs="+", metavar="FILES")
    parser.add_argument("--variants", nargs="+", default=["en", "multilingual"])
    parser.add_argument("--workers", type=int, metavar="FILES")
    parser.add_argument("--one_job", action="store_true")
    parser.add_argument("--kills", action="store_true")
    parser.add_argument("--synthetic_dir", type=pathlib.Path,
                        default=synthetic_wet.DEFAULT_FOLDER)
    args = parser.parse_args()
    if args.memory:
        memory(args.memory, args.variants, args.synthetic_dir)
    if args.workers:
        workers(args.workers, args.one_job, args.synthetic_dir)
    if args.kills or not (args.memory or args.workers):
        kills()


if __name__ == "__main__":
    main()
