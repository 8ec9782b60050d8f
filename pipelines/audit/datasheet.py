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
import html
import json
import os
import re
import sys
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from pipelines.audit.datasheet_html import SAMPLE_META, datasheet_html
from pipelines.audit.datasheet_sample import ReportConfig, read_sample
from pipelines.records import read_all, write_atomically
from pipelines.stats import provenance, stats
from pipelines.writers import exclusions
from text.report_files import BLOCKLIST_FILE, CONTAMINATION_FILE, DATASHEET_FILE, REPORT_DIR


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
    path = FileSystems.join(report_dir, DATASHEET_FILE)
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
