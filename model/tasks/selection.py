"""Which tasks a command runs on, and where their examples come from: the command line's task
arguments (`--task`, `--mixture`, `--task_files`, ...) for every family.

A selection is one task or a mixture with the paper's mixing strategy and size limit K
(model/tasks/mixtures.py); task data is the tasks' original release files given with
`--task_files TASK:SPLIT=PATH[,PATH...]` (read offline by each task's local reader), else TFDS.
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
from typing import Callable, Iterable, Iterator, List, Mapping, Optional, Tuple

from model import tasks
from model.data.mixing import rates_of
from model.tasks import Mixing, Mixture, SequenceLengths, Task, discriminative, mixtures
from model.tasks.sources import TaskFiles, find_release_file, parse_task_files, tfds_version


def validation_splits(task: str, local_files: Mapping[Tuple[str, str], Tuple[str, ...]]) -> List[str]:
    """The splits a task is scored on: those `local_files` gives (but train) when it gives any
    for the task, else the task's registered validation splits (GLUE MNLI has two)."""
    if any(name == task for name, _ in local_files):
        return sorted(split for name, split in local_files if name == task and split != "train")
    return [split for split in tasks.get(task).splits if split.startswith("validation")]


class _Reread:
    """An iterable that reads its examples again on every iteration (tf.data's from_generator
    iterates once per epoch)."""

    def __init__(self, read: Callable[[], Iterator[dict]]):
        self._read = read

    def __iter__(self) -> Iterator[dict]:
        return iter(self._read())


@dataclasses.dataclass(frozen=True)
class TaskData:
    """Where examples come from: local release files per (task, split); else, for a task with
    a release layout, its file in a folder of releases (`task_dir`); else TFDS."""

    local_files: Mapping[Tuple[str, str], Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    tfds_data_dir: Optional[str] = None
    task_dir: Optional[str] = None

    def _paths(self, task: Task, split: str) -> Optional[Tuple[str, ...]]:
        paths = self.local_files.get((task.name, split))
        if paths:
            return paths
        if self.task_dir and task.release is not None:
            if split not in task.release.files:
                raise KeyError(f"{task.name} has no split {split!r} in its release files; "
                               f"it has {sorted(task.release.files)}")
            return (find_release_file(self.task_dir, task.release.folder, task.release.files[split]),)
        return None

    def examples(self, task: Task, split: str) -> Iterable[dict]:
        paths = self._paths(task, split)
        if paths:
            return _Reread(lambda: task.local_examples(*paths))
        return _Reread(lambda: task.examples(split, self.tfds_data_dir))

    def describe(self, task: Task, split: str) -> str:
        """Which data `examples` reads, with its version: what a score was computed on."""
        paths = self._paths(task, split)
        if paths:
            return f"local files {', '.join(paths)} ({task.local_format.description})"
        return f"tfds {tfds_version(task.splits[split], self.tfds_data_dir)}"

    def validation_splits(self, task: Task) -> List[str]:
        """The splits a task is scored on: those given as local files, else the task's own
        (`Task.eval_splits`, or its validation splits). From a folder of releases, a split
        whose file is not there is left out with a notice: a mixture is scored on the
        languages a user has (and says which it lacks)."""
        if any(name == task.name for name, _ in self.local_files):
            return validation_splits(task.name, self.local_files)
        if task.eval_splits is None:
            return validation_splits(task.name, {})
        if not (self.task_dir and task.release is not None):
            return list(task.eval_splits)
        available = []
        for split in task.eval_splits:
            try:
                self._paths(task, split)
            except FileNotFoundError as missing:
                print(f"{task.name} {split}: not evaluated: {missing}", file=sys.stderr)
                continue
            available.append(split)
        return available


@dataclasses.dataclass(frozen=True)
class Selection:
    """The tasks of a run: those trained on, with their mixing rates, and those evaluated."""

    name: str
    rates: Mapping[str, float]  # trained task name -> rate
    evaluated: Tuple[Task, ...]
    lengths: SequenceLengths  # of the tasks trained and evaluated: none of their sequences is cut
    mixture: Mixture  # what was selected (a one-task mixture for --task)
    # The share of the pre-training objective over DataConfig.source mixed in (Section 3.5.2's
    # multi-task training with the unsupervised task); the tasks share the rest by `rates`.
    pretraining_rate: float = 0.0

    @property
    def trained(self) -> Tuple[Task, ...]:
        return tuple(tasks.get(name) for name in self.rates)


PRETRAINING = "pretraining"


def select(task: Optional[str] = None, mixture: Optional[str] = None,
           mixing: Mixing | str | None = None,
           limit: int = mixtures.DEFAULT_SIZE_LIMIT, temperature: float = 1.0,
           with_pretraining: bool = False, training: bool = True) -> Selection:
    """One task (rate 1), or a mixture with the paper's mixing strategy and size limit K
    (model/tasks/mixtures.py); `with_pretraining` mixes in the pre-training objective as one more
    member, whose data set is larger than any limit: it counts K examples, as in the paper. A
    task never trained on (WNLI, as in the paper) is refused for training and has no rate in a
    mixture; it can be evaluated (`training=False`). `mixing` None: the mixture's own
    (examples-proportional for the T5 paper's, equal for mT5's)."""
    if bool(task) == bool(mixture):
        raise ValueError("give one of --task and --mixture")
    if task:
        chosen = tasks.get(task)
        if training and not chosen.trained_on:
            raise ValueError(f"{task} is never trained on ({chosen.untrained_reason}); "
                             f"evaluate a run on it with python -m model eval --task {task} "
                             "--model_dir DIR")
        # One task needs no size to be drawn from alone.
        mix = tasks.Mixture(task, (chosen,), mixing=Mixing.EQUAL)
    else:
        mix = tasks.get_mixture(mixture)
    if not mix.trained_tasks:
        return Selection(mix.name, {}, mix.tasks, mix.lengths, mix)
    mixing = mixing or mix.mixing
    sizes = mix.scaled_sizes(mixing=mixing)
    if with_pretraining:
        sizes[PRETRAINING] = limit if Mixing(mixing) is not Mixing.EQUAL else 1.0
    rates = rates_of(sizes, mixing, limit=limit, temperature=temperature)
    pretraining_rate = rates.pop(PRETRAINING, 0.0)
    return Selection(mix.name, {k: v / (1 - pretraining_rate) for k, v in rates.items()}, mix.tasks,
                     mix.lengths, mix, pretraining_rate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tasks (finetune, eval, decode)")
    # A task per language (mT5's) is shown once, as `mt5_xnli_dev_test.LANG`.
    shown = dict.fromkeys(name.rpartition(".")[0] + ".LANG" if "." in name else name
                          for name in tasks.names())
    group.add_argument("--task", help=f"one task: {', '.join(shown)} (python -m model tasks lists "
                                      "each with its languages); for GPT-1's and "
                                      f"BERT's heads also "
                                      f"{', '.join(discriminative.names_outside_task_registry())} "
                                      "(from their release files, --task_files)")
    group.add_argument("--mixture", help=f"a mixture: {', '.join(tasks.mixture_names())}")
    group.add_argument("--mixing", choices=[m.value for m in Mixing],
                       help="mixing strategy of a mixture (default: the mixture's own: "
                            "examples_proportional for the T5 paper's, equal for mT5's)")
    group.add_argument("--mixing_limit", type=int, default=mixtures.DEFAULT_SIZE_LIMIT,
                       help="K, the size limit of examples-proportional and temperature mixing "
                            "(default 2^21)")
    group.add_argument("--temperature", type=float, default=1.0, help="temperature-scaled mixing")
    group.add_argument("--with_pretraining", action="store_true",
                       help="mix in the pre-training objective (DataConfig.objective over "
                            "DataConfig.source) as one more member of size K")
    group.add_argument("--task_files", action="append", default=[], metavar="TASK:SPLIT=PATH[,PATH]",
                       help="a task's original release files for a split, instead of TFDS")
    group.add_argument("--task_dir", help="a folder of the tasks' release files, one folder per "
                                          "benchmark (xnli/, paws_x/, wikiann/, xquad/, mlqa/, "
                                          "tydiqa_goldp/, squad/), read instead of TFDS by the "
                                          "tasks that know their release layout (mT5's)")
    group.add_argument("--tfds_data_dir", help="where the tasks' TFDS datasets are prepared")


@dataclasses.dataclass(frozen=True)
class TaskRequest:
    """What a command asks of the tasks: the task flags (`add_arguments`), typed, built once by
    the command line and handed to a family's task run, which never sees argparse."""

    task: Optional[str] = None
    mixture: Optional[str] = None
    mixing: Optional[str] = None  # None: the mixture's own
    mixing_limit: int = mixtures.DEFAULT_SIZE_LIMIT
    temperature: float = 1.0
    with_pretraining: bool = False
    task_files: TaskFiles = dataclasses.field(default_factory=dict)
    tfds_data_dir: Optional[str] = None
    task_dir: Optional[str] = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "TaskRequest":
        return cls(args.task, args.mixture, args.mixing, args.mixing_limit, args.temperature,
                   args.with_pretraining, parse_task_files(args.task_files), args.tfds_data_dir,
                   args.task_dir)

    @property
    def given(self) -> bool:
        """Whether the command runs on tasks (--task or --mixture)."""
        return bool(self.task or self.mixture)

    def selection(self, training: bool) -> Selection:
        return select(self.task, self.mixture, self.mixing, self.mixing_limit, self.temperature,
                      self.with_pretraining, training)

    def data(self) -> TaskData:
        """The registry's tasks' data: their files as given, else in --task_dir, else TFDS."""
        for name, _ in self.task_files:
            tasks.get(name)  # an unknown task fails here
        if self.task_dir and not pathlib.Path(self.task_dir).is_dir():
            raise FileNotFoundError(f"--task_dir {self.task_dir}: no such folder")
        return TaskData(self.task_files, self.tfds_data_dir, self.task_dir)
