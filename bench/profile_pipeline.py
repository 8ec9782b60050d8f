"""Where the C4 job's CPU time goes, per stage, on one core (cProfile).

    python bench/profile_pipeline.py [--rules paper|released]

Runs `pipelines.c4.main` (variant en, DirectRunner, one in-memory worker) on the three realistic
WET samples under cProfile and prints each stage's share: the cumulative time of the stage's
own function (its DoFn's process, or the pure function a Map calls), start-up (imports, graph
construction, the runner's set-up and the language profiles) and the rest, which is Beam's
per-element machinery (coders, shuffles, bundles). cProfile slows Python-heavy code more than
C code, so the shares are a guide; bench/bench_vs_tfds.py has the unprofiled figures.
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
    "read WET": [("pipelines/stages.py", "process", "_ReadWetFileFn")],
    "released text": [("pipelines/stages.py", "__call__", "ReleasedText")],
    "URL dedup (choose newest)": [("pipelines/urls.py", "newest_page", None),
                                  ("pipelines/urls.py", "first_seen_newest_page", None)],
    "clean": [("pipelines/stages.py", "__call__", "Clean")],
    "dedup: keys out, resolved per worker": [("pipelines/stages.py", "__call__", "SpanRecords"),
                                              ("pipelines/stages.py", "_flush", "SpanRecords")],
    "dedup: losers of a bucket": [("pipelines/stages.py", "_losers_of_bucket", None)],
    "dedup: cut pages": [("pipelines/stages.py", "__call__", "ApplyRemovals")],
    "language": [("pipelines/stages.py", "__call__", "DetectLanguage"),
                 ("pipelines/stages.py", "setup", "DetectLanguage")],
    "bad words": [("pipelines/stages.py", "__call__", "Badwords")],
    "write shards (lines, gzip)": [("pipelines/output.py", "process", "_BucketFn"),
                                   ("pipelines/output.py", "process", "_WriteShardFn")],
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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", default="paper", choices=("paper", "released"))
    args = parser.parse_args()
    start = time.process_time()
    from pipelines import c4
    imports = time.process_time() - start
    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as output, contextlib.redirect_stdout(io.StringIO()):
        profile.enable()
        c4.main(["--variant", "en", "--rules", args.rules, "--input",
                 *sorted(glob.glob(str(SHARED / "wet" / "realistic" / "*.warc.wet.gz"))),
                 "--output", output, "--badwords", str(SHARED / "badwords" / "en"),
                 "--direct_running_mode=in_memory", "--direct_num_workers=1"])
        profile.disable()
    stats = pstats.Stats(profile).stats
    total = sum(timing[2] for timing in stats.values())  # Sum of own times: the whole run.
    cumulative = {}
    for (path, line, name), timing in stats.items():
        cumulative[(path, line, name)] = timing[3]
    rows = []
    for stage, functions in STAGES.items():
        seconds = 0.0
        for suffix, name, owner in functions:
            line = _first_line_of(suffix, name, owner)
            seconds += sum(cum for (path, at, fn), cum in cumulative.items()
                           if path.endswith(suffix) and fn == name and at == line)
        rows.append((stage, seconds))
    graph = sum(cum for (path, _, fn), cum in cumulative.items()
                if path.endswith("pipelines/c4.py") and fn == "build_pipeline")
    rows.append(("graph construction", graph))
    accounted = sum(seconds for _, seconds in rows)
    rows.append(("Beam machinery and the rest", total - accounted))
    print(f"en, --rules {args.rules}, 3 realistic WET files, one core, under cProfile: "
          f"{total:.2f} s profiled (imports before it, unprofiled: {imports:.2f} CPU s)\n")
    print(f"| {'stage':<30} | {'profiled s':>10} | {'share':>6} |")
    print(f"|{'-' * 32}|{'-' * 12}|{'-' * 8}|")
    for stage, seconds in rows:
        print(f"| {stage:<30} | {seconds:>10.2f} | {seconds / total:>6.0%} |")


if __name__ == "__main__":
    main()
