"""A model directory's checkpoints: which ones it holds, which one is the newest (its
checkpoint state, the `checkpoint` file), and keeping only some (`keep_only`). The state names them relative to the directory, as
the trainer's saver writes it (`save_relative_paths`), whether the directory is given as a
relative path, an absolute one or a URL: a run reads the same from any working directory, and
after its folder moves.
"""
from __future__ import annotations

import contextlib
import posixpath
import re
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

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


def step_of(checkpoint: str) -> Optional[int]:
    """The global step `checkpoint` holds; for one without (BERT's and GPT-1's written by a
    conversion hold weights alone), the step its name gives (model.ckpt-N); else None."""
    reader = tf.train.load_checkpoint(checkpoint)
    if reader.has_tensor(tf.GraphKeys.GLOBAL_STEP):
        return int(reader.get_tensor(tf.GraphKeys.GLOBAL_STEP))
    match = _CHECKPOINT_STEP.search(checkpoint)
    return int(match.group(1)) if match else None


def write_state(model_dir: str, paths: Sequence[str]) -> None:
    """Lists `paths` (checkpoints of `model_dir` as `checkpoint_steps` gives them, oldest
    first) in the directory's checkpoint state, the last as the newest."""
    # tf.train.update_checkpoint_state takes a relative path as relative to the working
    # directory and rewrites it against a relative model_dir: a bare name given for
    # runs/t5_rte becomes ../../model.ckpt-8. The saver's relative mode, given the paths as
    # they are from here, stores the names within the directory in every case.
    tf2.__internal__.train.update_checkpoint_state(
        model_dir, paths[-1], all_model_checkpoint_paths=list(paths), save_relative_paths=True)


def keep_only(model_dir: str, steps: Iterable[int]) -> List[int]:
    """Deletes the checkpoints of other steps and lists the kept ones in the checkpoint state
    (the newest stays the latest). Returns the kept steps."""
    available = checkpoint_steps(model_dir)
    kept = sorted(set(steps) & set(available))
    for step, path in available.items():
        if step not in kept:
            for name in tf.io.gfile.glob(path + ".*"):
                tf.io.gfile.remove(name)
    if kept:
        write_state(model_dir, [available[step] for step in kept])
    return kept


# What makes a run's checkpoints, for the errors of a folder that holds none.
TRAIN_FIRST = ("train it first (python -m model pretrain --model_dir {dir} ..., "
               "or python -m model finetune with TrainConfig.init_checkpoint; model/TRAINING.md), or "
               "import a released one (python -m model import --model_dir {dir} ...; "
               "model/CONVERSIONS.md)")


def no_checkpoint_error(model_dir: str) -> FileNotFoundError:
    """The error of a command on a run whose model directory holds no checkpoint: there is no
    such folder, or it holds none; and what to run first."""
    problem = ("holds no checkpoint (model.ckpt-N.index)" if tf.io.gfile.isdir(model_dir)
               else "no such folder")
    return FileNotFoundError(f"--model_dir {model_dir}: {problem}; "
                             + TRAIN_FIRST.format(dir=model_dir))


def require_folder(model_dir: str) -> None:
    """Raises `no_checkpoint_error` unless `model_dir` is a folder."""
    if not tf.io.gfile.isdir(model_dir):
        raise no_checkpoint_error(model_dir)


def require_checkpoints(model_dir: str) -> None:
    """Raises `no_checkpoint_error` unless `model_dir` holds a checkpoint."""
    if not checkpoint_steps(model_dir):
        raise no_checkpoint_error(model_dir)


def _missing_newest(model_dir: str, named: Optional[str], held: Sequence[str]) -> str:
    """What is wrong with a checkpoint state that names a checkpoint which is not there
    (`named`; None: there is no state), and how to choose one of those `held` instead."""
    state = posixpath.join(model_dir, STATE_NAME)
    problem = (f"{state} names {named} as the newest checkpoint, which is missing (no "
               f"{named}.index)" if named
               else f"{model_dir} has no {STATE_NAME} file naming its newest checkpoint")
    if not held:
        return f"{problem}; {model_dir} holds no checkpoint (model.ckpt-N.index)"
    names = [posixpath.basename(path) for path in held]
    return (f"{problem}; {model_dir} holds {', '.join(names)}: choose one with --checkpoint "
            f"{names[-1]} (a name in the model directory), or --checkpoint best (the best "
            "checkpoint of eval/best.json)")


def newest_checkpoint(model_dir: str) -> Optional[str]:
    """The path of the newest checkpoint of `model_dir`, as its checkpoint state names it; None
    when the directory holds no checkpoint. A state that names a checkpoint which is not there,
    or checkpoints without a state, is an error saying which is missing and what is there
    (tf.train.latest_checkpoint would answer None, as for an empty directory)."""
    state = tf.train.get_checkpoint_state(model_dir)
    named = state.model_checkpoint_path if state else None
    if named and tf.io.gfile.exists(named + ".index"):
        return named
    held = list(checkpoint_steps(model_dir).values())
    if not named and not held:
        return None
    raise FileNotFoundError(_missing_newest(model_dir, named, held))


# --- A checkpoint that does not read whole -----------------------------------------------------

def checkpoint_files(checkpoint: str) -> List[str]:
    """The files of `checkpoint` (a path without suffix): its index and data shards."""
    return sorted(tf.io.gfile.glob(checkpoint + ".index")
                  + tf.io.gfile.glob(checkpoint + ".data-*"))


def damage(checkpoint: str) -> Optional[str]:
    """What TensorFlow says when it reads every tensor of `checkpoint` (a file cut short, a
    checksum that does not match, a shard missing); None when all of them read."""
    try:
        reader = tf.train.load_checkpoint(checkpoint)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    # A data file cut short is an IndexError ("Read less bytes than requested"); the rest,
    # TensorFlow's DataLossError, NotFoundError...
    except (tf.errors.OpError, IndexError) as error:
        return (error.message if isinstance(error, tf.errors.OpError) else str(error)).strip()
    return None


class DamagedCheckpointError(ValueError):
    """A checkpoint whose files do not read whole."""


def damaged_checkpoint_error(checkpoint: str, problem: str) -> DamagedCheckpointError:
    """The error naming a damaged checkpoint's files, and what to do."""
    folder = posixpath.dirname(checkpoint) or "."
    others = [posixpath.basename(path) for path in checkpoint_steps(folder).values()
              if path != checkpoint]
    choose = (f"choose another with --checkpoint ({folder} also holds {', '.join(others)})"
              if others else f"{folder} holds no other checkpoint")
    files = checkpoint_files(checkpoint)
    return DamagedCheckpointError(
        f"checkpoint {checkpoint} is damaged: {problem} (its files: "
        f"{', '.join(files) or 'none'}); a copy or a save that did not finish leaves files "
        f"cut short: copy them again from where the run saved them, or {choose}")


@contextlib.contextmanager
def naming_damage(checkpoint: str) -> Iterator[None]:
    """Runs the body, which reads `checkpoint`; an error it raises becomes
    `damaged_checkpoint_error` when the checkpoint does not read whole (any other error is
    raised as it was: reading it again tells the two apart)."""
    try:
        yield
    except Exception:
        problem = damage(checkpoint)
        if problem is None:
            raise
        raise damaged_checkpoint_error(checkpoint, problem) from None
