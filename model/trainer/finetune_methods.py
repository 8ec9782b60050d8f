"""The paper's fine-tuning methods (Section 3.5.1): which parameters a fine-tuning step updates.

- all parameters (the default);
- adapter layers: a dense-ReLU-dense block of inner size `ModelConfig.adapter_size` (the paper
  tries 32, 128, 512, 2048) after each feed-forward block (model/families/t5/architectures.py adds them);
  only the adapters and the layer norms are trained;
- gradual unfreezing: at first only the top block of each stack is trained, and one more block,
  from the top, is unfrozen every `unfreeze_every_steps` steps of fine-tuning (the paper: 2^18/12,
  so that all 12 blocks train in the last twelfth); encoder and decoder unfreeze in parallel.
  Parameters outside the blocks (the shared embedding, which is also the output layer, and the
  final layer norms) are trained throughout, as the paper does.

Frozen-for-good parameters (adapters) are left out of the update; the gradients of blocks not yet
unfrozen are multiplied by 0 inside the step (the set changes with the global step, on TPU too).
Adafactor then leaves those parameters exactly as they are (its update is gradient / sqrt(second
moment), scaled and clipped: zero for a zero gradient, with no momentum).
"""
from __future__ import annotations

import dataclasses
import enum
import re
from typing import List, Optional, Sequence, Tuple

import gin
import tensorflow.compat.v1 as tf

from model.trainer.mtf_compat import mtf

PAPER_UNFREEZE_EVERY_STEPS = 2 ** 18 // 12
_BLOCK = re.compile(r"(?:^|/)block_(\d+)/")
_ADAPTER_OR_LAYER_NORM = re.compile(r"(?:^|/)(adapter|layer_norm|final_layer_norm)/")


class Method(str, enum.Enum):
    ALL_PARAMETERS = "all_parameters"
    ADAPTERS = "adapters"
    GRADUAL_UNFREEZING = "gradual_unfreezing"


@gin.configurable
@dataclasses.dataclass(frozen=True)
class FineTuningMethod:
    """Bound in gin (model/gin/methods/): `FineTuningMethod.method = 'adapters'` (with
    `ModelConfig.adapter_size`), or 'gradual_unfreezing' (with `unfreeze_every_steps`)."""

    method: str = Method.ALL_PARAMETERS.value
    unfreeze_every_steps: int = PAPER_UNFREEZE_EVERY_STEPS

    def __post_init__(self) -> None:
        if self.method not in {m.value for m in Method}:
            raise ValueError(f"unknown fine-tuning method {self.method!r}; choose one of "
                             f"{[m.value for m in Method]}")
        if self.unfreeze_every_steps < 1:
            raise ValueError(f"unfreeze_every_steps must be positive, got {self.unfreeze_every_steps}")

    @property
    def kind(self) -> Method:
        return Method(self.method)

    @property
    def fresh_on_warm_start(self) -> Tuple[str, ...]:
        """Variables a pre-trained checkpoint lacks and this method adds (the adapters)."""
        return (r".*/adapter/.*",) if self.kind is Method.ADAPTERS else ()

    def check(self, adapter_size: int) -> None:
        """Adapters must exist to be trained alone; they are meant to be trained when they exist."""
        if self.kind is Method.ADAPTERS and adapter_size < 1:
            raise ValueError("FineTuningMethod.method = 'adapters' needs ModelConfig.adapter_size > 0")
        if adapter_size > 0 and self.kind is not Method.ADAPTERS:
            raise ValueError("ModelConfig.adapter_size is set: use FineTuningMethod.method = 'adapters' "
                             "(model/gin/methods/adapters_*.gin)")


def is_trained(name: str, method: Method) -> bool:
    """Whether a parameter is updated at all under `method` (adapters: only adapters and norms)."""
    return method is not Method.ADAPTERS or bool(_ADAPTER_OR_LAYER_NORM.search(name))


def block_of(name: str) -> Optional[int]:
    """The block number of a parameter (`encoder/block_003/...` -> 3); None outside the blocks."""
    match = _BLOCK.search(name)
    return int(match.group(1)) if match else None


def lowest_unfrozen_block(steps_done, num_blocks: int, every: int):
    """Gradual unfreezing: blocks from this index up are trained after `steps_done` fine-tuning
    steps (the top block at first, then one more every `every` steps). A tensor (also for ints)."""
    steps_done = tf.cast(steps_done, tf.int64)
    return tf.maximum(tf.constant(0, tf.int64), num_blocks - 1 - steps_done // every)


def trained_variables(variables: Sequence[mtf.Variable], method: FineTuningMethod) -> List[mtf.Variable]:
    return [v for v in variables if is_trained(v.name, method.kind)]


def gated_gradients(variables: Sequence[mtf.Variable], gradients: Sequence[mtf.Tensor],
                    method: FineTuningMethod, step: tf.Tensor, first_step: int
                    ) -> Tuple[mtf.Tensor, ...]:
    """The gradients, with those of blocks not yet unfrozen multiplied by 0 (gradual unfreezing).
    `step` is the global step this update produces (read before the increment: the first
    fine-tuning step is first_step + 1); `first_step` the one fine-tuning started from."""
    if method.kind is not Method.GRADUAL_UNFREEZING:
        return tuple(gradients)
    blocks = [block_of(v.name) for v in variables]
    num_blocks = 1 + max((b for b in blocks if b is not None), default=0)
    lowest = lowest_unfrozen_block(tf.cast(step, tf.int64) - 1 - first_step, num_blocks,
                                   method.unfreeze_every_steps)
    gated = []
    for variable, gradient, block in zip(variables, gradients, blocks):
        if block is None or gradient is None:
            gated.append(gradient)
            continue
        is_open = tf.cast(tf.greater_equal(tf.constant(block, tf.int64), lowest), tf.float32)
        gate = mtf.import_fully_replicated(gradient.mesh, is_open, mtf.Shape([]),
                                           name=f"unfrozen_{variable.name.replace('/', '_')}")
        gated.append(gradient * mtf.cast(gate, gradient.dtype))
    return tuple(gated)
