"""Runs in parts are retired (a run in pieces runs in stages: pipelines/staged.py). The names
pipelines/staged.py and tests/test_staged.py still take from here are pipelines/executors/
base.py's; this module goes when they take them from there."""
from pipelines.executors.base import (LOCK_FILE, PARTS_CONFIG_FILE, PARTS_FOLDER, PROGRESS_FILE,
                                      OutputLock, parts_dir)

__all__ = ["LOCK_FILE", "PARTS_CONFIG_FILE", "PARTS_FOLDER", "PROGRESS_FILE", "OutputLock",
           "parts_dir"]
