"""TFDS builder `t5_c4`: importing this package registers it for `tfds.load("t5_c4/en", ...)`.

Importing it also keeps messages that are not the user's business off stderr (`quiet`), before
Apache Beam is imported here."""
import atexit
import logging
import os
import sys

import pipelines  # noqa: F401  (its import drops Beam's import note: pipelines/__init__.py)

# Beam's own notes, each logged on every build: they say nothing about the user's data or code.
# Only these records are dropped; warnings and errors of the same loggers still show.
_BEAM_TYPE_HINT_LOGGER = "apache_beam.typehints.native_type_compatibility"  # 36 INFO per build
# Logs the exception of a failed step with its traceback, before Beam raises it to the caller.
_BEAM_STEP_ERROR_LOGGER = "apache_beam.runners.common"


def _not_an_empty_split(record: logging.LogRecord) -> bool:
    """Drops Beam's log of our EmptySplitError (13 lines of a worker's traceback): the build
    raises the same message to the caller, which says what to do."""
    return not (record.exc_info and record.exc_info[0] is not None
                and record.exc_info[0].__name__ == "EmptySplitError")


def _drop_tensorflow_teardown_errors() -> None:
    """From interpreter exit on, drops TensorFlow 2.15's `TypeError: 'NoneType' object is not
    subscriptable` in `AtomicFunction.__del__`: its module globals are already None when the
    functions of a tf.data pipeline (every tfds.load) are collected at shutdown. Every other
    unraisable exception goes to the hook that was in place."""
    previous = sys.unraisablehook

    def hook(unraisable, previous=previous):
        if not (unraisable.exc_type is TypeError
                and getattr(unraisable.object, "__qualname__", "") == "AtomicFunction.__del__"):
            previous(unraisable)

    sys.unraisablehook = hook


def quiet() -> None:
    # TensorFlow's C++ start-up notes (CUDA not found, CPU instructions, TensorRT), where
    # TensorFlow is imported after this package (tfds.load in a script): errors still show, and
    # a level the user set stands.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger(_BEAM_TYPE_HINT_LOGGER).setLevel(logging.WARNING)
    logging.getLogger(_BEAM_STEP_ERROR_LOGGER).addFilter(_not_an_empty_split)
    atexit.register(_drop_tensorflow_teardown_errors)


quiet()

from tfds_c4.inputs import BuildOptions, MissingInputError  # noqa: E402  (after quiet())
from tfds_c4.t5_c4 import EmptySplitError, T5C4, statistics  # noqa: E402

__all__ = ["BuildOptions", "EmptySplitError", "MissingInputError", "T5C4", "statistics"]
