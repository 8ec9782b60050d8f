"""Discriminative views of tasks: the raw fields and the label a fine-tuning head sees.

GPT-1 and BERT fine-tune with heads, not text to text, so they need each task's text segments and
its label (class index, float score or right choice), not the T5 strings. The task registry
(`model.tasks.get`) stays the one owner of where examples come from (TFDS, or the release files
read by the task's local reader); a view only says how one raw example becomes an `Example`:

    from model.tasks import discriminative
    view = discriminative.view("glue_rte")       # kind "classification", 2 classes
    for example in discriminative.examples("glue_rte", "train", ["glue_rte/train.tsv"]):
        example.segments, example.label          # ("premise ...", "hypothesis ..."), 0

Story Cloze and RACE (GPT-1's multiple-choice sets) are not text-to-text tasks of the T5 paper,
so they have no entry in the task registry: their views read their release files themselves
(`task_files` is then required).

Labels: unlabelled (test) examples keep the release's -1 (-1.0 for STS-B); filter them out
before training.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import pathlib
from typing import Callable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

CLASSIFICATION = "classification"
REGRESSION = "regression"
MULTIPLE_CHOICE = "multiple_choice"
KINDS = (CLASSIFICATION, REGRESSION, MULTIPLE_CHOICE)


@dataclasses.dataclass(frozen=True)
class Example:
    """One example as a head sees it.

    segments: classification/regression: (text,) or (text_a, text_b); multiple choice: the
        context, (context,), or RACE's (article, question): a head trims the article, not the
        question
    label: class index; float for regression (STS-B); the right choice's index
    choices: the answers of a multiple-choice example (empty otherwise)
    """
    segments: Tuple[str, ...]
    label: Union[int, float]
    choices: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class View:
    """How a task's raw examples (dicts as its TFDS dataset gives them) become `Example`s.

    symmetric: the pair has no order (GPT-1's similarity transformation: MRPC, QQP, STS-B).
    """
    task: str
    kind: str
    num_classes: int  # classes or choices (1 for regression)
    symmetric: bool
    _convert: Callable[[Mapping], Example] = dataclasses.field(repr=False, compare=False)
    # A reader of release files for tasks outside the task registry: read(*paths) -> raw dicts.
    _read: Optional[Callable[..., Iterator[dict]]] = dataclasses.field(default=None, repr=False,
                                                                       compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.task}: kind {self.kind!r} is none of {KINDS}")

    def convert(self, raw: Mapping) -> Example:
        return self._convert(raw)


def _fields(*names: str) -> Callable[[Mapping], Example]:
    """Segments are the named text fields in order; the label is the raw `label`."""
    def convert(raw: Mapping) -> Example:
        return Example(tuple(raw[name] for name in names), raw["label"])
    return convert


def _copa(raw: Mapping) -> Example:
    # The question word ("cause" or "effect") tells which way the premise and the answer relate.
    return Example((f"{raw['premise']} {raw['question']}",), raw["label"],
                   (raw["choice1"], raw["choice2"]))


# --- Story Cloze (ROCStories cloze test CSV) and RACE (one JSON file per article) ----------------

def read_story_cloze(*paths: str) -> Iterator[dict]:
    """Rows of the Story Cloze Test CSV (cloze_test_{val,test}__spring2016.csv): four sentences,
    two endings, `label` the right ending's index (0 or 1)."""
    for path in paths:
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                yield {"id": row["InputStoryid"],
                       "story": " ".join(row[f"InputSentence{i}"] for i in range(1, 5)),
                       "endings": [row["RandomFifthSentenceQuiz1"],
                                   row["RandomFifthSentenceQuiz2"]],
                       "label": int(row["AnswerRightEnding"]) - 1}


def read_race(*paths: str) -> Iterator[dict]:
    """RACE questions, one dict each, from article files (RACE/{train,dev,test}/{middle,high}/N.txt)
    or directories of them (searched recursively, files in sorted order); `label` is the index of
    the answer letter A-D."""
    files = []
    for path in map(pathlib.Path, paths):
        files += sorted(p for p in path.rglob("*.txt")) if path.is_dir() else [path]
    for path in files:
        article = json.loads(path.read_text(encoding="utf-8"))
        for number, (question, options, answer) in enumerate(
                zip(article["questions"], article["options"], article["answers"])):
            yield {"id": f"{article.get('id', path.name)}/{number}", "article": article["article"],
                   "question": question, "options": list(options), "label": "ABCD".index(answer)}


def _story_cloze(raw: Mapping) -> Example:
    return Example((raw["story"],), raw["label"], tuple(raw["endings"]))


def _race(raw: Mapping) -> Example:
    return Example((raw["article"], raw["question"]), raw["label"], tuple(raw["options"]))


def _pair(task: str, first: str, second: str, classes: int, symmetric: bool = False) -> View:
    return View(task, CLASSIFICATION, classes, symmetric, _fields(first, second))


_VIEWS = (
    View("glue_cola", CLASSIFICATION, 2, False, _fields("sentence")),
    View("glue_sst2", CLASSIFICATION, 2, False, _fields("sentence")),
    _pair("glue_mrpc", "sentence1", "sentence2", 2, symmetric=True),
    _pair("glue_qqp", "question1", "question2", 2, symmetric=True),
    View("glue_stsb", REGRESSION, 1, True, _fields("sentence1", "sentence2")),
    _pair("glue_mnli", "premise", "hypothesis", 3),
    _pair("glue_qnli", "question", "sentence", 2),
    _pair("glue_rte", "sentence1", "sentence2", 2),
    _pair("glue_wnli", "sentence1", "sentence2", 2),
    _pair("super_glue_rte", "premise", "hypothesis", 2),
    _pair("super_glue_cb", "premise", "hypothesis", 3),
    # The question first, as BERT and GPT-style BoolQ baselines read it.
    _pair("super_glue_boolq", "question", "passage", 2),
    View("super_glue_copa", MULTIPLE_CHOICE, 2, False, _copa),
    View("story_cloze", MULTIPLE_CHOICE, 2, False, _story_cloze, read_story_cloze),
    View("race", MULTIPLE_CHOICE, 4, False, _race, read_race),
)
VIEWS: Mapping[str, View] = {v.task: v for v in _VIEWS}


def names() -> list[str]:
    return list(VIEWS)


def names_outside_task_registry() -> list[str]:
    """The tasks only a view knows (Story Cloze, RACE): those whose views read their release
    files themselves."""
    return [v.task for v in _VIEWS if v._read is not None]


def view(task_name: str) -> View:
    """The view of a task; a KeyError naming the tasks that have one otherwise."""
    try:
        return VIEWS[task_name]
    except KeyError:
        raise KeyError(f"task {task_name!r} has no discriminative view; views exist for: "
                       f"{', '.join(VIEWS)}") from None


def raw_examples(task_name: str, split: str, task_files: Optional[Sequence[str]] = None,
                 data_dir: Optional[str] = None) -> Iterator[dict]:
    """The raw dicts of a split: the release files `task_files` read by the task's local reader,
    else TFDS (registry tasks only)."""
    chosen = view(task_name)
    if chosen._read is not None:
        if not task_files:
            raise ValueError(f"{task_name} has no TFDS source here: give its release files")
        return chosen._read(*task_files)
    from model import tasks  # the registry owns the sources
    task = tasks.get(task_name)
    if task_files:
        return task.local_examples(*task_files)
    return task.examples(split, data_dir)


def examples(task_name: str, split: str, task_files: Optional[Sequence[str]] = None,
             data_dir: Optional[str] = None) -> Iterator[Example]:
    """The split's examples as the task's view converts them (see `raw_examples`)."""
    convert = view(task_name).convert
    return (convert(raw) for raw in raw_examples(task_name, split, task_files, data_dir))


def labelled_examples(task_name: str, split: str, task_files: Optional[Sequence[str]] = None,
                      data_dir: Optional[str] = None) -> List[Example]:
    """The split's examples that have a label (test releases have none)."""
    return [example for example in examples(task_name, split, task_files, data_dir)
            if example.label != -1]
