"""Multi-task mixtures and the paper's mixing strategies (Section 3.5.2).

A mixing rate is the probability of drawing the next training example from a task. Given the
tasks' training-set sizes e_m, each times the mixture's scale for the task (1, or 1/2 for the
two RTE tasks of `all`: the t5 library's `_dedupe` in t5/data/mixtures.py, since SuperGLUE's RTE
repeats GLUE's), as the t5 library's `rate_num_examples` scales before it limits:
  examples-proportional:  r_m = min(e_m, K) / sum_n min(e_n, K)   (K: the size limit)
  temperature-scaled:     r_m proportional to min(e_m, K) ** (1 / T), renormalized
  equal:                  r_m = 1 / N
K is always applied, 2^21 unless given: the paper's value for temperature scaling and the
largest it tried (without a limit, `all` would draw 86% of its examples from WMT En-Fr).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Mapping

from model.tasks.base import SequenceLengths, Task

DEFAULT_SIZE_LIMIT = 2 ** 21  # K unless one is given


def _normalized(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"no mixing weight is positive: {dict(weights)}")
    return {name: weight / total for name, weight in weights.items()}


def _checked_limit(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"the size limit K must be positive, got {limit}")
    return limit


def examples_proportional(sizes: Mapping[str, float], limit: int = DEFAULT_SIZE_LIMIT) -> dict[str, float]:
    limit = _checked_limit(limit)
    return _normalized({name: min(size, limit) for name, size in sizes.items()})


def temperature_scaled(sizes: Mapping[str, float], temperature: float,
                       limit: int = DEFAULT_SIZE_LIMIT) -> dict[str, float]:
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    proportional = examples_proportional(sizes, limit)
    return _normalized({name: rate ** (1 / temperature) for name, rate in proportional.items()})


def equal(sizes: Mapping[str, float]) -> dict[str, float]:
    return _normalized({name: 1.0 for name in sizes})


class Mixing(enum.Enum):
    EXAMPLES_PROPORTIONAL = "examples_proportional"
    TEMPERATURE = "temperature"
    EQUAL = "equal"


def rates_of(sizes: Mapping[str, float], mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL, *,
             limit: int = DEFAULT_SIZE_LIMIT, temperature: float = 1.0) -> dict[str, float]:
    """Mixing rates of members of the given (scaled) sizes by a mixing strategy."""
    mixing = Mixing(mixing)
    if mixing is Mixing.EXAMPLES_PROPORTIONAL:
        return examples_proportional(sizes, limit)
    if mixing is Mixing.TEMPERATURE:
        return temperature_scaled(sizes, temperature, limit)
    return equal(sizes)


@dataclasses.dataclass(frozen=True)
class Mixture:
    """Tasks trained together; those not trained on (WNLI) are only evaluated. `scales`: a
    factor on a task's size before the limit (the t5 library's `rate_num_examples(scale=...)`)."""
    name: str
    tasks: tuple[Task, ...]
    scales: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def trained_tasks(self) -> tuple[Task, ...]:
        return tuple(task for task in self.tasks if task.trained_on)

    @property
    def lengths(self) -> SequenceLengths:
        """Lengths that cut no member's sequences (a mixture trains and decodes at one length)."""
        return functools.reduce(SequenceLengths.covering, (task.lengths for task in self.tasks))

    def scaled_sizes(self, sizes: Mapping[str, int] | None = None) -> dict[str, float]:
        """The trained tasks' training-set sizes (the TFDS ones, or those of `sizes`, e.g. of
        local files) times their scales."""
        return {t.name: (sizes or {}).get(t.name, t.num_train_examples) * self.scales.get(t.name, 1.0)
                for t in self.trained_tasks}

    def rates(self, mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL, *,
              limit: int = DEFAULT_SIZE_LIMIT, temperature: float = 1.0,
              sizes: Mapping[str, int] | None = None) -> dict[str, float]:
        """Mixing rates of the trained tasks (see the module's formulas)."""
        return rates_of(self.scaled_sizes(sizes), mixing, limit=limit, temperature=temperature)
