"""How much of each downstream task a corpus contains: Dodge et al. (2021)'s contamination study
(exact normalised match) and GPT-3's 13-gram overlap, over a C4 pipeline output folder.

    python -m model.tasks.contamination OUT [--tasks ../shared/data/tasks] [--task glue_rte ...]
        [--json FILE] [--index FILE]

OUT is a folder `python -m pipelines.c4 ... --output OUT` wrote: its shards, every
`*-of-*.jsonl.gz` at any depth (every split; mC4's language folders), are read once, page by
page ("text"). The tasks' examples are read from their release files under --tasks, one folder
per task as ../shared/data/tasks lays them out (`SOURCES`: the folder, the files, the text
fields), with model/tasks' readers where they exist (glue_*, super_glue_*, squad, cnn_dailymail,
wmt_*: sources.py, the same dicts TFDS gives) and small readers here for the rest (XSum, SNLI,
SciTail, the WMT19 sample). Each field of each example is matched on its own (RTE's premise and
hypothesis are sentence1 and sentence2, as GLUE names them); the methods, the normalisation, the
least lengths (8 words for the exact method, GPT-3's least n-gram) and the measure in characters
of the scripts written without spaces (31 and 50 characters) are text/contamination.py's.

Printed: a table per task and field; written (--json, default OUT/report/contamination.json):

    {"method": {"normalization": ..., "exact": ..., "min_exact_words": 8, "ngram_words": 13,
                "ngram_characters": 50, "min_exact_characters": 31, ..., "sources": [...]},
     "tasks": {TASK: {FIELD: {"examples": n,            # examples with text in this field
                              "in_characters": c,       # of those, in a script without spaces
                              "exact": k,               # of those with 8 words or more
                              "exact_share": k / (n - m1), or null when n == m1,
                              "too_short_for_exact": m1,
                              "ngram13": k2,            # of those with 13 words or more
                              "ngram13_share": k2 / (n - m2), or null when n == m2,
                              "too_short_for_ngrams": m2}}},
     "corpus": {"folder": OUT, "pages": n, "shards": n, "lines_skipped": n,
                "damaged_shards": {SHARD: what happened}},
     "skipped_tasks": {TASK: why}}

A task whose folder or files are missing is left out with a notice (and named under
"skipped_tasks"), unless --task asked for it: then, as for a missing --tasks folder or a task
file that cannot be read, the command stops with an error naming the file. A shard line that is
not JSON with a "text" is skipped and counted; a shard that cannot be read to its end (corrupt
gzip) keeps the pages read before the damage and is named under "damaged_shards", with a
warning, as the pipeline names the input files it could not read. --index FILE writes the index
of the examples read (text/contamination.py's `save`), for a decontamination stage to load.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import gzip
import json
import logging
import pathlib
import sys
import zlib
from typing import Callable, Iterator, Mapping, Optional, Sequence

from model import tasks
from model.tasks import discriminative, sources
from text.contamination import (METHOD, MIN_EXACT_CHARACTERS, MIN_EXACT_WORDS, NGRAM_CHARACTERS,
                                NGRAM_WORDS, ContaminationIndex)

_LOG = logging.getLogger(__name__)
DEFAULT_TASKS = "../shared/data/tasks"
REPORT = pathlib.Path("report") / "contamination.json"
# The corpus's shards: its splits' files, not the exclusions a run may keep beside them
# (`exclusions-*`, `kept-*`: pages the filters dropped are no part of the corpus).
SPLITS = ("train", "validation")
SHARD_PATTERN = "*-of-*.jsonl.gz"
METHOD_SOURCES = (
    "Dodge et al. 2021, Documenting Large Webtext Corpora, Section 4.2: exact matches "
    "normalized for capitalization and punctuation",
    "Brown et al. 2020, Language Models are Few-Shot Learners, Appendix C: 13-gram overlap; "
    "no n-gram under 8 words, for spurious collisions",
    "OpenAI 2023, GPT-4 Technical Report, Appendix C: 50-character substrings of the text "
    "without spaces (here for the scripts written without spaces)")

ExampleStream = Iterator[tuple[str, Mapping]]  # (example id, the example's dict)


class TaskDataError(Exception):
    """A task's release files cannot be found or read."""


@dataclasses.dataclass(frozen=True)
class TaskSource:
    """Where a task's examples lie under --tasks, and which of their fields are text."""
    name: str
    folder: str
    fields: tuple[str, ...]
    examples: Callable[[pathlib.Path], ExampleStream]  # the folder -> (id, example) ...


# --- readers: the examples of a folder, each with an id unique in its task ---------------------

def _identity(example: Mapping, position: int) -> str:
    """An example's own id where its format has one (`idx`, several parts joined by "/"; `id`),
    else its position in the file."""
    idx = example.get("idx", example.get("id"))
    if isinstance(idx, Mapping):
        return "/".join(str(part) for part in idx.values())
    return str(position) if idx is None else str(idx)


def _question_identity(example: Mapping, position: int) -> str:
    """A MultiRC question (its examples are its answer options, which share its text)."""
    return f"{example['idx']['paragraph']}/{example['idx']['question']}"


def per_file(patterns: Sequence[str], read: Callable[[str], Iterator[Mapping]],
             identity: Callable[[Mapping, int], str] = _identity) -> Callable[[pathlib.Path], ExampleStream]:
    """The examples of every file matching one of `patterns` under the folder (at any depth,
    in sorted order), each id prefixed with the file's path in the folder."""
    def examples(folder: pathlib.Path) -> ExampleStream:
        paths = sorted({path for pattern in patterns for path in folder.glob(pattern) if path.is_file()})
        if not paths:
            raise FileNotFoundError(f"no {' or '.join(patterns)} under {folder}")
        for path in paths:
            name = path.relative_to(folder).as_posix()
            for position, example in enumerate(_reading(path, functools.partial(read, str(path)))):
                yield f"{name}:{identity(example, position)}", example
    return examples


def parallel_text(source: str, target: str, source_suffix: str, target_suffix: str,
                  ) -> Callable[[pathlib.Path], ExampleStream]:
    """WMT's line-aligned files, NAME.<source_suffix> beside NAME.<target_suffix>, read as
    sources.parallel_reader reads them."""
    read_pair = sources.parallel_reader(source, target)

    def examples(folder: pathlib.Path) -> ExampleStream:
        pairs = [(path, path.with_suffix(f".{target_suffix}"))
                 for path in sorted(folder.rglob(f"*.{source_suffix}"))]
        pairs = [(source_path, target_path) for source_path, target_path in pairs if target_path.is_file()]
        if not pairs:
            raise FileNotFoundError(f"no *.{source_suffix} with its *.{target_suffix} under {folder}")
        for source_path, target_path in pairs:
            name = source_path.relative_to(folder).with_suffix("").as_posix()
            read = functools.partial(read_pair, str(source_path), str(target_path))
            for position, example in enumerate(_reading(source_path, read)):
                yield f"{name}:{position}", example
    return examples


def stories(folder: pathlib.Path) -> ExampleStream:
    """CNN/Daily Mail's .story files, in every `*_stories` folder under the task's folder."""
    found = sorted(path for path in folder.rglob("*_stories") if path.is_dir())
    if not found:
        raise FileNotFoundError(f"no *_stories folder under {folder}")
    for stories_dir in found:
        name = stories_dir.relative_to(folder).as_posix()
        for example in _reading(stories_dir, functools.partial(sources.read_stories, str(stories_dir))):
            yield f"{name}:{example['id']}", example


def every_format(*streams: Callable[[pathlib.Path], ExampleStream]) -> Callable[[pathlib.Path], ExampleStream]:
    """The examples of each of `streams` that finds files in the folder (a task whose samples
    come in two formats); a FileNotFoundError only when none does."""
    def examples(folder: pathlib.Path) -> ExampleStream:
        missing = []
        for stream in streams:
            try:
                found = list(stream(folder))
            except FileNotFoundError as error:
                missing.append(str(error))
                continue
            yield from found
        if len(missing) == len(streams):
            raise FileNotFoundError("; ".join(missing))
    return examples


def _reading(path: pathlib.Path, read: Callable[[], Iterator[Mapping]]) -> Iterator[Mapping]:
    """`read()`'s examples of the file at `path`; any failure to parse it made a TaskDataError
    naming the file."""
    try:
        yield from read()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, csv.Error) as error:
        raise TaskDataError(f"cannot read {path}: {type(error).__name__}: {error}") from None


def read_json_lines(path: str) -> Iterator[dict]:
    """One JSON object per non-empty line (XSum's sample, SNLI's .jsonl)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_tsv(path: str, columns: Optional[Sequence[str]] = None) -> Iterator[dict]:
    """Rows of a tab-separated file without quoting, by its header, or by `columns` for a file
    without one (SciTail)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = list(columns) if columns else next(rows)
        for row in rows:
            yield dict(zip(header, row))


def read_fsmt_sample(path: str, source: str, target: str) -> Iterator[dict]:
    """The pairs of one direction of transformers' fsmt_val_data.json ({"en-de": {"src": [...],
    "tgt": [...]}, ...})."""
    with open(path, encoding="utf-8") as f:
        direction = json.load(f)[f"{source}-{target}"]
    for source_text, target_text in zip(direction["src"], direction["tgt"], strict=True):
        yield {source: source_text, target: target_text}


def _registry_reader(task: str) -> Callable[[str], Iterator[Mapping]]:
    """The local reader of a registered task (model/tasks/sources.py), for one file."""
    return tasks.get(task).local_format.read


def _glue(name: str, fields: tuple[str, ...], reader_of: str = "") -> TaskSource:
    return TaskSource(f"glue_{name}", f"glue_{name}", fields,
                      per_file(("**/*.tsv",), _registry_reader(reader_of or f"glue_{name}")))


def _super_glue(name: str, fields: tuple[str, ...], read=None, identity=_identity) -> TaskSource:
    return TaskSource(f"super_glue_{name}", f"superglue_{name}", fields,
                      per_file(("**/*.jsonl", "**/*.json"), read or _registry_reader(f"super_glue_{name}"),
                               identity))


def _squad_format(name: str, folder: str) -> TaskSource:
    return TaskSource(name, folder, ("context", "question"),
                      per_file(("**/*.json",), sources.read_squad_json))


_SENTENCE_PAIR = ("sentence1", "sentence2")
_PREMISE_HYPOTHESIS = ("premise", "hypothesis")

SOURCES: tuple[TaskSource, ...] = (
    _glue("cola", ("sentence",)),
    _glue("sst2", ("sentence",)),
    _glue("mrpc", _SENTENCE_PAIR),
    _glue("stsb", _SENTENCE_PAIR),
    _glue("qqp", ("question1", "question2")),
    _glue("mnli", _PREMISE_HYPOTHESIS),
    _glue("qnli", ("question", "sentence")),
    _glue("rte", _SENTENCE_PAIR),
    _glue("wnli", _SENTENCE_PAIR),
    _glue("ax", _SENTENCE_PAIR, reader_of="glue_rte"),  # RTE's columns, no label
    _super_glue("boolq", ("question", "passage")),
    _super_glue("cb", _PREMISE_HYPOTHESIS),
    _super_glue("copa", ("premise", "choice1", "choice2")),
    _super_glue("multirc", ("paragraph", "question"), identity=_question_identity),
    _super_glue("record", ("passage", "query")),
    _super_glue("rte", _PREMISE_HYPOTHESIS),
    _super_glue("wic", _SENTENCE_PAIR),
    _super_glue("wsc", ("text",)),
    _super_glue("axb", _SENTENCE_PAIR, read=functools.partial(
        sources.read_superglue_jsonl, features=_SENTENCE_PAIR, label_names=("entailment", "not_entailment"))),
    _super_glue("axg", _PREMISE_HYPOTHESIS, read=functools.partial(
        sources.read_superglue_jsonl, features=_PREMISE_HYPOTHESIS, label_names=("entailment", "not_entailment"))),
    _squad_format("squad", "squad"),
    TaskSource("cnn_dailymail", "cnn_dailymail", ("article", "highlights"), stories),
    TaskSource("xsum", "xsum", ("document", "summary"), per_file(("**/*.json",), read_json_lines)),
    TaskSource("wmt_en_de", "wmt_en_de", ("en", "de"), every_format(
        parallel_text("en", "de", "eng", "deu"),
        per_file(("**/fsmt_val_data.json",), functools.partial(read_fsmt_sample, source="en", target="de")))),
    TaskSource("wmt_en_fr", "wmt_en_fr", ("en", "fr"), parallel_text("en", "fr", "eng", "fra")),
    TaskSource("wmt_en_ro", "wmt_en_ro", ("en", "ro"),
               per_file(("**/*.json",), sources.parallel_reader("en", "ro"))),
    TaskSource("snli", "snli", _SENTENCE_PAIR, every_format(per_file(("**/*.txt",), read_tsv),
                                                            per_file(("**/*.jsonl",), read_json_lines))),
    TaskSource("scitail", "scitail", _PREMISE_HYPOTHESIS, per_file(("**/*.tsv",), functools.partial(
        read_tsv, columns=("premise", "hypothesis", "label")))),
    TaskSource("race", "race", ("article", "question"), per_file(("**/*.txt",), discriminative.read_race)),
    TaskSource("story_cloze", "story_cloze", ("story",),
               per_file(("**/*.csv",), discriminative.read_story_cloze)),
    _squad_format("xquad", "xquad"),
    _squad_format("mlqa", "mlqa"),
)
_BY_NAME = {source.name: source for source in SOURCES}


def source_of(name: str) -> TaskSource:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TaskDataError(f"no task {name!r} for the contamination study; tasks: "
                            f"{', '.join(_BY_NAME)}") from None


def task_examples(task_dir: str, wanted: Sequence[TaskSource], required: bool) -> tuple[list, dict]:
    """(task, field, example id, text) of every text field of the wanted tasks' examples, and
    {task: why it was left out}. A task whose folder or files are missing is left out with a
    warning, or, when `required`, is a TaskDataError; a file that cannot be read always is."""
    root = pathlib.Path(task_dir)
    if not root.is_dir():
        raise TaskDataError(f"no tasks folder {root} (--tasks: a folder with one folder per task, "
                            f"as {DEFAULT_TASKS})")
    rows, skipped = [], {}
    for source in wanted:
        folder = root / source.folder
        try:
            if not folder.is_dir():
                raise FileNotFoundError(f"no folder {folder}")
            examples = list(source.examples(folder))
        except FileNotFoundError as error:
            if required:
                raise TaskDataError(f"{source.name}: {error}") from None
            _LOG.warning("leaving out %s: %s", source.name, error)
            skipped[source.name] = str(error)
            continue
        for example_id, example in examples:
            rows.extend((source.name, field, example_id, example[field])
                        for field in source.fields if isinstance(example.get(field), str))
    return rows, skipped


# --- the corpus --------------------------------------------------------------------------------

@dataclasses.dataclass
class CorpusScan:
    """What the pass over the corpus found: the examples' positions in the index, per method."""
    pages: int = 0
    shards: int = 0
    lines_skipped: int = 0
    damaged_shards: dict = dataclasses.field(default_factory=dict)
    exact: set = dataclasses.field(default_factory=set)
    ngram13: set = dataclasses.field(default_factory=set)


def shards(folder: str) -> list[pathlib.Path]:
    """Every shard of a pipeline output folder, at any depth (splits, language folders)."""
    root = pathlib.Path(folder)
    if not root.is_dir():
        raise TaskDataError(f"no corpus folder {root} (the --output folder of python -m pipelines.c4)")
    found = sorted(path for path in root.rglob(SHARD_PATTERN)
                   if path.name.startswith(tuple(f"{split}-" for split in SPLITS)))
    if not found:
        raise TaskDataError(f"no shards ({SHARD_PATTERN}) under {root}")
    return found


def page_texts(path: pathlib.Path, scan: CorpusScan) -> Iterator[str]:
    """The "text" of each line of a shard; a line that is not a JSON object with a text is
    counted in `scan.lines_skipped`, and damage that stops the reading is recorded."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line)["text"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    text = None
                if not isinstance(text, str):
                    if not scan.lines_skipped:
                        _LOG.warning("%s:%d: not a JSON object with a \"text\": skipped (and counted)",
                                     path, number)
                    scan.lines_skipped += 1
                    continue
                yield text
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        _LOG.warning("shard %s is damaged, the pages before the damage are counted: %s", path, error)
        scan.damaged_shards[str(path)] = f"{type(error).__name__}: {error}"


def scan_corpus(paths: Sequence[pathlib.Path], index: ContaminationIndex) -> CorpusScan:
    """One pass over the shards (`shards(folder)`): the examples each page contains, by both
    methods."""
    scan = CorpusScan()
    for path in paths:
        scan.shards += 1
        for text in page_texts(path, scan):
            scan.pages += 1
            exact, ngram = index.positions(text)
            scan.exact |= exact
            scan.ngram13 |= ngram
    return scan


# --- the report --------------------------------------------------------------------------------

def _share(count: int, total: int) -> Optional[float]:
    return count / total if total else None


def task_report(index: ContaminationIndex, scan: CorpusScan) -> dict:
    """{task: {field: counts and shares}}, tasks and fields in the index's order. A method's
    share is of the examples long enough for it: one example counts once, however many pages
    hold it."""
    counts: dict = {}
    for position, key in enumerate(index.keys):
        field = counts.setdefault(key.task, {}).setdefault(key.field, dict.fromkeys(
            ("examples", "in_characters", "exact", "too_short_for_exact", "ngram13",
             "too_short_for_ngrams"), 0))
        field["examples"] += 1
        field["in_characters"] += index.in_characters[position]
        field["exact"] += position in scan.exact
        field["too_short_for_exact"] += index.too_short["exact"][position]
        field["ngram13"] += position in scan.ngram13
        field["too_short_for_ngrams"] += index.too_short["ngram13"][position]
    return {task: {name: _with_shares(field) for name, field in fields.items()}
            for task, fields in counts.items()}


def _with_shares(field: dict) -> dict:
    """A field's counts, each method's share after its count (of the examples it measures)."""
    return {"examples": field["examples"], "in_characters": field["in_characters"],
            "exact": field["exact"],
            "exact_share": _share(field["exact"], field["examples"] - field["too_short_for_exact"]),
            "too_short_for_exact": field["too_short_for_exact"],
            "ngram13": field["ngram13"],
            "ngram13_share": _share(field["ngram13"],
                                    field["examples"] - field["too_short_for_ngrams"]),
            "too_short_for_ngrams": field["too_short_for_ngrams"]}


def report(index: ContaminationIndex, scan: CorpusScan, folder: str, skipped: Mapping) -> dict:
    return {"method": {**METHOD, "sources": list(METHOD_SOURCES)},
            "tasks": task_report(index, scan),
            "corpus": {"folder": folder, "pages": scan.pages, "shards": scan.shards,
                       "lines_skipped": scan.lines_skipped, "damaged_shards": scan.damaged_shards},
            "skipped_tasks": dict(skipped)}


def _percent(share: Optional[float]) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def table(result: Mapping) -> list[str]:
    """The report as a readable table, one line per task and field."""
    lines = [f"{'task':<20} {'field':<12} {'examples':>8} {'exact':>7} {'share':>7} "
             f"{f'<{MIN_EXACT_WORDS} words':>8} {'13-gram':>7} {'share':>7} "
             f"{f'<{NGRAM_WORDS} words':>9}",
             f"(a share is of the examples long enough for its method; in scripts without "
             f"spaces, {MIN_EXACT_CHARACTERS} and {NGRAM_CHARACTERS} characters stand for "
             f"{MIN_EXACT_WORDS} and {NGRAM_WORDS} words)"]
    for task, fields in result["tasks"].items():
        for name, row in fields.items():
            lines.append(f"{task:<20} {name:<12} {row['examples']:>8} {row['exact']:>7} "
                         f"{_percent(row['exact_share']):>7} {row['too_short_for_exact']:>8} "
                         f"{row['ngram13']:>7} {_percent(row['ngram13_share']):>7} "
                         f"{row['too_short_for_ngrams']:>9}")
    corpus = result["corpus"]
    lines.append(f"corpus: {corpus['pages']:,} pages in {corpus['shards']} shards of {corpus['folder']}"
                 + (f"; {corpus['lines_skipped']} lines skipped" if corpus["lines_skipped"] else "")
                 + (f"; damaged shards: {', '.join(corpus['damaged_shards'])}" if corpus["damaged_shards"] else ""))
    if result["skipped_tasks"]:
        lines.append(f"left out (no files): {', '.join(result['skipped_tasks'])}")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m model.tasks.contamination", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", metavar="OUT", nargs="?",
                        help="a C4 pipeline output folder (none: only write --index, the index "
                             "that `python -m pipelines.c4 --decontaminate` reads)")
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="the folder of the tasks' release files")
    parser.add_argument("--task", action="append", default=[],
                        help=f"a task to measure (repeatable; default: all). Tasks: {', '.join(_BY_NAME)}")
    parser.add_argument("--json", help=f"where to write the report (default OUT/{REPORT.as_posix()})")
    parser.add_argument("--index", help="also write the examples' index there (gzipped JSON)")
    args = parser.parse_args(argv)
    if args.corpus is None and not args.index:
        parser.error("give a corpus folder OUT to measure, or --index FILE to write the index")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    json_path = pathlib.Path(args.json) if args.json else pathlib.Path(args.corpus or ".") / REPORT
    try:
        # The corpus before the tasks are read: a wrong folder fails at once.
        corpus = shards(args.corpus) if args.corpus else None
        wanted = [source_of(name) for name in args.task] if args.task else list(SOURCES)
        rows, skipped = task_examples(args.tasks, wanted, required=bool(args.task))
        index = ContaminationIndex.build(rows)
        if args.index:
            _folder_made(args.index)
            index.save(args.index)
            print(f"index of {index.stats.examples:,} examples written to {args.index}")
        if corpus is None:
            return
        result = report(index, scan_corpus(corpus, index), args.corpus, skipped)
        _folder_made(json_path)
        json_path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except TaskDataError as error:
        sys.exit(f"error: {error.args[0]}")
    except OSError as error:
        sys.exit(f"error: cannot write {error.filename}: {error.strerror}")
    print("\n".join(table(result)))
    print(f"report written to {json_path}")


def _folder_made(path) -> None:
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)


if __name__ == "__main__":
    main()
