"""A worker's environment here: a virtualenv holding only what an extra of setup.py installs.

Dataflow workers (and the worker image) get the project and one extra's pins, nothing else. To
run code as they do, `create` makes a virtualenv whose site-packages holds exactly the
distributions that extra needs, transitively (each requirement's own requirements, markers
evaluated for this interpreter), linked file by file from this environment rather than fetched
again: the same versions as the launcher's, in seconds, offline. `install_project` then installs
the project into it the way the image does (a wheel of the source folder, no dependencies).
"""
import dataclasses
import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import Iterable

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from deploy.requirements import extras_require

PROJECT_DISTRIBUTION = "t5-c4"


@dataclasses.dataclass(frozen=True)
class WorkerEnv:
    """A lean virtualenv: where it is and which extra it holds."""
    root: pathlib.Path
    extra: str

    @property
    def python(self) -> pathlib.Path:
        return self.root / "bin" / "python"

    def environ(self) -> dict[str, str]:
        """This process's environment variables for a process of this environment: its bin/
        first on PATH (Beam's worker pool starts workers as plain `python`), no PYTHONPATH (the
        project must come from what is installed here, not from a checkout)."""
        environ = {name: value for name, value in os.environ.items()
                   if name not in ("PYTHONPATH", "VIRTUAL_ENV")}
        environ["PATH"] = os.pathsep.join([str(self.root / "bin"), environ.get("PATH", "")])
        return environ


def _requirements_of(requirement: Requirement) -> list[Requirement]:
    """The installed distribution's own requirements that apply here, with the extras the
    requirement asks for; a missing or differently versioned distribution is an error."""
    distribution = importlib.metadata.distribution(requirement.name)
    if requirement.specifier and distribution.version not in requirement.specifier:
        raise RuntimeError(f"{requirement.name} {distribution.version} is installed here, the "
                           f"pin says {requirement.specifier}: run `make install`")
    applying = []
    for line in distribution.requires or ():
        needed = Requirement(line)
        if needed.marker is None or any(needed.marker.evaluate({"extra": extra})
                                        for extra in (requirement.extras or {""})):
            applying.append(needed)
    return applying


def dependency_closure(requirements: Iterable[str]) -> list[str]:
    """Canonical names of the distributions that installing `requirements` brings, transitively,
    as installed in this environment (a pin whose marker names another Python is left out, as
    pip leaves it)."""
    pending = [requirement for requirement in map(Requirement, requirements)
               if requirement.marker is None or requirement.marker.evaluate()]
    seen: dict[str, set[str]] = {}
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        extras = set(requirement.extras)
        if name in seen and extras <= seen[name]:
            continue
        seen[name] = seen.get(name, set()) | extras
        pending.extend(_requirements_of(requirement))
    return sorted(seen)


def _site_packages(root: pathlib.Path) -> pathlib.Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return root / "lib" / version / "site-packages"


def _link_distribution(name: str, site_packages: pathlib.Path) -> int:
    """Links each installed file of a distribution into site_packages (scripts and caches
    left out); returns how many. Shared namespace folders (google/, ...) become real folders,
    so only this closure's part of them is visible."""
    distribution = importlib.metadata.distribution(name)
    linked = 0
    for file in distribution.files or ():
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue
        source = pathlib.Path(distribution.locate_file(file))
        target = site_packages / file
        if not source.is_file() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
        linked += 1
    if not linked:
        raise RuntimeError(f"{name} lists no installed files (no RECORD): cannot link it")
    return linked


def create(root: pathlib.Path, extra: str) -> WorkerEnv:
    """A fresh virtualenv at root with the extra's distributions and nothing else (not even pip:
    `install_project` drives this environment's pip)."""
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site_packages = _site_packages(root)
    for name in dependency_closure(extras_require()[extra]):
        _link_distribution(name, site_packages)
    return WorkerEnv(root, extra)


def install_project(env: WorkerEnv, source: pathlib.Path) -> None:
    """Installs the project from a source folder (the checkout, or an image's build context) as
    a wheel without dependencies, as `pip install --no-deps .` does in deploy/Dockerfile."""
    # Run from the wheel folder: in the checkout, the editable install's metadata would tell
    # pip the project is installed already.
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--wheel-dir", wheels, str(source.resolve())],
                       check=True, capture_output=True, cwd=wheels, env=env.environ())
        (wheel,) = pathlib.Path(wheels).glob("*.whl")
        subprocess.run([sys.executable, "-m", "pip", "--python", str(env.python), "install",
                        "--quiet", "--no-deps", "--no-index", str(wheel)],
                       check=True, capture_output=True, cwd=wheels, env=env.environ())
