"""A run used from anywhere (issue 38): the paths a run records (vocabulary, sources, the
checkpoint it started from) are recorded absolute, so eval, decode and export work from another
working directory; a recorded path that is not there (a moved run, or one recorded relative
before) names the operative config and the --gin_param that overrides it, which works. Also:
what a command on a run that is not there (or holds no checkpoint) says; a fine-tune from a
missing checkpoint leaves no folder; a --gin_param or gin file that does not parse names the
binding, or the file and line; and the progress line of a training run.
"""
import io
import json
import os
import pathlib
import re
import shutil

import gin
import pytest

from model import train
from model import convert_command
from model.trainer import run_paths, runs
from tests.support.in_process import run_main
from tests.support.trained_vocab import trained_vocabulary

SAMPLE = "c4_samples/olmo/c4-sample.01.json.gz"
TINY = ["--gin_file", "sizes/tiny.gin"]
# A tiny run of 3 steps on the sample's text, with a progress line at every step.
TINY_RUN = ["DataConfig.inputs_length = 32", "DataConfig.targets_length = 8",
            "TrainConfig.tokens_per_batch = 256", "TrainConfig.train_steps = 3",
            "TrainConfig.save_checkpoints_steps = 3", "TrainConfig.eval_steps = 1",
            "TrainConfig.eval_batch_size = 4", "TrainConfig.decode_length = 4",
            "TrainConfig.progress_steps = 1",
            "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]
# The paths as a person types them in the project's folder.
RELATIVE_PATHS = ["DataConfig.vocabulary = 'vocab/trial.model'",
                  "DataConfig.source = 'data/c4-sample.json.gz'",
                  "DataConfig.eval_source = 'data/c4-sample.json.gz'"]


def params(*bindings: str) -> list:
    return [word for binding in bindings for word in ("--gin_param", binding)]


def command(argv: list) -> tuple:
    """(status, stdout, stderr) of `python -m model.train ARGV`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    status = run_main(train.main, argv, out, err)
    return status, out.getvalue(), err.getvalue()


def succeeded(argv: list) -> tuple:
    status, out, err = command(argv)
    assert status == 0, err[-3000:]
    return out, err


@pytest.fixture(scope="module")
def project(shared_data, tmp_path_factory) -> pathlib.Path:
    """A project folder with its vocabulary and text, and a run trained in it with the paths
    given relative to it (`runs/t5`, 3 steps); its stderr in `train.err`. (The warm-start
    checkpoint's path is recorded as the others are: test_the_bindings_of_the_modes_scope...)"""
    folder = tmp_path_factory.mktemp("project")
    (folder / "vocab").mkdir()
    shutil.copy(trained_vocabulary(shared_data).path, folder / "vocab" / "trial.model")
    (folder / "data").mkdir()
    shutil.copy(shared_data / SAMPLE, folder / "data" / "c4-sample.json.gz")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        _, err = succeeded(["--mode", "pretrain", "--model_dir", "runs/t5", *TINY,
                            *params(*TINY_RUN, *RELATIVE_PATHS)])
        (folder / "train.err").write_text(err)
    return folder


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> pathlib.Path:
    """Another working directory, beside none of the project's files."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- the paths a run records --------------------------------------------------------------

def test_relative_locations_are_made_absolute_and_the_rest_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = {
        (run_paths.VOCABULARY, "vocab/x.model"): f"{tmp_path}/vocab/x.model",
        (run_paths.INIT_CHECKPOINT, "runs/t5"): f"{tmp_path}/runs/t5",
        (run_paths.SOURCE, "data/*.jsonl.gz"): f"{tmp_path}/data/*.jsonl.gz",
        (run_paths.SOURCE, "tfds:t5_c4/en@tfds"): f"tfds:t5_c4/en@{tmp_path}/tfds",
        (run_paths.EVAL_SOURCE, "languages:out/mc4"): f"languages:{tmp_path}/out/mc4",
        (run_paths.SOURCE, "languages:tfds:t5_c4/multilingual@d"):
            f"languages:tfds:t5_c4/multilingual@{tmp_path}/d",
        (run_paths.SOURCE, "tfds:t5_c4/en"): "tfds:t5_c4/en",  # TFDS's own data_dir
        (run_paths.VOCABULARY, "gs://bucket/spiece.model"): "gs://bucket/spiece.model",
        (run_paths.SOURCE, "tfds:t5_c4/en@gs://bucket/tfds"): "tfds:t5_c4/en@gs://bucket/tfds",
        (run_paths.VOCABULARY, "/abs/x.model"): "/abs/x.model",
        (run_paths.SOURCE, ""): "",
        (run_paths.INIT_CHECKPOINT, None): None,
    }
    for (setting, value), expected in cases.items():
        assert run_paths.absolute(setting, value) == expected, (setting, value)


def test_the_bindings_of_the_modes_scope_are_rebound_absolute(tmp_path, monkeypatch, clean_gin):
    monkeypatch.chdir(tmp_path)
    runs.parse_gin([], ["DataConfig.vocabulary = 'vocab/x.model'",
                        "finetune/TrainConfig.init_checkpoint = 'runs/t5'",
                        "pretrain/DataConfig.source = 'left/alone'"])
    with gin.config_scope("finetune"):
        rebound = run_paths.bind_absolute()
        runs.DataConfig(), runs.TrainConfig()
    assert rebound == {"DataConfig.vocabulary": f"{tmp_path}/vocab/x.model",
                       "finetune/TrainConfig.init_checkpoint": f"{tmp_path}/runs/t5"}
    (tmp_path / runs.OPERATIVE_CONFIG_NAME).write_text(gin.operative_config_str())
    recorded = runs.recorded_bindings(str(tmp_path))
    assert recorded["DataConfig.vocabulary"] == f"{tmp_path}/vocab/x.model"
    assert recorded["TrainConfig.init_checkpoint"] == f"{tmp_path}/runs/t5"
    assert gin.query_parameter("pretrain/DataConfig.source") == "left/alone"


def test_a_training_run_records_its_paths_absolute(project):
    recorded = runs.recorded_bindings(str(project / "runs" / "t5"))
    assert recorded[run_paths.VOCABULARY] == str(project / "vocab" / "trial.model")
    for setting in run_paths.SOURCE_SETTINGS:
        assert recorded[setting] == str(project / "data" / "c4-sample.json.gz")


def test_a_run_is_evaluated_decoded_and_exported_from_another_folder(project, elsewhere):
    model_dir = os.path.relpath(project / "runs" / "t5", elsewhere)
    evaluated = json.loads(succeeded(["--mode", "eval", "--model_dir", model_dir])[0])
    assert evaluated["step"] == 3 and evaluated["loss"] > 0
    (elsewhere / "inputs.txt").write_text("The quick brown fox <extra_id_0> the lazy dog.\n")
    succeeded(["--mode", "decode", "--model_dir", model_dir, "--input_file", "inputs.txt",
               "--output_file", "decodes.txt"])
    assert len((elsewhere / "decodes.txt").read_text().splitlines()) == 1
    pytest.importorskip("transformers")
    succeeded(["--mode", "export", "--model_dir", model_dir, "--export_dir", "hf"])
    assert json.loads((elsewhere / "hf" / "config.json").read_text())["d_model"] == 32


def missing_path_error(err: str, setting: str, value: str, model_dir: pathlib.Path) -> None:
    """Asserts the error of a recorded path that is not there: the setting and value, the
    operative config it came from, and the --gin_param that overrides it."""
    assert (f"{setting} = {value!r}, recorded in {model_dir}/operative_config.gin, is not "
            "there") in err, err
    assert f"--gin_param \"{setting} = 'PATH'\"" in err, err


def test_a_moved_run_names_the_recorded_path_and_its_override_works(project, elsewhere):
    moved = elsewhere / "moved"
    shutil.copytree(project / "runs" / "t5", moved / "runs" / "t5")
    shutil.copytree(project / "vocab", moved / "vocab")
    (elsewhere / "inputs.txt").write_text("Thank you for <extra_id_0> to our newsletter.\n")
    decode = ["--mode", "decode", "--model_dir", "moved/runs/t5", "--input_file", "inputs.txt"]
    gone = project / "vocab_gone"
    (project / "vocab").rename(gone)  # the run's old place no longer has its vocabulary
    try:
        status, _, err = command(decode)
        convert_err = io.StringIO()
        convert_status = run_main(convert_command.main,
                                  ["export", "--family", "t5", "--format", "hf", "--model_dir",
                                   "moved/runs/t5", "--export_dir", "hf"],
                                  io.StringIO(), convert_err)
    finally:
        gone.rename(project / "vocab")
    assert status == 2 and convert_status == 2
    for said in (err, convert_err.getvalue()):
        missing_path_error(said, "DataConfig.vocabulary",
                           str(project / "vocab" / "trial.model"), pathlib.Path("moved/runs/t5"))
    assert "moved, deleted, or on another machine" in err
    out, _ = succeeded(decode + params("DataConfig.vocabulary = 'moved/vocab/trial.model'"))
    assert len(out.splitlines()) == 1


def test_a_run_recorded_before_with_relative_paths_still_loads_from_its_folder(project,
                                                                               elsewhere):
    """An operative config written before paths were recorded absolute (as typed, relative to
    the folder training ran in) works from that folder, and from another says so."""
    old = elsewhere / "old"
    shutil.copytree(project, old)
    config = old / "runs" / "t5" / runs.OPERATIVE_CONFIG_NAME
    config.write_text(config.read_text().replace(f"'{project}/", "'"))
    assert runs.recorded_bindings(str(old / "runs" / "t5"))[run_paths.VOCABULARY] == \
        "vocab/trial.model"
    (elsewhere / "inputs.txt").write_text("Thank you for <extra_id_0> to our newsletter.\n")
    status, _, err = command(["--mode", "decode", "--model_dir", "old/runs/t5",
                              "--input_file", "inputs.txt"])
    assert status == 2
    missing_path_error(err, "DataConfig.vocabulary", "vocab/trial.model",
                       pathlib.Path("old/runs/t5"))
    assert "it holds from the folder that run was trained in" in err
    status, _, err = command(["--mode", "eval", "--model_dir", "old/runs/t5",
                              *params("DataConfig.vocabulary = 'old/vocab/trial.model'")])
    assert status == 2
    missing_path_error(err, "DataConfig.eval_source", "data/c4-sample.json.gz",
                       pathlib.Path("old/runs/t5"))
    out, _ = succeeded(["--mode", "decode", "--model_dir", "old/runs/t5", "--input_file",
                        "inputs.txt", *params("DataConfig.vocabulary = 'old/vocab/trial.model'")])
    assert len(out.splitlines()) == 1
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(old)
        evaluated = json.loads(succeeded(["--mode", "eval", "--model_dir", "runs/t5"])[0])
    assert evaluated["step"] == 3


# --- a run that is not there ---------------------------------------------------------------

@pytest.mark.parametrize("mode", ["eval", "decode", "export"])
def test_a_missing_or_empty_model_dir_says_which_and_what_to_run_first(tmp_path, mode):
    extra = {"decode": ["--input_file", str(tmp_path / "inputs.txt")],
             "export": ["--export_dir", str(tmp_path / "hf")]}.get(mode, [])
    (tmp_path / "inputs.txt").write_text("a text\n")
    (tmp_path / "empty").mkdir()
    for folder, problem in [("missing", "no such folder"),
                            ("empty", "holds no checkpoint (model.ckpt-N.index)")]:
        model_dir = tmp_path / folder
        status, _, err = command(["--mode", mode, "--model_dir", str(model_dir), *extra])
        assert status == 2
        assert f"error: --model_dir {model_dir}: {problem}; train it first (python -m " \
               f"model pretrain --model_dir {model_dir} ..." in err, err
        assert f"python -m model import --model_dir {model_dir}" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("init", ["empty", "missing"])
def test_a_fine_tune_from_no_checkpoint_leaves_no_folder(shared_data, tmp_path, init):
    (tmp_path / "empty").mkdir()
    vocabulary = trained_vocabulary(shared_data).path
    model_dir = tmp_path / "runs" / "t5_rte"
    status, _, err = command(["--mode", "finetune", "--model_dir", str(model_dir), *TINY,
                              *params(*TINY_RUN, f"DataConfig.vocabulary = '{vocabulary}'",
                                      f"DataConfig.source = '{shared_data / SAMPLE}'",
                                      f"TrainConfig.init_checkpoint = '{tmp_path / init}'")])
    assert status == 2
    problem = {"empty": "the folder holds no checkpoint",
               "missing": f"no such folder, nor a checkpoint ({tmp_path / init}.index)"}[init]
    assert f"no checkpoint at '{tmp_path / init}' (TrainConfig.init_checkpoint): {problem}" in err
    assert f"python -m model pretrain --model_dir {tmp_path / init}" in err
    assert not (tmp_path / "runs").exists()


# --- gin that does not parse --------------------------------------------------------------

def test_an_unquoted_string_names_the_binding_and_the_quoting(tmp_path, clean_gin):
    status, _, err = command(["--mode", "pretrain", "--model_dir", str(tmp_path / "run"),
                              *params("DataConfig.source = ../shared/data/x.json.gz")])
    assert status == 2 and not (tmp_path / "run").exists()
    suggested = "DataConfig.source = \"../shared/data/x.json.gz\""
    assert err.strip() == (
        "error: --gin_param 'DataConfig.source = ../shared/data/x.json.gz' does not parse: "
        f"Unable to parse value; a string value needs quotes inside the binding: --gin_param "
        f"'{suggested}'")
    runs.parse_gin([], [suggested])  # the binding it suggests is one gin reads
    assert gin.query_parameter("DataConfig.source") == "../shared/data/x.json.gz"
    status, _, err = command(["--mode", "pretrain", "--model_dir", str(tmp_path / "run"),
                              *params("TrainConfig.train_steps = (")])
    assert status == 2
    assert "--gin_param 'TrainConfig.train_steps = (' does not parse: EOF in multi-line " \
           "statement (an unclosed bracket or quote?)" in err
    assert "needs quotes" not in err


def test_a_malformed_gin_file_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("ModelConfig.d_model = 32\n\nDataConfig.vocabulary = vocab/x.model\n")
    status, _, err = command(["--mode", "pretrain", "--model_dir", str(tmp_path / "run"),
                              "--gin_file", str(bad)])
    assert status == 2
    assert err.strip() == (f"error: gin file {bad}, line 3: Failed to parse token 'vocab': "
                           "DataConfig.vocabulary = vocab/x.model (a string value needs "
                           "quotes: DataConfig.vocabulary = \"vocab/x.model\")")
    bad.write_text("ModelConfig.d_model = 32\nDataConfig.languages = ('de',\n")
    status, _, err = command(["--mode", "eval", "--model_dir", str(tmp_path),
                              "--gin_file", str(bad)])
    assert status == 2
    assert f"error: gin file {bad}, line 3: EOF in multi-line statement" in err


# --- progress ------------------------------------------------------------------------------

PROGRESS = re.compile(r"steps: (\d+) of 3 done; (\d+\.\d\d) steps/s; about "
                      r"(\d+ s|\d+ min \d\d s|\d+ h \d\d min) left")


def test_training_prints_steps_per_second_and_the_time_left(project):
    """With TrainConfig.progress_steps = 1, a line at each step after the session's first (the
    rate counts from it), the step counting up to the run's last."""
    lines = (project / "train.err").read_text().splitlines()
    progress = [PROGRESS.fullmatch(line) for line in lines if line.startswith("steps: ")]
    assert progress and all(progress), lines
    assert [int(match.group(1)) for match in progress] == [2, 3]
    assert all(float(match.group(2)) > 0 for match in progress)
    assert progress[-1].group(3) == "0 s"
    assert lines[0].startswith("training encoder_decoder in runs/t5: step 0 -> 3")
