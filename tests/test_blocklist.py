"""The blocklist study (pipelines/blocklist.py) of one run's exclusions: every page the filter
dropped, each with the terms that triggered it (checked with the public C4 code's regular
expression), their domains; a run without exclusions is refused with what to do."""
import json
import re

import pytest

from pipelines import blocklist, c4, exclusions
from tests.support.variant_runs import variant_args


@pytest.fixture(scope="module")
def excluded_run(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("blocklist")
    counters = c4.main(variant_args(shared_data, "en") + [
        "--output", str(folder / "out"), "--exclusions", str(folder / "excluded"),
        "--exclusion_fraction", "1"])
    return folder, counters


def test_the_study_names_each_dropped_pages_terms_and_domain(shared_data, excluded_run):
    folder, counters = excluded_run
    found = blocklist.main([str(folder / "out"), "--badwords", str(shared_data / "badwords/en")])
    assert found == json.loads((folder / "out" / blocklist.REPORT_FILE).read_text())
    assert found["pages"] == counters["badwords"]["pages.dropped:badword"] > 0
    assert sum(count for _, count in found["domains"]) == found["pages"]
    terms = [line.strip().lower() for line in
             (shared_data / "badwords/en").read_text().splitlines() if line.strip()]
    # The public C4 code's test, term by term, as the oracle of which terms each page holds.
    patterns = {term: re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)") for term in terms}
    expected = {}
    for record in blocklist.dropped_for_badwords(
            exclusions.lines(str(folder / "excluded"), exclusions.EXCLUSIONS_SPLIT)):
        held = {term for term, pattern in patterns.items() if pattern.search(record["text"].lower())}
        assert held, record["url"]
        for term in held:
            expected[term] = expected.get(term, 0) + 1
    assert dict(found["terms"]) == expected
    assert [count for _, count in found["terms"]] == sorted(expected.values(), reverse=True)


def test_a_run_without_exclusions_is_refused_with_what_to_do(shared_data, one_job):
    with pytest.raises(SystemExit, match="wrote no exclusions: rerun it with --exclusions"):
        blocklist.main([str(one_job("en")), "--badwords", str(shared_data / "badwords/en")])
