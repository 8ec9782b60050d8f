"""Warm start (fine-tuning): every variable of the new run comes from a checkpoint, or fails.

As T5 (`mesh_tensorflow.transformer.utils`, `tf.train.init_from_checkpoint` on the master
variables, outside the TPU rewrite) with two differences:
- a variable that the checkpoint lacks is an error naming them all (T5 logs them and leaves them
  randomly initialised), unless it matches one of the family's or the run's `fresh` patterns
  (new heads); shapes and dtypes must match too (released T5 checkpoints store bfloat16: set
  `PrecisionConfig.master_dtype = 'bfloat16'` to load them). Adafactor's slots that the
  checkpoint factors otherwise than the run (`_slot_vr`/`_slot_vc` for `_slot_v`) name the
  setting, AdafactorOptimizer.min_dim_size_to_factor, and the values its slots were written
  with (model/trainer/adafactor_slots.py);
- the global step is restored with the rest, as T5 does: the run continues from the
  checkpoint's step (a fine-tuning run of N steps trains to step checkpoint + N). Restarting at
  step 0 would make Adafactor's second-moment decay 1 - (step + 1)^-0.8 zero at the first step,
  overwriting the warm-started optimizer slots with one batch's gradients.
Families whose reference code fine-tunes from the weights alone (BERT, GPT-1, SegaBERT:
`Family.warm_start_continues_training`, model/trainer/family.py) restore the trainable
variables only (`weights_only`): Adam's moments start at zero and the step at 0, so Adam's bias
correction and the fine-tuning schedule start over as in google-research/bert's
run_classifier.py and OpenAI's train.py.
Names are T5's (model/families/t5/architectures.py), so the released Mesh TF checkpoints load as they are.
"""
from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow.compat.v1 as tf

from model.trainer import adafactor_slots, checkpoint_state

VariableSpec = Tuple[Tuple[int, ...], str]  # shape, dtype name


class WarmStartError(ValueError):
    """The checkpoint cannot initialise this model."""


def checkpoint_name(name: str, checkpoint: Mapping[str, VariableSpec],
                    aliases: Sequence[Tuple[str, str]] = ()) -> Optional[str]:
    """The checkpoint's name for the model variable `name`: itself, else the first of its
    `aliases` (regular expression, replacement) renamings that the checkpoint has."""
    if name in checkpoint:
        return name
    for pattern, replacement in aliases:
        renamed = re.sub(pattern, replacement, name)
        if renamed in checkpoint:
            return renamed
    return None


def restore_plan(model: Mapping[str, VariableSpec], checkpoint: Mapping[str, VariableSpec],
                 fresh: Sequence[str] = (), aliases: Sequence[Tuple[str, str]] = ()
                 ) -> Dict[str, str]:
    """{checkpoint name: model name} of the model variables to read from the checkpoint, each
    under its own name or an alias; raises WarmStartError when one the model needs is missing
    (and matches no `fresh` pattern) or has another shape or dtype."""
    patterns = [re.compile(p) for p in fresh]
    found = {name: checkpoint_name(name, checkpoint, aliases) for name in model}
    missing = sorted(name for name, source in found.items() if source is None
                     and not any(p.fullmatch(name) for p in patterns))
    if missing:
        shown = "\n  ".join(missing[:50]) + ("\n  ..." if len(missing) > 50 else "")
        # Adafactor's slots that the checkpoint factors otherwise are a setting of the
        # optimizer, not of the model.
        refactored = adafactor_slots.refactored_slots(
            missing, lambda name: checkpoint_name(name, checkpoint, aliases) is not None)
        hints = []
        if len(refactored) < len(missing):
            hints.append("Check the architecture and size, or list variables that may start "
                         "fresh.")
        if refactored:
            hints.append(adafactor_slots.mismatch_hint(checkpoint))
        raise WarmStartError(
            f"the warm-start checkpoint lacks {len(missing)} variable(s) of this model:\n  "
            f"{shown}\n" + "\n".join(hints))
    mismatched = [f"{name}: model {model[name]}, checkpoint {checkpoint[source]}"
                  for name, source in sorted(found.items())
                  if source is not None and model[name] != checkpoint[source]]
    if mismatched:
        raise WarmStartError("warm-start variables differ in shape or dtype (shape, dtype):\n  "
                             + "\n  ".join(mismatched))
    return {source: name for name, source in sorted(found.items()) if source is not None}


def checkpoint_path(init_checkpoint: str) -> str:
    """A checkpoint path, or a directory's newest checkpoint. None there is an error saying
    whether the folder is missing or holds no checkpoint, and how a run gets one."""
    path = tf.train.latest_checkpoint(init_checkpoint) or init_checkpoint
    if not tf.io.gfile.exists(path + ".index"):
        problem = ("the folder holds no checkpoint (model.ckpt-N.index)"
                   if tf.io.gfile.isdir(init_checkpoint)
                   else f"no such folder, nor a checkpoint ({init_checkpoint}.index)")
        raise WarmStartError(f"no checkpoint at {init_checkpoint!r} (TrainConfig.init_checkpoint):"
                             f" {problem}; to start from a run, "
                             + checkpoint_state.TRAIN_FIRST.format(dir=init_checkpoint))
    return path


def checkpoint_variables(path: str) -> Dict[str, VariableSpec]:
    reader = tf.train.load_checkpoint(path)
    dtypes = reader.get_variable_to_dtype_map()
    return {name: (tuple(shape), dtypes[name].base_dtype.name)
            for name, shape in reader.get_variable_to_shape_map().items()}


def graph_variables(weights_only: bool = False) -> Dict[str, VariableSpec]:
    """The global (checkpointed) variables of the default graph: masters, slots, global step;
    with `weights_only`, the trainable master variables alone."""
    chosen = tf.trainable_variables() if weights_only else tf.global_variables()
    return {v.op.name: (tuple(v.shape.as_list()), v.dtype.base_dtype.name) for v in chosen}


def warm_start(init_checkpoint: str, fresh: Sequence[str] = (), weights_only: bool = False,
               aliases: Sequence[Tuple[str, str]] = ()) -> List[str]:
    """Sets the initial values of the graph's variables (`weights_only`: the trainable ones)
    from `init_checkpoint` (a path or a directory, its newest checkpoint), each from its own
    name or an alias (Family.checkpoint_aliases). Returns the model names restored."""
    path = checkpoint_path(init_checkpoint)
    plan = restore_plan(graph_variables(weights_only), checkpoint_variables(path), fresh, aliases)
    tf.train.init_from_checkpoint(path, plan)
    return sorted(plan.values())


def checkpoint_step(init_checkpoint: str) -> int:
    """The global step stored in a checkpoint (a path or a directory)."""
    return int(tf.train.load_variable(checkpoint_path(init_checkpoint), tf.GraphKeys.GLOBAL_STEP))


def first_step(init_checkpoint: Optional[str], continues_training: bool) -> int:
    """The global step a run starts from: the warm-start checkpoint's when the family continues
    its training (T5), else 0."""
    return checkpoint_step(init_checkpoint) if init_checkpoint and continues_training else 0
