"""What a run prints for a person: counts in the right number, the table without its zeros, the
split's counts with why validation can outnumber train, and a dry run that says which groups are
redone and why."""
import dataclasses
import shutil

from deploy import dataflow
from pipelines import c4, parts, stats
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


def test_the_dataflow_plan_of_one_dump_and_one_group_a_job(capsys):
    job = dataflow.parse_job([*["--project", "my-project", "--region", "us-central1", "--bucket", "gs://my-bucket"],
                              "--variant", "en", "--dump", "CC-MAIN-2019-18"])[0]
    job = dataclasses.replace(job, max_files=1, staged=False, group_files=1, groups_per_job=1)
    plan = dataflow.plan_lines(job)
    assert plan[0].startswith("plan: about 1 WET file (1 dump) in 1 group of 1, kept under ")
    assert plan[1].startswith("  1 Dataflow job of up to 1 group (named ")
    assert "(1 WET file of reading)" in plan[3]


def test_the_dry_run_names_a_group_a_killed_run_left_half_written(shared_data, tmp_path,
                                                                    capsys):
    """A run killed while it wrote a group leaves its part files and no marker: the dry run
    counts it among the groups to compute and says it is redone, and why."""
    sample = tmp_path / "in"
    sample.mkdir()
    for name in ("a", "b"):
        shutil.copy(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz",
                    sample / f"{name}.warc.wet.gz")
    argv = ["--variant", "en.noclean", "--input", str(sample / "*"),
            "--output", str(tmp_path / "out"), "--in_parts", "--group_files", "1"]
    c4.main(argv)
    group = parts.Group(1, range(1, 2))
    (tmp_path / "out/parts" / group.name / parts.MARKER_FILE).unlink()  # What SIGKILL leaves.
    capsys.readouterr()
    c4.main(argv + ["--dry_run"])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"en.noclean: 2 WET files into {tmp_path / 'out'}"
    assert printed[1] == ("in parts: 2 groups of up to 1 WET file; 1 done (reused), 1 to compute, "
                          "1 of them redone (1 file) in 1 job of up to 1 group, then one global "
                          "job (URL dedup to the shards)")
    assert printed[2] == f"  redo group-00001: {parts.STOPPED_WHILE_WRITTEN}"
