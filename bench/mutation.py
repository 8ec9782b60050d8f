"""Mutation testing of one module with the tests that cover it (mutmut 3; not part of `make test`).

    python bench/mutation.py --module pipelines/writers/exclusions.py
    python bench/mutation.py --module text/contamination.py \
        --tests "tests/model/test_contamination.py"
    python bench/mutation.py --module pipelines/executors/staged.py --sample 60 --time-limit 1800

mutmut copies the packages into a scratch folder (`build/mutation/<module>/mutants`), puts one
small change ("mutant") at a time into the module, and runs the tests that reach the changed
function; a mutant the tests pass with "survived": no test holds what that line does. The run
prints the mutants, how many the tests killed, survived, timed out, the kill rate, and each
survivor's file:line and diff. bench/MUTATION.md has the kill rates measured and the survivors.

The kill rate counts a timeout as killed (the mutant made the tests hang, which a run notices),
and a crash (the tests' process died, e.g. on an import the mutant broke), and counts a mutant no
selected test reaches ("no tests") as survived.
"""
import argparse
import ast
import json
import os
import pathlib
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Sequence

REPO = pathlib.Path(__file__).resolve().parents[1]

# The packages copied into the scratch folder, so that the tests import every module from there
# (and none from the working tree other sessions may be editing).
PACKAGES = ("pipelines", "text", "model", "tfds_c4", "deploy")

_FAST = ["-m", "not slow"]


class Target(NamedTuple):
    tests: List[str]  # pytest arguments: files, -k / -m selections.
    # mutmut mutant-name globs that restrict the run to some functions of the module (None: all).
    functions: Optional[List[str]] = None
    # The module calls its own functions at import (the task modules build their Task objects
    # so). mutmut forks each mutant's test run from a process that imported the module already,
    # where those calls ran unmutated: such a mutant would survive whatever the tests check.
    # So each mutant's tests import the project afresh, from a server that preloaded only the
    # third-party packages (slower: a second or two a mutant).
    fresh_imports: bool = False


# Third-party packages the fresh-import server loads once (the slow imports; none of ours).
PRELOAD = ("numpy", "tensorflow", "tensorflow_datasets", "apache_beam", "sklearn.metrics",
           "scipy.stats", "sacrebleu", "seqeval.metrics", "pytest")


# Each module of issue 48 with the tests that cover it.
TARGETS: Dict[str, Target] = {
    "pipelines/executors/staged.py": Target(["tests/pipelines/test_staged.py"] + _FAST),
    # The staged run's exclusions and webtextlike's URL lists are held by test_exclusions.py.
    "pipelines/executors/tasks.py": Target(["tests/pipelines/test_staged.py",
                                            "tests/pipelines/test_executors.py",
                                            "tests/pipelines/test_exclusions.py"] + _FAST),
    "pipelines/executors/planning.py": Target(["tests/pipelines/test_staged.py",
                                               "tests/pipelines/test_executors.py",
                                               "tests/pipelines/test_exclusions.py"] + _FAST),
    # The plan's lines for each variant are held by the variants' own tests (mC4, webtextlike).
    "pipelines/steps/plan.py": Target(["tests/pipelines/test_plan.py",
                                       "tests/pipelines/test_stages.py",
                                       "tests/pipelines/test_pipeline_e2e.py",
                                       "tests/pipelines/test_mc4.py"] + _FAST),
    "pipelines/counters.py": Target(["tests/pipelines/test_plan.py",
                                     "tests/pipelines/test_funnel.py",
                                     "tests/pipelines/test_datasheet.py"] + _FAST),
    "pipelines/executors/in_stages.py": Target(["tests/pipelines/test_staged.py",
                                                 "tests/pipelines/test_executors.py"] + _FAST),
    # Finding a run's sample from any folder is held by the datasheet's and the blocklist
    # study's tests.
    "pipelines/writers/exclusions.py": Target(["tests/pipelines/test_exclusions.py",
                                               "tests/pipelines/test_datasheet.py",
                                               "tests/pipelines/test_blocklist.py"] + _FAST),
    # The datasheet, in its four modules.
    "pipelines/audit/datasheet.py": Target(["tests/pipelines/test_datasheet.py"] + _FAST),
    "pipelines/audit/datasheet_sample.py": Target(["tests/pipelines/test_datasheet.py"] + _FAST),
    "pipelines/audit/datasheet_plots.py": Target(["tests/pipelines/test_datasheet.py"] + _FAST),
    "pipelines/audit/datasheet_html.py": Target(["tests/pipelines/test_datasheet.py"] + _FAST),
    "pipelines/audit/blocklist.py": Target(["tests/pipelines/test_blocklist.py"] + _FAST),
    # The decontamination stage's step (the rest of filter_steps.py is not mutated; its setting,
    # Decontamination, is steps/resources.py's).
    "pipelines/steps/filter_steps.py": Target(["tests/pipelines/test_decontamination.py"] + _FAST,
                                              ["pipelines.steps.filter_steps.xǁDecontamina*"]),
    "text/contamination.py": Target(["tests/model/test_contamination.py",
                                     "tests/pipelines/test_decontamination.py"] + _FAST),
    "model/tasks/xnli.py": Target(["tests/model/test_mt5_tasks.py"] + _FAST, fresh_imports=True),
    "model/tasks/paws_x.py": Target(["tests/model/test_mt5_tasks.py"] + _FAST, fresh_imports=True),
    "model/tasks/wikiann.py": Target(["tests/model/test_mt5_tasks.py"] + _FAST, fresh_imports=True),
    "model/tasks/multilingual_qa.py": Target(["tests/model/test_mt5_tasks.py"] + _FAST,
                                             fresh_imports=True),
    "model/tasks/mt5.py": Target(["tests/model/test_mt5_tasks.py"] + _FAST, fresh_imports=True),
    "model/tasks/mixtures.py": Target(["tests/model/test_tasks.py", "tests/model/test_mt5_tasks.py",
                                       "tests/model/test_paper_numbers.py"] + _FAST,
                                      fresh_imports=True),
    "model/tasks/multilingual_metrics.py": Target(["tests/model/test_multilingual_metrics.py"]
                                                  + _FAST),
}

# mutmut's exit codes of a checked mutant, by what they mean here.
_KILLED = {1, 3}
_SURVIVED = {0}
_NO_TESTS = {5, 33}
_TIMEOUT = {-24, 24, 152, 36}
# The test run died (mutmut files it under timeout): e.g. a mutant that breaks an import.
_CRASHED = {255}
_NOT_CHECKED = {None}


class Tally(NamedTuple):
    mutants: int
    killed: int
    survived: int
    no_tests: int
    timed_out: int
    crashed: int
    other: int
    not_checked: int

    @property
    def checked(self) -> int:
        return self.mutants - self.not_checked

    @property
    def kill_rate(self) -> float:
        caught = self.killed + self.timed_out + self.crashed
        return caught / self.checked if self.checked else 0.0


def tally(exit_codes: Sequence[Optional[int]]) -> Tally:
    def count(codes):
        return sum(code in codes for code in exit_codes)
    known = _KILLED | _SURVIVED | _NO_TESTS | _TIMEOUT | _CRASHED | _NOT_CHECKED
    return Tally(len(exit_codes), count(_KILLED), count(_SURVIVED), count(_NO_TESTS),
                 count(_TIMEOUT), count(_CRASHED), sum(code not in known for code in exit_codes),
                 count(_NOT_CHECKED))


def slug(module: str) -> str:
    return module.replace("/", ".").removesuffix(".py")


def toml_list(values: Sequence[str]) -> str:
    # A JSON string is a TOML basic string for the characters these options hold.
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def top_level_extras(source: pathlib.Path) -> List[str]:
    """The repository's other top-level files and folders the tests may read (requirements.txt,
    README.md, bench/, ...): everything but the packages, the tests, hidden and built ones."""
    skipped = set(PACKAGES) | {"tests", "build", "dist", "out"}
    return sorted(p.name for p in source.iterdir() if not p.name.startswith(".")
                  and p.name not in skipped and not p.name.endswith(".egg-info"))


def mutmut_config(module: str, target: Target, tests: Sequence[str], workdir: pathlib.Path,
                  extras: Sequence[str], args) -> str:
    fresh = ["process_isolation = \"forkserver\"", "forkserver_warmup = \"import\"",
             f"preload_modules_file = {json.dumps(str(workdir / 'preload.txt'))}"]
    return "\n".join([
        "[tool.mutmut]",
        f"source_paths = {toml_list(PACKAGES)}",
        f"only_mutate = {toml_list([module])}",
        f"also_copy = {toml_list(extras)}",
        f"pytest_add_cli_args = {toml_list(['-p', 'no:xdist', '-x', '-q'])}",
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
        f"timeout_multiplier = {args.timeout_multiplier}",
        f"timeout_constant = {args.timeout_constant}",
        # The mutants are all generated anew each run; no git-based cache to keep.
        "use_git_change_detection = false",
        *(fresh if target.fresh_imports else []),
        "",
    ])


def prepare(workdir: pathlib.Path, source: pathlib.Path, extras: Sequence[str], config: str):
    """A fresh scratch folder whose packages, tests and `extras` link to `source` (mutmut copies
    them into `mutants/`); the tests find the sample data at <their repository>/../shared."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    for name in (*PACKAGES, "tests", *extras):
        (workdir / name).symlink_to(source / name)
    (workdir / "shared").symlink_to((source.parent / "shared").resolve())
    (workdir / "pyproject.toml").write_text(config)
    (workdir / "preload.txt").write_text("\n".join(PRELOAD) + "\n")


def run_mutmut(workdir: pathlib.Path, names: Sequence[str], deadline: Optional[float]) -> int:
    """`mutmut run`, stopped at `deadline` (time.monotonic()) if given: the mutants checked by
    then keep their results; the others are reported as not checked."""
    mutmut = pathlib.Path(sys.executable).parent / "mutmut"
    env = dict(os.environ, PYTHONPATH="")
    process = subprocess.Popen([str(mutmut), "run", "--max-children", "1", *names],
                               cwd=workdir, env=env, start_new_session=True)
    try:
        return process.wait(timeout=None if deadline is None
                            else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        print("stopped at --time-limit", file=sys.stderr)
        return 0


def exit_codes(workdir: pathlib.Path, module: str) -> Dict[str, Optional[int]]:
    meta = workdir / "mutants" / (module + ".meta")
    if not meta.exists():
        sys.exit(f"mutmut wrote no results ({meta} is missing): see its output above")
    return json.loads(meta.read_text())["exit_code_by_key"]


def matching(names, globs: Optional[Sequence[str]]) -> List[str]:
    if globs is None:
        return sorted(names)
    patterns = [re.compile(re.escape(g).replace(r"\*", ".*") + "$") for g in globs]
    return sorted(n for n in names if any(p.match(n) for p in patterns))


def function_starts(source_file: pathlib.Path) -> Dict[str, int]:
    """'function' and 'Class.method' -> the line of its first decorator or its `def`."""
    starts = {}
    tree = ast.parse(source_file.read_text())
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = node.name + "." if isinstance(node, ast.ClassDef) else ""
        for member in members:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = [d.lineno for d in member.decorator_list] + [member.lineno]
                starts[prefix + member.name] = min(lines)
    return starts


def changed_line(diff: str, function_start: Optional[int]) -> Optional[int]:
    """The file line of the first line the mutant changes: the diff is of the function alone,
    counted from its first decorator or `def` (comments above it come first in the diff)."""
    if function_start is None:
        return None
    body = diff.split("\n")[2:]  # Past the ---/+++ header.
    old = [line for line in body if not line.startswith(("+", "@@"))]
    first_code = next((i for i, line in enumerate(old)
                       if line[1:].lstrip().startswith(("def ", "async def ", "@"))), 0)
    first_change = next((i for i, line in enumerate(old) if line.startswith("-")), None)
    hunk = re.match(r"@@ -(\d+)", body[0]) if body else None
    if first_change is None or hunk is None:
        return None
    return function_start + int(hunk.group(1)) - 1 + first_change - first_code


def survivors(workdir: pathlib.Path, module: str, names: Sequence[str]) -> List[str]:
    """Each surviving mutant as 'file:line name' and its diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    starts = function_starts(workdir / module)
    here = os.getcwd()
    os.chdir(workdir)
    try:
        blocks = []
        for name in names:
            function, cls = orig_function_and_class_names_from_key(name)
            diff = get_diff_for_mutant(name, path=module)
            line = changed_line(diff, starts.get(f"{cls}.{function}" if cls else function))
            blocks.append(f"{module}:{line or '?'} {name}\n{diff}\n")
        return blocks
    finally:
        os.chdir(here)


def summary(module: str, counts: Tally) -> str:
    lines = [f"module        {module}",
             f"mutants       {counts.mutants}" + (f" ({counts.checked} checked)"
                                                  if counts.not_checked else ""),
             f"killed        {counts.killed}",
             f"survived      {counts.survived}",
             f"no tests      {counts.no_tests} (reach no selected test: counted as survived)",
             f"timed out     {counts.timed_out} (counted as killed)",
             f"crashed       {counts.crashed} (the tests' process died: counted as killed)",
             f"kill rate     {counts.kill_rate:.1%}"]
    if counts.other:
        lines.append(f"other         {counts.other} (suspicious or crashed: not killed)")
    return "\n".join(lines)


def every_test_reaches(stats_file: pathlib.Path, module: str):
    """mutmut runs a mutant with the tests it saw call the function. A call made while the
    tests import the module belongs to no test, so for a module that calls its functions at
    import, every selected test runs every mutant."""
    stats = json.loads(stats_file.read_text())
    tests = sorted(stats["duration_by_test"])
    reached = stats["tests_by_mangled_function_name"]
    for function in [f for f in reached if f.startswith(module + ".")] + [
            f"{module}.{name}" for name in mangled_functions(stats_file.parent, module)]:
        reached[function] = tests
    stats_file.write_text(json.dumps(stats))


def mangled_functions(mutants: pathlib.Path, module: str) -> List[str]:
    """The module's functions as mutmut names them ('x_name', 'xǁClassǁmethod')."""
    meta = json.loads((mutants / (module.replace(".", "/") + ".py.meta")).read_text())
    return sorted({key.split("__mutmut_")[0].rpartition(".")[2]
                   for key in meta["exit_code_by_key"]})


def measure(args, target: Target, tests: Sequence[str], workdir: pathlib.Path) -> List[str]:
    """Runs mutmut over the module; returns the globs of the mutants it checks."""
    source = args.source.resolve()
    extras = top_level_extras(source)
    prepare(workdir, source, extras,
            mutmut_config(args.module, target, tests, workdir, extras, args))
    globs = target.functions
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    if args.sample or target.fresh_imports:
        # A first run generates the mutants and finds which tests reach them; a name that
        # matches no mutant stops it there.
        run_mutmut(workdir, ["not-a-mutant"], deadline)
    stats = workdir / "mutants" / "mutmut-stats.json"
    if (args.sample or target.fresh_imports) and not stats.exists():
        sys.exit("mutmut could not run the selected tests unmutated (see its output above): "
                 "fix the failing test, or pass --tests without it")
    if target.fresh_imports:
        every_test_reaches(stats, slug(args.module))
    if args.sample:
        names = matching(exit_codes(workdir, args.module), globs)
        globs = sorted(random.Random(0).sample(names, min(args.sample, len(names))))
    run_mutmut(workdir, globs or [], deadline)
    return globs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", required=True,
                        help="the module to mutate, relative to the repository: one of "
                        "TARGETS, or any with --tests")
    parser.add_argument("--tests", help="the pytest selection, one shell-quoted string "
                        "(default: the module's own, in TARGETS)")
    parser.add_argument("--source", type=pathlib.Path, default=REPO,
                        help="the repository to measure (a `git worktree` of a commit, say)")
    parser.add_argument("--workdir", type=pathlib.Path,
                        help="scratch folder (default: <source>/build/mutation/<module>)")
    parser.add_argument("--sample", type=int,
                        help="check this many mutants drawn at random (seed 0), not all")
    parser.add_argument("--time-limit", type=float,
                        help="stop after this many seconds; the mutants not checked are said")
    parser.add_argument("--timeout-multiplier", type=float, default=5.0,
                        help="a mutant times out past this many times its tests' clean duration")
    parser.add_argument("--timeout-constant", type=float, default=10.0,
                        help="... plus these seconds")
    parser.add_argument("--report-only", action="store_true",
                        help="print the results of the last run in --workdir again; run nothing")
    parser.add_argument("--survivors-out", type=pathlib.Path,
                        help="also write the survivors' list and diffs to this file")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    source = args.source.resolve()
    if not (source / args.module).is_file():
        sys.exit(f"--module {args.module}: no such file in {source}")
    if args.module not in TARGETS and not args.tests:
        sys.exit(f"--module {args.module} has no default test selection: pass --tests, or use "
                 f"one of {', '.join(sorted(TARGETS))}")
    target = TARGETS.get(args.module, Target([]))
    tests = shlex.split(args.tests) if args.tests else target.tests
    workdir = (args.workdir or source / "build" / "mutation" / slug(args.module)).resolve()
    # Again (--report-only), a sample's mutants not drawn count as not checked.
    globs = target.functions if args.report_only else measure(args, target, tests, workdir)

    codes = exit_codes(workdir, args.module)
    chosen = matching(codes, globs)
    counts = tally([codes[name] for name in chosen])
    left = survivors(workdir, args.module,
                     [n for n in chosen if codes[n] in _SURVIVED | _NO_TESTS])
    report = summary(args.module, counts) + "\n\nsurvivors:\n\n" + "\n".join(left)
    print(report)
    if args.survivors_out:
        args.survivors_out.write_text(report)


if __name__ == "__main__":
    main()
