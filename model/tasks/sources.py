"""Where examples come from: TFDS, or the original release files read into the same dicts as TFDS.

Every local reader yields exactly what the task's TFDS builder yields (field names, label ids,
`idx`), so preprocessing never knows where an example came from. The readers follow the TFDS
builders' parsing; tests compare them with those builders on real sample files.
"""
from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import pathlib
from typing import Any, Callable, Dict, Iterator, Mapping, Sequence, Tuple


@dataclasses.dataclass(frozen=True)
class TfdsSplit:
    """One split of a TFDS dataset, e.g. TfdsSplit("glue/mnli", "validation_matched")."""
    dataset: str
    split: str

    def __str__(self) -> str:
        return f"{self.dataset}:{self.split}"


TaskFiles = Dict[Tuple[str, str], Tuple[str, ...]]


def parse_task_files(specs: Sequence[str]) -> TaskFiles:
    """The command line's `--task_files TASK:SPLIT=PATH[,PATH...]` -> {(task, split): paths}.
    Only the format is checked here; each caller knows which task names it reads."""
    files: TaskFiles = {}
    for spec in specs:
        key, equals, paths = spec.partition("=")
        name, colon, split = key.partition(":")
        if not (equals and colon and name and split and paths):
            raise ValueError(f"--task_files {spec!r}: expected TASK:SPLIT=PATH[,PATH...]")
        files[(name, split)] = tuple(paths.split(","))
    return files


def find_release_file(task_dir: str, folder: str, name: str) -> str:
    """The one file under `task_dir`/`folder`, at any depth, whose path ends with `name` (a
    path inside a release, e.g. `XNLI-1.0/xnli.dev.tsv`): an unpacked archive or a sample may
    add a level. None found, or several, is an error naming what was looked for."""
    root = pathlib.Path(task_dir) / folder
    wanted = pathlib.PurePosixPath(name)
    found = sorted(path for path in root.rglob(wanted.name)
                   if path.is_file() and path.as_posix().endswith("/" + name))
    if not found:
        raise FileNotFoundError(f"no {name} under {root} (--task_dir {task_dir}: each task's "
                                f"release files lie in its folder, here {folder}/)")
    if len(found) > 1:
        raise ValueError(f"{len(found)} files {name} under {root}: {', '.join(map(str, found))}; "
                         "keep one, or name it with --task_files")
    return str(found[0])


def _python(value: Any) -> Any:
    """A TFDS numpy example as plain Python: str for bytes, lists for arrays, numbers as numbers."""
    import numpy as np
    if isinstance(value, Mapping):
        return {key: _python(item) for key, item in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return [_python(item) for item in value.tolist()] if value.ndim else _python(value.item())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_python(item) for item in value]
    return value


def tfds_version(split: TfdsSplit, data_dir: str | None = None) -> str:
    """`dataset:version` of the TFDS dataset that `tfds_examples` reads (the builder's version)."""
    import tensorflow_datasets as tfds
    return f"{split.dataset}:{tfds.builder(split.dataset, data_dir=data_dir).version}"


def tfds_examples(split: TfdsSplit, data_dir: str | None = None) -> Iterator[dict]:
    """The examples of a prepared TFDS split as plain dicts, in the dataset's order."""
    import tensorflow_datasets as tfds
    dataset = tfds.load(split.dataset, split=split.split, data_dir=data_dir, shuffle_files=False)
    for example in tfds.as_numpy(dataset):
        yield _python(example)


# --- GLUE: tab-separated files, one header line (CoLA's train and dev files have none) ----------

def read_glue_tsv(path: str, *, text_columns: Mapping[str, str], label_column: str,
                  label_names: Sequence[str] | None, headerless_columns: Mapping[str, int] | None = None,
                  ) -> Iterator[dict]:
    """Rows of a GLUE TSV as glue/<config> gives them: the text features, `label` (class id, the
    float score for STS-B, -1 for unlabelled test files) and `idx` (the row number).

    headerless_columns: feature -> column index for files without a header (CoLA train/dev); used
    when the first row is not a header naming the text columns.
    """
    import numpy as np
    # utf-8-sig: MRPC's files start with a byte-order mark that would otherwise stick to "Quality".
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header = rows[0] if rows else []
    if set(text_columns.values()) <= set(header):
        records = [dict(zip(header, row)) if len(row) >= len(header) else None for row in rows[1:]]
    elif headerless_columns is not None:
        records = [{name: row[i] for name, i in headerless_columns.items()} for row in rows]
    else:
        raise ValueError(f"{path}: no header with the columns {sorted(text_columns.values())}")
    for idx, record in enumerate(records):
        if record is None:
            continue  # a short (corrupted) row, which TFDS drops too
        example: dict[str, Any] = {feature: record[column] for feature, column in text_columns.items()}
        example["idx"] = idx
        raw_label = record.get(label_column)
        if raw_label is None:
            example["label"] = -1 if label_names is not None else -1.0
        elif label_names is None:
            example["label"] = float(np.float32(raw_label))
        elif raw_label in label_names:
            example["label"] = label_names.index(raw_label)
        elif raw_label:
            example["label"] = int(raw_label)
        else:
            continue  # empty label: dropped, as TFDS drops it
        yield example


# --- SuperGLUE: JSON lines ----------------------------------------------------------------

def _superglue_label(row: dict, label_names: Sequence[str]) -> int:
    if "label" not in row:
        return -1
    label = row["label"]
    if isinstance(label, bool):
        label = str(label)  # "True" / "False"
    elif isinstance(label, int):
        return label  # COPA: the index of the right choice; WSC-style 0/1
    return label_names.index(label)


def fix_wsc_span_texts(example: dict) -> dict:
    """WSC with span texts that are substrings of the text, as super_glue/wsc.fixed has them: a
    span text that is not is given the case of the word at its index, loses a final period and
    has its line breaks made spaces. (Two spans with words between their parts stay unfixable.)"""
    fixed = dict(example)
    words = example["text"].split()
    for span in ("span1", "span2"):
        text = example[f"{span}_text"]
        if text in example["text"]:
            continue
        first_word = words[example[f"{span}_index"]]
        text = (text[0].lower() if first_word[0].islower() else text[0].upper()) + text[1:]
        fixed[f"{span}_text"] = text.rstrip(".").replace("\n", " ")
    return fixed


def read_superglue_jsonl(path: str, *, features: Sequence[str], label_names: Sequence[str],
                         span_target: bool = False, fix_spans: bool = False) -> Iterator[dict]:
    """Lines of a SuperGLUE JSONL file as super_glue/<config> gives them (not MultiRC, ReCoRD).

    span_target: WSC keeps its spans under "target"; they become top-level features.
    fix_spans: WSC's span texts as wsc.fixed has them.
    """
    for row in _json_lines(path):
        if span_target:
            row = {**row, **row["target"]}
        if fix_spans:
            row = fix_wsc_span_texts(row)
        example = {feature: row[feature] for feature in features}
        example["idx"] = row["idx"]
        example["label"] = _superglue_label(row, label_names)
        yield example


def _json_lines(path: str) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_multirc_jsonl(path: str) -> Iterator[dict]:
    """One example per answer option, as super_glue/multirc gives them (label 1: a right answer)."""
    for row in _json_lines(path):
        passage = row["passage"]
        for question in passage["questions"]:
            for answer in question["answers"]:
                label = answer.get("label")
                yield {"paragraph": passage["text"], "question": question["question"],
                       "answer": answer["text"], "label": -1 if label is None else int(bool(label)),
                       "idx": {"paragraph": row["idx"], "question": question["idx"],
                               "answer": answer["idx"]}}


def _record_example(passage: dict, qa: dict, passage_idx: int, query_idx: int) -> dict:
    text = passage["text"]
    # ReCoRD's entity spans are inclusive of their end offset.
    entities = sorted({text[e["start"]:e["end"] + 1] for e in passage["entities"]})
    answers = sorted({a["text"] for a in qa.get("answers", [])})
    return {"passage": text, "query": qa["query"], "entities": entities, "answers": answers,
            "idx": {"passage": passage_idx, "query": query_idx}}


def read_record(path: str) -> Iterator[dict]:
    """ReCoRD queries as super_glue/record gives them, from the SuperGLUE JSONL (`idx` fields) or
    from the original ReCoRD release JSON ({"data": [...]}, string ids: `idx` counts instead)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("{") and '"data"' in stripped[:200]:
        query_idx = 0
        for passage_idx, row in enumerate(json.loads(text)["data"]):
            for qa in row["qas"]:
                yield _record_example(row["passage"], qa, passage_idx, query_idx)
                query_idx += 1
        return
    for row in _json_lines(path):
        for qa in row["qas"]:
            yield _record_example(row["passage"], qa, row["idx"], qa["idx"])


# --- DPR (the definite pronoun resolution data set): blocks of four lines ---------------------

def read_dpr(path: str) -> Iterator[dict]:
    """Blocks of sentence, pronoun, "candidate A,candidate B", right candidate, blank line, as
    definite_pronoun_resolution gives them (label: the right candidate's index)."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    for start in range(0, len(lines), 5):
        block = lines[start:start + 5]
        if len(block) < 4 or not block[0]:
            break
        sentence, pronoun, candidates_line, correct = block[:4]
        candidates = [c.strip() for c in candidates_line.split(",")]
        yield {"sentence": sentence, "pronoun": pronoun, "candidates": candidates,
               "label": candidates.index(correct)}


# --- SQuAD: the release JSON -------------------------------------------------------------

def read_squad_json(path: str) -> Iterator[dict]:
    """Questions of a SQuAD v1.1 JSON file as squad/v1.1 gives them (answers of a repeated id
    merged)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    by_id: dict[str, dict] = {}
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["id"] in by_id:
                    by_id[qa["id"]]["answers"].extend(qa["answers"])
                    continue
                by_id[qa["id"]] = {"title": article.get("title", ""), "context": paragraph["context"],
                                   "question": qa["question"], "id": qa["id"],
                                   "answers": list(qa["answers"])}
    for example in by_id.values():
        answers = example.pop("answers")
        example["answers"] = {"answer_start": [a["answer_start"] for a in answers],
                              "text": [a["text"] for a in answers]}
        yield example


# --- CNN/Daily Mail: .story files ------------------------------------------------------------

# A line ending in none of these gets a period (image captions would run into the next sentence).
_SENTENCE_ENDS = (".", "!", "?", "...", "'", "`", '"', "\u2019", "\u201d", ")")


def story_article_and_highlights(text: str) -> tuple[str, str]:
    """A .story file's article (lines joined by spaces) and highlights (one per line), as
    cnn_dailymail 3.x makes them."""
    article, highlights = [], []
    next_is_highlight = False
    for line in (raw.strip() for raw in text.splitlines()):
        if not line:
            continue
        if line.startswith("@highlight"):
            next_is_highlight = True
            continue
        if not line.endswith(_SENTENCE_ENDS):
            line += "."
        (highlights if next_is_highlight else article).append(line)
    return " ".join(article), "\n".join(highlights)


def url_hashes(url_list: str) -> set[str]:
    """SHA-1 hex digests of the URLs of a split list: the names of that split's .story files."""
    with open(url_list, encoding="utf-8") as f:
        return {hashlib.sha1(line.strip().encode("utf-8")).hexdigest() for line in f}


def read_stories(stories_dir: str, url_list: str | None = None) -> Iterator[dict]:
    """The .story files of a directory (those of a split's URL list, if given), sorted by name, as
    cnn_dailymail gives them; stories without article or highlights are skipped, as there."""
    directory = pathlib.Path(stories_dir)
    wanted = url_hashes(url_list) if url_list else None
    publisher = "dm" if "dailymail" in str(directory) else "cnn"
    for path in sorted(directory.glob("*.story")):
        story_id = path.name[:-len(".story")]
        if wanted is not None and story_id not in wanted:
            continue
        article, highlights = story_article_and_highlights(path.read_text(encoding="utf-8"))
        if article and highlights:
            yield {"article": article, "highlights": highlights, "publisher": publisher, "id": story_id}


# --- WMT: parallel text, or translation JSON lines ------------------------------------------

def parallel_reader(source_language: str, target_language: str) -> Callable[..., Iterator[dict]]:
    """A reader of parallel text: `read(source_file, target_file)` (line-aligned plain text, as
    newstest sets are released) or `read(jsonl_file)` ({"translation": {lang: text}} per line).
    Yields {source_language: ..., target_language: ...} as wmt*_translate gives them."""
    def read(*paths: str) -> Iterator[dict]:
        if len(paths) == 1:
            for row in _json_lines(paths[0]):
                yield {lang: row["translation"][lang] for lang in (source_language, target_language)}
            return
        source_path, target_path = paths
        # Lines end at "\n" only: str.splitlines would also split at U+2028 and friends inside a line.
        with open(source_path, encoding="utf-8", newline="\n") as src, \
                open(target_path, encoding="utf-8", newline="\n") as tgt:
            sources, targets = list(src), list(tgt)
        if len(sources) != len(targets):
            raise ValueError(f"{source_path} has {len(sources)} lines, {target_path} {len(targets)}")
        for source, target in zip(sources, targets):
            yield {source_language: source.strip(), target_language: target.strip()}
    return read
