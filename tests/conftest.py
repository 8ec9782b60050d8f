"""Fixtures shared by every test: where the real sample data lives."""
import pathlib

import pytest

SHARED_DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"


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


@pytest.fixture(scope="module")
def one_job(shared_data, tmp_path_factory):
    """The uninterrupted C4 runs in one job, by variant (rules, extra options): their output
    folders, whose files a run in parts or in stages must write byte for byte."""
    from pipelines import c4
    from tests.support.variant_runs import variant_args
    outputs = {}

    def of(variant, rules=None, extra=()):
        key = variant, rules, tuple(extra)
        if key not in outputs:
            output = tmp_path_factory.mktemp(f"one-job-{variant}")
            c4.main(variant_args(shared_data, variant, rules) + ["--output", str(output),
                                                                 *extra])
            outputs[key] = output
        return outputs[key]
    return of
