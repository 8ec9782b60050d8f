"""Comparing a run's output folder with the one-job run's, byte for byte, with a message that
says what differs: which files, and of a differing shard its first differing line and fields
(or that its lines agree and only its gzip bytes differ). A failure keeps what a recurrence needs
to be studied: a copy of the reference beside the run's folder, and the facts of the process that
compared them (its hash seed, the tests this pytest worker ran before)."""
import gzip
import json
import os
import pathlib
import shutil
import sys
from typing import List

from deploy.rehearse import file_digests
from tests.support.references import build_record


def _first_difference(actual: pathlib.Path, expected: pathlib.Path) -> str:
    if not actual.name.endswith(".gz"):
        return "its bytes differ"
    actual_lines = gzip.decompress(actual.read_bytes()).splitlines()
    expected_lines = gzip.decompress(expected.read_bytes()).splitlines()
    for number, (got, wanted) in enumerate(zip(actual_lines, expected_lines)):
        if got != wanted:
            got_record, wanted_record = json.loads(got), json.loads(wanted)
            fields = {name: (got_record.get(name), wanted_record.get(name))
                      for name in sorted(set(got_record) | set(wanted_record))
                      if got_record.get(name) != wanted_record.get(name)}
            shown = {name: tuple(str(value)[:200] for value in pair)
                     for name, pair in fields.items()}
            return f"line {number} differs (run, one job): {shown}"
    if len(actual_lines) != len(expected_lines):
        return f"{len(actual_lines)} lines against {len(expected_lines)}"
    return "the same lines, other gzip bytes"


# The node ids of the tests this process has started, in order (tests/conftest.py appends them).
TESTS_STARTED: List[str] = []


def keep_for_study(actual: pathlib.Path, expected: pathlib.Path) -> str:
    """Copies `expected` beside `actual` (the run's folder stays where it is) and writes the
    facts of this process beside them; says where, for the failure's message."""
    kept_reference = actual.with_name(actual.name + ".reference")
    shutil.rmtree(kept_reference, ignore_errors=True)
    shutil.copytree(expected, kept_reference)
    facts = {"run": str(actual), "reference": str(expected), "kept_reference": str(kept_reference),
             "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"),
             "hash_randomization": bool(sys.flags.hash_randomization),
             "xdist_worker": os.environ.get("PYTEST_XDIST_WORKER"),
             "tests_started_in_this_worker": TESTS_STARTED}
    facts["reference_build"] = build_record(expected)
    facts_path = actual.with_name(actual.name + ".failure.json")
    facts_path.write_text(json.dumps(facts, indent=2))
    return (f"kept for study: the run in {actual}, the reference copied to {kept_reference}, "
            f"the facts (hash seed {facts['PYTHONHASHSEED']}, {len(TESTS_STARTED)} tests started "
            f"in this worker) in {facts_path}")


def assert_same_output(actual: pathlib.Path, expected: pathlib.Path) -> None:
    got, wanted = file_digests(actual), file_digests(expected)
    if got == wanted:
        return
    problems = [f"{name}: only in the run" for name in sorted(set(got) - set(wanted))]
    problems += [f"{name}: missing" for name in sorted(set(wanted) - set(got))]
    problems += [f"{name}: {_first_difference(actual / name, expected / name)}"
                 for name in sorted(set(got) & set(wanted)) if got[name] != wanted[name]]
    problems.append(keep_for_study(actual, expected))
    raise AssertionError("the output differs from the one-job run's:\n" + "\n".join(problems))
