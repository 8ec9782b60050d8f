"""Which second-moment statistics mtf's Adafactor keeps for each variable, and the setting that
decides it, read back from a checkpoint's slot names.

mtf's AdafactorOptimizer (mesh_tensorflow/optimize.py, `_factored_dims`) factors a variable's
second moment into row and column statistics (slots `VAR_slot_vr` and `VAR_slot_vc`) when its
second-largest dimension is at least `min_dim_size_to_factor` (mtf's default 128); otherwise it
keeps the whole matrix (`VAR_slot_v`), as for every variable of fewer than two dimensions. So a
checkpoint's slot names bound the value it was written with: at most the smallest second-largest
dimension of a factored variable, above the largest of a variable kept whole. A run restores
the slots its own optimizer makes, so it must use a value in that range
(model/trainer/warm_start.py says so when not; the t5 library's checkpoints import with one:
model/families/t5/mesh_tf.py).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import gin

SETTING = "AdafactorOptimizer.min_dim_size_to_factor"
MTF_DEFAULT = 128
_SLOT = re.compile(r"(.+)_slot_(vr|vc|v)")
_FACTORED_KINDS = {"vr", "vc"}
# A checkpoint's variables: name -> (shape, dtype name), as warm_start.checkpoint_variables.
Variables = Mapping[str, Tuple[Sequence[int], str]]


class FactoringError(ValueError):
    """No value of min_dim_size_to_factor gives the checkpoint's slots, or the run's does not."""


def factoring_size(shape: Sequence[int]) -> Optional[int]:
    """The size `_factored_dims` compares with min_dim_size_to_factor: the second-largest
    dimension; None for fewer than two dimensions (never factored)."""
    return sorted(shape, reverse=True)[1] if len(shape) >= 2 else None


@dataclasses.dataclass(frozen=True)
class FactoringRange:
    """The values of min_dim_size_to_factor that give a checkpoint's slots: `low` to `high`
    (None: any value from `low` up)."""

    low: int
    high: Optional[int]

    def __contains__(self, value: int) -> bool:
        return self.low <= value and (self.high is None or value <= self.high)

    def nearest(self, value: int) -> int:
        return max(self.low, value if self.high is None else min(value, self.high))

    def __str__(self) -> str:
        return f"{self.low} or more" if self.high is None else f"{self.low} to {self.high}"


def run_value() -> int:
    """The run's min_dim_size_to_factor: gin's binding, else mtf's default."""
    try:
        return gin.query_parameter(SETTING)
    except ValueError:  # gin's answer for a parameter that nothing binds
        return MTF_DEFAULT


def slots_range(checkpoint: Variables) -> Optional[FactoringRange]:
    """The values that give the checkpoint's Adafactor slots (None: it has none). Raises
    FactoringError naming the variables that no single value explains."""
    kinds: Dict[str, set] = {}
    for name in checkpoint:
        match = _SLOT.fullmatch(name)
        if match and match.group(1) in checkpoint:
            kinds.setdefault(match.group(1), set()).add(match.group(2))
    if not kinds:
        return None
    factored, whole, conflicts = {}, {}, []
    for variable, found in sorted(kinds.items()):
        shape = list(checkpoint[variable][0])
        size = factoring_size(shape)
        if found & _FACTORED_KINDS and ("v" in found or size is None):
            conflicts.append(f"{variable} {shape} has slots {sorted(found)}")
        elif found & _FACTORED_KINDS:
            factored[variable] = size
        elif size is not None:
            whole[variable] = size
    low = max(whole.values(), default=0) + 1
    high = min(factored.values(), default=None)
    if high is not None and high < low:
        smallest = min(factored, key=factored.get)
        largest = max(whole, key=whole.get)
        conflicts.append(f"{smallest} {list(checkpoint[smallest][0])} is factored (_slot_vr, "
                         f"_slot_vc: {SETTING} <= {high}) but {largest} "
                         f"{list(checkpoint[largest][0])} is not (_slot_v: {SETTING} > "
                         f"{whole[largest]})")
    if conflicts:
        raise FactoringError(f"no value of {SETTING} gives the checkpoint's Adafactor slots:\n  "
                             + "\n  ".join(conflicts))
    return FactoringRange(low, high)


def source_binding(checkpoint: Variables) -> Dict[str, int]:
    """{SETTING: value} that a run continuing from the checkpoint's slots is to bind: gin's
    value, where it gives the checkpoint's slots; without one, the value nearest mtf's default
    that gives them where the default does not. {} when gin binds none and the default gives
    them, or the checkpoint has no slots. Raises FactoringError when no value gives them, or
    gin's does not."""
    needed = slots_range(checkpoint)
    try:
        bound = gin.query_parameter(SETTING)
    except ValueError:  # unbound: mtf's default
        if needed is None or MTF_DEFAULT in needed:
            return {}
        return {SETTING: needed.nearest(MTF_DEFAULT)}
    if needed is not None and bound not in needed:
        raise FactoringError(f"{SETTING}: gin says {bound}, the checkpoint's Adafactor slots "
                             f"were written with {needed}")
    return {SETTING: bound}


def refactored_slots(missing: Sequence[str], found: Callable[[str], bool]) -> List[str]:
    """The slots of `missing` that a checkpoint holds in the other form (factored for whole,
    or whole for factored): `found(name)` says whether it holds `name` (the warm start's
    lookup, aliases included)."""
    other = {"v": ("vr", "vc"), "vr": ("v",), "vc": ("v",)}
    refactored = []
    for name in missing:
        match = _SLOT.fullmatch(name)
        if match and all(found(f"{match.group(1)}_slot_{kind}") for kind in other[match.group(2)]):
            refactored.append(name)
    return refactored


def mismatch_hint(checkpoint: Variables) -> str:
    """What to set when the checkpoint's slots are factored otherwise than the run's."""
    try:
        needed = slots_range(checkpoint)
    except FactoringError as error:
        return f"Its Adafactor slots are factored otherwise than this run's, and {error}"
    return (f"Its Adafactor slots are factored otherwise than this run's: {SETTING} is "
            f"{run_value()} here, the checkpoint's slots were written with {needed}; bind one "
            f"of those.")
