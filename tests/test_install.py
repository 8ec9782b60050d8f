"""After `make install`, the project's packages import from anywhere, with no PYTHONPATH.

`tfds build --imports tfds_c4` imports the builder in a fresh process whose working directory
need not be the project root; the README documents it with nothing else set.
"""
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_packages_import_without_pythonpath_from_another_folder(tmp_path):
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    finished = subprocess.run(
        [sys.executable, "-c", "import pipelines.c4, text, tfds_c4; print(tfds_c4.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, (
        "the project is not installed in the environment: run `make install`\n"
        + finished.stderr[-2000:])
    assert pathlib.Path(finished.stdout.strip()).parent == REPO / "tfds_c4"
