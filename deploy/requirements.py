"""Reads the pinned requirements.txt, the one source of versions for every install we ship, and
says which of those pins each kind of install (an extra of setup.py) needs.

    python -m deploy.requirements pipeline     # prints the `pipeline` extra's pins, one a line

(deploy/Dockerfile installs a worker image's dependencies from that list.)

A pin is a requirements.txt line, `name==version`, with an environment marker where the version
depends on the Python it installs into (`pandas==2.3.3; python_version < "3.11"`): a package has
one such pin per Python range, and every list here carries the markers for pip (or setuptools)
to evaluate on the machine that installs.
"""
import pathlib
import sys
from typing import Iterable

from deploy import REPO_ROOT

REQUIREMENTS_TXT = REPO_ROOT / "requirements.txt"
# Needed only to run the tests, never on a worker (seqeval: the oracle of WikiAnn's span F1).
TEST_ONLY = frozenset({"pytest", "pytest-xdist", "seqeval"})
# The project's top-level packages, as setup.py installs them (with their subpackages).
PACKAGES = ("text", "pipelines", "tfds_c4", "model")

# What every install needs: numpy is the one package text/pipelines, tfds_c4 and model all use.
BASE = ("numpy",)
# A Dataflow worker of the C4 job (pipelines.c4): Beam and the page rules' libraries (langdetect
# for its profiles, langdetect-rs to run them; pyahocorasick, isal, orjson); nltk only for
# --splitter punkt, cld3-py (CLD3) only for mC4; protobuf at the launcher's version, since the
# worker decodes the job's protos; pyarrow (a need of Beam's) for --format parquet. No TensorFlow, torch or transformers: workers install this at
# every start.
_PIPELINE = ("apache-beam", "warcio", "langdetect", "langdetect-rs", "pyahocorasick", "isal",
             "orjson", "cld3-py", "tldextract", "numpy", "nltk", "protobuf", "pyarrow")
# `tfds build` of t5_c4 with Beam: the pipeline plus TensorFlow and TFDS (whose command line
# imports mlcroissant, which the pins of pandas and scipy keep on numpy 1).
_TFDS = _PIPELINE + ("tensorflow", "tensorflow-datasets", "tensorflow-metadata", "mlcroissant",
                     "pandas", "scipy")
# Training on a TPU host: model/ reads `tfds:t5_c4/...` through tfds_c4, so tfds's pins too;
# mesh-tensorflow imports pkg_resources (setuptools); task metrics need sacrebleu, rouge-score
# and scikit-learn.
_MODEL = _TFDS + ("tensorflow-text", "mesh-tensorflow", "gin-config", "sentencepiece",
                  "sacrebleu", "rouge-score", "scikit-learn", "setuptools")
# Auditing a run where it was launched (pipelines/README.md): the datasheet's plots and reading
# the output with Hugging Face `datasets`; never on a worker.
_AUDIT = _PIPELINE + ("matplotlib", "datasets", "huggingface-hub")
EXTRAS = {
    "pipeline": _PIPELINE,
    "tfds": _TFDS,
    "model": _MODEL,
    "audit": _AUDIT,
    # model.families.t5.hf converts the trainer's checkpoints (model) to Hugging Face (torch).
    "export": _MODEL + _AUDIT + ("torch", "transformers"),
}


def requirement_name(pin: str) -> str:
    return pin.split("==", 1)[0].strip().lower()


def pinned_requirements(path: pathlib.Path = REQUIREMENTS_TXT,
                        exclude: Iterable[str] = TEST_ONLY) -> list[str]:
    """The pins of requirements.txt (`name==version`, markers kept) in file order, without
    comments and without the excluded package names."""
    excluded = {name.lower() for name in exclude}
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and requirement_name(line) not in excluded]


def pins_of(names: Iterable[str], path: pathlib.Path = REQUIREMENTS_TXT) -> list[str]:
    """The pins of the named packages, in requirements.txt's order, every pin of a package that
    has one per Python range; a name without a pin is a KeyError (a package no install could
    get at a known version)."""
    wanted = set(names)
    pins = [pin for pin in pinned_requirements(path) if requirement_name(pin) in wanted]
    missing = wanted - {requirement_name(pin) for pin in pins}
    if missing:
        raise KeyError(f"not pinned in {path.name}: {', '.join(sorted(missing))}")
    return pins


def extras_require(path: pathlib.Path = REQUIREMENTS_TXT) -> dict[str, list[str]]:
    """setup.py's extras_require: each extra's pins."""
    return {extra: pins_of(names, path) for extra, names in EXTRAS.items()}


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0] not in EXTRAS:
        sys.exit(f"usage: python -m deploy.requirements {{{','.join(EXTRAS)}}}")
    print(*pins_of(EXTRAS[argv[0]]), sep="\n")


if __name__ == "__main__":
    main(sys.argv[1:])
