"""Multi-task mixtures and the paper's mixing strategies (Section 3.5.2).

A mixing rate is the probability of drawing the next training example from a task. Given the
tasks' training-set sizes e_m:
  examples-proportional:  r_m = min(e_m, K) / sum_n min(e_n, K)   (K: the size limit)
  temperature-scaled:     r_m proportional to min(e_m, K) ** (1 / T), renormalized
  equal:                  r_m = 1 / N
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Mapping

from model.tasks.base import SequenceLengths, Task

TEMPERATURE_SIZE_LIMIT = 2 ** 21  # the paper's K when it scales by temperature


def _normalized(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"no mixing weight is positive: {dict(weights)}")
    return {name: weight / total for name, weight in weights.items()}


def examples_proportional(sizes: Mapping[str, int], limit: int | None = None) -> dict[str, float]:
    return _normalized({name: min(size, limit) if limit else size for name, size in sizes.items()})


def temperature_scaled(sizes: Mapping[str, int], temperature: float,
                       limit: int | None = TEMPERATURE_SIZE_LIMIT) -> dict[str, float]:
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    proportional = examples_proportional(sizes, limit)
    return _normalized({name: rate ** (1 / temperature) for name, rate in proportional.items()})


def equal(sizes: Mapping[str, int]) -> dict[str, float]:
    return _normalized({name: 1.0 for name in sizes})


class Mixing(enum.Enum):
    EXAMPLES_PROPORTIONAL = "examples_proportional"
    TEMPERATURE = "temperature"
    EQUAL = "equal"


@dataclasses.dataclass(frozen=True)
class Mixture:
    """Tasks trained together; those not trained on (WNLI) are only evaluated."""
    name: str
    tasks: tuple[Task, ...]

    @property
    def trained_tasks(self) -> tuple[Task, ...]:
        return tuple(task for task in self.tasks if task.trained_on)

    @property
    def lengths(self) -> SequenceLengths:
        """Lengths that cut no member's sequences (a mixture trains and decodes at one length)."""
        return functools.reduce(SequenceLengths.covering, (task.lengths for task in self.tasks))

    def rates(self, mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL, *, limit: int | None = None,
              temperature: float = 1.0, sizes: Mapping[str, int] | None = None) -> dict[str, float]:
        """Mixing rates of the trained tasks. sizes: training-set sizes to use instead of the TFDS
        ones (e.g. of local files). limit: K; for temperature scaling it defaults to 2**21."""
        sizes = {t.name: (sizes or {}).get(t.name, t.num_train_examples) for t in self.trained_tasks}
        mixing = Mixing(mixing)
        if mixing is Mixing.EXAMPLES_PROPORTIONAL:
            return examples_proportional(sizes, limit)
        if mixing is Mixing.TEMPERATURE:
            return temperature_scaled(sizes, temperature, limit or TEMPERATURE_SIZE_LIMIT)
        return equal(sizes)
