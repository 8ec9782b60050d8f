"""CPU time of writing a run's shards as Parquet (`--format parquet`) against gzipped JSON lines.

    python bench/bench_formats.py [--repeats 5] [--variant en]

One run of the variant on the shared WET samples gives the pages (its JSON-lines shards, read
back as the writer's sort entries); then each round writes every shard in each format, in
memory, alternating which goes first, on one thread (pyarrow's pools set to one), and counts
the process's CPU time. It prints the median per format, the ratio of the medians and the
round-by-round ratios, and the bytes each format writes. Only the write differs between the
formats: the rest of a run is the same work.
"""
import argparse
import contextlib
import gzip
import io
import json
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402

from pipelines import c4  # noqa: E402
from pipelines.writers import output  # noqa: E402

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def run_args(variant: str, folder: str) -> list:
    wet = sorted(str(path) for path in (SHARED / "wet").glob("*/*"))
    lists = (["--badwords_dir", str(SHARED / "badwords")] if variant == "multilingual"
             else ["--badwords", str(SHARED / "badwords" / "en")])
    return ["--variant", variant, "--input", *wet, *lists, "--output", folder]


def shard_entries(folder: pathlib.Path) -> list:
    """Each JSON-lines shard's sort entries, its lines in order (the URL stands in for the
    normalized URL: the order is already the shard's, and the write does not depend on it)."""
    shards = []
    for path in sorted(folder.rglob(output.shard_glob("*"))):
        lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
        records = [json.loads(line) for line in lines]
        shards.append([(record["url"], record["url"], record["timestamp"], line)
                       for record, line in zip(records, lines)])
    return shards


def write_all(shards: list, shard_format: str) -> tuple:
    """(CPU seconds, bytes written) of writing every shard in `shard_format`."""
    written = 0
    started = time.process_time()
    for entries in shards:
        sink = io.BytesIO()
        output.write_entries(entries, sink, shard_format=shard_format)
        written += sink.tell()
    return time.process_time() - started, written


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variant", default="en", choices=["en", "multilingual"])
    args = parser.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    with tempfile.TemporaryDirectory() as folder:
        with contextlib.redirect_stdout(io.StringIO()):  # The run's report: not the figure.
            c4.main(run_args(args.variant, folder))
        shards = shard_entries(pathlib.Path(folder))
    pages = sum(map(len, shards))
    text_mb = sum(len(entry[3]) for entries in shards for entry in entries) / 1e6
    formats = (output.JSONL, output.PARQUET)
    seconds = {shard_format: [] for shard_format in formats}
    sizes = {}
    for round_index in range(args.repeats):
        for shard_format in formats if round_index % 2 == 0 else reversed(formats):
            cpu, sizes[shard_format] = write_all(shards, shard_format)
            seconds[shard_format].append(cpu)
    print(f"{args.variant}: {len(shards)} shards, {pages:,} pages, {text_mb:.1f} MB of JSON "
          f"lines; {args.repeats} interleaved rounds, one thread")
    for shard_format in formats:
        median = statistics.median(seconds[shard_format])
        print(f"  {shard_format:<8} {median * 1000:8.1f} ms CPU (median), "
              f"{median * 1e6 / pages:6.1f} us a page, {sizes[shard_format] / 1e6:6.2f} MB "
              "written")
    ratios = [parquet / jsonl for jsonl, parquet in zip(seconds[output.JSONL],
                                                        seconds[output.PARQUET])]
    ratio = statistics.median(seconds[output.PARQUET]) / statistics.median(seconds[output.JSONL])
    print(f"parquet / jsonl CPU: {ratio:.2f}x (round by round: "
          f"{', '.join(f'{each:.2f}' for each in ratios)})")


if __name__ == "__main__":
    main()
