"""Which tasks a command runs on, and where their examples come from: the command line's task
arguments (`--task`, `--mixture`, `--task_files`, ...) for every family.

A selection is one task or a mixture with the paper's mixing strategy and size limit K
(model/tasks/mixtures.py); task data is the tasks' original release files given with
`--task_files TASK:SPLIT=PATH[,PATH...]` (read offline by each task's local reader), else TFDS.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Callable, Iterable, Iterator, List, Mapping, Optional, Tuple

from model import tasks
from model.data.mixing import rates_of
from model.tasks import Mixing, SequenceLengths, Task, discriminative, mixtures
from model.tasks.sources import parse_task_files, tfds_version


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
    """Where examples come from: local release files per (task, split), else TFDS."""

    local_files: Mapping[Tuple[str, str], Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    tfds_data_dir: Optional[str] = None

    def examples(self, task: Task, split: str) -> Iterable[dict]:
        paths = self.local_files.get((task.name, split))
        if paths:
            return _Reread(lambda: task.local_examples(*paths))
        return _Reread(lambda: task.examples(split, self.tfds_data_dir))

    def describe(self, task: Task, split: str) -> str:
        """Which data `examples` reads, with its version: what a score was computed on."""
        paths = self.local_files.get((task.name, split))
        if paths:
            return f"local files {', '.join(paths)} ({task.local_format.description})"
        return f"tfds {tfds_version(task.splits[split], self.tfds_data_dir)}"

    def validation_splits(self, task: Task) -> List[str]:
        return validation_splits(task.name, self.local_files)


@dataclasses.dataclass(frozen=True)
class Selection:
    """The tasks of a run: those trained on, with their mixing rates, and those evaluated."""

    name: str
    rates: Mapping[str, float]  # trained task name -> rate
    evaluated: Tuple[Task, ...]
    lengths: SequenceLengths  # of the tasks trained and evaluated: none of their sequences is cut
    # The share of the pre-training objective over DataConfig.source mixed in (Section 3.5.2's
    # multi-task training with the unsupervised task); the tasks share the rest by `rates`.
    pretraining_rate: float = 0.0

    @property
    def trained(self) -> Tuple[Task, ...]:
        return tuple(tasks.get(name) for name in self.rates)


PRETRAINING = "pretraining"


def select(task: Optional[str] = None, mixture: Optional[str] = None,
           mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL,
           limit: int = mixtures.DEFAULT_SIZE_LIMIT, temperature: float = 1.0,
           with_pretraining: bool = False, training: bool = True) -> Selection:
    """One task (rate 1), or a mixture with the paper's mixing strategy and size limit K
    (model/tasks/mixtures.py); `with_pretraining` mixes in the pre-training objective as one more
    member, whose data set is larger than any limit: it counts K examples, as in the paper. A
    task never trained on (WNLI, as in the paper) is refused for training and has no rate in a
    mixture; it can be evaluated (`training=False`)."""
    if bool(task) == bool(mixture):
        raise ValueError("give one of --task and --mixture")
    if task:
        chosen = tasks.get(task)
        if training and not chosen.trained_on:
            raise ValueError(f"{task} is never trained on (as in the paper: GLUE's WNLI and its "
                             "training set are adversarial); evaluate it with --mode eval")
        mix = tasks.Mixture(task, (chosen,))
    else:
        mix = tasks.get_mixture(mixture)
    if not mix.trained_tasks:
        return Selection(mix.name, {}, mix.tasks, mix.lengths)
    sizes = mix.scaled_sizes()
    if with_pretraining:
        sizes[PRETRAINING] = limit
    rates = rates_of(sizes, mixing, limit=limit, temperature=temperature)
    pretraining_rate = rates.pop(PRETRAINING, 0.0)
    return Selection(mix.name, {k: v / (1 - pretraining_rate) for k, v in rates.items()}, mix.tasks,
                     mix.lengths, pretraining_rate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tasks (finetune, eval, decode)")
    group.add_argument("--task", help=f"one task: {', '.join(tasks.names())}; for GPT-1's and "
                                      f"BERT's heads also "
                                      f"{', '.join(discriminative.names_outside_task_registry())} "
                                      "(from their release files, --task_files)")
    group.add_argument("--mixture", help=f"a mixture: {', '.join(tasks.mixture_names())}")
    group.add_argument("--mixing", default=Mixing.EXAMPLES_PROPORTIONAL.value,
                       choices=[m.value for m in Mixing], help="mixing strategy of a mixture")
    group.add_argument("--mixing_limit", type=int, default=mixtures.DEFAULT_SIZE_LIMIT,
                       help="K, the size limit of examples-proportional and temperature mixing "
                            "(default 2^21)")
    group.add_argument("--temperature", type=float, default=1.0, help="temperature-scaled mixing")
    group.add_argument("--with_pretraining", action="store_true",
                       help="mix in the pre-training objective (DataConfig.objective over "
                            "DataConfig.source) as one more member of size K")
    group.add_argument("--task_files", action="append", default=[], metavar="TASK:SPLIT=PATH[,PATH]",
                       help="a task's original release files for a split, instead of TFDS")
    group.add_argument("--tfds_data_dir", help="where the tasks' TFDS datasets are prepared")


def uses_tasks(args: argparse.Namespace) -> bool:
    return bool(args.task or args.mixture)


def task_data(args: argparse.Namespace) -> TaskData:
    files = parse_task_files(args.task_files)
    for name, _ in files:
        tasks.get(name)  # an unknown task fails here
    return TaskData(files, args.tfds_data_dir)
