"""A finished run of the pipeline (`python -m pipelines.c4`, in one job, in parts or in stages,
on this machine or on Dataflow) published as the TFDS dataset without computing it again: its
shards are read as they are, its counters and validation fraction become the dataset's metadata.

The run must be finished (`stats.json` without progress or error, `run_config.json` beside
it) and be of the config being built: the same variant under the same rule set. Its shards are
read in the format it wrote them in (run_config.json's `format`; gzipped JSON lines before that
option); the rest of its folder (README.md, the dataset card) is not read, nor any shard but
the run's own: a split's files of the number stats.json gives it (another run's, of another
number, may lie beside them).
"""
import gzip
import json
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems
import pyarrow.parquet as pq

from pipelines.config import VariantConfig
from pipelines.filters import mc4
from pipelines.readers import files
from pipelines.stats import provenance, stats
from pipelines.writers import output

SPLITS = ("train", "validation")


class UnpublishableRun(Exception):
    """The folder holds no finished run of the config built; the message says what it holds."""


def _json_file(folder: str, name: str) -> Optional[dict]:
    path = FileSystems.join(folder, name)
    if not FileSystems.exists(path):
        return None
    try:
        return json.loads(files.read_all(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise UnpublishableRun(f"{path} is not the pipeline's JSON ({error})") from None


def finished_run(folder: str, config: VariantConfig) -> Tuple[dict, stats.Stats]:
    """(run_config.json, the run's counters) of the finished run of `config` in `folder`;
    UnpublishableRun naming what is missing or different."""
    run_stats = _json_file(folder, stats.STATS_FILE)
    run_config = _json_file(folder, provenance.RUN_CONFIG_FILE)
    if run_stats is None or run_config is None:
        raise UnpublishableRun(f"{folder} holds no finished run of pipelines.c4 (no "
                               f"{stats.STATS_FILE} and {provenance.RUN_CONFIG_FILE})")
    if "error" in run_stats:
        raise UnpublishableRun(f"the run in {folder} failed: {run_stats['error']}")
    if "progress" in run_stats:
        raise UnpublishableRun(f"the run in {folder} has not finished (its {stats.STATS_FILE} "
                               "says how far it got): rerun its command to finish it")
    variant, rules = run_config.get("variant"), run_config.get("config", {}).get("rules")
    if (variant, rules) != (config.name, config.rules):
        hint = (f"build t5_c4/{variant} to publish it" if variant != config.name
                else f"builder keyword rules={rules} for the same rules")
        raise UnpublishableRun(f"the run in {folder} is {variant} under the {rules} rules; this "
                               f"build is {config.name} under the {config.rules} rules ({hint})")
    counters = dict(run_stats.get("stages", {}))
    problems = run_stats.get("file_problems", [])
    if problems:
        counters[stats.FILE_PROBLEMS] = {
            stats.file_problem_counter(**problem): 1 for problem in problems}
    return run_config, stats.merged(counters)


def shard_format(run_config: dict) -> str:
    """The format of a finished run's shards: runs from before --format wrote JSON lines."""
    return run_config.get("format", output.JSONL)


def listed_shards(folder: str) -> Optional[Dict[str, int]]:
    """The number of files of each split a finished run's stats.json gives (stats.SHARDS_FIELD);
    None for a run from before that record."""
    return (_json_file(folder, stats.STATS_FILE) or {}).get(stats.SHARDS_FIELD)


def shard_files(folder: str, split: str, language: Optional[str],
                format_of_shards: str = output.JSONL,
                listed: Optional[Mapping[str, int]] = None) -> List[str]:
    """The split's shards in the run's folder (a language's folder for mC4), in order: as many
    as `listed` (listed_shards) gives it, or every one in the folder for a run without that
    record."""
    count = None
    if listed is not None:
        count = listed.get(f"{language}/{split}" if language else split, 0)
    if language:
        folder = FileSystems.join(folder, language)
    pattern = FileSystems.join(folder, output.shard_glob(split, format_of_shards, count))
    return sorted(metadata.path for match in FileSystems.match([pattern])
                  for metadata in match.metadata_list)


def split_shards(folder: str, config: VariantConfig, counters: stats.Stats,
                 languages: Sequence[str], format_of_shards: str = output.JSONL
                 ) -> Dict[Tuple[str, Optional[str]], List[str]]:
    """{(split, language): its shards} of every split the dataset has: mC4's of `languages`
    (default: every language the run wrote), else train and validation. A split without a
    shard is an UnpublishableRun (TFDS cannot write an empty split)."""
    per_language = config.language.detector == "cld3"
    chosen = (tuple(languages) or tuple(stats.languages_of(counters))) if per_language else (None,)
    listed = listed_shards(folder)
    found = {(split, language): shard_files(folder, split, language, format_of_shards, listed)
             for language in chosen for split in SPLITS}
    empty = [mc4.split_name(language, split) if language else split
             for (split, language), shards in found.items() if not shards]
    if empty:
        raise UnpublishableRun(f"the run in {folder} wrote no page to {', '.join(empty)}: TFDS "
                               "cannot write an empty split"
                               + (" (choose the languages with the builder keyword languages)"
                                  if per_language else ""))
    return found


def corpus_shards(folder: str) -> List[str]:
    """Every shard of the run in `folder`, whatever its variant, sorted: each split's at the
    top and in each language's folder (mC4's), in the format its run_config.json names (JSON
    lines without one), as many as its stats.json lists, or, for a run without that record,
    every one there. What a study of the whole corpus reads, each with records_of."""
    chosen = shard_format(_json_file(folder, provenance.RUN_CONFIG_FILE) or {})
    listed = listed_shards(folder)
    if listed is None:
        patterns = [FileSystems.join(folder, *place, output.shard_glob(split, chosen))
                    for place in ((), ("*",)) for split in SPLITS]
        return sorted(metadata.path for match in FileSystems.match(patterns)
                      for metadata in match.metadata_list)
    places = sorted({name.rpartition("/")[::2] for name in listed})  # (language or "", split)
    return sorted(path for language, split in places
                  for path in shard_files(folder, split, language or None, chosen, listed))


def records_of(path: str):
    """The records of one shard (gzipped JSON lines or Parquet, by its name), in its order."""
    if path.endswith(output.SHARD_SUFFIXES[output.PARQUET]):
        with files.open_raw(path) as stored:
            for batch in pq.ParquetFile(stored).iter_batches():
                yield from batch.to_pylist()
        return
    with gzip.open(files.open_raw(path), "rt", encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)
