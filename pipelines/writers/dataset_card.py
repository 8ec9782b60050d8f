"""`README.md`: a finished run's output folder as a Hugging Face dataset card, so that
`datasets.load_dataset(OUTPUT)` reads it (`load_dataset(OUTPUT, "de")` for a variant that writes
languages apart).

Its YAML front matter names one config per folder of shards: `default` for the output folder
itself (the config `datasets` loads when none is named), a language's name for each language
folder (mC4, de-fr-ro). A config's splits are the globs of its shards (output.shard_glob) with
their number of files (`train-*-of-00008.jsonl.gz`), so that `datasets` reads the run's own
files and none another run left beside them, with the record's features typed
(page.record_fields). A split with no page is written as one empty
file (output.shard_numbering), which `datasets` cannot load ("corresponds to no data"): the
card leaves it out of its config, and a config left with no split, and says so in its table.

The card is built from the run's counters, its variant and format and the listing of its
shards, never from times or paths, so every executor writes the same bytes. The YAML is
written by hand, each string quoted as JSON (a YAML double-quoted scalar), so that a language
named `no` stays a name and not YAML's false.
"""
import json
import re
from typing import Dict, List, Optional, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines.config import VariantConfig
from pipelines.counters import WRITE_STAGE, written
from pipelines.page import record_fields
from pipelines.stats import funnel
from pipelines.stats.provenance import RUN_CONFIG_FILE
from pipelines.stats.stats import STATS_FILE, Stats
from pipelines.writers import output

CARD_FILE = "README.md"
# The config of the shards in the output folder itself: `datasets` loads it when none is named.
DEFAULT_CONFIG = "default"
_FEATURE_TYPES = {str: "string", int: "int64", float: "float64"}
# `timestamp` (WARC-Date, 2019-04-18T10:13:24Z) is a time to `datasets`: its JSON loader reads
# JSON lines with pyarrow, which takes such strings for naive times, and a declared string would
# come back as "2019-04-18 10:13:24", neither the file's text nor a time. Declared as a UTC
# time, both formats load it as the same time (the Parquet shards keep the text, as the JSON).
_FEATURE_TYPE_OF_FIELD = {"timestamp": "timestamp[s, tz=UTC]"}
_FORMAT_WORDS = {output.JSONL: "gzipped JSON lines, a record a line",
                 output.PARQUET: "Parquet, a record a row"}
_LARGEST_REASONS = 3


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _shard_parts(path: str, shard_format: str) -> Tuple[str, str]:
    """(folder, split) of a shard's path relative to the output folder."""
    folder, _, name = path.rpartition("/")
    suffix = re.escape(output.SHARD_SUFFIXES[shard_format])
    match = re.fullmatch(rf"(.+)-\d{{5,}}-of-\d{{5,}}{suffix}", name)
    if match is None:
        raise ValueError(f"{path} is not the name of a {shard_format} shard")
    return folder, match.group(1)


def config_name(folder: str) -> str:
    return folder or DEFAULT_CONFIG


def split_files(shards: Sequence[str], shard_format: str) -> Dict[Tuple[str, str], int]:
    """(folder, split) -> its number of files, folders and splits in order."""
    counts: Dict[Tuple[str, str], int] = {}
    for path in shards:
        destination = _shard_parts(path, shard_format)
        counts[destination] = counts.get(destination, 0) + 1
    return dict(sorted(counts.items()))


def shard_counts(shards: Sequence[str], shard_format: str) -> Dict[str, int]:
    """A run's record of its files (stats.SHARDS_FIELD): each split's number of files, by
    `split`, or `folder/split` in a language folder."""
    return {f"{folder}/{split}" if folder else split: count
            for (folder, split), count in split_files(shards, shard_format).items()}


def data_glob(folder: str, split: str, shard_format: str, num_shards: Optional[int] = None
              ) -> str:
    """A split's files as a pattern relative to the output folder (those of `num_shards` files
    only, if given), as the card names them."""
    pattern = output.shard_glob(split, shard_format, num_shards)
    return f"{folder}/{pattern}" if folder else pattern


def _pages(counters: Stats, folder: str, split: str) -> int:
    return counters.get(WRITE_STAGE, {}).get(written(folder, split), 0)


def _front_matter(config: VariantConfig, loadable: Dict[str, List[str]],
                  files: Dict[Tuple[str, str], int], shard_format: str) -> List[str]:
    lines = ["---", "license: odc-by", f"pretty_name: {_quoted(_title(config))}"]
    if not loadable:
        return lines + ["---"]
    lines.append("configs:")
    for folder, splits in loadable.items():
        lines += [f"- config_name: {_quoted(config_name(folder))}", "  data_files:"]
        for split in splits:
            pattern = data_glob(folder, split, shard_format, files[folder, split])
            lines += [f"  - split: {_quoted(split)}", f"    path: {_quoted(pattern)}"]
    lines.append("dataset_info:")
    for folder in loadable:
        lines += [f"- config_name: {_quoted(config_name(folder))}", "  features:"]
        for name, kind in record_fields():
            dtype = _FEATURE_TYPE_OF_FIELD.get(name, _FEATURE_TYPES[kind])
            lines += [f"  - name: {_quoted(name)}", f"    dtype: {_quoted(dtype)}"]
    return lines + ["---"]


def _title(config: VariantConfig) -> str:
    return f"C4 {config.name} ({config.rules} rules)"


def _loading(loadable: Dict[str, List[str]]) -> List[str]:
    """How to load the folder: with no config name when its one config is the default, else
    with a language's (its last split, validation where it has pages)."""
    names = [config_name(folder) for folder in loadable]
    if not names:
        return ["No split holds a page: there is nothing for `datasets` to load."]
    if names == [DEFAULT_CONFIG]:
        example = 'dataset = load_dataset("path/to/this/folder")'
        which = f'its one config, "{DEFAULT_CONFIG}", is loaded when none is named'
    else:
        first = next(iter(loadable))
        example = (f'dataset = load_dataset("path/to/this/folder", {_quoted(names[0])}, '
                   f'split={_quoted(loadable[first][-1])})')
        which = f"a config per language folder: {', '.join(names)}"
    return ["Load it with the Hugging Face `datasets` library (" + which + "):", "",
            "```python", "from datasets import load_dataset", example, "```"]


def _files_table(files: Dict[Tuple[str, str], int], counters: Stats, shard_format: str
                 ) -> List[str]:
    lines = ["| config | split | files | pages |", "|---|---|---:|---:|"]
    for (folder, split), count in files.items():
        pages = _pages(counters, folder, split)
        note = "" if pages else " (empty: not in the config)"
        lines.append(f"| {config_name(folder)} | {split} | "
                     f"`{data_glob(folder, split, shard_format, count)}`: {count:,} | "
                     f"{pages:,}{note} |")
    return lines


def _counters_table(counters: Stats) -> List[str]:
    lines = ["| stage | pages kept | pages dropped | largest reasons |", "|---|---:|---:|---|"]
    for row in funnel.funnel_rows(counters):
        reasons = sorted(row.dropped.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{reason} {count:,}" for reason, count in reasons[:_LARGEST_REASONS])
        if len(reasons) > _LARGEST_REASONS:
            shown += f", {len(reasons) - _LARGEST_REASONS:,} more"
        lines.append(f"| {row.stage} | {row.kept:,} | {sum(row.dropped.values()):,} | {shown} |")
    return lines


def dataset_card(config: VariantConfig, shard_format: str, shards: Sequence[str],
                 counters: Stats) -> str:
    """The card of a run of `config` whose shards (paths relative to the output folder, `/`
    between a language folder and its files) are `shards` and whose counters are `counters`."""
    files = split_files(shards, shard_format)
    loadable: Dict[str, List[str]] = {}
    for folder, split in files:
        if _pages(counters, folder, split):
            loadable.setdefault(folder, []).append(split)
    empty = [f"{config_name(folder)} {split}" for folder, split in files
             if not _pages(counters, folder, split)]
    fields = ", ".join(f"`{name}`" for name, _ in record_fields())
    lines = _front_matter(config, loadable, files, shard_format) + [
        "", f"# {_title(config)}", "", config.description, "",
        f"Built from Common Crawl WET files by this project's `python -m pipelines.c4 --variant "
        f"{config.name} --rules {config.rules} --format {shard_format}`: the shards are "
        f"{_FORMAT_WORDS[shard_format]}, and each record has the fields {fields}.", ""]
    lines += _loading(loadable) + ["", "## Files", ""] + _files_table(files, counters,
                                                                       shard_format)
    if empty:
        lines += ["", "A split with no page is one empty file, which `datasets` cannot load: "
                  "the configs leave out " + ", ".join(empty) + "."]
    read = counters.get("read", {}).get("files.read", 0)
    lines += ["", "## The run", "",
              f"{read:,} WET files read. The pages each stage kept and dropped (every counter "
              f"is in `{STATS_FILE}`, the run's configuration in `{RUN_CONFIG_FILE}`, and "
              f"`{funnel.FUNNEL_FILE}` draws them):", ""] + _counters_table(counters)
    lines += ["", "## License", "",
              "The text comes from Common Crawl: this dataset is under the Open Data Commons "
              "Attribution License (ODC-BY), as the released C4 (allenai/c4) is, and its use "
              "is also bound by Common Crawl's terms of use "
              "(https://commoncrawl.org/terms-of-use)."]
    return "\n".join(lines) + "\n"


def shard_listing(output_dir: str, splits: Sequence[str], shard_format: str) -> List[str]:
    """The shards under `output_dir` (in it and in its folders one level down), as paths
    relative to it, sorted."""
    patterns = [FileSystems.join(output_dir, data_glob(folder, split, shard_format))
                for folder in ("", "*") for split in splits]
    prefix = FileSystems.join(output_dir, "")
    found = {metadata.path[len(prefix):]
             for match in FileSystems.match(patterns) for metadata in match.metadata_list}
    return sorted(found)


def write_dataset_card(config: VariantConfig, shard_format: str, shards: Sequence[str],
                       counters: Stats, output_dir: str) -> str:
    """The card of the run whose shards (shard_listing) are `shards`."""
    card = dataset_card(config, shard_format, shards, counters)
    path = FileSystems.join(output_dir, CARD_FILE)
    with FileSystems.create(path) as sink:
        sink.write(card.encode("utf-8"))
    return path
