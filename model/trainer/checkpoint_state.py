"""A model directory's checkpoints: which ones it holds, and which one is the newest (its
checkpoint state, the `checkpoint` file). The state names them relative to the directory, as
the trainer's saver writes it (`save_relative_paths`), whether the directory is given as a
relative path, an absolute one or a URL: a run reads the same from any working directory, and
after its folder moves.
"""
from __future__ import annotations

import re
from typing import Dict, Sequence

import tensorflow as tf2
import tensorflow.compat.v1 as tf

STATE_NAME = "checkpoint"
_CHECKPOINT_STEP = re.compile(r"model\.ckpt-(\d+)$")


def checkpoint_steps(model_dir: str) -> Dict[int, str]:
    """{global step: checkpoint path} of the checkpoints in the model directory (all of them:
    a fine-tuning run keeps every checkpoint, which the checkpoint state file does not list)."""
    found = {}
    for index in tf.io.gfile.glob(f"{model_dir}/model.ckpt-*.index"):
        path = index[:-len(".index")]
        match = _CHECKPOINT_STEP.search(path)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def write_state(model_dir: str, paths: Sequence[str]) -> None:
    """Lists `paths` (checkpoints of `model_dir` as `checkpoint_steps` gives them, oldest
    first) in the directory's checkpoint state, the last as the newest."""
    # tf.train.update_checkpoint_state takes a relative path as relative to the working
    # directory and rewrites it against a relative model_dir: a bare name given for
    # runs/t5_rte becomes ../../model.ckpt-8. The saver's relative mode, given the paths as
    # they are from here, stores the names within the directory in every case.
    tf2.__internal__.train.update_checkpoint_state(
        model_dir, paths[-1], all_model_checkpoint_paths=list(paths), save_relative_paths=True)
