"""The blocklist study (pipelines/audit/blocklist.py) of one run's exclusions: every page the filter
dropped, each with the terms that triggered it (checked with the public C4 code's regular
expression), their domains; with a sample of the URLs, the pages of the whole run estimated;
the exclusions found from any folder; a run without exclusions is refused with what to do."""
import gzip
import json
import pathlib
import re

import pytest

from pipelines import blocklist, c4
from pipelines.audit.blocklist import study
from pipelines.filters import badwords
from tests.support.variant_runs import variant_args


def excluded_run(shared_data, folder: pathlib.Path, fraction: str):
    counters = c4.main(variant_args(shared_data, "en") + [
        "--output", str(folder / "out"), "--exclusions", str(folder / "excluded"),
        "--exclusion_fraction", fraction])
    return folder, counters


@pytest.fixture(scope="module")
def every_url(shared_data, tmp_path_factory):
    return excluded_run(shared_data, tmp_path_factory.mktemp("blocklist"), "1")


@pytest.fixture(scope="module")
def some_urls(shared_data, tmp_path_factory):
    return excluded_run(shared_data, tmp_path_factory.mktemp("blocklist-0.3"), "0.3")


def badwords_pages(excluded: pathlib.Path) -> list:
    """The page records of the bad-words stage, read from the files as they are."""
    return [record for path in sorted(excluded.glob("exclusions-*-of-*.jsonl.gz"))
            for record in map(json.loads, gzip.decompress(path.read_bytes()).splitlines())
            if record["stage"] == "badwords" and record["level"] == "page"]


def test_the_study_names_each_dropped_pages_terms_and_domain(shared_data, every_url):
    folder, counters = every_url
    found = blocklist.main([str(folder / "out"), "--badwords", str(shared_data / "badwords/en")])
    assert found == json.loads((folder / "out/report/blocklist.json").read_text())
    assert found["pages"] == counters["badwords"]["pages.dropped:badword"] > 0
    assert found["estimated_pages"] == found["pages"]  # Every URL: the run's own pages.
    assert sum(count for _, count in found["domains"]) == found["pages"]
    terms = [line.strip().lower() for line in
             (shared_data / "badwords/en").read_text().splitlines() if line.strip()]
    # The public C4 code's test, term by term, as the oracle of which terms each page holds.
    patterns = {term: re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)") for term in terms}
    expected = {}
    for record in badwords_pages(folder / "excluded"):
        text = record["text"].lower()
        held = {term for term, pattern in patterns.items() if pattern.search(text)}
        assert held, record["url"]
        for term in held:
            expected[term] = expected.get(term, 0) + 1
    assert dict(found["terms"]) == expected
    assert [count for _, count in found["terms"]] == sorted(expected.values(), reverse=True)


def test_with_a_sample_of_the_urls_the_pages_of_the_run_are_estimated(shared_data, some_urls,
                                                                      capsys):
    folder, counters = some_urls
    found = blocklist.main([str(folder / "out"), "--badwords", str(shared_data / "badwords/en")])
    sampled = len(badwords_pages(folder / "excluded"))
    assert 0 < sampled < counters["badwords"]["pages.dropped:badword"]
    assert (found["pages"], found["fraction"]) == (sampled, 0.3)
    assert found["estimated_pages"] == round(sampled / 0.3)
    assert (f"fraction 0.3: about {round(sampled / 0.3):,} in the run"
            in capsys.readouterr().out)


def test_a_relative_record_of_the_exclusions_is_found_from_any_folder(shared_data, some_urls,
                                                                       tmp_path, monkeypatch):
    """Runs recorded the folder as given, relative to where they were started: the study finds
    it from elsewhere, and says where it looked when it cannot."""
    folder, _ = some_urls
    run_config = folder / "out/run_config.json"
    recorded = json.loads(run_config.read_text())
    relative = dict(recorded, exclusions={"directory": f"{folder.name}/excluded",
                                          "fraction": 0.3})
    monkeypatch.chdir(tmp_path)
    try:
        run_config.write_text(json.dumps(relative))
        found = blocklist.main([str(folder / "out"), "--badwords",
                                str(shared_data / "badwords/en")])
        assert found["pages"] == len(badwords_pages(folder / "excluded"))
        relative["exclusions"]["directory"] = "moved/excluded"
        run_config.write_text(json.dumps(relative))
        with pytest.raises(SystemExit) as refused:
            blocklist.main([str(folder / "out"), "--badwords", str(shared_data / "badwords/en")])
    finally:
        run_config.write_text(json.dumps(recorded))
    message = str(refused.value)
    assert "recorded its exclusions at moved/excluded" in message
    assert str(tmp_path / "moved/excluded") in message
    assert str(folder.parent / "moved/excluded") in message
    assert "--exclusions DIR" in message and "Errno" not in message


def test_a_run_without_exclusions_is_refused_with_what_to_do(shared_data, one_job, tmp_path):
    with pytest.raises(SystemExit, match="wrote no exclusions: rerun it with --exclusions"):
        blocklist.main([str(one_job("en")), "--badwords", str(shared_data / "badwords/en")])
    with pytest.raises(SystemExit, match=f"no run_config.json in {tmp_path}"):
        blocklist.main([str(tmp_path), "--badwords", str(shared_data / "badwords/en")])


def test_the_study_counts_terms_alone_ranks_ties_by_name_and_names_hosts_without_a_suffix():
    """Four dropped pages of a 1-in-4 sample, counted by hand: a term is counted `alone` on a page
    where it is the only term; equal counts are ranked by name (qux is met first); a host without
    a public suffix (localhost, an IP address) is its own domain."""
    records = [{"url": "http://localhost:8080/x", "text": "just qux here"},
               {"url": "https://www.example.co.uk/a", "text": "foo and bar baz"},
               {"url": "http://192.168.0.1/y", "text": "Foo again"},
               {"url": "https://news.example.co.uk/z", "text": "qux, qux"}]
    matcher = badwords.compile_badwords(["bar baz", "foo", "qux"])
    assert study(records, matcher, 0.25) == {
        "pages": 4, "fraction": 0.25, "estimated_pages": 16,
        "terms": [["foo", 2], ["qux", 2], ["bar baz", 1]],
        "terms_alone": [["qux", 2], ["foo", 1]],
        "domains": [["example.co.uk", 2], ["192.168.0.1", 1], ["localhost", 1]]}
