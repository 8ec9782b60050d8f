"""Fixtures shared by every test: where the real sample data lives, and the one-job references."""
import os
import pathlib

import pytest

from tests.support import outputs
from tests.support.references import build_reference

SHARED_DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_runtest_logstart(nodeid, location):
    """Each test this process starts, in order: a failed byte-for-byte comparison names them."""
    outputs.TESTS_STARTED.append(nodeid)


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared sample data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def clean_gin():
    """Clears gin's global bindings before and after a test: it starts from none whatever ran
    before it, and later tests start from none too."""
    import gin
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture(scope="session")
def references_root(tmp_path_factory) -> pathlib.Path:
    """The folder of the session's references, one for all pytest-xdist workers (their base
    temporary folders share a parent), so each reference is built once a session."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "references"


@pytest.fixture(scope="session")
def one_job(shared_data, references_root):
    """The uninterrupted C4 runs in one job, by variant (rules, extra options): their output
    folders, whose files a run in parts or in stages must write byte for byte. Built by the
    plain command line in a subprocess (tests/support/references.py), whatever the test that
    asks first has patched."""
    from tests.support.variant_runs import variant_args

    def of(variant, rules=None, extra=()):
        return build_reference(references_root,
                               variant_args(shared_data, variant, rules) + list(extra)).folder
    return of
