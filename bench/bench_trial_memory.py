"""Peak memory and time of each family's trial run (issue 25): the blocks of the section "Try it
on a laptop" of model/families/<family>/README.md, run as a user runs them (every command its
own process) in a fresh copy of the project beside ../shared. Prints each command's peak
resident memory and wall time, and each family's peak, against the 4 GB a trial must fit in.

    .venv/bin/python bench/bench_trial_memory.py [--family t5 ...]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from tests.support import documents  # noqa: E402

FAMILIES = ("t5", "gpt1", "bert", "segabert")
TRIAL_HEADING = "Try it on a laptop"
LIMIT_BYTES = 4 * 2**30
# Each python command under a parent that reads its peak (getrusage of its one child).
MEASURED = r"""
import json, resource, subprocess, sys, time
start = time.monotonic()
status = subprocess.call([sys.executable] + sys.argv[2:])
with open(sys.argv[1], "a") as record:
    record.write(json.dumps({"command": " ".join(sys.argv[2:6]), "status": status,
                             "seconds": time.monotonic() - start,
                             "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss})
                 + "\n")
sys.exit(status)
"""


def trial_blocks(family: str):
    readme = documents.ROOT / "model" / "families" / family / "README.md"
    found = [block for block in documents.blocks(readme)
             if block.heading == TRIAL_HEADING and block.runs]
    if not found:
        sys.exit(f"{readme}: no runnable block under '{TRIAL_HEADING}'")
    return found


def measure(family: str) -> list:
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch)
        project = documents.fresh_project(folder)
        record = folder / "record.jsonl"
        (folder / "measured.py").write_text(MEASURED)
        prelude = (f'python() {{ command python {folder / "measured.py"} {record} "$@"; }}')
        result = subprocess.run(["bash", "-c", documents.bash_script(trial_blocks(family),
                                                                      prelude)],
                                cwd=project, capture_output=True, text=True,
                                env=documents.environment(project, folder / "home",
                                                          dict(os.environ)))
        if result.returncode:
            sys.exit(f"{family}'s trial failed:\n{result.stderr[-4000:]}")
        return [json.loads(line) for line in record.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/bench_trial_memory.py", description=__doc__)
    parser.add_argument("--family", action="append", choices=FAMILIES)
    families = parser.parse_args().family or FAMILIES
    for family in families:
        commands = measure(family)
        for entry in commands:
            print(f"{family:9s} {entry['peak_kib'] / 2**20:5.2f} GiB {entry['seconds']:6.1f} s  "
                  f"python {entry['command']}")
        peak = max(entry["peak_kib"] for entry in commands) * 1024
        total = sum(entry["seconds"] for entry in commands)
        verdict = "fits" if peak <= LIMIT_BYTES else "DOES NOT FIT"
        print(f"{family:9s} peak {peak / 2**30:.2f} GiB ({verdict} in 4 GiB), "
              f"{total:.0f} s in all\n")


if __name__ == "__main__":
    main()
