"""Reads the pinned requirements.txt, the one source of versions for every install we ship."""
import pathlib
from typing import Iterable

REQUIREMENTS_TXT = pathlib.Path(__file__).resolve().parents[1] / "requirements.txt"
# Needed only to run the tests, never on a worker.
TEST_ONLY = frozenset({"pytest"})


def requirement_name(pin: str) -> str:
    return pin.split("==", 1)[0].strip().lower()


def pinned_requirements(path: pathlib.Path = REQUIREMENTS_TXT,
                        exclude: Iterable[str] = TEST_ONLY) -> list[str]:
    """The `name==version` lines of requirements.txt in file order, without comments and
    without the excluded package names."""
    excluded = {name.lower() for name in exclude}
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and requirement_name(line) not in excluded]
