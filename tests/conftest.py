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
