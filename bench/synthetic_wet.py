"""Full-size synthetic WET files made of the real sample pages' lines.

    .venv/bin/python bench/synthetic_wet.py [--files 1] [--pages 40000] [--folder DIR]

A Common Crawl WET file holds about 40,000 pages (2.5 billion pages in 56,000 files). The shared
samples hold about 1,300 real pages; a synthetic file draws pages from them at random and keeps
each drawn page's shape (its lines, their order and lengths, its language, its bad words):
- a line seen on more than one sample page (navigation, footers, notices: the boilerplate that
  dedup removes) is kept as it is, so boilerplate recurs at the sample's rate per page;
- any other line keeps its first and last word and has the words between shuffled, so the
  sentences are new (a real file does not repeat its pages' prose) but the words, the line's
  length and its end punctuation are real;
- every page gets a URL of its own (the sample page's, plus a path segment), as pages of one
  WET file have.
Records are written as Common Crawl writes them: one gzip member per WARC record (warcio).
"""
import argparse
import collections
import dataclasses
import glob
import io
import pathlib
import random
import sys
import tempfile
from typing import Iterator, Sequence

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from warcio.warcwriter import WARCWriter  # noqa: E402

from pipelines.page import Page  # noqa: E402
from pipelines.readers import wet  # noqa: E402
from pipelines.readers.files import open_raw  # noqa: E402

SAMPLES = str(REPO_ROOT.parent / "shared" / "data" / "wet" / "*" / "*")
PAGES_PER_WET_FILE = 40_000
DEFAULT_FOLDER = pathlib.Path(tempfile.gettempdir()) / "c4-synthetic-wet"
_MAX_RECORD_BYTES = 10**7


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    pages: int = PAGES_PER_WET_FILE
    seed: int = 0


def sample_pages(pattern: str = SAMPLES) -> list[Page]:
    return [item for path in sorted(glob.glob(pattern))
            for item in wet.read_wet(lambda path=path: open_raw(path), _MAX_RECORD_BYTES)
            if isinstance(item, Page)]


def shared_lines(pages: Sequence[Page]) -> set[str]:
    """Lines on more than one page: the samples' boilerplate."""
    pages_of = collections.Counter(line for page in pages for line in set(page.text.split("\n")))
    return {line for line, count in pages_of.items() if count > 1}


def recombined(line: str, rng: random.Random) -> str:
    words = line.split(" ")
    if len(words) < 4:
        return line
    middle = words[1:-1]
    rng.shuffle(middle)
    return " ".join([words[0], *middle, words[-1]])


def synthetic_pages(pages: Sequence[Page], config: SyntheticConfig) -> Iterator[Page]:
    rng = random.Random(config.seed)
    boilerplate = shared_lines(pages)
    for index in range(config.pages):
        page = rng.choice(pages)
        text = "\n".join(line if line in boilerplate else recombined(line, rng)
                         for line in page.text.split("\n"))
        yield dataclasses.replace(page, url=f"{page.url.rstrip('/')}/synthetic-{index}",
                                  text=text)


def write_wet(path: pathlib.Path, pages: Iterator[Page]) -> int:
    """Writes the pages as a gzipped WET file; returns how many."""
    count = 0
    with open(path, "wb") as sink:
        writer = WARCWriter(sink, gzip=True)
        for page in pages:
            headers = {"WARC-Target-URI": page.url, "WARC-Date": page.timestamp,
                       "Content-Type": "text/plain"}
            record = writer.create_warc_record(
                page.url, "conversion", payload=io.BytesIO(page.text.encode("utf-8")),
                warc_headers_dict=headers)
            writer.write_record(record)
            count += 1
    return count


def make_files(folder: pathlib.Path, files: int, config: SyntheticConfig) -> list[pathlib.Path]:
    """`files` synthetic WET files in folder (seeds config.seed, +1, ...), reusing those made
    before with the same name."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = sample_pages()
    paths = []
    for number in range(files):
        seeded = dataclasses.replace(config, seed=config.seed + number)
        path = folder / f"synthetic-{seeded.pages}-seed{seeded.seed}.warc.wet.gz"
        if not path.exists():
            partial = path.with_suffix(".partial")
            write_wet(partial, synthetic_pages(pages, seeded))
            partial.rename(path)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--pages", type=int, default=PAGES_PER_WET_FILE)
    parser.add_argument("--folder", type=pathlib.Path, default=DEFAULT_FOLDER)
    args = parser.parse_args()
    for path in make_files(args.folder, args.files, SyntheticConfig(pages=args.pages)):
        print(f"{path}: {path.stat().st_size / 1e6:,.1f} MB")


if __name__ == "__main__":
    main()
