"""Where the C4 job's CPU time goes, per stage, on one core (cProfile).

    python bench/profile_pipeline.py [--rules paper|released]

Runs `pipelines.c4.main` (variant en, DirectRunner, one in-memory worker) on the three realistic
WET samples under cProfile and prints each stage's share: the cumulative time of the stage's
own function (its step, or the pure function a Map calls), start-up (imports, graph
construction, the runner's set-up and the language profiles) and the rest, which is Beam's
per-element machinery (coders, shuffles, bundles). The same on a one-record WET file (after a
warm-up run in the process) gives each row's start-up: the difference per page is the row's
marginal cost, what a long run pays. cProfile slows Python-heavy code more than C code, so the
shares are a guide; bench/bench_vs_tfds.py has the unprofiled figures.
"""
import argparse
import contextlib
import cProfile
import glob
import io
import pathlib
import pstats
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data"

# Stage -> (file name ending, function name) of the function whose cumulative time is the
# stage's work; a stage may be spread over several.
STAGES = {
    "read WET": [("pipelines/beam/wet_input.py", "process", "_ReadWetFileFn")],
    "released text": [("pipelines/steps/filter_steps.py", "__call__", "ReleasedText")],
    "URL dedup (choose newest)": [("pipelines/filters/urls.py", "newest_page", None),
                                  ("pipelines/filters/urls.py", "first_seen_newest_page", None)],
    "clean": [("pipelines/steps/filter_steps.py", "__call__", "Clean")],
    "dedup: keys out, resolved per worker": [
        ("pipelines/steps/span_dedup.py", "__call__", "SpanRecords"),
        ("pipelines/steps/span_dedup.py", "_flush", "SpanRecords")],
    "dedup: losers of a bucket": [("pipelines/beam/span_dedup.py", "losers_of_bucket", None)],
    "dedup: cut pages": [("pipelines/steps/span_dedup.py", "__call__", "ApplyRemovals")],
    "language": [("pipelines/steps/filter_steps.py", "__call__", "DetectLanguage"),
                 ("pipelines/steps/filter_steps.py", "setup", "DetectLanguage")],
    "bad words": [("pipelines/steps/filter_steps.py", "__call__", "Badwords")],
    "write shards (lines, gzip)": [("pipelines/writers/output.py", "process", "_BucketFn"),
                                   ("pipelines/writers/output.py", "process", "_WriteShardFn")],
}


def _first_line_of(path: str, name: str, owner: str) -> int:
    """The line of `def name` inside `class owner` (or at module level) in `path`."""
    lines = (REPO / path).read_text().splitlines()
    inside = owner is None
    for number, line in enumerate(lines, start=1):
        if owner and line.startswith("class "):
            inside = line.startswith(f"class {owner}")
        if inside and line.strip().startswith(f"def {name}("):
            return number
    return -1


def profile_run(c4, rules: str, inputs):
    """Profiled seconds per row of the table (STAGES, graph construction, the rest) of one run
    of the job, and the pages it read."""
    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as output, contextlib.redirect_stdout(io.StringIO()):
        profile.enable()
        counters = c4.main(["--variant", "en", "--rules", rules, "--input", *inputs,
                 "--output", output, "--badwords", str(SHARED / "badwords" / "en"),
                 "--direct_running_mode=in_memory", "--direct_num_workers=1"])
        profile.disable()
    stats = pstats.Stats(profile).stats
    total = sum(timing[2] for timing in stats.values())  # Sum of own times: the whole run.
    cumulative = {key: timing[3] for key, timing in stats.items()}
    rows = {}
    for stage, functions in STAGES.items():
        rows[stage] = 0.0
        for suffix, name, owner in functions:
            line = _first_line_of(suffix, name, owner)
            rows[stage] += sum(cum for (path, at, fn), cum in cumulative.items()
                               if path.endswith(suffix) and fn == name and at == line)
    rows["graph construction"] = sum(cum for (path, _, fn), cum in cumulative.items()
                                     if path.endswith("pipelines/c4.py")
                                     and fn == "build_pipeline")
    rows["Beam machinery and the rest"] = total - sum(rows.values())
    return rows, counters["read"]["pages.passed"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", default="paper", choices=("paper", "released"))
    args = parser.parse_args()
    start = time.process_time()
    from pipelines import c4
    imports = time.process_time() - start
    full = sorted(glob.glob(str(SHARED / "wet" / "realistic" / "*.warc.wet.gz")))
    small = [str(SHARED / "wet" / "whirlwind-python" / "whirlwind.warc.wet.gz")]
    profile_run(c4, args.rules, small)  # Warm-up: the first loads of lists and profiles.
    whole, full_pages = profile_run(c4, args.rules, full)
    start_up, small_pages = profile_run(c4, args.rules, small)
    pages = full_pages - small_pages
    total, marginal_total = sum(whole.values()), sum(whole.values()) - sum(start_up.values())
    print(f"en, --rules {args.rules}, 3 realistic WET files, one core, under cProfile: "
          f"{total:.2f} s profiled (imports before it, unprofiled: {imports:.2f} CPU s); "
          f"at the margin (less a one-record run): {marginal_total / pages * 1000:.2f} ms a "
          "page\n")
    print(f"| {'stage':<36} | {'profiled s':>10} | {'share':>6} | {'marginal ms/page':>16} "
          f"| {'marginal share':>14} |")
    print(f"|{'-' * 38}|{'-' * 12}|{'-' * 8}|{'-' * 18}|{'-' * 16}|")
    for stage, seconds in whole.items():
        marginal = seconds - start_up[stage]
        print(f"| {stage:<36} | {seconds:>10.2f} | {seconds / total:>6.0%} "
              f"| {marginal / pages * 1000:>16.3f} | {marginal / marginal_total:>14.0%} |")


if __name__ == "__main__":
    main()
