"""The project's documents as their readers run them (issue 25): the fenced blocks of every
Markdown file, what each says it is, and a fresh copy of the project to run them in.

A fenced block's info string says what it is: `sh` (commands a user types) and `python` (code a
user runs) are run; `text`, `gin`, `json` (output, layouts, formulas, synopses with placeholders)
are not. A `sh` or `python` block that cannot run here starts with `# not run here: REASON`, one
of REASONS. tests/project/test_documented_commands.py runs the blocks; bench/bench_trial_memory.py
measures the family READMEs' trial blocks."""
import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
from typing import List, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
VENV = ROOT / ".venv"
RUN_INFOS = ("sh", "python")
OTHER_INFOS = ("text", "gin", "json")
NOT_RUN = "# not run here: "
REASONS = ("needs the internet", "needs a Google Cloud project", "needs a TPU",
           "the paper's size (a TPU)", "a benchmark (bench/README.md)")
# Folders of a working copy that hold no document of the project's.
NOT_DOCUMENTS = {".git", ".venv", ".venv-worker", "out", "runs", "hf", "build", "dist",
                 "__pycache__"}
FENCE = re.compile(r"^(```+)\s*(\S*)\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    document: str  # relative to the project
    line: int  # of the opening fence
    info: str
    text: str
    heading: str = ""  # the section it is in

    @property
    def not_run_reason(self) -> Optional[str]:
        first = self.text.splitlines()[0] if self.text else ""
        return first[len(NOT_RUN):].strip() if first.startswith(NOT_RUN) else None

    @property
    def runs(self) -> bool:
        return self.info in RUN_INFOS and self.not_run_reason is None

    def __str__(self) -> str:
        return f"{self.document}:{self.line}"


def documents(root: pathlib.Path = ROOT) -> List[pathlib.Path]:
    return sorted(path for path in root.rglob("*.md")
                  if not NOT_DOCUMENTS & set(path.relative_to(root).parts[:-1])
                  and not any(part.endswith(".egg-info") for part in path.parts))


def blocks(path: pathlib.Path, root: pathlib.Path = ROOT) -> List[Block]:
    """The fenced blocks of a Markdown document, in order, each with its section's heading."""
    found, opening, lines, heading = [], None, [], ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if opening is None and fence:
            opening, lines = (number, fence.group(1), fence.group(2)), []
        elif opening is not None and fence and fence.group(1) == opening[1] and not fence.group(2):
            found.append(Block(str(path.relative_to(root)), opening[0], opening[2],
                               "\n".join(lines), heading))
            opening = None
        elif opening is not None:
            lines.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    if opening is not None:
        raise ValueError(f"{path}:{opening[0]}: a fence that never closes")
    return found


def all_blocks(root: pathlib.Path = ROOT) -> List[Block]:
    return [block for path in documents(root) for block in blocks(path, root)]


def fresh_project(folder: pathlib.Path) -> pathlib.Path:
    """A copy of the project's files (tracked, and new ones not ignored) under `folder`, beside a
    link to the shared data, as a fresh clone is; the project's .venv linked in, installed."""
    project = folder / "project"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for name in listed.splitlines():
        if (ROOT / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, project / name)
    (project / ".venv").symlink_to(VENV)
    # The copy runs in the installed .venv: its install inputs are no newer than the install,
    # so `make` does not reinstall it (a fresh clone's are older than the .venv made after it).
    # A second older, not the same time: a float time can round a few nanoseconds later.
    older = (VENV / ".installed").stat().st_mtime_ns - 10**9
    for name in ("requirements.txt", "setup.py"):
        os.utime(project / name, ns=(older, older))
    (folder / "shared").symlink_to(SHARED)
    return project


def bash_script(blocks_: Sequence[Block], prelude: str = "") -> str:
    """The blocks as one bash script: each from the project's folder ($DOC_PROJECT), announced
    on stderr; the first failing command ends it."""
    parts = ["set -eo pipefail", prelude]
    for block in blocks_:
        parts.append(f'cd "$DOC_PROJECT"; echo "### {block}" >&2')
        if block.info == "python":
            parts.append(f"command python - <<'DOC_PYTHON_BLOCK'\n{block.text}\nDOC_PYTHON_BLOCK")
        else:
            parts.append(block.text)
    return "\n".join(parts) + "\n"


def environment(project: pathlib.Path, home: pathlib.Path, base: dict) -> dict:
    """A shell's environment as a user who activated the project's .venv has it (home apart)."""
    home.mkdir(exist_ok=True)
    return dict(base, PATH=f"{VENV}/bin:{base['PATH']}", VIRTUAL_ENV=str(VENV), HOME=str(home),
                DOC_PROJECT=str(project))
