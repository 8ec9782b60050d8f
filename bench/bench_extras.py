"""Installed size and install time of each extra of setup.py, as a worker installs it.

    .venv/bin/python bench/bench_extras.py [--extras pipeline tfds model export] [--root /tmp/x]

For each extra: a fresh virtual environment, then `pip install --no-cache-dir .[EXTRA]` (pip
fetches every wheel from the registry, as a new worker does), timed; the size is every file under
the environment. `all` is requirements.txt, what `make install` puts in .venv for development.
Figures depend on the registry's speed and on this machine's pip configuration (here a local
wheel mirror beside PyPI, which serves torch's CPU build): run it where the workers run.
"""
import argparse
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from deploy.requirements import EXTRAS  # noqa: E402

ALL = "all"


@dataclasses.dataclass(frozen=True)
class Install:
    extra: str
    seconds: float
    megabytes: float
    distributions: int
    heavy: tuple[str, ...]  # which of TensorFlow, torch, transformers it brought


def tree_bytes(root: pathlib.Path) -> int:
    """Bytes of the regular files under root (links not followed, so nothing counted twice)."""
    paths = (pathlib.Path(folder, name) for folder, _, names in os.walk(root) for name in names)
    return sum(path.stat(follow_symlinks=False).st_size for path in paths if not path.is_symlink())


def install(extra: str, root: pathlib.Path) -> Install:
    venv = root / extra
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    what = (["-r", str(REPO_ROOT / "requirements.txt")] if extra == ALL
            else [f"{REPO_ROOT}[{extra}]"])
    start = time.perf_counter()
    finished = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-cache-dir",
                               *what], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if finished.returncode != 0:
        sys.exit(f"installing {extra} failed:\n{finished.stderr[-3000:]}")
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=True,
                            capture_output=True, text=True).stdout.lower().split()
    names = {line.split("==")[0] for line in listed}
    heavy = tuple(name for name in ("tensorflow", "torch", "transformers") if name in names)
    return Install(extra, seconds, tree_bytes(venv) / 1e6, len(names), heavy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extras", nargs="+", default=[*EXTRAS, ALL],
                        choices=[*EXTRAS, ALL])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path("/tmp/t5-c4-extras"),
                        help="where the throwaway environments go (removed afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the environments")
    args = parser.parse_args()
    print(f"{'extra':<10}{'install s':>10}{'size MB':>10}{'packages':>10}  heavy packages")
    for extra in args.extras:
        result = install(extra, args.root)
        print(f"{result.extra:<10}{result.seconds:>10.0f}{result.megabytes:>10,.0f}"
              f"{result.distributions:>10}  {', '.join(result.heavy) or 'none'}", flush=True)
        if not args.keep:
            shutil.rmtree(args.root / extra)


if __name__ == "__main__":
    main()
