"""bench/mutation.py, the mutation tool's entry point (bench/MUTATION.md): how it reads mutmut's
exit codes into a kill rate, which mutants a target's globs take, where in the file a survivor
changed, and that every module and test file its table names exists. mutmut itself is not
installed here (requirements-mutation.txt): nothing below needs it."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mutation():
    # bench/ holds scripts, not a package: the script is loaded from its path.
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench/mutation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mutmuts_exit_codes_are_counted_as_its_statuses_say(mutation):
    # mutmut 3.8.1's mutmut/stats.py: 1 and 3 killed, 0 survived, 5 and 33 no tests, 36 and the
    # SIGXCPU codes timeout, 255 a dead test process, None not checked; -9 a segfault.
    codes = [1, 3, 1, 0, 0, 5, 33, 36, 24, 255, None, None, -9]
    tally = mutation.tally(codes)
    assert (tally.mutants, tally.killed, tally.survived, tally.no_tests, tally.timed_out,
            tally.crashed, tally.other, tally.not_checked) == (13, 3, 2, 2, 2, 1, 1, 2)
    assert tally.checked == 11
    # Killed 3 + timed out 2 + crashed 1 of the 11 checked; no tests and the segfault are not
    # kills.
    assert tally.kill_rate == pytest.approx(6 / 11)
    assert mutation.tally([None, None]).kill_rate == 0.0


def test_the_summary_says_the_kill_rate_and_what_counts_as_killed(mutation):
    text = mutation.summary("pipelines/x.py", mutation.tally([1, 0, 0, 36, None]))
    assert "mutants       5 (4 checked)" in text
    assert "kill rate     50.0%" in text
    assert "no tests      0 (reach no selected test: counted as survived)" in text
    assert "timed out     1 (counted as killed)" in text


def test_a_targets_globs_take_only_the_mutants_they_name(mutation):
    names = ["pipelines.steps.filter_steps.xǁDecontaminate.__call____mutmut_2",
             "pipelines.steps.filter_steps.x_read_steps__mutmut_1",
             "pipelines.steps.filter_steps.xǁDecontamination.__init____mutmut_1"]
    assert mutation.matching(names, ["pipelines.steps.filter_steps.xǁDecontamina*"]) == [
        "pipelines.steps.filter_steps.xǁDecontaminate.__call____mutmut_2",
        "pipelines.steps.filter_steps.xǁDecontamination.__init____mutmut_1"]
    assert mutation.matching(names, None) == sorted(names)


def test_a_survivor_is_placed_on_the_file_line_it_changes(mutation, tmp_path):
    source = tmp_path / "module.py"
    source.write_text("import os\n\n\n@decorator\ndef f(x):\n    y = x + 1\n    return y\n")
    assert mutation.function_starts(source) == {"f": 4}
    # The diff of the function alone, counted from its decorator: the changed line is line 6.
    diff = ("--- a\n+++ b\n@@ -1,4 +1,4 @@\n @decorator\n def f(x):\n-    y = x + 1\n"
            "+    y = x - 1\n     return y\n")
    assert mutation.changed_line(diff, 4) == 6
    assert mutation.changed_line(diff, None) is None


def test_every_module_and_test_file_of_the_table_exists(mutation):
    for module, target in mutation.TARGETS.items():
        assert (ROOT / module).is_file(), module
        files = [argument for argument in target.tests if argument.startswith("tests/")]
        assert files, module
        for selection in files:
            assert (ROOT / selection.split("::")[0]).is_file(), (module, selection)
    assert mutation.slug("model/tasks/xnli.py") == "model.tasks.xnli"
