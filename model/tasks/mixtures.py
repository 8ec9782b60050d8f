"""Multi-task mixtures and the paper's mixing strategies (Section 3.5.2).

A mixing rate is the probability of drawing the next training example from a task
(model/data/mixing.py has the formulas). The tasks' sizes are their training-set sizes, each
times the mixture's scale for the task (1, or 1/2 for the two RTE tasks of `all`: the t5
library's `_dedupe` in t5/data/mixtures.py, since SuperGLUE's RTE repeats GLUE's), scaled before
they are limited, as the t5 library's `rate_num_examples` does. The size limit K is always
applied to tasks, 2^21 unless given: the paper's value for temperature scaling and the largest
it tried (without a limit, `all` would draw 86% of its examples from WMT En-Fr).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Mapping

from model.data.mixing import Mixing, rates_of
from model.tasks.base import SequenceLengths, Task

DEFAULT_SIZE_LIMIT = 2 ** 21  # K unless one is given


@dataclasses.dataclass(frozen=True)
class Mixture:
    """Tasks trained together; those not trained on (WNLI) are only evaluated. `scales`: a
    factor on a task's size before the limit (the t5 library's `rate_num_examples(scale=...)`)."""
    name: str
    tasks: tuple[Task, ...]
    scales: Mapping[str, float] = dataclasses.field(default_factory=dict)
    # The mixing a run uses unless the command line names one: the T5 paper's mixtures mix
    # examples-proportionally; multilingual-t5 registers mT5's with one rate for every member.
    mixing: Mixing = Mixing.EXAMPLES_PROPORTIONAL
    # For mT5's mixtures, the Table 2 cell (benchmark, setting) whose row their results fill.
    table_cell: tuple[str, str] | None = None

    @property
    def trained_tasks(self) -> tuple[Task, ...]:
        return tuple(task for task in self.tasks if task.trained_on)

    @property
    def lengths(self) -> SequenceLengths:
        """Lengths that cut no member's sequences (a mixture trains and decodes at one length)."""
        return functools.reduce(SequenceLengths.covering, (task.lengths for task in self.tasks))

    def scaled_sizes(self, sizes: Mapping[str, int] | None = None,
                     mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL) -> dict[str, float]:
        """The trained tasks' training-set sizes (the TFDS ones, or those of `sizes`, e.g. of
        local files) times their scales. Equal mixing needs none; the other mixings refuse a
        task whose size is not known."""
        if Mixing(mixing) is Mixing.EQUAL:
            return {t.name: 1.0 for t in self.trained_tasks}
        known = {t.name: (sizes or {}).get(t.name, t.num_train_examples) for t in self.trained_tasks}
        unknown = [name for name, size in known.items() if size is None]
        if unknown:
            raise ValueError(f"{self.name}: the training-set size of {', '.join(unknown)} is not "
                             f"known, so {Mixing(mixing).value} mixing cannot rate it: mix "
                             "equally (--mixing equal), as multilingual-t5's mixtures do")
        return {name: size * self.scales.get(name, 1.0) for name, size in known.items()}

    def rates(self, mixing: Mixing | str | None = None, *,
              limit: int = DEFAULT_SIZE_LIMIT, temperature: float = 1.0,
              sizes: Mapping[str, int] | None = None) -> dict[str, float]:
        """Mixing rates of the trained tasks (model/data/mixing.py), K applied; by the mixture's
        own mixing unless one is given."""
        mixing = mixing or self.mixing
        return rates_of(self.scaled_sizes(sizes, mixing), mixing, limit=limit, temperature=temperature)
