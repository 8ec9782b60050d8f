"""The paths a run records (its vocabulary, its text sources, the checkpoint it started from):
recorded absolute, so that a later command on the run finds them from any working directory.

A path typed on the command line is relative to the working directory of the command; a path
in a run's `operative_config.gin` is read by later commands (eval, decode, export) run from
anywhere, so a training run binds the relative paths it is given as absolute ones before the
run's configs are built, and gin records them so (`bind_absolute`). URLs (`gs://...`) and
absolute paths are kept as given, as the t5 library's runs record their `gs://` paths.

Runs recorded before this kept the paths as typed: such a relative path still holds from the
folder the run was trained in, and is used as it is. A recorded path that is not there is an
error naming the setting, the operative config it came from and the `--gin_param` that
overrides it (`missing_recorded_path`): a run trained on another machine, or moved with its
data, is given the paths it has here that way.
"""
from __future__ import annotations

import os
from typing import Dict, Tuple

import gin
import tensorflow.compat.v1 as tf

from model.data import inputs
from model.data.language_mixture import PREFIX as LANGUAGES_PREFIX, mixture_root

VOCABULARY = "DataConfig.vocabulary"
SOURCE = "DataConfig.source"
EVAL_SOURCE = "DataConfig.eval_source"
INIT_CHECKPOINT = "TrainConfig.init_checkpoint"
# The settings that name files or folders: the source specs hold their path after a prefix
# (`tfds:NAME@DIR`, `languages:ROOT`: model/data/inputs.py, language_mixture.py).
PATH_SETTINGS = (VOCABULARY, SOURCE, EVAL_SOURCE, INIT_CHECKPOINT)
SOURCE_SETTINGS = (SOURCE, EVAL_SOURCE)


def split_location(setting: str, value: str) -> Tuple[str, str]:
    """(prefix, location): the part of a path setting's value that names a file, folder or glob
    (`location`, "" for none, as `tfds:NAME`) after what is not a path (`prefix`)."""
    if setting not in SOURCE_SETTINGS:
        return "", value
    root = mixture_root(value)
    if root is not None:
        prefix, location = split_location(setting, root)
        return LANGUAGES_PREFIX + prefix, location
    spec = inputs.tfds_spec(value)
    if spec is not None:
        name, data_dir = spec
        return (f"tfds:{name}@", data_dir) if data_dir else (value, "")
    return "", value


def is_local_relative(location: str) -> bool:
    return bool(location) and "://" not in location and not os.path.isabs(location)


def absolute(setting: str, value):
    """`value` with its location made absolute against the working directory when it is a
    relative local path; anything else (None, "", URLs, absolute paths) as it is."""
    if not isinstance(value, str):
        return value
    prefix, location = split_location(setting, value)
    return prefix + os.path.abspath(location) if is_local_relative(location) else value


def bind_absolute() -> Dict[str, str]:
    """Binds every path setting that is bound to a relative path, unscoped or in one of the
    current gin scopes, to its absolute path: what the run's configs, built next in this scope,
    use and gin records. Returns {binding key: absolute value} of those rebound."""
    scopes = gin.current_scope()
    rebound = {}
    for depth in range(len(scopes) + 1):
        scope = "/".join(scopes[:depth])
        for setting in PATH_SETTINGS:
            key = f"{scope}/{setting}" if scope else setting
            try:
                value = gin.query_parameter(key)
            except ValueError:  # gin's answer for a key that nothing binds
                continue
            if absolute(setting, value) != value:
                rebound[key] = absolute(setting, value)
                gin.bind_parameter(key, rebound[key])
    return rebound


def exists(setting: str, value: str) -> bool:
    """Whether what a path setting names is there: the file or folder, a match of a glob, a
    checkpoint prefix (`model.ckpt-N`, whose files add suffixes); True for a value without a
    location (`tfds:NAME`) and for URLs, which only the library reading them can check."""
    _, location = split_location(setting, value)
    if not location or "://" in location:
        return True
    if setting == INIT_CHECKPOINT and tf.io.gfile.exists(location + ".index"):
        return True
    return tf.io.gfile.exists(location) or bool(tf.io.gfile.glob(location))


def override_hint(setting: str) -> str:
    return f"--gin_param \"{setting} = 'PATH'\""


def missing_recorded_path(setting: str, value: str, operative_config: str) -> FileNotFoundError:
    """The error for a path setting that a run's operative config recorded and that is not
    there: where it came from, and how to give the path it has here."""
    _, location = split_location(setting, value)
    if is_local_relative(location):
        why = ("a relative path, recorded as given by a run trained before runs recorded "
               "absolute paths: it holds from the folder that run was trained in")
    else:
        why = "moved, deleted, or on another machine"
    return FileNotFoundError(
        f"{setting} = {value!r}, recorded in {operative_config}, is not there ({why}); give "
        f"the path it has here with {override_hint(setting)}")
