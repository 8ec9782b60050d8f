"""After `make install`, the project's packages import from anywhere, with no PYTHONPATH.

`tfds build --imports tfds_c4` imports the builder in a fresh process whose working directory
need not be the project root; the README documents it with nothing else set.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_packages_import_without_pythonpath_from_another_folder(tmp_path):
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    finished = subprocess.run(
        [sys.executable, "-c", "import pipelines.c4, text, tfds_c4; print(tfds_c4.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, (
        "the project is not installed in the environment: run `make install`\n"
        + finished.stderr[-2000:])
    assert pathlib.Path(finished.stdout.strip()).parent == REPO / "tfds_c4"


@pytest.mark.slow  # asks the package registry to resolve the extra (tens of seconds)
def test_pip_resolves_the_pipeline_extra_without_tensorflow_torch_or_transformers(tmp_path):
    """What `pip install .[pipeline]` would install, resolved by pip against the registry."""
    report = tmp_path / "report.json"
    finished = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--report", str(report), f"{REPO}[pipeline]"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert {"apache-beam", "warcio", "langdetect", "langdetect-rs", "pyahocorasick", "isal",
            "orjson", "tldextract", "numpy", "nltk"} <= names
    assert not {name for name in names if name.startswith(("tensorflow", "torch", "transformers"))}
