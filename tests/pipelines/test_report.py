"""What a run prints for a person: counts in the right number, the table without its zeros, the
split's counts with why validation can outnumber train (a staged run's dry run:
tests/pipelines/test_staged.py)."""
from pipelines import c4
from pipelines.stats import stats
from pipelines.wording import counted


def test_counts_take_the_number_of_their_noun():
    assert counted(1, "group") == "1 group"
    assert counted(0, "group") == "0 groups"
    assert counted(2_000, "WET file") == "2,000 WET files"
    assert counted(1, "more reason") == "1 more reason"


def test_the_table_leaves_out_the_counters_of_zero_and_says_so():
    counters = {"read": {"files.read": 2, "pages.passed": 7},
                "write": {"pages.written:train:de": 0, "pages.written:validation:de": 0,
                          "pages.written:train:en": 5}}
    table = stats.format_table(counters)
    assert "pages.written:train:en" in table and ":de" not in table
    assert table.splitlines()[-1] == "(2 counters of zero left out: they are in stats.json)"
    assert stats.format_table({"write": {"pages.written:train": 0}}) == "(1 counter of zero)"
    assert stats.format_table({"read": {"files.read": 1}}).splitlines()[-1].startswith("read")


def test_the_split_report_says_why_validation_outnumbers_train():
    samples = {"write": {"pages.written:train": 108, "pages.written:validation": 797}}
    line = c4.split_report(samples, 0.001)
    assert line.startswith("split: 108 pages in train, 797 in validation (by URL hash, "
                           "validation_fraction 0.001); validation holds far more than 0.1% here")
    assert "every URL of the released C4's validation split" in line
    per_language = {"write": {"pages.written:train:de": 1, "pages.written:validation:de": 0,
                              "pages.written:train:en": 999, "pages.written:validation:en": 1}}
    assert c4.split_report(per_language, 0.001) == (
        "split: 1,000 pages in train, 1 in validation (by URL hash, validation_fraction 0.001)")
