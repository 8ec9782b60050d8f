"""Readers of the release files of mT5's classification and tagging tasks: XNLI, XNLI-MT,
PAWS-X and WikiAnn (PAN-X).

As in sources.py, every reader yields exactly what the task's TFDS dataset gives once loaded
(class ids, str, lists), so preprocessing never knows where an example came from; tests compare
them with the TFDS builders (xnli, paws_x_wiki, wikiann) on the real sample files. The QA tasks
(XQuAD, MLQA, TyDi QA GoldP) are SQuAD v1.1 JSON, read by sources.read_squad_json.
"""
from __future__ import annotations

import csv
import json
import pathlib
import re
from typing import Iterator, Mapping, Sequence, Tuple

XNLI_LABELS = ("entailment", "neutral", "contradiction")
WIKIANN_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")

_XNLI_COLUMNS = ("language", "gold_label", "sentence1", "sentence2", "pairID")
_XNLI_MT_HEADER = ["premise", "hypo", "label"]
# XNLI-MT's translate-train files say "contradictory"; TFDS's xtreme_xnli maps it the same way.
_XNLI_MT_LABEL_NAMES = {"contradictory": "contradiction"}
_PAWS_X_COLUMNS = ("id", "sentence1", "sentence2", "label")


# --- XNLI 1.0: all languages of a pair in one file, grouped by pairID --------------------------

def _xnli_label(path: str, name: str) -> int:
    if name not in XNLI_LABELS:
        raise ValueError(f"{path}: label {name!r}, expected one of {', '.join(XNLI_LABELS)}")
    return XNLI_LABELS.index(name)


def _variable_languages(texts: Mapping[str, str]) -> dict:
    """{language: text} as TFDS's TranslationVariableLanguages gives it: parallel lists, sorted."""
    pairs = sorted(texts.items())
    return {"language": [language for language, _ in pairs], "translation": [text for _, text in pairs]}


def _xnli_tsv_rows(path: str) -> Iterator[Tuple[int, dict]]:
    with open(path, encoding="utf-8", newline="") as f:
        # QUOTE_NONE: quotes in the sentences are text, as the xnli builder reads them.
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [column for column in _XNLI_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: header {reader.fieldnames!r} lacks {', '.join(missing)} "
                             "(expected an XNLI 1.0 TSV)")
        for row in reader:
            yield reader.line_num, row


def _xnli_jsonl_rows(path: str) -> Iterator[Tuple[int, dict]]:
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, 1):
            if line.strip():
                yield line_number, json.loads(line)


def read_xnli_tsv(path: str) -> Iterator[dict]:
    """Pairs of XNLI 1.0's `xnli.{dev,test}.tsv` (or `.jsonl`) as the TFDS xnli dataset gives them:
    {"premise": {language: text}, "hypothesis": {"language": [sorted], "translation": [...]},
    "label": class id of XNLI_LABELS}, one per pairID in order of first appearance."""
    is_jsonl = pathlib.Path(path).suffix == ".jsonl"
    rows_per_pair: dict[str, list[dict]] = {}
    for line_number, row in (_xnli_jsonl_rows if is_jsonl else _xnli_tsv_rows)(path):
        missing = [column for column in _XNLI_COLUMNS if row.get(column) is None]
        if missing:
            raise ValueError(f"{path}, line {line_number}: no {', '.join(missing)}")
        rows_per_pair.setdefault(row["pairID"], []).append(row)
    for rows in rows_per_pair.values():
        yield {"premise": {row["language"]: row["sentence1"] for row in rows},
               "hypothesis": _variable_languages({row["language"]: row["sentence2"] for row in rows}),
               "label": _xnli_label(path, rows[0]["gold_label"])}


# --- XNLI-MT 1.0 translate-train: one language per file ------------------------------------

def _language_in_name(path: str) -> str:
    match = re.fullmatch(r"multinli\.\w+\.([a-z]{2})\.tsv", pathlib.Path(path).name)
    if match is None:
        raise ValueError(f"{path}: the name says no language (expected multinli.train.<lang>.tsv); "
                         "pass language=")
    return match.group(1)


def read_xnli_mt_tsv(path: str, language: str | None = None) -> Iterator[dict]:
    """Rows of XNLI-MT's `multinli.train.<lang>.tsv` in the shape of an XNLI pair of one language:
    {"premise": {language: p}, "hypothesis": {"language": [language], "translation": [h]},
    "label": class id of XNLI_LABELS}. The language is the file name's unless given."""
    language = language or _language_in_name(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header != _XNLI_MT_HEADER:
            raise ValueError(f"{path}: header {header!r}, expected {_XNLI_MT_HEADER!r} "
                             "(an XNLI-MT translate-train file)")
        for row in reader:
            if not row:
                continue
            if len(row) != len(_XNLI_MT_HEADER):
                raise ValueError(f"{path}, line {reader.line_num}: {len(row)} fields, expected 3")
            premise, hypothesis, label = row
            yield {"premise": {language: premise},
                   "hypothesis": {"language": [language], "translation": [hypothesis]},
                   "label": _xnli_label(path, _XNLI_MT_LABEL_NAMES.get(label, label))}


# --- PAWS-X: x-final/<lang>/*.tsv ------------------------------------------------------------

def read_paws_x_tsv(path: str) -> Iterator[dict]:
    """Rows of a PAWS-X `x-final/<lang>/*.tsv` as paws_x_wiki gives them:
    {"sentence1", "sentence2", "label": 0 different meaning, 1 paraphrase}."""
    # Default newline handling and csv quoting, as the paws_x_wiki builder reads the files: a quote
    # in a sentence can join fields and lines, so the result must match its reading exactly.
    with open(path, encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        missing = [column for column in _PAWS_X_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: header {reader.fieldnames!r} lacks {', '.join(missing)} "
                             f"(expected {' '.join(_PAWS_X_COLUMNS)})")
        for row in reader:
            # Rows the release garbled have no 0/1 label; TFDS drops them, and so do we.
            if row["label"] in ("0", "1"):
                yield {"sentence1": row["sentence1"], "sentence2": row["sentence2"],
                       "label": int(row["label"])}


# --- WikiAnn (PAN-X): `lang:token<TAB>tag` lines, a blank line after each sentence ---------------

SPAN_SEPARATOR = " $$ "  # between the "TYPE: tokens" spans of one sentence (mT5's wikiann task)
NO_SPANS = "None"  # the target of a sentence without entities


def _entity_tag(tag: str) -> tuple[str, str]:
    """An IOB2 tag as (prefix, entity type): "B-PER" -> ("B", "PER"), "O" -> ("O", "")."""
    if tag == "O":
        return "O", ""
    prefix, dash, entity_type = tag.partition("-")
    if prefix not in ("B", "I") or not dash or not entity_type:
        raise ValueError(f"{tag!r} is no IOB2 tag (O, B-TYPE or I-TYPE)")
    return prefix, entity_type


def spans_of_tags(tokens: Sequence[str], tags: Sequence[str]) -> list[str]:
    """A sentence's entities as "TYPE: tokens" strings in the order they start, ["None"] when it
    has none: TFDS wikiann's `spans`. An entity starts at every B- tag and at every I- tag that
    does not continue the open entity's type (an I- after O, or after another type)."""
    if len(tokens) != len(tags):
        raise ValueError(f"{len(tokens)} tokens but {len(tags)} tags")
    spans: list[str] = []
    open_type, open_tokens = "", []
    for token, tag in zip(tokens, tags):
        prefix, entity_type = _entity_tag(tag)
        if prefix == "I" and entity_type == open_type:
            open_tokens.append(token)
            continue
        if open_type:
            spans.append(f"{open_type}: {' '.join(open_tokens)}")
        open_type, open_tokens = entity_type, [token]
    if open_type:
        spans.append(f"{open_type}: {' '.join(open_tokens)}")
    return spans or [NO_SPANS]


def _wikiann_sentence(tokens: list[str], tags: list[str], langs: list[str]) -> dict:
    return {"tokens": tokens, "tags": [WIKIANN_TAGS.index(tag) for tag in tags], "langs": langs,
            "spans": spans_of_tags(tokens, tags)}


def read_wikiann(path: str, language: str | None = None) -> Iterator[dict]:
    """Sentences of a WikiAnn `<lang>/{train,dev,test}` file as the TFDS wikiann dataset gives
    them: {"tokens", "tags": class ids of WIKIANN_TAGS, "langs": each token's prefix, "spans"}.
    language: when given, every token's prefix must be it (a file of another language is an error).
    """
    tokens: list[str] = []
    tags: list[str] = []
    langs: list[str] = []
    # newline="\n": lines end at "\n" only, as TFDS's GFile splits them.
    with open(path, encoding="utf-8", newline="\n") as f:
        for line_number, raw_line in enumerate(f, 1):
            line = raw_line.rstrip()  # as the builder: trailing blanks and "\r" go, blank lines stay blank
            if not line or line.startswith("-DOCSTART-"):
                if tokens:
                    yield _wikiann_sentence(tokens, tags, langs)
                    tokens, tags, langs = [], [], []
                continue
            fields = line.split("\t")
            if len(fields) < 2:
                raise ValueError(f"{path}, line {line_number}: no tab between token and tag in {line!r}")
            # Only the first ':' ends the prefix: tokens may hold colons ("th::" is the token ":").
            prefix, _, token = fields[0].partition(":")
            tag = fields[-1]
            if tag not in WIKIANN_TAGS:
                raise ValueError(f"{path}, line {line_number}: tag {tag!r}, expected one of "
                                 f"{', '.join(WIKIANN_TAGS)}")
            if language is not None and prefix != language:
                raise ValueError(f"{path}, line {line_number}: language {prefix!r}, expected {language!r}")
            tokens.append(token)
            tags.append(tag)
            langs.append(prefix)
    if tokens:
        yield _wikiann_sentence(tokens, tags, langs)
