"""`python -m model tasks`: the tasks and mixtures, with their sources and metrics.

`python -m model.tasks` is its former name, until the next release: run so, this module runs
`python -m model.renamed model.tasks ...` (model/renamed.py: the notice, then the new name) in a
new process, and imports nothing above it."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    import subprocess
    sys.exit(subprocess.call([sys.executable, "-m", "model.renamed", "model.tasks",
                              *sys.argv[1:]]))

import argparse  # noqa: E402  (a former name's run above imports nothing)
from typing import Optional, Sequence  # noqa: E402

from model import tasks  # noqa: E402
from model.tasks import discriminative  # noqa: E402


def task_table() -> list[str]:
    lines = ["| task | TFDS source (split: dataset:split) | local files | metrics | train examples "
             "| tokens (inputs/targets) |", "|---|---|---|---|---|---|"]
    for name in tasks.names():
        task = tasks.get(name)
        splits = "; ".join(f"{ours}: {theirs}" for ours, theirs in task.splits.items())
        if not task.trained_on:
            size = "(never trained on)" if task.num_train_examples is None else \
                f"{task.num_train_examples:,} (never trained on)"
        else:
            size = "not on record (mixed equally)" if task.num_train_examples is None else \
                f"{task.num_train_examples:,}"
        lines.append(f"| {name} | {splits} | {task.local_format.description} | "
                     f"{', '.join(task.metric_names)} | {size} | "
                     f"{task.lengths.inputs}/{task.lengths.targets} |")
    return lines


def head_task_table() -> list[str]:
    lines = ["| task | head | choices |", "|---|---|---|"]
    for name in discriminative.names_outside_task_registry():
        view = discriminative.view(name)
        lines.append(f"| {name} | {view.kind} | {view.num_classes} |")
    return lines


def mixture_table() -> list[str]:
    lines = ["| mixture | mixing | tasks (rate, K = 2**21) | tokens (inputs/targets) |",
             "|---|---|---|---|"]
    for name in tasks.mixture_names():
        mixture = tasks.get_mixture(name)
        rates = mixture.rates()
        members = ", ".join(f"{t.name} ({rates[t.name]:.4f})" if t.name in rates else f"{t.name} (eval only)"
                            for t in mixture.tasks)
        lengths = mixture.lengths
        lines.append(f"| {name} | {mixture.mixing.value} | {members} | "
                     f"{lengths.inputs}/{lengths.targets} |")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> None:
    argparse.ArgumentParser(prog="python -m model tasks", description=__doc__).parse_args(argv)
    print("\n".join(["## Tasks", "", *task_table(), "",
                     "## Tasks of GPT-1's and BERT's heads only", "",
                     "Read from their release files (--task_files TASK:SPLIT=PATH); no TFDS "
                     "source.", "", *head_task_table(), "", "## Mixtures", "", *mixture_table(), "",
                     "Mixing: examples_proportional, temperature (T), equal; a mixture's own "
                     "unless --mixing names one; the size limit K is 2**21 unless --mixing_limit "
                     "gives one; `all` halves both RTE tasks, as the t5 library's `all` "
                     "mixtures; mT5's mix every member at one rate, as multilingual-t5's."]))

