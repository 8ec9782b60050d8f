"""Imports run one way (../shared/DESIGN.md): each package of the project imports only the packages
below it in text <- pipelines <- tfds_c4 <- model <- deploy <- bench, and model/ never imports
pipelines/ itself (what both need lives in text/)."""
import ast
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
LAYERS = ("text", "pipelines", "tfds_c4", "model", "deploy", "bench")  # from the ground up


def project_imports(package: str) -> dict[str, set[str]]:
    """{imported project package: the files of `package` that import it}, absolute imports only
    (a relative import stays inside its package)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in LAYERS and top != package:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO_ROOT)))
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_only_the_layers_below_it(package):
    below = set(LAYERS[:LAYERS.index(package)])
    upward = {imported: files for imported, files in project_imports(package).items()
              if imported not in below}
    assert not upward, f"{package} imports layers above it: {upward}"


def test_model_never_imports_the_pipeline():
    assert "pipelines" not in project_imports("model")
