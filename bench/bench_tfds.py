"""Time and peak memory of a full local `t5_c4/en` TFDS build vs the standalone pipeline.

    python bench/bench_tfds.py [--repeats 3]

Both build `en` from every shared WET sample with the DirectRunner (one process), each run in a
fresh child process so its peak RSS is its own. Validation takes 5% of URLs in both (at the
paper's 0.1% these samples leave validation empty, which TFDS cannot write). Reported: median
wall seconds of the job (imports excluded), median peak RSS, pages kept, bytes written.
"""
import argparse
import json
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = REPO.parent / "shared" / "data"
WET_GLOB = str(SHARED / "wet" / "*" / "*")
BADWORDS = str(SHARED / "badwords" / "en")
VALIDATION_FRACTION = 0.05
MODES = ("standalone", "tfds")


def _bytes_under(directory: pathlib.Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def _run_standalone(output: pathlib.Path) -> int:
    from pipelines import c4
    counters = c4.main(["--variant", "en", "--input", WET_GLOB, "--output", str(output),
                        "--badwords", BADWORDS, "--validation_fraction", str(VALIDATION_FRACTION)])
    return sum(counters["write"].values())


def _run_tfds(output: pathlib.Path) -> int:
    import tensorflow_datasets as tfds
    from apache_beam.options.pipeline_options import PipelineOptions
    import tfds_c4  # noqa: F401  (registers t5_c4)
    builder = tfds.builder("t5_c4/en", data_dir=str(output), wet_files=[WET_GLOB],
                           badwords=BADWORDS, validation_fraction=VALIDATION_FRACTION)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        beam_options=PipelineOptions(["--runner=DirectRunner"])))
    return sum(split.num_examples for split in builder.info.splits.values())


def child(mode: str) -> None:
    """One build; prints a JSON line with its figures."""
    run = {"standalone": _run_standalone, "tfds": _run_tfds}[mode]
    with tempfile.TemporaryDirectory() as directory:
        output = pathlib.Path(directory)
        start = time.perf_counter()
        pages = run(output)
        seconds = time.perf_counter() - start
        written = _bytes_under(output)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB.
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "pages": pages, "bytes": written}))


def measure(mode: str) -> dict:
    finished = subprocess.run([sys.executable, __file__, "--child", mode], cwd=REPO,
                              capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        sys.exit(f"{mode} run failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    print(f"en from {WET_GLOB}, DirectRunner, one process, median of {args.repeats} runs\n")
    print(f"{'build':<12}{'job s':>8}{'peak RSS MB':>14}{'pages':>8}{'bytes written':>15}")
    for mode in MODES:
        runs = [measure(mode) for _ in range(args.repeats)]
        print(f"{mode:<12}{statistics.median(r['seconds'] for r in runs):>8.1f}"
              f"{statistics.median(r['peak_mb'] for r in runs):>14.0f}"
              f"{runs[0]['pages']:>8}{runs[0]['bytes']:>15,}")


if __name__ == "__main__":
    main()
