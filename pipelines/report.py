"""The datasheet of a C4 run: one self-contained HTML page, `OUT/report/index.html`.

    python -m pipelines.report OUT [--exclusions DIR] [--examples_per_reason K]

It reads what a finished run leaves beside its shards, never the shards themselves: stats.json
(every stage's counters), run_config.json, and, when the run wrote one, the exclusions sample
(`--exclusions DIR --exclusion_fraction F` of pipelines.c4: the dropped pages, lines and spans of
a fraction of URLs chosen by hash, and the pages kept of the same URLs). From the counters: the
summary, the funnel, the drop reasons per stage and mC4's table by language. From the sample,
scaled by 1/fraction and labelled as estimates: the domains most kept and most dropped per
filter, the crawl months, the page lengths, and examples of each drop reason. Beside them the
studies other tools leave in OUT/report/ (contamination.json, blocklist.json) and the run's
configuration.

The report's cost does not grow with the corpus: the sample is read in whole files (each a
bucket of URLs by hash, so whole files are a fair sample; inside one, records are in URL order)
until a fixed number of records, never past a hard cap, the estimates scaled by the share read;
and every table and plot has a fixed size. Bench: bench/bench_report.py.
The page has no script and loads nothing: the plots are inline SVG drawn by matplotlib with a
fixed hash salt and no date, so the same inputs give the same bytes.
"""
import argparse
import collections
import dataclasses
import html
import io
import json
import math
import os
import re
import sys
import urllib.parse
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import matplotlib
from matplotlib.figure import Figure
import numpy as np

from apache_beam.io.filesystems import FileSystems

from pipelines import exclusions, funnel, provenance, stats
from pipelines.counters import parse_dropped
from pipelines.records import read_all, write_atomically
from pipelines.wording import counted
from text.hashing import hash64

REPORT_DIR = "report"
REPORT_FILE = "index.html"
# The page's <meta> naming the exclusions sample it was built with: a page built with one is
# not replaced by one without it unless asked (--force).
SAMPLE_META = "c4-exclusions-sample"
# The studies other tools write into OUT/report/, shown when present.
CONTAMINATION_FILE = "contamination.json"
BLOCKLIST_FILE = "blocklist.json"

# contamination.json's measures (model/tasks/contamination.py) in the order shown, as headed.
CONTAMINATION_HEADINGS = {
    "examples": "examples", "in_characters": "measured in characters",
    "exact": "exact matches", "exact_share": "share exact",
    "too_short_for_exact": "too short for exact", "ngram13": "sharing an n-gram",
    "ngram13_share": "share by n-grams", "too_short_for_ngrams": "too short for n-grams"}
LEVEL_COLOURS = {"page": "#d9534f", "line": "#f0ad4e", "span": "#8e6bb8"}
KEPT_COLOUR = "#4c9a2a"
# Page lengths are binned on a log scale, 4 bins a decade from 1 to 10 million characters: the
# same bins for every run, so two datasheets' histograms compare.
LENGTH_BIN_EDGES = np.logspace(0, 7, 29)
_SUMMARY_REASONS = 5
_TABLE_ROWS = 10
_LONG_LIST_ITEMS = 12


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
    exclusion_files = exclusions.files(directory, exclusions.EXCLUSIONS_SPLIT)
    sample.files_total = len(exclusion_files)
    sample.files_read, cut = read_files(
        exclusion_files, lambda record: add_exclusion(sample, record, config),
        config.sample_records, config.max_sample_records)
    # The kept files of the same URL buckets: as many files, in the same share (a bucket
    # without a page of a kind has no file of it, so the numbers can differ on a small run).
    kept_files = exclusions.files(directory, exclusions.KEPT_SPLIT)
    share_of_kept = kept_files[:math.ceil(len(kept_files) * sample.files_read
                                          / max(1, sample.files_total))]
    _, kept_cut = read_files(share_of_kept, lambda record: add_kept(sample, record),
                             config.max_sample_records, config.max_sample_records)
    sample.cut_inside_a_file = cut or kept_cut
    return sample


def in_stage_order(names, stages: List[str]) -> List[str]:
    """`names` in the order of `stages` (the counters'), any other after them by name."""
    return sorted(names, key=lambda name: (stages.index(name) if name in stages else len(stages),
                                           name))


def top_domains(counts: collections.Counter, rows: int = _TABLE_ROWS) -> List[Tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:rows]


# ----------------------------------------------------------------------------------------------
# Plots: inline SVG, the same bytes for the same inputs.

_PLOT_STYLE = {"svg.fonttype": "none", "font.family": "sans-serif", "font.size": 9,
               "axes.spines.top": False, "axes.spines.right": False, "axes.titlesize": 10,
               "axes.titleweight": "bold", "axes.titlelocation": "left"}


def svg_of(figure: Figure, name: str) -> str:
    """The figure as an inline <svg>: no XML prolog, no date, and ids salted by `name` (the
    clip paths of two figures of the same layout would otherwise share ids in one page)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"pipelines.report.{name}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return _without_unreferenced_ids(text[text.index("<svg"):])


def _without_unreferenced_ids(svg: str) -> str:
    """matplotlib names each of its groups (`figure_1`, `axes_1`, `patch_2`): the same names in
    every figure, so several figures in one page would repeat them. Only the ids something
    refers to (clip paths, markers, salted) stay."""
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', svg))
    return re.sub(r' id="([^"]*)"',
                  lambda found: found.group(0) if found.group(1) in referenced else "", svg)


def drop_reason_plot(stage: str, reasons: List[DropReason]) -> str:
    """One stage's drop reasons as horizontal bars, coloured by what they count."""
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(4.6, 0.9 + 0.28 * len(reasons)), layout="constrained")
        axes = figure.add_subplot()
        positions = range(len(reasons))[::-1]
        axes.barh(list(positions), [drop.count for drop in reasons],
                  color=[LEVEL_COLOURS[drop.level] for drop in reasons], height=0.7)
        axes.set_yticks(list(positions),
                        [f"{drop.reason} ({drop.level}s)" for drop in reasons])
        largest = max(drop.count for drop in reasons)
        for position, drop in zip(positions, reasons):
            axes.text(drop.count + largest * 0.01, position, f"{drop.count:,}", va="center")
        axes.set_xlim(0, largest * 1.18)
        axes.set_title(stage)
        axes.tick_params(axis="y", length=0)
        return svg_of(figure, f"reasons.{stage}")


def month_plot(sample: Sample) -> str:
    months = sorted(set(sample.kept_by_month) | set(sample.dropped_by_month))
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(7.5, 2.8), layout="constrained")
        axes = figure.add_subplot()
        positions = np.arange(len(months))
        for offset, counts, scale, colour, label in (
                (-0.2, sample.kept_by_month, sample.kept_scale, KEPT_COLOUR, "kept"),
                (0.2, sample.dropped_by_month, sample.dropped_scale, LEVEL_COLOURS["page"],
                 "dropped (any stage)")):
            bars = axes.bar(positions + offset, [counts[m] * scale for m in months], width=0.4,
                            color=colour, label=label)
            # A bar of a few pages is flat beside hundreds: its number says it is there.
            axes.bar_label(bars, [scaled(counts[m], scale) if counts[m] else "" for m in months],
                           padding=2, fontsize=8)
        axes.margins(y=0.15)
        step = max(1, math.ceil(len(months) / 24))
        axes.set_xticks(positions[::step], months[::step], rotation=45 if step > 1 else 0)
        axes.set_ylabel("pages" if sample.exact else "pages (estimated)")
        axes.legend(frameon=False)
        axes.set_title("pages by crawl month")
        return svg_of(figure, "months")


def length_plot(sample: Sample, stage_order: List[str]) -> str:
    """Page lengths of the kept pages against each stage's dropped pages, as shares of each
    group (the shapes compare; the groups' sizes are in the legends)."""
    stages = in_stage_order(sample.dropped_chars, stage_order)
    columns = min(3, len(stages)) or 1
    rows = max(1, math.ceil(len(stages) / columns))
    kept_shares = _shares(sample.kept_chars)
    occupied = np.flatnonzero(kept_shares + sum(_shares(sample.dropped_chars[stage])
                                                for stage in stages))
    shown = ((LENGTH_BIN_EDGES[occupied[0]], LENGTH_BIN_EDGES[occupied[-1] + 1])
             if occupied.size else (LENGTH_BIN_EDGES[0], LENGTH_BIN_EDGES[-1]))
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(3.2 * columns, 2.3 * rows), layout="constrained")
        for number, stage in enumerate(stages or [None]):
            axes = figure.add_subplot(rows, columns, number + 1)
            axes.set_xscale("log")
            axes.stairs(kept_shares, LENGTH_BIN_EDGES, fill=True, color=KEPT_COLOUR, alpha=0.35,
                        label=f"kept ({scaled(len(sample.kept_chars), sample.kept_scale)})")
            if stage is not None:
                dropped = sample.dropped_chars[stage]
                axes.stairs(_shares(dropped), LENGTH_BIN_EDGES, color=LEVEL_COLOURS["page"],
                            linewidth=1.5,
                            label=f"dropped ({scaled(len(dropped), sample.dropped_scale)})")
                axes.set_title(stage)
            axes.set_xlim(*shown)
            axes.set_xlabel("characters")
            axes.legend(frameon=False, fontsize=8)
        return svg_of(figure, "lengths")


def _shares(lengths: List[int]) -> np.ndarray:
    counts, _ = np.histogram(np.clip(lengths, 1, None), bins=LENGTH_BIN_EDGES)
    return counts / max(1, len(lengths))


# ----------------------------------------------------------------------------------------------
# HTML.

_STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0;
background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
header{background:#24323f;color:#fff;padding:28px 24px}
header h1{margin:0 auto;max-width:1100px;font-size:26px}
header p{margin:6px auto 0;max-width:1100px;color:#cfd8e0}
nav{max-width:1100px;margin:0 auto;padding:8px 24px;font-size:14px}
nav a{margin-right:14px;color:#24323f}
section{background:#fff;border-radius:8px;padding:18px 22px;margin:18px 0;
box-shadow:0 1px 3px rgba(0,0,0,.08)}
h2{margin:0 0 10px;font-size:20px}
h3{margin:18px 0 6px;font-size:16px}
.cards{display:flex;flex-wrap:wrap;gap:14px;margin:8px 0 14px}
.card{flex:1 1 180px;border-radius:8px;padding:12px 16px;background:#eef2f5}
.card b{display:block;font-size:28px}
.card.kept{background:#e6f2e0}.card.dropped{background:#f8e3e2}
.grid{display:flex;flex-wrap:wrap;gap:12px}
svg{max-width:100%;height:auto}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{padding:3px 10px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.note{background:#fff7e0;border-left:4px solid #f0ad4e;padding:8px 12px;margin:8px 0}
.error{background:#fde8e7;border-left:4px solid #d9534f;padding:8px 12px;margin:8px 0}
.muted{color:#667}
code{background:#eef2f5;padding:1px 4px;border-radius:3px}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f5f7;padding:8px 10px;margin:4px 0;
font-size:12.5px;border-radius:4px}
.example{border-left:4px solid #d9534f;padding:2px 10px;margin:8px 0}
.example .where{font-size:12px;color:#667;word-break:break-all}
.tag{display:inline-block;background:#d9534f;color:#fff;border-radius:3px;padding:0 6px;
font-size:12px}
mark.removed{background:#ffd5d2;color:inherit}
details summary{cursor:pointer}
details.reason summary{font-weight:bold;margin:10px 0 4px}
.scroll{overflow-x:auto}
"""
SECTIONS = (("summary", "Summary"), ("funnel", "Funnel"), ("reasons", "Drop reasons"),
            ("languages", "Languages"), ("domains", "Domains"), ("months", "Crawl months"),
            ("lengths", "Page lengths"), ("examples", "Examples"), ("studies", "Studies"),
            ("config", "Configuration"))


def escaped(value) -> str:
    return html.escape(str(value), quote=True)


def table(headers: Sequence[str], rows: Sequence[Sequence], numeric: Sequence[bool] = ()) -> str:
    """An HTML table of escaped cells; `numeric` columns right-aligned, ints with separators."""
    numeric = list(numeric) + [False] * (len(headers) - len(numeric))

    def cell(value, tag: str, is_number: bool) -> str:
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        return f'<{tag}{" class=n" if is_number else ""}>{escaped(text)}</{tag}>'

    head = "".join(cell(name, "th", is_number) for name, is_number in zip(headers, numeric))
    body = "".join("<tr>" + "".join(cell(value, "td", is_number)
                                    for value, is_number in zip(row, numeric)) + "</tr>"
                   for row in rows)
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table></div>")


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escaped(title)}</h2>{body}</section>'


def share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def scaled(count: float, scale: float) -> str:
    """`count` records of the sample as pages of the run: exact (no ≈) where each stands for
    one page, which is when every URL is in the sample and every record was read."""
    if not count:
        return "0"
    return f"{count:,}" if scale == 1 else f"≈{count * scale:,.0f}"


def share_of_urls(fraction: float) -> str:
    """The sample's --exclusion_fraction as people say it: `10% of URLs`, `every URL`."""
    return "every URL" if fraction >= 1 else f"{100 * fraction:g}% of URLs"


def no_sample_note(reason: str) -> str:
    return (f'<p class="note">{escaped(reason)} To see it, run the pipeline with an exclusions '
            'sample, <code>python -m pipelines.c4 … --exclusions OUT/exclusions '
            '--exclusion_fraction 0.01</code>, then <code>python -m pipelines.report OUT</code> '
            '(or pass <code>--exclusions DIR</code> here).</p>')


def summary_section(stats_record: dict, counters: stats.Stats, reasons: List[DropReason],
                    sample: Optional[Sample], sample_problem: str,
                    config: ReportConfig) -> str:
    read, written = pages_in_and_out(counters)
    cards = (f'<div class="cards"><div class="card"><b>{read:,}</b>pages read</div>'
             f'<div class="card kept"><b>{written:,}</b>pages written ({share(written, read)})'
             f'</div><div class="card dropped"><b>{read - written:,}</b>pages dropped '
             f'({share(read - written, read)})</div></div>')
    problems = []
    if stats_record.get("error"):
        problems.append(f'<p class="error">The run failed: {escaped(stats_record["error"])}</p>')
    if stats_record.get("progress"):
        problems.append('<p class="error">The run was still going when stats.json was written: '
                        'these are its counters so far.</p>')
    if stats_record.get("file_problems"):
        files = counted(len(stats_record["file_problems"]), "input file")
        problems.append(f'<p class="error">{files} had a problem '
                        '(<a href="#file-problems">below</a>).</p>')
    biggest = sorted((drop for drop in reasons if drop.level == "page"),
                     key=lambda drop: -drop.count)[:_SUMMARY_REASONS]
    largest = "".join(f"<li><b>{escaped(drop.reason)}</b> ({escaped(drop.stage)}): "
                      f"{drop.count:,} pages, {share(drop.count, read)} of those read</li>"
                      for drop in biggest)
    removed = [drop for drop in reasons if drop.level != "page"]
    removed_line = ("<p>Inside kept pages, " + ", ".join(
        f"{drop.stage} removed {counted(drop.count, drop.level)} ({escaped(drop.reason)})"
        for drop in removed[:_SUMMARY_REASONS]) + ".</p>") if removed else ""
    if sample is not None:
        figures = ("Figures from it are counts: it holds every page, and all of it was read."
                   if sample.exact else
                   "Figures from it are estimates (≈), scaled to the whole run.")
        sample_line = (f"<p>Exclusions sample: {share_of_urls(sample.fraction)}; read "
                       f"{sample.files_read:,} of its {sample.files_total:,} files of dropped "
                       f"records ({sample.records_read:,} of {sample.records_total:,} records) "
                       f"and {sample.kept_read:,} of its {sample.kept_total:,} kept pages: whole "
                       f"files, each a bucket of URLs by hash, until "
                       f"{config.sample_records:,} records. {figures}</p>")
        if sample.cut_inside_a_file:
            sample_line += (f'<p class="note">A file of the sample holds more than '
                            f"{config.max_sample_records:,} records, and was cut there: its "
                            "records are in URL order, so the domains and examples lean to the "
                            "URLs early in the alphabet. A smaller --exclusion_fraction (or more "
                            "shards) gives files that are read whole.</p>")
    else:
        sample_line = no_sample_note(sample_problem + " The domains, crawl months, page "
                                     "lengths and examples need it.")
    return section("summary", "Summary", cards + "".join(problems)
                   + ("<h3>The biggest drop reasons</h3><ol>" + largest + "</ol>"
                      if largest else "") + removed_line + sample_line)


def funnel_section(counters: stats.Stats, title: str) -> str:
    return section("funnel", "Funnel: pages per stage",
                   '<p class="muted">Pages each stage kept (green) and dropped (red), in pipeline '
                   'order, from stats.json.</p>' + funnel.funnel_svg(counters, title))


def reasons_section(reasons: List[DropReason], sample: Optional[Sample]) -> str:
    if not reasons:
        return section("reasons", "Drop reasons", "<p>No stage dropped anything.</p>")
    by_stage: Dict[str, List[DropReason]] = {}
    for drop in reasons:
        by_stage.setdefault(drop.stage, []).append(drop)
    plots = '<div class="grid">' + "".join(
        f"<div>{drop_reason_plot(stage, stage_reasons)}</div>"
        for stage, stage_reasons in by_stage.items()) + "</div>"
    headers = ["stage", "counts", "reason", "counted"]
    sample_headers = []
    if sample is not None:
        # At fraction 1 the sample holds every record: its count is no estimate.
        sample_headers = [f"in the sample ({share_of_urls(sample.fraction)})"] + (
            ["estimate for the run (sample ÷ fraction)"] if sample.fraction < 1 else [])
    rows = []
    for drop in reasons:
        row = [drop.stage, drop.level + "s", drop.reason, drop.count]
        if sample is not None:
            in_sample = sampled_count(sample, drop)
            row += [in_sample, scaled(in_sample, 1 / sample.fraction)][:len(sample_headers)]
        rows.append(row)
    headers += sample_headers
    numeric = [False, False, False, True] + [True] * len(sample_headers)
    legend = " ".join(f'<span style="color:{colour}">■</span> {level}s'
                      for level, colour in LEVEL_COLOURS.items())
    return section("reasons", "Drop reasons per stage",
                   f'<p class="muted">From the counters: pages a stage dropped, and lines or spans '
                   f'it removed from pages it kept. {legend}</p>' + plots
                   + table(headers, rows, numeric))


def sampled_count(sample: Sample, drop: DropReason) -> int:
    """The sample's records of a reason, over its languages where the stage counts it per
    language (`page:badword:de`, `page:badword:en`, ...)."""
    return sum(n for key, n in sample.sampled.get(drop.stage, {}).items()
               if key == f"{drop.level}:{drop.reason}"
               or key.startswith(f"{drop.level}:{drop.reason}:"))


def languages_section(counters: stats.Stats) -> str:
    rows = language_rows(counters)
    if not rows:
        return ""
    names = list(dict.fromkeys(name for row in rows for name in row.counters))
    columns = [name for name in names if name.split(" ", 1)[1].startswith("pages.")]
    # Counters of something else than pages kept or dropped: why language detection gave `und`.
    others = [f"{row.language}, {name.replace(' ', ' stage: ', 1)} {row.counters[name]:,}"
              for row in rows for name in names
              if name not in columns and row.counters.get(name)]
    left_out = len(stats.languages_of(counters)) - len(rows)
    body = ('<p class="muted">Per language, from language detection on: pages written (kept), '
            'dropped after detection, and each stage\'s page counters.'
            + (f" {counted(left_out, 'language')} with no page left out." if left_out else "")
            + "</p>"
            + table(["language", "kept", "dropped"] + columns,
                    [[row.language, row.kept, row.dropped]
                     + [row.counters.get(name, 0) for name in columns] for row in rows],
                    [False] + [True] * (len(columns) + 2))
            + (f'<p class="muted">Also counted: {escaped("; ".join(others))}.</p>'
               if others else ""))
    return section("languages", "Pages by language", body)


def sample_basis(sample: Sample) -> str:
    """What the figures from the sample are: counts, or estimates and what one record is worth."""
    if sample.exact:
        return "Counts of the exclusions sample, which holds every page of the run."
    return (f"Estimates (≈) from the exclusions sample: each record read stands for "
            f"{sample.dropped_scale:,.1f} dropped, each kept page for {sample.kept_scale:,.1f}.")


def domains_section(sample: Optional[Sample], sample_problem: str, stages: List[str]) -> str:
    if sample is None:
        return section("domains", "Domains", no_sample_note(sample_problem))
    kept = table(["domain", "pages kept"],
                 [[domain, scaled(n, sample.kept_scale)]
                  for domain, n in top_domains(sample.kept_by_domain)], [False, True])
    parts = [f'<p class="muted">{sample_basis(sample)} A domain is the URL\'s host without '
             '<code>www.</code>.</p><div class="grid">', f"<div><h3>Most kept</h3>{kept}</div>"]
    for stage in in_stage_order(set(sample.dropped_by_domain) | set(sample.removed_by_domain),
                                stages):
        dropped = sample.dropped_by_domain.get(stage, collections.Counter())
        removed = sample.removed_by_domain.get(stage, collections.Counter())
        ranked = sorted(set(dropped) | set(removed),
                        key=lambda domain: (-dropped[domain], -removed[domain], domain))
        # A stage that only drops pages (or only removes lines) gets no column of zeros.
        columns = [(name, counts) for name, counts in (("pages dropped", dropped),
                                                        ("lines or spans removed", removed))
                   if counts]
        rows = [[domain] + [scaled(counts[domain], sample.dropped_scale)
                            for _, counts in columns]
                + [scaled(sample.kept_by_domain[domain], sample.kept_scale)]
                for domain in ranked[:_TABLE_ROWS]]
        parts.append(f"<div><h3>Most dropped by {escaped(stage)}</h3>"
                     + table(["domain"] + [name for name, _ in columns] + ["pages kept"],
                             rows, [False] + [True] * (len(columns) + 1)) + "</div>")
    return section("domains", "Domains most kept and most dropped, per filter",
                   "".join(parts) + "</div>")


def months_section(sample: Optional[Sample], sample_problem: str) -> str:
    if sample is None:
        return section("months", "Crawl months", no_sample_note(sample_problem))
    return section("months", "Crawl months",
                   '<p class="muted">Pages kept and dropped by the month of their crawl. '
                   f'{sample_basis(sample)}</p>' + month_plot(sample))


def lengths_section(sample: Optional[Sample], sample_problem: str, stages: List[str]) -> str:
    if sample is None:
        return section("lengths", "Page lengths", no_sample_note(sample_problem))
    return section("lengths", "Page lengths",
                   '<p class="muted">Characters per page, log bins: the pages kept (green) '
                   'against the pages each stage dropped (red, their text as it was when '
                   'dropped), as shares of each group; their sizes in the legends.</p>'
                   + length_plot(sample, stages))


def example_html(example: Example, level: str, reason: str) -> str:
    where = (f'<div class="where"><span class="tag">{escaped(reason)}</span> '
             f"{escaped(example.url)} · {escaped(example.timestamp)}</div>")
    if level == "page":
        return f'<div class="example">{where}<pre>{escaped(example.texts[0])}</pre></div>'
    removed = "".join(f'<pre><mark class="removed">{escaped(text)}</mark></pre>'
                      for text in example.texts)
    more = (f'<div class="muted">and {counted(example.more_texts, "more " + level)}</div>'
            if example.more_texts else "")
    return (f'<div class="example">{where}<div class="muted">{level}s removed '
            f"from this page:</div>{removed}{more}</div>")


def examples_of(sample: Sample, drop: DropReason, count: int) -> List[Example]:
    """The `count` examples of smallest rank of a reason, over its languages where the stage
    counts it per language (`badword:de`, `badword:en`, ...)."""
    found = [example for (stage, level, reason), examples in sample.examples.items()
             if (stage, level) == (drop.stage, drop.level)
             and (reason == drop.reason or reason.startswith(drop.reason + ":"))
             for example in examples.values()]
    return sorted(found, key=lambda example: (example.rank, example.url))[:count]


def examples_section(reasons: List[DropReason], sample: Optional[Sample], sample_problem: str,
                     config: ReportConfig) -> str:
    if sample is None:
        return section("examples", "Examples", no_sample_note(sample_problem))
    parts = ['<p class="muted">For each reason, the pages of the sample read whose URLs hash '
             'lowest (a fair choice); open a reason to see them. A dropped page shows its text '
             'as the stage saw it; a removed line or span is <mark class="removed">marked'
             '</mark>. Texts are cut.</p>']
    for drop in reasons:
        examples = examples_of(sample, drop, config.examples_per_reason)
        if not examples:
            continue
        parts.append(f'<details class="reason"><summary>{escaped(drop.stage)}: '
                     f"{escaped(drop.reason)} "
                     f'<span class="muted">({counted(drop.count, drop.level)}; '
                     f"{counted(len(examples), 'example')})</span></summary>"
                     + "".join(example_html(example, drop.level, drop.reason)
                               for example in examples) + "</details>")
    return section("examples", "Examples of each drop reason", "".join(parts))


def _share_cell(name: str, value):
    if value is None:  # A share of no example (contamination.json writes null).
        return "–"
    if name.endswith("_share") and isinstance(value, (int, float)):
        return f"{100 * value:.2f}%"
    return value


def _has_a_match(measures: dict) -> bool:
    return any(isinstance(value, (int, float)) and value > 0
               for name, value in measures.items() if name.endswith("_share"))


def _largest_share(measures: dict) -> float:
    return max([value for name, value in measures.items()
                if name.endswith("_share") and isinstance(value, (int, float))] + [0])


def contamination_html(record: dict) -> str:
    """contamination.json's table: the task fields with a match first, largest share first;
    those without one folded away below them."""
    rows = [(task, field, measures) for task, fields in sorted(record.get("tasks", {}).items())
            for field, measures in sorted(fields.items())]
    present = {name for _, _, measures in rows for name in measures}
    names = ([name for name in CONTAMINATION_HEADINGS if name in present]
             + sorted(present - set(CONTAMINATION_HEADINGS)))
    headings = ["task", "field"] + [CONTAMINATION_HEADINGS.get(name, name.replace("_", " "))
                                    for name in names]
    numeric = [False, False] + [True] * len(names)

    def cells(task, field, measures):
        return [task, field] + [_share_cell(name, measures.get(name, "")) for name in names]
    matched = sorted((row for row in rows if _has_a_match(row[2])),
                     key=lambda row: (-_largest_share(row[2]), row[0], row[1]))
    unmatched = [row for row in rows if not _has_a_match(row[2])]
    parts = [f"<h3>Benchmark contamination</h3><p>{counted(len(matched), 'task field')} of "
             f"{len(rows):,} with an example found in the corpus"
             + (": largest share first." if matched else ".")
             + ' <span class="muted">The methods (the n-grams: 13 words, or characters in '
             f"scripts without spaces) are in {CONTAMINATION_FILE}'s <code>method</code>."
             "</span></p>"]
    if matched:
        parts.append(table(headings, [cells(*row) for row in matched], numeric))
    if unmatched:
        parts.append(f"<details><summary>{counted(len(unmatched), 'task field')} with no "
                     "example found</summary>"
                     + table(headings, [cells(*row) for row in unmatched], numeric)
                     + "</details>")
    return "".join(parts)


def blocklist_html(record: dict) -> str:
    # At fraction 1 the sample's pages are the run's: no estimate beside them.
    estimated = (f" (≈{record['estimated_pages']:,} in the whole run)"
                 if "estimated_pages" in record and record.get("fraction", 0) < 1 else "")
    parts = [f"<h3>Blocklist</h3><p>Pages of the sample the bad-words filter dropped: "
             f"{record.get('pages', 0):,}{estimated}. The terms (each counted once a page), "
             "the terms that dropped a page alone, and the domains, in the sample.</p>"]
    for key, noun in (("terms", "term"), ("terms_alone", "term alone"), ("domains", "domain")):
        if key not in record:
            continue
        entries = record[key]
        parts.append(table([noun, "pages"], [list(entry) for entry in entries[:_TABLE_ROWS * 2]],
                           [False, True]))
        if len(entries) > _TABLE_ROWS * 2:
            parts.append(f'<p class="muted">and {counted(len(entries) - _TABLE_ROWS * 2, noun)} '
                         f"more in {BLOCKLIST_FILE}.</p>")
    return "".join(parts)


def studies_section(studies: Dict[str, dict]) -> str:
    shown = []
    if CONTAMINATION_FILE in studies:
        shown.append(contamination_html(studies[CONTAMINATION_FILE]))
    if BLOCKLIST_FILE in studies:
        shown.append(blocklist_html(studies[BLOCKLIST_FILE]))
    if not shown:
        return section("studies", "Studies",
                       f'<p class="muted">None yet: a study writes its JSON ({CONTAMINATION_FILE}, '
                       f"{BLOCKLIST_FILE}) into OUT/{REPORT_DIR}/, and the next report shows it."
                       "</p>")
    return section("studies", "Studies", "".join(shown))


def file_problems_html(problems: List[dict]) -> str:
    if not problems:
        return ""
    names = list(dict.fromkeys(name for problem in problems for name in problem))
    return ('<h3 id="file-problems">Input files with a problem</h3>'
            + table(names, [[problem.get(name, "") for name in names] for problem in problems]))


def config_value_html(value) -> str:
    if isinstance(value, list) and len(value) > _LONG_LIST_ITEMS:
        return (f"<details><summary>{counted(len(value), 'item')}</summary>"
                f"{escaped(', '.join(map(str, value)))}</details>")
    if isinstance(value, list):
        return escaped(", ".join(map(str, value))) if value else "(none)"
    if value is None:
        return '<span class="muted">none</span>'
    return escaped(json.dumps(value) if isinstance(value, (bool, dict)) else value)


def lists_html(list_sha256: Dict[str, str]) -> str:
    """The external lists the run read (bad words, domains, URLs, a decontamination index), by
    name and the sha256 of their bytes, which tells two runs' lists apart."""
    if not list_sha256:
        return "<h3>Lists used</h3><p>None.</p>"
    return ("<h3>Lists used</h3>"
            + table(["list", "where", "sha256"],
                    [[name.rstrip("/").rsplit("/", 1)[-1], name, digest]
                     for name, digest in sorted(list_sha256.items())]))


def config_rows(run_config: dict) -> List[Tuple[str, object]]:
    """run_config.json's rows, but the lists (shown apart, by name) and an empty
    `badwords_files`, which means one list given by --badwords, not none."""
    rows = []
    for key, value in flattened({name: value for name, value in run_config.items()
                                 if name != "lists_sha256"}):
        if (key == "config.badwords_files" and not value
                and run_config.get("config", {}).get("filter_badwords")):
            value = "one list, given by --badwords (under Lists used)"
        rows.append((key, value))
    return rows


def config_section(run_config: Optional[dict], problems: List[dict]) -> str:
    if run_config is None:
        body = f"<p class=note>No {provenance.RUN_CONFIG_FILE} in the run's folder.</p>"
    else:
        rows = "".join(f"<tr><th>{escaped(key)}</th><td>{config_value_html(value)}</td></tr>"
                       for key, value in config_rows(run_config))
        body = (lists_html(run_config.get("lists_sha256", {}))
                + f'<h3>Settings</h3><p class="muted">{provenance.RUN_CONFIG_FILE}: what the run '
                f"was built from.</p><table><tbody>{rows}</tbody></table>")
    return section("config", "The run's configuration", file_problems_html(problems) + body)


def run_title(stats_record: dict, run_config: Optional[dict]) -> str:
    variant = stats_record.get("variant", "?")
    language = f" {stats_record['language']}" if stats_record.get("language") else ""
    if not run_config:
        return f"C4 {variant}{language}"
    rules = run_config.get("config", {}).get("rules")
    files = run_config.get("inputs", {}).get("files")
    return (f"C4 {variant}{language}" + (f" ({rules} rules)" if rules else "")
            + (f": {counted(files, 'WET file')}" if files is not None else ""))


def datasheet_html(stats_record: dict, run_config: Optional[dict], sample: Optional[Sample],
                   sample_problem: str, studies: Dict[str, dict], output_dir: str,
                   config: ReportConfig, sample_dir: Optional[str] = None) -> str:
    """The whole page, from what the run left (read by `build_datasheet`)."""
    counters = ordered_stages(stats_record)
    reasons = drop_reasons(counters)
    title = run_title(stats_record, run_config)
    stages = list(counters)
    sections = [summary_section(stats_record, counters, reasons, sample, sample_problem, config),
                funnel_section(counters, title), reasons_section(reasons, sample),
                languages_section(counters), domains_section(sample, sample_problem, stages),
                months_section(sample, sample_problem),
                lengths_section(sample, sample_problem, stages),
                examples_section(reasons, sample, sample_problem, config), studies_section(studies),
                config_section(run_config, stats_record.get("file_problems", []))]
    shown = {anchor for anchor, _ in SECTIONS if f'<section id="{anchor}">' in "".join(sections)}
    nav = "".join(f'<a href="#{anchor}">{escaped(name)}</a>' for anchor, name in SECTIONS
                  if anchor in shown)
    return ("<!doctype html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            + (f'<meta name="{SAMPLE_META}" content="{escaped(sample_dir)}">'
               if sample is not None else "") +
            f"<title>{escaped(title)}: datasheet</title><style>{_STYLE}</style></head><body>"
            f"<header><h1>{escaped(title)}: datasheet</h1>"
            f"<p>{escaped(output_dir)}</p></header><nav>{nav}</nav><main>"
            + "".join(sections) + "</main></body></html>\n")


def _read_json(path: str) -> Optional[dict]:
    return json.loads(read_all(path)) if FileSystems.exists(path) else None


class Refused(Exception):
    """The datasheet would lose what the run's page has: the message says how to go on."""


def built_with_sample(path: str) -> Optional[str]:
    """The exclusions folder an existing datasheet was built with (its <meta>), or None."""
    if not FileSystems.exists(path):
        return None
    found = re.search(f'<meta name="{SAMPLE_META}" content="([^"]*)">',
                      read_all(path).decode("utf-8", "replace"))
    return html.unescape(found.group(1)) if found else None


def build_datasheet(output_dir: str, exclusions_given: Optional[str] = None,
                    config: ReportConfig = ReportConfig(), force: bool = False) -> str:
    """Reads the run in `output_dir` and writes its datasheet (with the exclusions sample in
    `exclusions_given`, else where its run_config.json says); returns the page's path.

    A page without the sample, where the run recorded one that cannot be found or where the
    page there now was built with one, is Refused unless `force`: the sample's sections would
    be lost without a word."""
    stats_record = _read_json(FileSystems.join(output_dir, stats.STATS_FILE))
    if stats_record is None:
        raise FileNotFoundError(f"no {stats.STATS_FILE} in {output_dir}: is it a run's output?")
    run_config = _read_json(FileSystems.join(output_dir, provenance.RUN_CONFIG_FILE))
    report_dir = FileSystems.join(output_dir, REPORT_DIR)
    path = FileSystems.join(report_dir, REPORT_FILE)
    sample, sample_problem, directory = None, "This run wrote no exclusions sample.", None
    lost, advice = "", ""  # Why the page would lack a sample it should have, and what to do.
    try:
        directory = exclusions.locate(output_dir, run_config or {}, exclusions_given)
    except exclusions.NotFound as error:
        sample_problem = f"No exclusions sample: {error}."
        lost, advice = str(error), ("; or --force to write the datasheet without the sample's "
                                    "domains, months, lengths and examples")
    if directory is not None:
        sample = read_sample(directory, config)
    earlier = built_with_sample(path)
    if sample is None and earlier is not None and not lost:
        lost = (f"{path} was built with the exclusions sample in {earlier}, and this one "
                "would lack it")
        advice = (": give it with --exclusions DIR, or --force to replace the page with one "
                  "without it")
    if lost and not force:
        raise Refused(lost + advice)
    if lost:
        print(f"warning: --force: the datasheet is written without the exclusions sample: {lost}",
              file=sys.stderr)
    studies = {name: record for name in (CONTAMINATION_FILE, BLOCKLIST_FILE)
               for record in [_read_json(FileSystems.join(report_dir, name))] if record}
    page = datasheet_html(stats_record, run_config, sample, sample_problem, studies, output_dir,
                          config, directory)
    if "://" not in report_dir:
        os.makedirs(report_dir, exist_ok=True)
    write_atomically(path, page.encode("utf-8"))
    return path


def parser() -> argparse.ArgumentParser:
    command_line = argparse.ArgumentParser(
        prog="python -m pipelines.report",
        description="Writes OUT/report/index.html: the datasheet of the C4 run in OUT.")
    command_line.add_argument("output", metavar="OUT", help="a finished run's output folder")
    command_line.add_argument("--exclusions", default=None,
                              help="the run's exclusions sample (default: run_config.json's)")
    command_line.add_argument("--force", action="store_true",
                              help="write the datasheet even where it would lack the exclusions "
                                   "sample the run recorded or the page there now has")
    command_line.add_argument("--examples_per_reason", type=int,
                              default=ReportConfig.examples_per_reason,
                              help="example pages shown for each drop reason")
    return command_line


def main(argv: Optional[Sequence[str]] = None) -> str:
    args = parser().parse_args(argv)
    if args.examples_per_reason < 0:
        sys.exit("error: --examples_per_reason must be >= 0")
    try:
        path = build_datasheet(args.output, args.exclusions,
                               ReportConfig(examples_per_reason=args.examples_per_reason),
                               args.force)
    except (FileNotFoundError, Refused) as error:
        sys.exit(f"error: {error}")
    print(f"datasheet written to {path}")
    return path


if __name__ == "__main__":
    main()
