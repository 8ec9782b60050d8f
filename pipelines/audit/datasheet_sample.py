"""The datasheet's facts (pipelines/audit/datasheet.py): its types, what it takes from the
run's counters, and what it reads of the exclusions sample, scaled by its fraction.
"""
import collections
import dataclasses
import json
import math
import urllib.parse
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines import exclusion_sample
from pipelines.counters import parse_dropped
from pipelines.records import read_all
from pipelines.stats import funnel, stats
from pipelines.wording import counted
from pipelines.writers import exclusions
from text.hashing import hash64

TABLE_ROWS = 10


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    examples_per_reason: int = 3
    # The sample's files are read whole, in order, until this many records of dropped pages,
    # lines and spans are read, and as large a share of its kept files: each file is a bucket
    # of URLs by hash, so whole files are a fair sample of the URLs.
    sample_records: int = 20_000
    # Never more records than this from either kind of file, so that the report's time and
    # memory stay bounded whatever the corpus: a file is cut there, and the page says so (its
    # records are in URL order, so a cut file's records lean to the alphabet's start).
    max_sample_records: int = 200_000
    # An example's text is cut to this many characters; a page shows its lines removed up to
    # `lines_per_example`.
    example_chars: int = 600
    lines_per_example: int = 4


@dataclasses.dataclass(frozen=True)
class DropReason:
    stage: str
    level: str  # "page", "line" or "span"
    reason: str  # Without the language of a stage that counts per language.
    count: int


@dataclasses.dataclass(frozen=True)
class LanguageRow:
    language: str
    # "<stage> <counter>" -> pages, the language's counters (stats.of_language), in stage order.
    counters: Dict[str, int]

    @property
    def kept(self) -> int:
        return sum(value for name, value in self.counters.items()
                   if name.split(" ", 1)[1].startswith("pages.written"))

    @property
    def dropped(self) -> int:
        return sum(value for name, value in self.counters.items()
                   if name.split(" ", 1)[1].startswith("pages.dropped"))


@dataclasses.dataclass
class Example:
    url: str
    timestamp: str
    rank: int  # The URL's hash: a reason's examples are those of the smallest, a fair choice.
    texts: List[str]  # The page's text, or the lines (spans) removed from it for the reason.
    more_texts: int = 0  # Lines (spans) removed for the reason beyond those shown.


@dataclasses.dataclass
class Sample:
    """What the report keeps of the exclusions sample: counts and a few examples, bounded."""
    fraction: float
    records_total: int  # In the exclusions files, by exclusions.json.
    kept_total: int
    sampled: Dict[str, Dict[str, int]]  # exclusions.json's records: stage -> "level:reason" -> n.
    records_read: int = 0
    kept_read: int = 0
    files_read: int = 0  # Of the exclusions files (and as large a share of the kept files).
    files_total: int = 0
    cut_inside_a_file: bool = False
    dropped_by_domain: Dict[str, collections.Counter] = dataclasses.field(default_factory=dict)
    removed_by_domain: Dict[str, collections.Counter] = dataclasses.field(default_factory=dict)
    kept_by_domain: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    dropped_by_month: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    kept_by_month: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    dropped_chars: Dict[str, List[int]] = dataclasses.field(default_factory=dict)
    kept_chars: List[int] = dataclasses.field(default_factory=list)
    # (stage, level, reason) -> URL -> example.
    examples: Dict[Tuple[str, str, str], Dict[str, Example]] = dataclasses.field(
        default_factory=dict)

    @property
    def dropped_scale(self) -> float:
        """Pages of the whole run that one dropped record read stands for."""
        return estimate_scale(self.fraction, self.records_total, self.records_read)

    @property
    def kept_scale(self) -> float:
        return estimate_scale(self.fraction, self.kept_total, self.kept_read)

    @property
    def exact(self) -> bool:
        """Whether every page of the run is in the sample and every record was read."""
        return (self.fraction >= 1 and self.records_read == self.records_total
                and self.kept_read == self.kept_total)


# ----------------------------------------------------------------------------------------------
# From the counters.

def ordered_stages(stats_record: dict) -> stats.Stats:
    """stats.json's stage counters, in pipeline order."""
    return stats.merged(stats.stage_counters(stats_record.get("stages", {})))


def drop_reasons(counters: stats.Stats) -> List[DropReason]:
    """Every drop counter with a count, by stage in pipeline order, then largest first. A stage
    that counts per language (mC4's `pages.dropped:badword:de`) gives one reason for all its
    languages: the table by language has them apart."""
    languages = set(stats.languages_of(counters))
    reasons = []
    for stage, stage_counters in counters.items():
        summed: Dict[Tuple[str, str], int] = {}
        for name, value in stage_counters.items():
            drop = parse_dropped(name)
            if drop is not None and value:
                level, reason = drop
                head, _, last = reason.rpartition(":")
                reason = head if head and last in languages else reason
                summed[level, reason] = summed.get((level, reason), 0) + value
        reasons += sorted((DropReason(stage, level, reason, count)
                           for (level, reason), count in summed.items()),
                          key=lambda drop: (-drop.count, drop.level, drop.reason))
    return reasons


def pages_in_and_out(counters: stats.Stats) -> Tuple[int, int]:
    """(pages read, pages written): what enters the first stage that counts pages, what the last
    keeps."""
    rows = funnel.funnel_rows(counters)
    if not rows:
        return 0, 0
    return rows[0].kept + sum(rows[0].dropped.values()), rows[-1].kept


def language_rows(counters: stats.Stats) -> List[LanguageRow]:
    """One row a language the run wrote apart (mC4), with its counters from language detection
    on, largest kept first; languages whose counters are all zero left out."""
    rows = []
    for language in stats.languages_of(counters):
        own = stats.of_language(counters, language)
        row = LanguageRow(language, {f"{stage} {name}": value for stage, named in own.items()
                                     for name, value in named.items()})
        if any(row.counters.values()):
            rows.append(row)
    return sorted(rows, key=lambda row: (-row.kept, row.language))


def flattened(record, prefix: str = "") -> List[Tuple[str, object]]:
    """run_config.json as (dotted key, value) rows: nested objects opened, lists kept whole."""
    if isinstance(record, dict) and record:
        return [row for key, value in record.items()
                for row in flattened(value, f"{prefix}.{key}" if prefix else str(key))]
    return [(prefix, record)]


# ----------------------------------------------------------------------------------------------
# From the exclusions sample.

def estimate_scale(fraction: float, total: int, read: int) -> float:
    """Pages of the whole run one record read stands for: the sample holds `fraction` of the
    URLs, and `read` of its `total` records were read (a fair share: the files are in URL hash
    order)."""
    if not read or not fraction:
        return 0.0
    return total / read / fraction


def domain_of(url: str) -> str:
    """The URL's host, lower case, without `www.`: the unit of the domain tables."""
    host = urllib.parse.urlsplit(url.strip()).hostname or "(no host)"
    return host[len("www."):] if host.startswith("www.") else host


def month_of(timestamp: str) -> str:
    """`2019-07` of a WARC date such as `2019-07-17T12:15:59Z`."""
    return timestamp[:7] if len(timestamp) >= 7 else "(no date)"


def capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({counted(len(text) - limit, 'more character')})"


def file_records(path: str) -> Iterator[dict]:
    with FileSystems.open(path) as source:  # Gunzipped, from the name.
        for line in iter(source.readline, b""):
            yield json.loads(line)


def read_files(paths: Sequence[str], add: Callable[[dict], None], enough: int,
               most: int) -> Tuple[int, bool]:
    """Gives `add` the records of whole files in turn until `enough` of them, never more than
    `most`; returns (files read, whether the last was cut)."""
    read = 0
    for files, path in enumerate(paths, 1):
        for record in file_records(path):
            if read == most:
                return files, True
            add(record)
            read += 1
        if read >= enough:
            return files, False
    return len(paths), False


def add_exclusion(sample: Sample, record: dict, config: ReportConfig) -> None:
    stage, level, reason = record["stage"], record["level"], record["reason"]
    domain = domain_of(record["url"])
    sample.records_read += 1
    if level == "page":
        sample.dropped_by_domain.setdefault(stage, collections.Counter())[domain] += 1
        sample.dropped_by_month[month_of(record["timestamp"])] += 1
        sample.dropped_chars.setdefault(stage, []).append(len(record["text"]))
    else:
        sample.removed_by_domain.setdefault(stage, collections.Counter())[domain] += 1
    examples = sample.examples.setdefault((stage, level, reason), {})
    text = capped(record["text"], config.example_chars)
    example = examples.get(record["url"])
    if example is None:
        rank = hash64(record["url"])
        if len(examples) == config.examples_per_reason:
            largest = max(examples.values(), key=lambda kept: kept.rank, default=None)
            if largest is None or rank >= largest.rank:
                return
            del examples[largest.url]
        examples[record["url"]] = Example(record["url"], record["timestamp"], rank, [text])
    elif len(example.texts) < config.lines_per_example:
        example.texts.append(text)
    else:
        example.more_texts += 1


def add_kept(sample: Sample, record: dict) -> None:
    sample.kept_read += 1
    sample.kept_by_domain[domain_of(record["url"])] += 1
    sample.kept_by_month[month_of(record["timestamp"])] += 1
    sample.kept_chars.append(record["chars"])


def read_sample(directory: str, config: ReportConfig) -> Sample:
    """The exclusions sample in `directory`, read up to the config's caps."""
    summary = json.loads(read_all(FileSystems.join(directory, exclusions.SUMMARY_FILE)))
    sampled = summary.get("records", {})
    sample = Sample(fraction=summary["fraction"],
                    records_total=sum(n for counts in sampled.values() for n in counts.values()),
                    kept_total=summary.get("kept", 0), sampled=sampled)
    exclusion_files = exclusions.files(directory, exclusion_sample.EXCLUSIONS_SPLIT)
    sample.files_total = len(exclusion_files)
    sample.files_read, cut = read_files(
        exclusion_files, lambda record: add_exclusion(sample, record, config),
        config.sample_records, config.max_sample_records)
    # The kept files of the same URL buckets: as many files, in the same share (a bucket
    # without a page of a kind has no file of it, so the numbers can differ on a small run).
    kept_files = exclusions.files(directory, exclusion_sample.KEPT_SPLIT)
    share_of_kept = kept_files[:math.ceil(len(kept_files) * sample.files_read
                                          / max(1, sample.files_total))]
    _, kept_cut = read_files(share_of_kept, lambda record: add_kept(sample, record),
                             config.max_sample_records, config.max_sample_records)
    sample.cut_inside_a_file = cut or kept_cut
    return sample


def scaled(count: float, scale: float) -> str:
    """`count` records of the sample as pages of the run: exact (no ≈) where each stands for
    one page, which is when every URL is in the sample and every record was read."""
    if not count:
        return "0"
    return f"{count:,}" if scale == 1 else f"≈{count * scale:,.0f}"


def in_stage_order(names, stages: List[str]) -> List[str]:
    """`names` in the order of `stages` (the counters'), any other after them by name."""
    return sorted(names, key=lambda name: (stages.index(name) if name in stages else len(stages),
                                           name))


def top_domains(counts: collections.Counter, rows: int = TABLE_ROWS) -> List[Tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:rows]
