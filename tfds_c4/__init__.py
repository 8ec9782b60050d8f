"""TFDS builder `t5_c4`: importing this package registers it for `tfds.load("t5_c4/en", ...)`."""
from tfds_c4.inputs import BuildOptions, MissingInputError
from tfds_c4.t5_c4 import EmptySplitError, T5C4, statistics

__all__ = ["BuildOptions", "EmptySplitError", "MissingInputError", "T5C4", "statistics"]
