"""How much of each downstream task a corpus contains: Dodge et al. (2021)'s contamination study
(exact normalised match) and GPT-3's 13-gram overlap, over a C4 pipeline output folder.

    python -m model.tasks.contamination OUT [--tasks ../shared/data/tasks] [--task glue_rte ...]
        [--json FILE] [--index FILE]

OUT is a folder `python -m pipelines.c4 ... --output OUT` wrote: its shards (every split's, and
mC4's language folders'; the run's own, as many as its stats.json lists; gzipped JSON lines or
Parquet, as its run_config.json says: tfds_c4/published.py reads them as the TFDS builder does)
are read once, page by page ("text"). The tasks and their text come from the task registry
(model/tasks): each task declares its release files' folder under --tasks (as
../shared/data/tasks lays them out), their patterns and the fields of its examples that hold
text (`Task.text`), read with the task's own reader (so a SQuAD 2.0 file is never read as
v1.1); the benchmarks that are no task of the registry (XSum, SNLI, SciTail, the diagnostic
sets, RACE, Story Cloze) are declared here the same way (`UNREGISTERED`). Each field of each
example is matched on its own (RTE's premise and hypothesis are sentence1 and sentence2, as
GLUE names them); the methods, the normalisation, the least lengths (8 words for the exact
method, GPT-3's least n-gram) and the measure in characters of the scripts written without
spaces (31 and 50 characters) are text/contamination.py's.

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
file that cannot be read, the command stops with an error naming the file. A shard record
without a "text" is skipped and counted ("lines_skipped"); a shard that cannot be read to its
end (corrupt gzip or Parquet, a line that is not JSON) keeps the pages read before the damage
and is named under "damaged_shards", with a warning, as the pipeline names the input files it
could not read. --index FILE writes the index of the examples read (text/contamination.py's
`save`), for a decontamination stage to load.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import logging
import pathlib
import sys
import zlib
from typing import Callable, Iterator, Mapping, Optional, Sequence

from model import tasks
from model.tasks import discriminative, sources
from model.tasks.base import ReleaseText
from tfds_c4 import published
from text.contamination import (METHOD, MIN_EXACT_CHARACTERS, MIN_EXACT_WORDS, NGRAM_CHARACTERS,
                                NGRAM_WORDS, ContaminationIndex)
from text.report_files import CONTAMINATION_FILE, REPORT_DIR, report_file

_LOG = logging.getLogger(__name__)
DEFAULT_TASKS = "../shared/data/tasks"
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
    """A task the study measures: its name, what of its release files is text (its folder,
    files and text fields) and the reader of one file (or aligned pair) of them."""
    name: str
    text: ReleaseText
    read: Callable[..., Iterator[Mapping]]


# --- readers: the examples of a folder, each with an id unique in its task ---------------------

def _identity(example: Mapping, position: int, parts: Sequence[str] = ()) -> str:
    """An example's own id where its format has one (`idx`, several parts joined by "/", or
    those of `parts` only; `id`), else its position in the file."""
    idx = example.get("idx", example.get("id"))
    if isinstance(idx, Mapping):
        return "/".join(str(idx[part]) for part in parts or idx)
    return str(position) if idx is None else str(idx)


def _groups(folder: pathlib.Path, text: ReleaseText) -> list[tuple[pathlib.Path, ...]]:
    """The task's files in its folder, each with its aligned file beside it where it has one;
    a FileNotFoundError naming the patterns when there are none."""
    found = sorted({path for pattern in text.files for path in folder.glob(pattern)})
    groups = [(path, path.with_suffix(text.aligned)) if text.aligned else (path,) for path in found]
    groups = [group for group in groups if all(path.exists() for path in group)]
    if not groups:
        beside = f" with its *{text.aligned} beside it" if text.aligned else ""
        raise FileNotFoundError(f"no {' or '.join(text.files)}{beside} under {folder}")
    return groups


def examples(source: TaskSource, folder: pathlib.Path) -> ExampleStream:
    """The examples of the task's files in `folder` (at any depth, in sorted order), each id
    prefixed with its file's path in the folder (without the suffix, for an aligned pair)."""
    for group in _groups(folder, source.text):
        name = group[0].relative_to(folder)
        name = (name.with_suffix("") if source.text.aligned else name).as_posix()
        read = functools.partial(source.read, *map(str, group))
        for position, example in enumerate(_reading(group[0], read)):
            yield f"{name}:{_identity(example, position, source.text.identity)}", example


def _reading(path: pathlib.Path, read: Callable[[], Iterator[Mapping]]) -> Iterator[Mapping]:
    """`read()`'s examples of the file at `path`; any failure to parse it made a TaskDataError
    naming the file."""
    try:
        yield from read()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, csv.Error) as error:
        raise TaskDataError(f"cannot read {path}: {type(error).__name__}: {error}") from None


def read_json_lines(path: str) -> Iterator[dict]:
    """One JSON object per non-empty line (XSum's sample)."""
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


_SENTENCE_PAIR = ("sentence1", "sentence2")
_PREMISE_HYPOTHESIS = ("premise", "hypothesis")


def _diagnostic(name: str, fields: tuple[str, ...]) -> TaskSource:
    """SuperGLUE's diagnostic sets (AX-b, AX-g): RTE's form, scored with it, never trained on."""
    text = ReleaseText(f"superglue_{name}", ("**/*.jsonl",), fields)
    return TaskSource(f"super_glue_{name}", text,
                      functools.partial(sources.read_superglue_jsonl, features=fields,
                                        label_names=("entailment", "not_entailment")))


# The benchmarks of the study that are no task of the registry (model/tasks): GLUE's and
# SuperGLUE's diagnostic sets, the datasets GPT-1 and BERT fine-tune on outside it (RACE, Story
# Cloze: model/tasks/discriminative.py), and XSum, SNLI and SciTail, which no model here trains
# on. Every registered task declares its own (Task.text).
UNREGISTERED: tuple[TaskSource, ...] = (
    TaskSource("glue_ax", ReleaseText("glue_ax", ("**/*.tsv",), _SENTENCE_PAIR),
               tasks.get("glue_rte").local_format.read),  # RTE's columns, no label
    _diagnostic("axb", _SENTENCE_PAIR),
    _diagnostic("axg", _PREMISE_HYPOTHESIS),
    TaskSource("xsum", ReleaseText("xsum", ("**/*.json",), ("document", "summary")),
               read_json_lines),
    TaskSource("snli", ReleaseText("snli", ("**/snli_1.0_*.txt",), _SENTENCE_PAIR), read_tsv),
    TaskSource("scitail", ReleaseText("scitail", ("**/*.tsv",), _PREMISE_HYPOTHESIS),
               functools.partial(read_tsv, columns=("premise", "hypothesis", "label"))),
    TaskSource("race", ReleaseText("race", ("**/*.txt",), ("article", "question")),
               discriminative.read_race),
    TaskSource("story_cloze", ReleaseText("story_cloze", ("**/*.csv",), ("story",)),
               discriminative.read_story_cloze),
)


def registered_sources() -> tuple[TaskSource, ...]:
    """The registry's tasks that declare their release text, in its order."""
    return tuple(TaskSource(name, task.text, task.local_format.read)
                 for name in tasks.names() for task in [tasks.get(name)] if task.text)


SOURCES: tuple[TaskSource, ...] = registered_sources() + UNREGISTERED
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
        folder = root / source.text.folder
        try:
            if not folder.is_dir():
                raise FileNotFoundError(f"no folder {folder}")
            found = list(examples(source, folder))
        except FileNotFoundError as error:
            if required:
                raise TaskDataError(f"{source.name}: {error}") from None
            _LOG.warning("leaving out %s: %s", source.name, error)
            skipped[source.name] = str(error)
            continue
        for example_id, example in found:
            rows.extend((source.name, field, example_id, example[field])
                        for field in source.text.fields if isinstance(example.get(field), str))
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


def shards(folder: str) -> list[str]:
    """Every shard of a pipeline output folder (tfds_c4/published.py's `corpus_shards`: its
    splits', at the top and in language folders, JSON lines or Parquet as the run wrote them)."""
    if not pathlib.Path(folder).is_dir():
        raise TaskDataError(f"no corpus folder {folder} (the --output folder of python -m "
                            "pipelines.c4)")
    found = published.corpus_shards(folder)
    if not found:
        raise TaskDataError(f"no shards under {folder} (the train-* and validation-* files of a "
                            "run of python -m pipelines.c4, in it or in its language folders)")
    return found


def page_texts(path: str, scan: CorpusScan) -> Iterator[str]:
    """The "text" of each record of a shard; a record without a text is counted in
    `scan.lines_skipped`, and damage that stops the reading (a line that is not JSON, a
    corrupt gzip or Parquet file) is recorded."""
    try:
        for number, record in enumerate(published.records_of(path), 1):
            text = record.get("text") if isinstance(record, Mapping) else None
            if not isinstance(text, str):
                if not scan.lines_skipped:
                    _LOG.warning("%s: record %d has no \"text\": skipped (and counted)", path,
                                 number)
                scan.lines_skipped += 1
                continue
            yield text
    except (OSError, EOFError, zlib.error, ValueError) as error:
        # ValueError: a line that is not JSON, or pyarrow's ArrowInvalid for a damaged Parquet file.
        _LOG.warning("shard %s is damaged, the pages before the damage are counted: %s", path, error)
        scan.damaged_shards[str(path)] = f"{type(error).__name__}: {error}"


def scan_corpus(paths: Sequence[str], index: ContaminationIndex) -> CorpusScan:
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
    parser.add_argument("--json", help="where to write the report (default "
                                       f"OUT/{REPORT_DIR}/{CONTAMINATION_FILE})")
    parser.add_argument("--index", help="also write the examples' index there (gzipped JSON)")
    args = parser.parse_args(argv)
    if args.corpus is None and not args.index:
        parser.error("give a corpus folder OUT to measure, or --index FILE to write the index")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    json_path = pathlib.Path(args.json or report_file(args.corpus or ".", CONTAMINATION_FILE))
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
