"""Every command block of the project's documents runs as written (issue 25; tests/support/documents.py
says how a block says what it is). For a block that cannot run here, every `python -m MODULE
--flag` it shows must name a flag of that command line, so a flag renamed in the code without
its document fails here too.

The runnable blocks of one document run in document order, in one bash, from a fresh copy of
the project whose `../shared` is the shared data, with the virtual environment on PATH as a user
who activated it has it. `python -m` of the project's own command lines runs in this process
(the same `main`, the same argv as bash expanded it, in the block's working directory), which
saves a TensorFlow start-up per command; everything else runs as a process.
"""
import io
import os
import pathlib
import re
import select
import shlex
import subprocess
import tempfile
from typing import Dict, Iterator, List

import pytest

from tests.support import documents
from tests.support.documents import Block
from tests.support.in_process import module_main, run_main

OWN_PACKAGES = ("model", "pipelines", "tfds_c4", "deploy")
# Words at the start of a line that bash owns (a stand-in for a program may not take their name).
SHELL_WORDS = {"python", "export", "for", "if", "then", "else", "fi", "do", "done", "while",
               "case", "esac", "set", "cd", "echo", "test", "read", "local", "return"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


# --- what every block says of itself -------------------------------------------------------

def test_every_block_says_what_it_is_and_why_it_does_not_run():
    found = documents.all_blocks()
    assert len(found) > 20, "the documents' blocks were not found"
    infos = documents.RUN_INFOS + documents.OTHER_INFOS
    wrong = [f"{block}: info '{block.info}'" for block in found if block.info not in infos]
    wrong += [f"{block}: '{documents.NOT_RUN}{block.not_run_reason}'" for block in found
              if block.not_run_reason is not None
              and (block.info not in documents.RUN_INFOS
                   or block.not_run_reason not in documents.REASONS)]
    assert not wrong, (f"every fenced block needs one of the infos {infos}, and a block not run "
                       f"one of the reasons {documents.REASONS}:\n" + "\n".join(wrong))


def test_block_parser_reads_fences_infos_headings_and_markings(tmp_path):
    document = tmp_path / "doc.md"
    document.write_text("# A\n```sh\n# not run here: needs a TPU\npython -m x\n```\n## B\n"
                        "````text\n```\nnested\n````\n```python\nprint(1)\n```\n")
    found = documents.blocks(document, tmp_path)
    assert [(b.line, b.info, b.heading, b.not_run_reason, b.runs) for b in found] == [
        (2, "sh", "A", "needs a TPU", False), (7, "text", "B", None, False),
        (11, "python", "B", None, True)]
    assert found[1].text == "```\nnested"
    (tmp_path / "open.md").write_text("```sh\nls\n")
    with pytest.raises(ValueError, match="never closes"):
        documents.blocks(tmp_path / "open.md", tmp_path)


def test_relative_links_resolve():
    broken = []
    for path in documents.documents():
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#")[0]).exists():
                broken.append(f"{path.relative_to(documents.ROOT)}: {target}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)


# --- blocks not run: their command lines still take the flags they show ---------------------

def shown_commands(block: Block) -> List[List[str]]:
    """The argv of every `python ...` a shell block runs, as bash expands it (variables the
    block sets included), recorded by stand-ins for the programs instead of running them."""
    with tempfile.TemporaryDirectory() as scratch:
        record = shlex.quote(str(pathlib.Path(scratch) / "argv"))
        programs = set(re.findall(r"^\s*([a-z][\w.-]*)\s", block.text, re.M)) - SHELL_WORDS
        script = "".join(f"{name}() {{ :; }}\n" for name in sorted(programs))
        script += (f"python() {{ printf '%s\\037' \"$@\" >> {record}; "
                   f"printf '\\036' >> {record}; }}\n{block.text}\n")
        subprocess.run(["bash", "-c", script], cwd=scratch, check=True, capture_output=True)
        recorded = pathlib.Path(scratch) / "argv"
        if not recorded.exists():
            return []
        return [entry.split("\x1f")[:-1] for entry in recorded.read_text().split("\x1e")[:-1]]


def command_line_help(module: str, subcommand: List[str]) -> str:
    out = io.StringIO()
    run_main(module_main(module), subcommand + ["--help"], out, out, program=module)
    return out.getvalue()


def test_commands_of_blocks_not_run_take_the_flags_they_show():
    unknown, checked, helps = [], 0, {}
    for block in documents.all_blocks():
        if block.info != "sh" or block.not_run_reason is None:
            continue
        for argv in shown_commands(block):
            if argv[:1] != ["-m"] or not argv[1].startswith(OWN_PACKAGES):
                continue
            module, rest = argv[1], argv[2:]
            # After a bare `--`, the words are another program's (the launchers pass them on).
            rest = rest[:rest.index("--")] if "--" in rest else rest
            subcommand = [] if not rest or rest[0].startswith("-") else rest[:1]
            key = (module, tuple(subcommand))
            if key not in helps:
                helps[key] = command_line_help(module, subcommand)
            for flag in (arg.split("=")[0] for arg in rest if arg.startswith("--")):
                checked += 1
                if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[key]):
                    unknown.append(f"{block}: python -m {module} {' '.join(subcommand)} {flag}")
    assert checked, "no flag of a block not run was checked"
    assert not unknown, "flags the command lines do not take:\n" + "\n".join(unknown)


# --- runnable blocks, run -----------------------------------------------------------------

# bash's `python -m` of the project's command lines: the request (working directory, argv)
# goes to the test process, which runs it and answers with the exit status.
IN_PROCESS_PYTHON = r"""
python() {
  if [ "$1" = "-m" ] && [[ "$2" =~ ^(%s)(\.|$) ]]; then
    printf '%%s\037' "$PWD" "$@" > "$DOC_REQUESTS"
    printf '\036' > "$DOC_REQUESTS"
    local status
    read -r status < "$DOC_REPLIES"
    return "$status"
  fi
  command python "$@"
}
""" % "|".join(OWN_PACKAGES)


def requests(process: subprocess.Popen, requests_fd: int) -> Iterator[List[str]]:
    """The in-process runs bash asks for, until it exits."""
    pending = b""
    while True:
        readable, _, _ = select.select([requests_fd], [], [], 0.2)
        if readable:
            pending += os.read(requests_fd, 65536)
            while b"\x1e" in pending:
                request, pending = pending.split(b"\x1e", 1)
                yield request.decode().split("\x1f")[:-1]
        elif process.poll() is not None:
            return


def run_document(blocks_: List[Block], folder: pathlib.Path) -> subprocess.CompletedProcess:
    """The blocks run in a fresh copy of the project under `folder`: bash's status and output."""
    project = documents.fresh_project(folder)
    requests_path, replies_path, log_path = folder / "requests", folder / "replies", folder / "log"
    os.mkfifo(requests_path)
    os.mkfifo(replies_path)
    environment = dict(documents.environment(project, folder / "home", dict(os.environ)),
                       DOC_REQUESTS=str(requests_path), DOC_REPLIES=str(replies_path))
    # Both ends held open here, so that neither side's open blocks on the other's.
    requests_fd = os.open(requests_path, os.O_RDWR)
    replies_fd = os.open(replies_path, os.O_RDWR)
    working_directory = os.getcwd()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            ["bash", "-c", documents.bash_script(blocks_, IN_PROCESS_PYTHON)], cwd=project,
            env=environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            for cwd, _, module, *argv in requests(process, requests_fd):
                log.write(f"# python -m {module} {shlex.join(argv)}\n")
                log.flush()
                os.chdir(cwd)
                try:
                    status = run_main(module_main(module), argv, log, log, program=module)
                finally:
                    os.chdir(working_directory)
                log.flush()
                os.write(replies_fd, f"{status}\n".encode())
        finally:
            process.wait()
            os.close(requests_fd)
            os.close(replies_fd)
    return subprocess.CompletedProcess(process.args, process.returncode,
                                       log_path.read_text(errors="replace"))


def test_document_runner_runs_commands_in_process_and_stops_at_a_failure(tmp_path):
    blocks_ = [Block("a.md", 1, "sh", "mkdir -p runs\npython -m model.train --help > /dev/null\n"
                     "test -d runs && test -d ../shared/data && echo made"),
               Block("a.md", 9, "sh", "python -m model.train --mode nonsense\necho never")]
    result = run_document(blocks_, tmp_path)
    assert result.returncode != 0
    assert "made" in result.stdout and "never" not in result.stdout
    assert "# python -m model.train --help" in result.stdout
    assert "invalid choice" in result.stdout


def runnable_documents() -> Dict[str, List[Block]]:
    by_document: Dict[str, List[Block]] = {}
    for block in documents.all_blocks():
        if block.runs:
            by_document.setdefault(block.document, []).append(block)
    return by_document


@pytest.mark.parametrize("document", sorted(runnable_documents()))
def test_documented_commands_run_as_written(document, tmp_path):
    result = run_document(runnable_documents()[document], tmp_path)
    assert result.returncode == 0, f"{document}: a block failed\n{result.stdout[-6000:]}"
