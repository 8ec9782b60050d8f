"""The datasheet of a run (pipelines/audit/datasheet.py): counters become the right rows, the
exclusions sample is read up to its cap and scaled, page text is escaped, the same inputs give the
same bytes, and the page of a real run renders in headless Chromium without a console message."""
import collections
import gzip
import hashlib
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from pipelines import report
from pipelines.audit import datasheet, datasheet_html, datasheet_sample
from text.hashing import hash64

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

STATS = {
    "variant": "en",
    "stages": {
        "write": {"pages.written:train": 5, "pages.written:validation": 1},
        "read": {"files.read": 1, "pages.passed": 12, "records.skipped:empty_page": 2},
        "clean": {"lines.dropped:no_terminal_punctuation": 40, "lines.dropped:ellipsis": 3,
                  "pages.dropped:too_few_sentences": 4, "pages.passed": 8},
        "dedup": {"pages.passed": 7, "pages.passed:shortened": 1, "spans.dropped:duplicate": 2},
        "badwords": {"pages.dropped:badword": 2, "pages.passed": 6},
    },
    "file_problems": [],
}
RUN_CONFIG = {"variant": "en", "config": {"name": "en", "rules": "paper",
                                          "cleaning": {"min_words_per_line": 5},
                                          "language": {"languages": ["en"]}},
              "inputs": {"files": 1, "first": "a.wet.gz"}}


def write_exclusions(directory: pathlib.Path, exclusions, kept, fraction: float,
                     shards: int = 2) -> pathlib.Path:
    """A sample as `pipelines.c4 --exclusions` writes it: the records dealt to `shards` files in
    their order, and exclusions.json with the fraction and the counts of every record."""
    directory.mkdir(parents=True, exist_ok=True)
    for prefix, records in (("exclusions", exclusions), ("kept", kept)):
        per_shard = -(-len(records) // shards) or 1
        for index in range(shards):
            with gzip.open(directory / f"{prefix}-{index:05d}-of-{shards:05d}.jsonl.gz",
                           "wt", encoding="utf-8") as sink:
                for record in records[index * per_shard:(index + 1) * per_shard]:
                    sink.write(json.dumps(record) + "\n")
    counts = {}
    for record in exclusions:
        stage = counts.setdefault(record["stage"], {})
        key = f"{record['level']}:{record['reason']}"
        stage[key] = stage.get(key, 0) + 1
    (directory / "exclusions.json").write_text(
        json.dumps({"fraction": fraction, "records": counts, "kept": len(kept)}))
    return directory


def dropped(url, stage, reason, level="page", text="Some text.", timestamp="2019-04-25T16:14:41Z"):
    return {"url": url, "timestamp": timestamp, "stage": stage, "reason": reason, "level": level,
            "text": text}


def kept_page(url, chars=1200, timestamp="2019-07-17T12:15:59Z"):
    return {"url": url, "timestamp": timestamp, "language": "en", "chars": chars}


SAMPLE_EXCLUSIONS = [
    dropped("http://www.a.com/1", "clean", "too_few_sentences", text="Short."),
    dropped("http://a.com/2", "clean", "no_terminal_punctuation", "line", "Menu"),
    dropped("http://a.com/2", "clean", "no_terminal_punctuation", "line", "Home"),
    dropped("http://b.org/x", "clean", "no_terminal_punctuation", "line", "Login"),
    dropped("https://c.net/evil", "badwords", "badword",
            text='<script>alert("x")</script> & more', timestamp="2019-07-01T00:00:00Z"),
    dropped("http://b.org/y", "dedup", "duplicate", "span", "A repeated sentence."),
]
SAMPLE_KEPT = [kept_page("http://a.com/3"), kept_page("http://d.com/1", 90_000),
               kept_page("http://d.com/2")]


def make_run(folder: pathlib.Path, with_sample: bool = True) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stats.json").write_text(json.dumps(STATS))
    run_config = dict(RUN_CONFIG)
    if with_sample:
        write_exclusions(folder / "exclusions", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.5)
        run_config.update(exclusions="exclusions", exclusion_fraction=0.5)
    (folder / "run_config.json").write_text(json.dumps(run_config))
    return folder


def test_the_counters_become_drop_reasons_in_stage_order_largest_first():
    counters = datasheet_sample.ordered_stages(STATS)
    assert list(counters) == ["read", "clean", "dedup", "badwords", "write"]
    reasons = datasheet_sample.drop_reasons(counters)
    assert [(d.stage, d.level, d.reason, d.count) for d in reasons] == [
        ("clean", "line", "no_terminal_punctuation", 40),
        ("clean", "page", "too_few_sentences", 4),
        ("clean", "line", "ellipsis", 3),
        ("dedup", "span", "duplicate", 2),
        ("badwords", "page", "badword", 2),
    ]
    assert datasheet_sample.pages_in_and_out(counters) == (12, 6)


def test_a_stage_counted_per_language_gives_one_reason_and_a_row_per_language():
    counters = datasheet_sample.ordered_stages({"stages": {
        "language": {"pages.passed:de": 5, "pages.passed:en": 9, "pages.passed:fr": 0,
                     "pages.passed:und": 2, "und.not_reliable": 2},
        "badwords": {"pages.dropped:badword:de": 1, "pages.dropped:badword:en": 3,
                     "pages.passed:de": 4, "pages.passed:en": 6, "pages.passed:und": 2},
        "write": {"pages.written:train:de": 4, "pages.written:validation:de": 0,
                  "pages.written:train:en": 5, "pages.written:validation:en": 1,
                  "pages.written:train:fr": 0, "pages.written:validation:fr": 0,
                  "pages.written:train:und": 2, "pages.written:validation:und": 0}}})
    assert [(d.stage, d.reason, d.count) for d in datasheet_sample.drop_reasons(counters)] == [
        ("badwords", "badword", 4)]
    rows = datasheet_sample.language_rows(counters)
    assert [(row.language, row.kept, row.dropped) for row in rows] == [
        ("en", 6, 3), ("de", 4, 1), ("und", 2, 0)]  # fr: nothing counted, left out.
    assert rows[0].counters == {"language pages.passed": 9, "badwords pages.dropped:badword": 3,
                                "badwords pages.passed": 6, "write pages.written:train": 5,
                                "write pages.written:validation": 1}
    assert rows[2].counters["language und.not_reliable"] == 2
    html = datasheet_html.languages_section(counters)
    assert "1 language with no page left out" in html
    assert "und, language stage: und.not_reliable 2" in html


def test_the_configuration_is_flattened_to_dotted_rows():
    assert datasheet_sample.flattened(RUN_CONFIG) == [
        ("variant", "en"), ("config.name", "en"), ("config.rules", "paper"),
        ("config.cleaning.min_words_per_line", 5), ("config.language.languages", ["en"]),
        ("inputs.files", 1), ("inputs.first", "a.wet.gz")]


def test_the_sample_is_read_and_scaled_by_the_fraction_and_the_share_read(tmp_path):
    directory = write_exclusions(tmp_path / "x", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.5)
    sample = datasheet_sample.read_sample(str(directory),
                                          datasheet_sample.ReportConfig(examples_per_reason=1))
    assert (sample.records_read, sample.records_total, sample.kept_read) == (6, 6, 3)
    assert sample.dropped_scale == sample.kept_scale == 2.0  # 1 / 0.5, all read.
    assert sample.dropped_by_domain == {"clean": {"a.com": 1}, "badwords": {"c.net": 1}}
    assert sample.removed_by_domain == {"clean": {"a.com": 2, "b.org": 1}, "dedup": {"b.org": 1}}
    assert sample.kept_by_domain == {"d.com": 2, "a.com": 1}
    assert sample.dropped_by_month == {"2019-04": 1, "2019-07": 1}
    assert sample.kept_chars == [1200, 90_000, 1200]
    assert (sample.files_read, sample.files_total, sample.cut_inside_a_file) == (2, 2, False)
    # One example per reason: of the two pages with lines removed, the one whose URL hashes
    # lowest, its lines together.
    lines = sample.examples["clean", "line", "no_terminal_punctuation"]
    lowest = min(["http://a.com/2", "http://b.org/x"], key=hash64)
    assert list(lines) == [lowest]
    assert lines[lowest].texts == (["Menu", "Home"] if lowest == "http://a.com/2" else ["Login"])


def test_the_sample_is_read_in_whole_files_up_to_its_cap(tmp_path):
    """Each file is a bucket of URLs: whole files are a fair sample, and the scale follows the
    share read. A file larger than the hard cap is cut, and the sample says so."""
    directory = write_exclusions(tmp_path / "x", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.5, shards=3)
    enough = datasheet_sample.read_sample(str(directory),
                                          datasheet_sample.ReportConfig(sample_records=1))
    assert (enough.files_read, enough.records_read, enough.cut_inside_a_file) == (1, 2, False)
    assert enough.kept_read == 1  # The same share of the kept files: one of three.
    # 2 of 6 records read from a 0.5 sample: each stands for 6 pages of the run.
    assert enough.dropped_scale == pytest.approx(6.0)
    assert enough.kept_scale == pytest.approx(6.0)
    cut = datasheet_sample.read_sample(str(directory), datasheet_sample.ReportConfig(
        sample_records=1, max_sample_records=1))
    assert (cut.records_read, cut.cut_inside_a_file) == (1, True)
    assert datasheet_sample.estimate_scale(0.01, 0, 0) == 0.0


def test_a_reason_counted_per_language_shows_examples_of_its_languages(tmp_path):
    records = [dropped(f"http://{language}.example/{number}", "badwords", f"badword:{language}")
               for language in ("de", "en") for number in range(3)]
    sample = datasheet_sample.read_sample(str(write_exclusions(tmp_path / "x", records, [], 0.1)),
                                datasheet_sample.ReportConfig(examples_per_reason=2))
    badword = datasheet_sample.DropReason("badwords", "page", "badword", 6)
    examples = datasheet_html.examples_of(sample, badword, 2)
    everyone = [record["url"] for record in records]
    assert [example.url for example in examples] == sorted(everyone, key=hash64)[:2]


def test_urls_months_and_texts_as_the_tables_show_them():
    assert datasheet_sample.domain_of("https://www.Example.COM:8080/a?b") == "example.com"
    assert datasheet_sample.domain_of("not a url") == "(no host)"
    assert datasheet_sample.month_of("2019-07-17T12:15:59Z") == "2019-07"
    assert datasheet_sample.capped("abcdef", 4) == "abcd … (2 more characters)"
    assert datasheet_sample.capped("abc", 4) == "abc"


def test_page_text_and_urls_are_escaped_and_the_page_has_no_script(tmp_path):
    run = make_run(tmp_path / "run")
    page = pathlib.Path(datasheet.build_datasheet(str(run))).read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in page
    assert "<script" not in page.lower()
    assert '<mark class="removed">Menu</mark>' in page


def test_the_page_loads_nothing_and_its_ids_are_unique(tmp_path):
    page = pathlib.Path(datasheet.build_datasheet(str(make_run(tmp_path / "run")))).read_text()
    assert not re.search(r"""\b(src|srcset)\s*=|<link\b|@import|url\((?!#)""", page)
    assert set(re.findall(r"""href="([^"]*)\"""", page)) <= {
        f"#{name}" for name in re.findall(r"""\bid="([^"]*)\"""", page)}
    ids = re.findall(r"""\bid="([^"]*)\"""", page)
    assert len(ids) == len(set(ids))


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    first, second = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    pages = [pathlib.Path(datasheet.build_datasheet(str(run))).read_bytes().replace(
        str(run).encode(), b"OUT") for run in (first, second)]
    assert pages[0] == pages[1]
    assert pathlib.Path(datasheet.build_datasheet(str(first))).read_bytes().replace(
        str(first).encode(), b"OUT") == pages[0]


def test_a_run_without_a_sample_says_what_it_lacks_and_how_to_get_it(tmp_path):
    run = make_run(tmp_path / "run", with_sample=False)
    page = pathlib.Path(datasheet.build_datasheet(str(run))).read_text()
    assert "This run wrote no exclusions sample." in page
    assert "--exclusions OUT/exclusions --exclusion_fraction 0.01" in page
    assert "12</b>pages read" in page
    # Given on the command line, the sample is used: run_config.json names none.
    write_exclusions(tmp_path / "elsewhere", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.5)
    report.main([str(run), "--exclusions", str(tmp_path / "elsewhere")])
    assert "Exclusions sample: 50% of URLs;" in (run / "report/index.html").read_text()


def record_exclusions(run: pathlib.Path, recorded) -> None:
    """run_config.json's `exclusions` set to `recorded`, as an older run wrote it."""
    run_config = json.loads((run / "run_config.json").read_text())
    run_config["exclusions"] = recorded
    (run / "run_config.json").write_text(json.dumps(run_config))


@pytest.mark.parametrize("recorded", [
    {"directory": "runs/run.excluded", "fraction": 0.5},  # Relative to the launch folder.
    "runs/run.excluded",  # An older record: the folder alone.
    {"directory": "elsewhere/exclusions", "fraction": 0.5}])  # Moved into OUT since.
def test_a_relative_record_of_the_sample_is_found_from_any_folder(tmp_path, monkeypatch,
                                                                   recorded):
    """Runs recorded the folder as given, relative to where they were started: the datasheet
    of one started in tmp_path, built from another folder, has the sample all the same."""
    run = make_run(tmp_path / "runs/run")
    if "run.excluded" in str(recorded):
        (run / "exclusions").rename(tmp_path / "runs/run.excluded")
    record_exclusions(run, recorded)
    (tmp_path / "somewhere/else").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "somewhere/else")
    page = pathlib.Path(report.main([str(run)])).read_text()
    assert "Exclusions sample: 50% of URLs;" in page
    assert "<h3>Most kept</h3>" in page


def test_a_sample_recorded_and_not_found_is_refused_naming_where_it_looked(tmp_path,
                                                                         monkeypatch, capsys):
    run = make_run(tmp_path / "runs/run")
    aside = (run / "exclusions").rename(tmp_path / "aside")
    record_exclusions(run, {"directory": "gone/exclusions", "fraction": 0.5})
    monkeypatch.chdir(tmp_path / "runs")
    with pytest.raises(SystemExit) as refused:
        report.main([str(run)])
    message = str(refused.value)
    assert "recorded its exclusions at gone/exclusions" in message
    for looked in (tmp_path / "runs/gone/exclusions", tmp_path / "gone/exclusions",
                   run / "exclusions"):
        assert str(looked) in message
    assert "--exclusions DIR" in message and "--force" in message
    assert not (run / "report/index.html").exists()
    # A sample of another fraction in one of those places is another run's: not taken.
    write_exclusions(tmp_path / "gone/exclusions", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.25)
    with pytest.raises(SystemExit, match="recorded its exclusions"):
        report.main([str(run)])
    # As the message says: --force writes the page without it, and says why on the page;
    # --exclusions DIR names it.
    capsys.readouterr()
    page = pathlib.Path(report.main([str(run), "--force"])).read_text()
    assert "No exclusions sample: the run in" in page
    assert capsys.readouterr().err.startswith(
        "warning: --force: the datasheet is written without the exclusions sample: the run in")
    page = pathlib.Path(report.main([str(run), "--exclusions", str(aside)])).read_text()
    assert "Exclusions sample: 50% of URLs;" in page
    with pytest.raises(SystemExit, match=f"no exclusions at {tmp_path / 'nowhere'}"):
        report.main([str(run), "--exclusions", str(tmp_path / "nowhere")])


def test_a_datasheet_with_the_sample_is_not_replaced_by_one_without_unless_forced(tmp_path,
                                                                                  capsys):
    run = make_run(tmp_path / "run", with_sample=False)
    write_exclusions(tmp_path / "elsewhere", SAMPLE_EXCLUSIONS, SAMPLE_KEPT, 0.5)
    fuller = pathlib.Path(report.main([str(run), "--exclusions", str(tmp_path / "elsewhere")]))
    before = fuller.read_bytes()
    with pytest.raises(SystemExit) as refused:
        report.main([str(run)])
    assert (f"was built with the exclusions sample in {tmp_path / 'elsewhere'}, and this one "
            "would lack it") in str(refused.value)
    assert "--exclusions DIR" in str(refused.value) and "--force" in str(refused.value)
    assert fuller.read_bytes() == before
    # Rebuilt with the sample, it is replaced; --force replaces it with the page without.
    report.main([str(run), "--exclusions", str(tmp_path / "elsewhere")])
    assert fuller.read_bytes() == before
    capsys.readouterr()
    report.main([str(run), "--force"])
    assert "This run wrote no exclusions sample." in fuller.read_text()
    assert (f"warning: --force: the datasheet is written without the exclusions sample: {fuller} "
            "was built with the exclusions sample in") in capsys.readouterr().err
    report.main([str(run)])  # A page without the sample may replace one without it.


def test_the_studies_are_shown_as_tables_when_present(tmp_path):
    run = make_run(tmp_path / "run")
    (run / "report").mkdir()
    (run / "report/contamination.json").write_text(json.dumps({"tasks": {
        "glue_cola": {"sentence": {"examples": 1043, "exact": 13, "exact_share": 0.0125,
                                   "ngram13": 2, "ngram13_share": 0.25,
                                   "too_short_for_ngrams": 1035}},
        "copa": {"premise": {"examples": 0, "exact_share": None, "ngram13_share": None}},
        "anli": {"premise": {"examples": 9, "exact": 0, "exact_share": 0.0, "ngram13": 0,
                             "ngram13_share": 0.0, "too_short_for_ngrams": 0}},
        "wsc": {"text": {"examples": 5, "exact": 1, "exact_share": 0.2, "ngram13": 0,
                         "ngram13_share": 0.0, "too_short_for_ngrams": 5}}}}))
    (run / "report/blocklist.json").write_text(json.dumps({
        "terms": [["badterm", 17]], "domains": [["spam.example", 3]], "pages": 20,
        "fraction": 0.1, "estimated_pages": 200, "terms_alone": [["badterm", 9]]}))
    page = pathlib.Path(datasheet.build_datasheet(str(run))).read_text()
    assert ("<td>glue_cola</td><td>sentence</td><td class=n>1,043</td><td class=n>13</td>"
            "<td class=n>1.25%</td><td class=n>2</td><td class=n>25.00%</td>"
            "<td class=n>1,035</td>") in page
    assert "<td>copa</td><td>premise</td><td class=n>0</td><td class=n></td><td class=n>–</td>" \
        in page
    # Readable headings, not contamination.json's names.
    assert ("<th>task</th><th>field</th><th class=n>examples</th><th class=n>exact matches</th>"
            "<th class=n>share exact</th><th class=n>sharing an n-gram</th>"
            "<th class=n>share by n-grams</th><th class=n>too short for n-grams</th>") in page
    assert "ngram13_share" not in page and "too_short_for_ngrams" not in page
    # The fields with a match lead, largest share first; those without are folded below.
    assert "2 task fields of 4 with an example found in the corpus: largest share first." in page
    order = [page.index(needle) for needle in (
        "<td>glue_cola</td>", "<td>wsc</td>",
        "<details><summary>2 task fields with no example found</summary>",
        "<td>anli</td>", "<td>copa</td>")]
    assert order == sorted(order)
    assert "<td>badterm</td><td class=n>17</td>" in page  # Terms, then terms alone.
    assert "<td>badterm</td><td class=n>9</td>" in page
    assert "dropped: 20 (≈200 in the whole run)" in page
    # At fraction 1 the sample's pages are the run's: no estimate beside them.
    (run / "report/blocklist.json").write_text(json.dumps({
        "terms": [], "domains": [], "pages": 20, "fraction": 1.0, "estimated_pages": 20,
        "terms_alone": []}))
    page = pathlib.Path(datasheet.build_datasheet(str(run))).read_text()
    assert "dropped: 20. The terms" in page


def test_the_sample_is_said_as_a_share_of_urls_and_its_figures_as_estimates(tmp_path):
    fractions = (1.0, 0.5, 0.1, 0.01, 0.001)
    assert [datasheet_html.share_of_urls(fraction) for fraction in fractions] == [
        "every URL", "50% of URLs", "10% of URLs", "1% of URLs", "0.1% of URLs"]
    page = pathlib.Path(datasheet.build_datasheet(str(make_run(tmp_path / "run")))).read_text()
    assert "Exclusions sample: 50% of URLs;" in page
    assert "Figures from it are estimates (≈), scaled to the whole run." in page
    # Kept pages of the 0.5 sample, all read: d.com's 2 and a.com's 1 stand for 4 and 2.
    assert "<tr><td>d.com</td><td class=n>≈4</td></tr><tr><td>a.com</td><td class=n>≈2</td>" \
        in page
    # The reasons table: 3 line records of no_terminal_punctuation in the sample, 6 estimated.
    assert ("<th class=n>in the sample (50% of URLs)</th>"
            "<th class=n>estimate for the run (sample ÷ fraction)</th>") in page
    assert ("<td>no_terminal_punctuation</td><td class=n>40</td><td class=n>3</td>"
            "<td class=n>≈6</td>") in page


def test_examples_per_reason_on_the_command_line(tmp_path):
    run = make_run(tmp_path / "run")
    report.main([str(run), "--examples_per_reason", "0"])
    page = (run / "report/index.html").read_text()
    assert "Menu" not in page and "0 examples" not in page
    with pytest.raises(SystemExit):
        report.main([str(tmp_path / "nothing")])


@pytest.fixture(scope="module")
def real_run(shared_data, tmp_path_factory):
    """`en` on the three realistic WET samples, in process, with its own exclusions (every page:
    the examples then have the page texts, URLs and lines of a real run)."""
    from pipelines import c4
    output = tmp_path_factory.mktemp("datasheet-run")
    c4.main(["--variant", "en", "--input",
             *sorted(str(path) for path in (shared_data / "wet/realistic").glob("*")),
             "--badwords", str(shared_data / "badwords/en"), "--output", str(output),
             "--exclusions", str(output / "exclusions"), "--exclusion_fraction", "1"])
    return output


def gzipped_records(folder: pathlib.Path, pattern: str) -> list:
    return [json.loads(line) for path in sorted(folder.glob(pattern))
            for line in gzip.decompress(path.read_bytes()).splitlines()]


def months_plot_labels(page: str) -> list:
    """The texts of the crawl months' plot after its y label: the bars' labels."""
    months = page[page.index('<section id="months">'):]
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", months[:months.index("</section>")])
    return texts[texts.index("pages") + 1:texts.index("pages by crawl month")]


def test_a_sample_of_every_url_gives_counts_with_no_estimate(real_run, shared_data):
    page = pathlib.Path(report.main([str(real_run)])).read_text()
    assert "Exclusions sample: every URL;" in page
    assert "Figures from it are counts: it holds every page, and all of it was read." in page
    assert "≈" not in page
    assert "<th class=n>in the sample (every URL)</th></tr>" in page  # No estimate column.
    # Every bar of the months has its count, however small beside the others (the run's 2014
    # and 2024 pages are 1 to 3 beside 797): kept, then dropped pages, month by month.
    kept = collections.Counter(record["timestamp"][:7]
                               for record in gzipped_records(real_run / "exclusions", "kept-*"))
    dropped = collections.Counter(
        record["timestamp"][:7] for record in gzipped_records(real_run / "exclusions",
                                                              "exclusions-*")
        if record["level"] == "page")
    assert min(dropped.values()) <= 3 < 700 < max(kept.values())
    assert months_plot_labels(page) == [f"{counts[month]:,}" for counts in (kept, dropped)
                                        for month in sorted(set(kept) | set(dropped))
                                        if counts[month]]


def test_the_lists_used_are_shown_by_name_and_hash(real_run, shared_data):
    page = pathlib.Path(report.main([str(real_run)])).read_text()
    badwords = shared_data / "badwords/en"
    digest = hashlib.sha256(badwords.read_bytes()).hexdigest()
    assert "<h3>Lists used</h3>" in page
    assert f"<tr><td>en</td><td>{badwords}</td><td>{digest}</td></tr>" in page
    assert "lists_sha256" not in page
    assert ("<th>config.badwords_files</th><td>one list, given by --badwords (under Lists used)"
            "</td>") in page


@pytest.fixture(scope="module")
def multilingual_run(shared_data, tmp_path_factory):
    """mC4 on the samples with 30% of the URLs sampled: its bad words are counted per language
    (`pages.dropped:badword:<language>`)."""
    from pipelines import c4
    from tests.support.variant_runs import variant_args
    folder = tmp_path_factory.mktemp("datasheet-mc4")
    c4.main(variant_args(shared_data, "multilingual") + [
        "--output", str(folder / "out"), "--exclusions", str(folder / "excluded"),
        "--exclusion_fraction", "0.3"])
    return folder


def test_a_reason_counted_per_language_has_its_sample_count_and_estimate(multilingual_run):
    page = pathlib.Path(report.main([str(multilingual_run / "out")])).read_text()
    counters = json.loads((multilingual_run / "out/stats.json").read_text())["stages"]
    counted_in_run = sum(value for name, value in counters["badwords"].items()
                         if name.startswith("pages.dropped:badword:"))
    records = [record for record in gzipped_records(multilingual_run / "excluded",
                                                    "exclusions-*")
               if record["stage"] == "badwords"]
    assert len({record["reason"] for record in records}) > 1  # Several languages.
    in_sample = len(records)
    assert 0 < in_sample < counted_in_run
    assert ("<td>badwords</td><td>pages</td><td>badword</td>"
            f"<td class=n>{counted_in_run:,}</td><td class=n>{in_sample:,}</td>"
            f"<td class=n>≈{round(in_sample / 0.3):,}</td></tr>") in page
    assert "Exclusions sample: 30% of URLs;" in page


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get "
                                              "install chromium)")
def test_a_real_runs_page_renders_in_chromium_without_console_messages(real_run, tmp_path):
    from PIL import Image, ImageStat
    path = report.main([str(real_run)])
    page = pathlib.Path(path).read_text()
    assert "This run wrote no exclusions sample." not in page
    screenshot = tmp_path / "page.png"
    browser = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1280,2400", f"--screenshot={screenshot}",
         pathlib.Path(path).resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert browser.returncode == 0, browser.stderr[-2000:]
    console = [line for line in browser.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    with Image.open(screenshot) as image:
        assert image.size == (1280, 2400)
        spread = ImageStat.Stat(image.convert("L")).stddev[0]
    assert spread > 20, f"the screenshot looks blank (grey-level spread {spread:.1f})"


def test_a_reason_with_colons_loses_only_its_last_part_and_only_when_it_is_a_language():
    counters = {"write": {"pages.written:train:de": 4, "pages.written:train:fr": 1},
                "decontamination": {"pages.dropped:example_of:xnli:de": 2,
                                    "pages.dropped:example_of:xnli:fr": 1,
                                    "pages.dropped:example_of:glue_rte": 5},
                "badwords": {"pages.dropped:badword:de": 3}}
    reasons = datasheet_sample.drop_reasons(counters)
    assert [(drop.stage, drop.reason, drop.count) for drop in reasons] == [
        ("decontamination", "example_of:glue_rte", 5), ("decontamination", "example_of:xnli", 3),
        ("badwords", "badword", 3)]


def test_the_input_files_with_a_problem_are_a_table_of_every_field_they_have():
    html = datasheet_html.file_problems_html([
        {"file": "a.warc.wet.gz", "problem": "not gzip"},
        {"file": "b.warc.wet.gz", "problem": "truncated", "pages_read": 72}])
    assert "Input files with a problem" in html
    headers = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", html)
    assert headers == ["file", "problem", "pages_read"]
    cells = re.findall(r"<td(?: [^>]*)?>(.*?)</td>", html)
    assert cells == ["a.warc.wet.gz", "not gzip", "", "b.warc.wet.gz", "truncated", "72"]
    assert datasheet_html.file_problems_html([]) == ""


def section_texts(page: str) -> dict:
    """Each section's words as a reader sees them (tags as "|", plots as "[plot]"), by anchor."""
    import html
    visible = re.sub(r"<svg.*?</svg>", "[plot]", page, flags=re.S)
    texts = {}
    for anchor, body in re.findall(r'<section id="([^"]+)">(.*?)</section>', visible, re.S):
        words = re.sub(r"\s*\|[\s|]*", "|", re.sub(r"<[^>]+>", "|", body)).strip("|")
        texts[anchor] = html.unescape(re.sub(r"\s+", " ", words)).strip()
    return texts


def plot_texts(page: str, anchor: str) -> list:
    """The texts inside each plot of a section (ticks, labels, titles, legends)."""
    import html
    body = page[page.index(f'<section id="{anchor}">'):]
    body = body[:body.index("</section>")]
    return [[html.unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
            for svg in re.findall(r"<svg.*?</svg>", body, re.S)]


def test_every_section_says_in_words_what_the_run_and_its_sample_hold(tmp_path):
    """The hand-made run above, read as a user reads its page: each figure checked by hand
    (12 read, clean's 4 and badwords' 2 pages dropped: 6 written; a 50% sample: ≈ twice what
    was read)."""
    page = pathlib.Path(datasheet.build_datasheet(str(make_run(tmp_path / "run")))).read_text()
    assert "<title>C4 en (paper rules): 1 WET file: datasheet</title>" in page
    assert "<h1>C4 en (paper rules): 1 WET file: datasheet</h1>" in page
    texts = section_texts(page)
    assert list(texts) == ["summary", "funnel", "reasons", "domains", "months", "lengths",
                           "examples", "studies", "config"]
    assert texts["summary"] == (
        "Summary|12|pages read|6|pages written (50.0%)|6|pages dropped (50.0%)|"
        "The biggest drop reasons|too_few_sentences|(clean): 4 pages, 33.3% of those read|"
        "badword|(badwords): 2 pages, 16.7% of those read|Inside kept pages, clean removed 40 "
        "lines (no_terminal_punctuation), clean removed 3 lines (ellipsis), dedup removed 2 "
        "spans (duplicate).|Exclusions sample: 50% of URLs; read 2 of its 2 files of dropped "
        "records (6 of 6 records) and 3 of its 3 kept pages: whole files, each a bucket of URLs "
        "by hash, until 20,000 records. Figures from it are estimates (≈), scaled to the whole "
        "run.")
    assert texts["funnel"] == ("Funnel: pages per stage|Pages each stage kept (green) and "
                               "dropped (red), in pipeline order, from stats.json.|[plot]")
    assert texts["reasons"] == (
        "Drop reasons per stage|From the counters: pages a stage dropped, and lines or spans it "
        "removed from pages it kept.|■|pages|■|lines|■|spans|[plot]|[plot]|[plot]|"
        "stage|counts|reason|counted|in the sample (50% of URLs)|"
        "estimate for the run (sample ÷ fraction)|"
        "clean|lines|no_terminal_punctuation|40|3|≈6|clean|pages|too_few_sentences|4|1|≈2|"
        "clean|lines|ellipsis|3|0|0|dedup|spans|duplicate|2|1|≈2|"
        "badwords|pages|badword|2|1|≈2")
    each_record = "each record read stands for 2.0 dropped, each kept page for 2.0"
    assert texts["domains"] == (
        "Domains most kept and most dropped, per filter|Estimates (≈) from the exclusions "
        f"sample: {each_record}. A domain is the URL's host without|www.|.|"
        "Most kept|domain|pages kept|d.com|≈4|a.com|≈2|"
        "Most dropped by clean|domain|pages dropped|lines or spans removed|pages kept|"
        "a.com|≈2|≈4|≈2|b.org|0|≈2|0|"
        "Most dropped by dedup|domain|lines or spans removed|pages kept|b.org|≈2|0|"
        "Most dropped by badwords|domain|pages dropped|pages kept|c.net|≈2|0")
    assert texts["months"] == ("Crawl months|Pages kept and dropped by the month of their crawl. "
                               f"Estimates (≈) from the exclusions sample: {each_record}.|[plot]")
    assert texts["lengths"] == (
        "Page lengths|Characters per page, log bins: the pages kept (green) against the pages "
        "each stage dropped (red, their text as it was when dropped), as shares of each group; "
        "their sizes in the legends.|[plot]")
    assert texts["examples"] == (
        "Examples of each drop reason|For each reason, the pages of the sample read whose URLs "
        "hash lowest (a fair choice); open a reason to see them. A dropped page shows its text "
        "as the stage saw it; a removed line or span is|marked|. Texts are cut.|"
        "clean: no_terminal_punctuation|(40 lines; 2 examples)|no_terminal_punctuation|"
        "http://b.org/x · 2019-04-25T16:14:41Z|lines removed from this page:|Login|"
        "no_terminal_punctuation|http://a.com/2 · 2019-04-25T16:14:41Z|"
        "lines removed from this page:|Menu|Home|"
        "clean: too_few_sentences|(4 pages; 1 example)|too_few_sentences|"
        "http://www.a.com/1 · 2019-04-25T16:14:41Z|Short.|"
        "dedup: duplicate|(2 spans; 1 example)|duplicate|http://b.org/y · "
        "2019-04-25T16:14:41Z|spans removed from this page:|A repeated sentence.|"
        "badwords: badword|(2 pages; 1 example)|badword|https://c.net/evil · "
        '2019-07-01T00:00:00Z|<script>alert("x")</script> & more')
    assert texts["studies"] == (
        "Studies|None yet: a study writes its JSON (contamination.json, blocklist.json) into "
        "OUT/report/, and the next report shows it.")
    assert texts["config"] == (
        "The run's configuration|Lists used|None.|Settings|run_config.json: what the run was "
        "built from.|variant|en|config.name|en|config.rules|paper|"
        "config.cleaning.min_words_per_line|5|config.language.languages|en|inputs.files|1|"
        "inputs.first|a.wet.gz|exclusions|exclusions|exclusion_fraction|0.5")


def test_every_plot_labels_its_axes_bars_and_groups(tmp_path):
    page = pathlib.Path(datasheet.build_datasheet(str(make_run(tmp_path / "run")))).read_text()
    assert plot_texts(page, "funnel") == [[
        "C4 en (paper rules): 1 WET file", "pages kept (green) and dropped (red) per stage",
        "read", "12 kept", "records.skipped:empty_page 2",
        "clean", "8 kept, 4 dropped", "too_few_sentences 4",
        "dedup", "8 kept", "kept 8 = pages.passed 7 + pages.passed:shortened 1",
        "badwords", "6 kept, 2 dropped", "badword 2",
        "write", "6 kept", "kept 6 = pages.written:train 5 + pages.written:validation 1"]]
    assert plot_texts(page, "reasons") == [
        ["0", "10", "20", "30", "40", "no_terminal_punctuation (lines)",
         "too_few_sentences (pages)", "ellipsis (lines)", "40", "4", "3", "clean"],
        ["0.0", "0.5", "1.0", "1.5", "2.0", "duplicate (spans)", "2", "dedup"],
        ["0.0", "0.5", "1.0", "1.5", "2.0", "badword (pages)", "2", "badwords"]]
    # Kept pages are all of 2019-07 (3 read: ≈6); dropped pages one in 2019-04 and one in
    # 2019-07 (≈2 each); lines and spans removed are no pages.
    assert plot_texts(page, "months") == [[
        "2019-04", "2019-07", "0", "1", "2", "3", "4", "5", "6", "pages (estimated)",
        "≈6", "≈2", "≈2", "pages by crawl month", "kept", "dropped (any stage)"]]
    shares = ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert plot_texts(page, "lengths") == [[
        "characters", *shares, "clean", "kept (≈6)", "dropped (≈2)",
        "characters", *shares, "badwords", "kept (≈6)", "dropped (≈2)"]]


def test_a_failed_unfinished_run_with_file_problems_says_so_first(tmp_path):
    run = make_run(tmp_path / "run", with_sample=False)
    problems = [{"file": "a.wet.gz", "problem": "truncated gzip"},
                {"file": "b.wet.gz", "problem": "unreadable"}]
    (run / "stats.json").write_text(json.dumps(dict(
        STATS, stages={"read": {"pages.passed": 3}, "write": {"pages.written:train": 3}},
        error="MemoryError: out of memory", progress={"done": 1}, file_problems=problems,
        language="de")))
    (run / "run_config.json").unlink()
    page = pathlib.Path(datasheet.build_datasheet(str(run))).read_text()
    assert "<h1>C4 en de: datasheet</h1>" in page  # No run_config.json: no rules, no files.
    assert section_texts(page)["summary"] == (
        "Summary|3|pages read|3|pages written (100.0%)|0|pages dropped (0.0%)|"
        "The run failed: MemoryError: out of memory|The run was still going when stats.json "
        "was written: these are its counters so far.|2 input files had a problem (|below|).|"
        "This run wrote no exclusions sample. The domains, crawl months, page lengths and "
        "examples need it. To see it, run the pipeline with an exclusions sample,|"
        "python -m pipelines.c4 … --exclusions OUT/exclusions --exclusion_fraction 0.01|, then|"
        "python -m pipelines.report OUT|(or pass|--exclusions DIR|here).")
    assert section_texts(page)["reasons"] == "Drop reasons|No stage dropped anything."
    assert list(section_texts(page)) == ["summary", "funnel", "reasons", "domains", "months",
                                         "lengths", "examples", "studies", "config"]
    assert [datasheet_sample.month_of(stamp) for stamp in ("2019-04-25T16:14:41Z", "2019")] == [
        "2019-04", "(no date)"]
