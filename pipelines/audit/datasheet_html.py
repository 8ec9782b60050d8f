"""The datasheet's page (pipelines/audit/datasheet.py): its sections as HTML, with no script
and nothing loaded.
"""
import collections
import html
import json
from typing import Dict, List, Optional, Sequence, Tuple

from pipelines.audit.datasheet_plots import LEVEL_COLOURS, drop_reason_plot, length_plot, month_plot
from pipelines.audit.datasheet_sample import (TABLE_ROWS, DropReason, Example, ReportConfig, Sample,
                                              drop_reasons, flattened, in_stage_order,
                                              language_rows, ordered_stages, pages_in_and_out,
                                              scaled, top_domains)
from pipelines.stats import funnel, provenance, stats
from pipelines.wording import counted
from text.report_files import BLOCKLIST_FILE, CONTAMINATION_FILE, REPORT_DIR

# The page's <meta> naming the exclusions sample it was built with: a page built with one is
# not replaced by one without it unless asked (--force).
SAMPLE_META = "c4-exclusions-sample"

# contamination.json's measures (model/tasks/contamination.py) in the order shown, as headed.
CONTAMINATION_HEADINGS = {
    "examples": "examples", "in_characters": "measured in characters",
    "exact": "exact matches", "exact_share": "share exact",
    "too_short_for_exact": "too short for exact", "ngram13": "sharing an n-gram",
    "ngram13_share": "share by n-grams", "too_short_for_ngrams": "too short for n-grams"}
_SUMMARY_REASONS = 5
_LONG_LIST_ITEMS = 12


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
                for domain in ranked[:TABLE_ROWS]]
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
        parts.append(table([noun, "pages"], [list(entry) for entry in entries[:TABLE_ROWS * 2]],
                           [False, True]))
        if len(entries) > TABLE_ROWS * 2:
            parts.append(f'<p class="muted">and {counted(len(entries) - TABLE_ROWS * 2, noun)} '
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
