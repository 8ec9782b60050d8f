"""The contamination check (python -m model.tasks.contamination): its speed and memory with every
shared task at once, and how exactly it finds examples planted at known rates.

    .venv/bin/python bench/bench_contamination.py [--corpus /tmp/contam-out] [--pages 20000]
        [--every 10]

Speed and memory, each corpus in a fresh process (one thread): the index of every shared
task's text fields (python -m model.tasks.contamination's SOURCES over ../shared/data/tasks)
built, in CPU seconds, with its examples and 13-grams and its file's size and loading time; then
one pass over the corpus as the command makes it (gzip, JSON, both methods per page): pages per
CPU second, and the process's RSS after the index and at its peak. The corpora: --corpus, a
pipeline output folder (default the one README's command writes, when it is there), and
`--pages` synthetic pages (bench/synthetic_wet.py's: the real sample pages' lines, prose
shuffled within each line, uncleaned, so longer than C4's pages) written as shards.

Accuracy, on the synthetic pages: for every task and field, every `--every`-th example (in id
order) is planted whole, disguised (ASCII letters upper-cased, commas made semicolons, quotes
around, spaces made line breaks), and of the others every `--every`-th, one later, as a
16-word window of its text when it has 20 words or more (a shared 13-gram, not the whole); one
plant per page, at a random line. Printed per task and field: the planted and found shares by
each method; found but not planted ("extra") are examples the synthetic web text holds (a
one-word WMT segment, "Good.") or whose text is inside a planted one (SQuAD's questions share
their context; RTE's hypotheses lie in their premises).
"""
import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # Before numpy is imported: one thread.

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from model.tasks import contamination as command  # noqa: E402
from text.contamination import NGRAM_WORDS, ContaminationIndex, ExampleKey, normalize  # noqa: E402

TASKS = REPO_ROOT.parent / "shared" / "data" / "tasks"
DEFAULT_CORPUS = pathlib.Path("/tmp/contam-out")
FOLDER = pathlib.Path(tempfile.gettempdir()) / "contamination-bench"


def rss_mib() -> float:
    """The process's resident memory now (Linux /proc)."""
    pages = int(pathlib.Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mib() -> float:
    """The process's peak resident memory (Linux /proc: VmHWM, of this program only; getrusage's
    ru_maxrss would start from the parent's size at the fork)."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def every_task_field() -> list:
    """(task, field, example id, text) of every shared task."""
    return command.task_examples(str(TASKS), command.SOURCES, required=False)[0]


def measure(corpus: str) -> dict:
    """The figures of one corpus, in this (fresh) process."""
    imported = rss_mib()
    start = time.process_time()
    index = ContaminationIndex.build(every_task_field())
    build = time.process_time() - start
    after_index = rss_mib()
    with tempfile.TemporaryDirectory() as scratch:
        saved = pathlib.Path(scratch) / "index.json.gz"
        index.save(str(saved))
        start = time.process_time()
        ContaminationIndex.load(str(saved))
        load = time.process_time() - start
        index_bytes = saved.stat().st_size
    start, wall = time.process_time(), time.perf_counter()
    scan = command.scan_corpus(command.shards(corpus), index)
    return {"examples": index.stats.examples, "ngrams": index.stats.ngrams, "build_s": build,
            "load_s": load, "index_mb": index_bytes / 1e6, "pages": scan.pages,
            "scan_cpu_s": time.process_time() - start, "scan_wall_s": time.perf_counter() - wall,
            "rss_imported_mib": imported, "rss_after_index_mib": after_index, "peak_mib": peak_mib()}


def measured(corpus: pathlib.Path) -> dict:
    output = subprocess.run([sys.executable, __file__, "--measure", str(corpus)], check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])


def write_shards(folder: pathlib.Path, texts: list, shards: int = 8) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(shards):
        with gzip.open(folder / f"train-{number:05d}-of-{shards:05d}.jsonl.gz", "wt", encoding="utf-8") as f:
            for position, text in enumerate(texts[number::shards]):
                f.write(json.dumps({"text": text, "url": f"https://synthetic.example/{number}/{position}",
                                    "timestamp": "2019-04-18T00:00:00Z"}) + "\n")


def disguised(text: str) -> str:
    upper = "".join(character.upper() if character.isascii() else character for character in text)
    return "\u201c" + upper.replace(",", ";").replace(" ", "\n") + "!\u201d"


def window(text: str):
    """16 words from inside a text of 20 normalised words or more, else None."""
    window_text = " ".join(text.split()[2:18])
    if len(normalize(text).split()) < 20 or len(normalize(window_text).split()) < NGRAM_WORDS:
        return None
    return window_text


def plants(rows: list, index: ContaminationIndex, every: int) -> tuple:
    """(texts to plant, positions planted whole, positions planted as a window), from the
    examples' texts as released."""
    raw: dict = {}
    for task, field, example_id, text in rows:
        raw.setdefault(ExampleKey(task, field, example_id), text)
    by_field: dict = {}
    for position, key in enumerate(index.keys):
        by_field.setdefault((key.task, key.field), []).append(position)
    texts, whole, windows = [], set(), set()
    for positions in by_field.values():
        for rank, position in enumerate(sorted(positions, key=lambda p: index.keys[p].example_id)):
            text = raw[index.keys[position]]
            if rank % every == 0:
                texts.append(disguised(text))
                whole.add(position)
            elif rank % every == 1 and window(text):
                texts.append(disguised(window(text)))
                windows.add(position)
    return texts, whole, windows


def planted_corpus(pages: list, planted_texts: list, seed: int = 0) -> list:
    rng = random.Random(seed)
    if len(planted_texts) > len(pages):
        raise SystemExit(f"{len(planted_texts)} plants need as many pages: raise --pages")
    texts = list(pages)
    for number, planted in enumerate(planted_texts):
        lines = texts[number].split("\n")
        lines.insert(rng.randrange(len(lines) + 1), planted)
        texts[number] = "\n".join(lines)
    return texts


def accuracy_table(index: ContaminationIndex, scan, whole: set, windows: set) -> list:
    rows: dict = {}
    for position, key in enumerate(index.keys):
        row = rows.setdefault((key.task, key.field), [0] * 7)
        long_enough = not index.too_short["ngram13"][position]
        planted_whole = position in whole and not index.too_short["exact"][position]
        planted_ngram = position in windows or (position in whole and long_enough)
        row[0] += 1
        row[1] += long_enough
        row[2] += planted_whole
        row[3] += position in scan.exact
        row[4] += planted_ngram
        row[5] += position in scan.ngram13
        row[6] += (position in scan.exact and not planted_whole) + (
            position in scan.ngram13 and not planted_ngram)
    lines = [f"{'task':<20} {'field':<11} {'examples':>8} {'exact planted':>13} {'found':>7} "
             f"{'13-gram planted':>15} {'found':>7} {'extra':>6}"]
    for (task, field), (examples, long, exact, found_exact, ngram, found_ngram, extra) in rows.items():
        ngram_share = f"{100 * ngram / long:.1f}%" if long else "-"
        found_share = f"{100 * found_ngram / long:.1f}%" if long else "-"
        lines.append(f"{task:<20} {field:<11} {examples:>8} {100 * exact / examples:>12.1f}% "
                     f"{100 * found_exact / examples:>6.1f}% {ngram_share:>15} {found_share:>7} {extra:>6}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=pathlib.Path, default=DEFAULT_CORPUS)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return

    # Here, not at the top: the measuring process imports only what the command does (the WET
    # reader brings Beam, a hundred MB of RSS).
    import synthetic_wet  # a script beside this one
    pages = [page.text for page in synthetic_wet.synthetic_pages(
        synthetic_wet.sample_pages(), synthetic_wet.SyntheticConfig(pages=args.pages))]
    rows = every_task_field()
    index = ContaminationIndex.build(rows)
    planted_texts, whole, windows = plants(rows, index, args.every)
    synthetic = FOLDER / f"synthetic-{args.pages}-every{args.every}"
    write_shards(synthetic, planted_corpus(pages, planted_texts))

    corpora = ([args.corpus] if args.corpus.is_dir() else []) + [synthetic]
    if not args.corpus.is_dir():
        print(f"({args.corpus} is not there: make it with the command in model/tasks/README.md)")
    print("## Speed and memory: every shared task at once, one thread, a fresh process per corpus")
    for corpus in corpora:
        figures = measured(corpus)
        print(f"{corpus}: {figures['pages']:,} pages, {figures['pages'] / figures['scan_cpu_s']:,.0f} "
              f"pages per CPU s ({figures['scan_cpu_s']:.2f} CPU s, {figures['scan_wall_s']:.2f} s wall); "
              f"peak RSS {figures['peak_mib']:,.0f} MiB")
    print(f"index: {figures['examples']:,} examples, {figures['ngrams']:,} distinct 13-grams, built in "
          f"{figures['build_s']:.2f} CPU s (reading the tasks' files included); RSS "
          f"{figures['rss_imported_mib']:,.0f} MiB after the imports (model.tasks brings its metrics' "
          f"libraries), {figures['rss_after_index_mib']:,.0f} MiB with the index; file {figures['index_mb']:.1f} MB, loaded in "
          f"{figures['load_s']:.2f} CPU s")

    print(f"\n## Accuracy: planted in {args.pages:,} synthetic pages, every {args.every}th example "
          f"whole, every {args.every}th (one later) of 20 words or more as a 13-gram window")
    scan = command.scan_corpus(command.shards(str(synthetic)), index)
    print("\n".join(accuracy_table(index, scan, whole, windows)))
    # An example too short for a method is left out of it (text/contamination.py).
    whole = {p for p in whole if not index.too_short["exact"][p]}
    exact_recall = len(scan.exact & whole) / len(whole)
    planted_ngrams = windows | {p for p in whole if not index.too_short["ngram13"][p]}
    ngram_recall = len(scan.ngram13 & planted_ngrams) / len(planted_ngrams)
    print(f"planted found: exact {len(scan.exact & whole):,} of {len(whole):,} ({100 * exact_recall:.2f}%), "
          f"13-gram {len(scan.ngram13 & planted_ngrams):,} of {len(planted_ngrams):,} "
          f"({100 * ngram_recall:.2f}%); extra: exact {len(scan.exact - whole):,}, "
          f"13-gram {len(scan.ngram13 - planted_ngrams):,}; windows found exactly "
          f"{len(scan.exact & windows):,} (should be 0 unless another plant holds them)")


if __name__ == "__main__":
    main()
