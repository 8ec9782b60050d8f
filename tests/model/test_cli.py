"""The command lines as a user runs them: `python -m model pretrain`'s progress and results, no
library noise; the operative gin config holds every parameter the built model used. Every
command line's --help names it as it is run, prints nothing else, and lists what the registries
offer (tasks, families and their checkpoint formats)."""
import functools
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from tests.support.trained_vocab import trained_vocabulary

REPO = pathlib.Path(__file__).resolve().parents[2]
COMMAND_LINES = (("model",), ("model", "pretrain"), ("model", "finetune"), ("model", "export"),
                 ("model", "import"), ("model", "vocab"), ("model", "wordpiece"), ("model", "tasks"),
                 ("pipelines.c4",), ("deploy.dataflow",), ("deploy.tpu",), ("deploy.rehearse",))


@functools.lru_cache(maxsize=None)
def help_of(module: str, *command: str) -> subprocess.CompletedProcess:
    """`python -m MODULE [COMMAND] --help`, run once for all the tests that read it."""
    return subprocess.run([sys.executable, "-m", module, *command, "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def help_text(module: str, *command: str) -> str:
    """The --help text with argparse's line wrapping undone."""
    return " ".join(help_of(module, *command).stdout.split())


@pytest.mark.parametrize("command_line", COMMAND_LINES, ids=" ".join)
def test_help_names_the_command_and_prints_nothing_else(command_line):
    result = help_of(*command_line)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no TensorFlow start-up lines, absl logs or pkg_resources warning
    assert result.stdout.startswith(f"usage: python -m {' '.join(command_line[:2])} ")


def test_model_export_help_shows_the_runs_export_and_the_families_formats():
    text = help_text("model", "export")
    assert "--export_dir" in text and "--checkpoint" in text and "--family" in text


@pytest.mark.parametrize("module, argv, old, new", [
    ("model.train", ["--mode", "finetune", "--help"], "model.train --mode finetune", "finetune"),
    ("model.convert", ["import", "--help"], "model.convert import", "import"),
    ("model.train_vocab", ["--help"], "model.train_vocab", "vocab"),
    ("model.wordpiece", ["--help"], "model.wordpiece", "wordpiece"),
    ("model.tasks", [], "model.tasks", "tasks")])
def test_former_command_lines_still_run_after_a_one_line_notice(module, argv, old, new):
    """Run as a user runs them, each prints its notice and then runs its new name: the help of
    the new command line, or the task list."""
    result = subprocess.run([sys.executable, "-m", module, *argv], cwd=REPO, capture_output=True,
                            text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr
    assert result.stderr == (f"note: `python -m {old}` is now `python -m model {new}`; the old "
                             "name goes in the next release\n")
    expected = "## Tasks" if new == "tasks" else f"usage: python -m model {new} "
    assert result.stdout.startswith(expected)


@pytest.mark.parametrize("argv, new", [
    (["model.train", "--model_dir", "d", "--mode=eval", "-v"], ["eval", "--model_dir", "d", "-v"]),
    (["model.train", "--mode", "decode", "--model_dir", "d"], ["decode", "--model_dir", "d"]),
    (["model.convert", "export", "--family", "t5"], ["export", "--family", "t5"]),
    (["model.tasks"], ["tasks"])])
def test_a_former_name_runs_its_new_command_line_with_its_arguments(argv, new, monkeypatch, capsys):
    from model import __main__ as command_line, renamed
    ran = []
    monkeypatch.setattr(command_line, "main", lambda given: ran.append(given) or 0)
    assert renamed.main(argv) == 0
    assert ran == [new]
    assert capsys.readouterr().err.startswith(f"note: `python -m {argv[0]}")


def test_the_former_names_runner_refuses_another_name(capsys):
    from model import renamed
    assert renamed.main(["model.nothing"]) == 2
    assert "FORMER: model.train, model.convert," in capsys.readouterr().err


def test_an_unknown_command_names_the_commands(capsys):
    from model.__main__ import main
    assert main(["train"]) == 2
    assert "no command 'train'; commands: pretrain, finetune, eval, decode, export, import" in capsys.readouterr().err


def test_convert_help_lists_every_family_and_format_of_the_registry():
    from model import families
    from model import convert_command as convert
    text = help_text("model", "import")
    for package in convert.convertible_families():
        assert f"{package}: " in text
    for family in families.REGISTRY.families:
        for name, chosen in family.checkpoint_formats().items():
            assert f"{name} ({', '.join(chosen.directions)})" in text
    assert "segabert: pytorch (import, export)" in text


def every_task() -> list:
    """The task registry's tasks and those only a head's view knows (Story Cloze, RACE)."""
    from model import tasks
    from model.tasks import discriminative
    found = tasks.names() + discriminative.names_outside_task_registry()
    assert set(discriminative.names()) <= set(found)
    return found


def test_train_help_lists_every_task():
    task_help = help_text("model", "finetune").split("--task TASK ")[-1].split("--mixture MIXTURE")[0]
    assert "story_cloze" in every_task()
    shown = set(re.findall(r"[\w.]+", task_help))
    missing = [name for name in every_task()
               if name not in shown and name.rpartition(".")[0] + ".LANG" not in shown]
    assert not missing


def test_task_tables_list_every_task(capsys):
    from model.tasks.__main__ import main
    main([])
    printed = capsys.readouterr().out
    for name in every_task():
        assert f"| {name} |" in printed, name


def test_pretrain_prints_progress_and_result_only(shared_data, tmp_path):
    vocabulary = trained_vocabulary(shared_data)
    source = shared_data / "c4_samples/olmo/c4-sample.01.json.gz"
    command = [sys.executable, "-m", "model", "pretrain",
               "--model_dir", str(tmp_path), "--gin_file", "sizes/tiny.gin"]
    for binding in [f"DataConfig.source = '{source}'",
                    f"DataConfig.vocabulary = '{vocabulary.path}'",
                    "DataConfig.inputs_length = 32", "DataConfig.targets_length = 8",
                    "TrainConfig.tokens_per_batch = 256", "TrainConfig.train_steps = 2",
                    "TrainConfig.save_checkpoints_steps = 2"]:
        command += ["--gin_param", binding]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"step": 2}
    lines = result.stderr.splitlines()
    assert lines[0].startswith("training encoder_decoder in ")
    assert lines[1].startswith("step 2: loss ")
    assert len(lines) == 2, result.stderr  # TensorFlow's ~80 lines of deprecations stay out
    # Written after the model was built: it holds the schedule's parameters (read only then).
    operative = (tmp_path / "operative_config.gin").read_text()
    assert "inverse_sqrt.warmup_steps = 10000" in operative
    assert "ModelConfig.d_model = 32" in operative


def test_verbosity_flag_is_read_before_tensorflow_loads():
    from model.trainer.verbosity import verbosity_in
    assert verbosity_in(["--mode", "eval"]) == 0
    assert verbosity_in(["--verbosity", "2"]) == 2
    assert verbosity_in(["--verbosity=1", "--mode", "eval"]) == 1


# --- the flags that messages name ------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*[a-z0-9]")
# The command lines whose flags model/'s messages may name: its own, the contamination study's
# and the C4 pipeline's (a corpus to give it, `--variant multilingual`).
MESSAGE_COMMANDS = (("model", "pretrain"), ("model", "finetune"), ("model", "eval"),
                    ("model", "decode"), ("model", "export"), ("model", "import"),
                    ("model", "vocab"), ("model", "wordpiece"), ("model", "tasks"),
                    ("model.tasks.contamination",), ("pipelines.c4",))
# `python -m model.train --mode M`, the former command line, is named as such while it still
# runs; `python -m model M` takes no --mode.
FORMER_COMMAND_LINE = re.compile(r"model\.train --mode")


def strings_in(path: pathlib.Path):
    """(line, text) of the string literals of a module that a user reads: messages, helps and
    constants (the literal parts of f-strings included) and the module's docstring (the
    --help's description), but not a string that is one flag alone (an argument list being
    built or parsed, an option being declared) nor the docstrings of classes and functions
    (notes for the reader of the code, which cite other programs' flags)."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inner_docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                        and ast.get_docstring(node, clean=False) is not None}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in inner_docstrings and not FLAG.fullmatch(node.value)):
            yield node.lineno, node.value


def test_no_message_in_model_names_a_flag_the_command_lines_do_not_have():
    """Issue 48: refusing `finetune --task glue_wnli` pointed to `--mode eval`, a flag that
    `python -m model eval` does not have."""
    offered = set()
    for command in MESSAGE_COMMANDS:
        result = help_of(*command)
        assert result.returncode == 0, result.stderr
        offered |= set(FLAG.findall(result.stdout))
    offered.discard("--mode")  # python -m model M passes it to model/train.py itself
    unknown = [f"{path.relative_to(REPO)}:{line}: {flag}"
               for path in sorted((REPO / "model").rglob("*.py"))
               for line, text in strings_in(path)
               for flag in FLAG.findall(FORMER_COMMAND_LINE.sub("", text))
               if flag not in offered]
    assert unknown == []
