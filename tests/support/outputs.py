"""Comparing a run's output folder with the one-job run's, byte for byte, with a message that
says what differs: which files, and of a differing shard its first differing line and fields
(or that its lines agree and only its gzip bytes differ)."""
import gzip
import json
import pathlib

from deploy.rehearse import file_digests


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


def assert_same_output(actual: pathlib.Path, expected: pathlib.Path) -> None:
    got, wanted = file_digests(actual), file_digests(expected)
    if got == wanted:
        return
    problems = [f"{name}: only in the run" for name in sorted(set(got) - set(wanted))]
    problems += [f"{name}: missing" for name in sorted(set(wanted) - set(got))]
    problems += [f"{name}: {_first_difference(actual / name, expected / name)}"
                 for name in sorted(set(got) & set(wanted)) if got[name] != wanted[name]]
    raise AssertionError("the output differs from the one-job run's:\n" + "\n".join(problems))
