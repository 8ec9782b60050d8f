"""`run_config.json`: what a run was built from, written beside `stats.json`.

The resolved variant is serialised generically (dataclasses.asdict), so a field added to
VariantConfig or to the configs inside it appears here by itself. The input list is recorded as
its count, first and last path and a sha256 digest (of the paths joined by newlines, each
followed by one), which tells whether two runs read the same files in the same order without
writing 56,000 paths; each external list is recorded with the sha256 of its stored bytes.
"""
import dataclasses
import importlib.metadata
import json
import platform
from typing import Any, Dict, Mapping, Optional

from apache_beam.io.filesystems import FileSystems

from pipelines.config import VariantConfig
from pipelines.readers.inputs import InputPlan
from pipelines.writers.output import JSONL

RUN_CONFIG_FILE = "run_config.json"
# The packages whose version changes what a run outputs (the language profiles and the detectors
# that run them, the parser of WET records, the runner, the compressors and encoders of the
# shards: ISA-L's gzip, orjson, pyarrow's Parquet).
_VERSIONED_PACKAGES = ("apache-beam", "langdetect", "langdetect-rs", "cld3-py", "warcio",
                       "tldextract", "nltk", "isal", "orjson", "pyarrow")


def json_default(value: Any):
    """JSON for what asdict leaves as is: sets in sorted order, anything else as text."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def run_config(config: VariantConfig, plan: InputPlan, validation_fraction: float,
               max_shards: Mapping[str, int], list_sha256: Mapping[str, str],
               pages_per_shard: Optional[int] = None,
               shard_format: str = JSONL) -> Dict[str, Any]:
    versions = {}
    for package in _VERSIONED_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "variant": config.name,
        "config": dataclasses.asdict(config),
        "validation_fraction": validation_fraction,
        # The files of a split are the buckets that got pages, at most these (output.py).
        "max_shards": dict(max_shards),
        "pages_per_shard": pages_per_shard,
        "format": shard_format,  # The shards' (--format): a run in parts refuses another.
        "inputs": {"files": plan.files, "first": plan.first, "last": plan.last,
                   "sha256": plan.sha256},
        "lists_sha256": dict(sorted(list_sha256.items())),
        "versions": {"python": platform.python_version(), **versions},
    }


def write_run_config(record: Mapping[str, Any], output_dir: str) -> str:
    path = FileSystems.join(output_dir, RUN_CONFIG_FILE)
    with FileSystems.create(path) as sink:
        sink.write(json.dumps(record, indent=2, default=json_default).encode("utf-8"))
    return path
