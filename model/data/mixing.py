"""Mixing rates: the probability of drawing the next example from each member of a mixture.

Given the members' sizes e_m (numbers of training examples, each already times its scale), as
the t5 library's `rate_num_examples(maximum=K, temperature=T)` rates them, renormalized:
  examples-proportional:  r_m = min(e_m, K) / sum_n min(e_n, K)
  temperature-scaled:     r_m proportional to min(e_m, K) ** (1 / T)
  equal:                  r_m = 1 / N
K is optional here (`limit=None`: no limit, `rate_num_examples`' own default, and
multilingual-t5's for mT5's languages: T = 1/0.3, r_L proportional to |L|^0.3). The paper's
task mixtures always apply one (model/tasks/mixtures.py).
"""
from __future__ import annotations

import enum
from typing import Mapping, Optional


def _normalized(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0 or any(weight < 0 for weight in weights.values()):
        raise ValueError(f"mixing weights must be non-negative with a positive sum: {dict(weights)}")
    return {name: weight / total for name, weight in weights.items()}


def _limited(sizes: Mapping[str, float], limit: Optional[int]) -> dict[str, float]:
    if limit is None:
        return dict(sizes)
    if limit < 1:
        raise ValueError(f"the size limit K must be positive, got {limit}")
    return {name: min(size, limit) for name, size in sizes.items()}


def examples_proportional(sizes: Mapping[str, float], limit: Optional[int] = None) -> dict[str, float]:
    return _normalized(_limited(sizes, limit))


def temperature_scaled(sizes: Mapping[str, float], temperature: float,
                       limit: Optional[int] = None) -> dict[str, float]:
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
             limit: Optional[int] = None, temperature: float = 1.0) -> dict[str, float]:
    """Mixing rates of members of the given (scaled) sizes by a mixing strategy."""
    mixing = Mixing(mixing)
    if mixing is Mixing.EXAMPLES_PROPORTIONAL:
        return examples_proportional(sizes, limit)
    if mixing is Mixing.TEMPERATURE:
        return temperature_scaled(sizes, temperature, limit)
    return equal(sizes)
