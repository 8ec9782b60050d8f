"""What the filters took out, as records beside the corpus (`--exclusions DIR`): for a sample of
pages chosen by URL hash (`--exclusion_fraction`), each page a stage dropped (its text as it was
then), each line the cleaning removed and each span the dedup removed (with its page's URL), and
each page the run kept (its URL, timestamp, language and length, not its text: what a datasheet
compares the dropped pages with).

Files, sharded and ordered as the output (by URL hash, then URL):
- `exclusions-SSSSS-of-NNNNN.jsonl.gz`: {"url", "timestamp", "stage", "reason", "level", "text"}
  where `level` is `page`, `line` or `span` and the record is counted by the stage's counter
  `<level>s.dropped:<reason>` (the records of each reason number that counter at fraction 1);
- `kept-SSSSS-of-NNNNN.jsonl.gz`: {"url", "timestamp", "language", "chars"};
- `exclusions.json`: the fraction and the records written per stage and reason.

The sample depends on the normalized URL alone, so all pages of a URL are in it or none, and the
records are the same on every runner; the kept output does not change.
"""
import gzip
import json
import os
from typing import Dict, Iterable, List, Optional

import orjson
from apache_beam.io.filesystems import FileSystems

from pipelines.exclusion_sample import EXCLUSIONS_SPLIT, KEPT_SPLIT, Excluded
from pipelines.records import write_json
from pipelines.writers.output import SortEntry, shard_glob

SUMMARY_FILE = "exclusions.json"
# Where the files' lines are counted: not a `c4.` stage, so not in stats.json.
COUNTER_NAMESPACE = "exclusions.write"


def max_shards(output_max_shards: Dict[str, int]) -> Dict[str, int]:
    """The most files of each kind: as many as the output's train split may have."""
    return {EXCLUSIONS_SPLIT: output_max_shards["train"], KEPT_SPLIT: output_max_shards["train"]}


def split_of(record: Excluded) -> str:
    return record.split


def sort_entry(record: Excluded) -> SortEntry:
    return record.normalized_url, record.url, record.timestamp, record.line


def files(directory: str, split: str) -> List[str]:
    """The files of a kind (EXCLUSIONS_SPLIT, KEPT_SPLIT) in `directory`, in shard order."""
    pattern = FileSystems.join(directory, shard_glob(split))
    return sorted(metadata.path for match in FileSystems.match([pattern])
                  for metadata in match.metadata_list)


def lines(directory: str, split: str) -> Iterable[bytes]:
    """The lines of a kind of file, shard after shard."""
    for path in files(directory, split):
        with FileSystems.open(path, compression_type="uncompressed") as compressed:
            yield from gzip.GzipFile(fileobj=compressed)


def summary(directory: str, fraction: float) -> dict:
    """What the files of `directory` hold: the records per stage and `<level>:<reason>`, and the
    kept pages (read from the files, so it is true of them whoever wrote them)."""
    records: Dict[str, Dict[str, int]] = {}
    for line in lines(directory, EXCLUSIONS_SPLIT):
        record = orjson.loads(line)
        by_reason = records.setdefault(record["stage"], {})
        name = f"{record['level']}:{record['reason']}"
        by_reason[name] = by_reason.get(name, 0) + 1
    return {"fraction": fraction,
            "records": {stage: dict(sorted(counts.items()))
                        for stage, counts in sorted(records.items())},
            "kept": sum(1 for _ in lines(directory, KEPT_SPLIT))}


def write_summary(directory: str, fraction: float) -> None:
    write_json(FileSystems.join(directory, SUMMARY_FILE), summary(directory, fraction))


class NotFound(FileNotFoundError):
    """A run's exclusions are not where they were looked for: the message names every place."""


def recorded_directory(run_config: dict) -> Optional[str]:
    """The exclusions folder run_config.json records (`{"directory", "fraction"}`; an older
    record names the folder alone); None for a run that wrote none."""
    recorded = run_config.get("exclusions")
    if isinstance(recorded, dict):
        recorded = recorded.get("directory")
    return recorded or None


def _has_summary(directory: str) -> bool:
    return FileSystems.exists(FileSystems.join(directory, SUMMARY_FILE))


def candidates(output_dir: str, recorded: str) -> List[str]:
    """Where a recorded exclusions folder may be. Older runs recorded it as given, relative to
    the folder the run was started from, which is unknown: from here, from each folder above
    OUT (nearest first: one of them is the launch folder when OUT was given below it), and
    inside OUT by its last name."""
    if "://" in recorded or os.path.isabs(recorded):
        return [recorded]
    above = []
    folder = os.path.dirname(os.path.abspath(output_dir))
    while folder not in above:
        above.append(folder)
        folder = os.path.dirname(folder)
    found = [os.path.abspath(recorded)] + [os.path.join(folder, recorded) for folder in above]
    found.append(os.path.join(os.path.abspath(output_dir), os.path.basename(recorded)))
    return list(dict.fromkeys(found))


def locate(output_dir: str, run_config: dict, given: Optional[str] = None) -> Optional[str]:
    """The folder of a run's exclusions: `given`, else the one its run_config.json records
    (found from any working folder, see `candidates`; one whose fraction is not the recorded
    one is another run's); None when the run wrote none and none is given. Raises NotFound
    naming where it looked."""
    if given:
        if not _has_summary(given):
            raise NotFound(f"no exclusions at {given} (--exclusions): {SUMMARY_FILE} is missing")
        return given
    recorded = recorded_directory(run_config)
    if recorded is None:
        return None
    fraction = (run_config["exclusions"].get("fraction")
                if isinstance(run_config["exclusions"], dict) else None)
    looked = candidates(output_dir, recorded)
    for directory in looked:
        if _has_summary(directory) and (fraction is None or json.loads(FileSystems.open(
                FileSystems.join(directory, SUMMARY_FILE)).read())["fraction"] == fraction):
            return directory
    of_fraction = f" of fraction {fraction:g}" if fraction is not None else ""
    raise NotFound(f"the run in {output_dir} recorded its exclusions at {recorded}, but no "
                   f"{SUMMARY_FILE}{of_fraction} is in any of: {', '.join(looked)}. Name the "
                   "folder with --exclusions DIR")
