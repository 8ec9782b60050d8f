"""A model directory given as a relative path (issue 25): its checkpoint state names the
checkpoints within the directory, so every later command on the run finds them, from any
working directory; a state that names a missing checkpoint says which, and how to choose one
that is there; a checkpoint's name is the model directory's before the working directory's."""
import pathlib
import re
import types

import pytest
import tensorflow.compat.v1 as tf

from model.tasks import task_runs
from model.trainer import checkpoint_state, runs


def fake_checkpoints(model_dir: pathlib.Path, *steps: int) -> None:
    """The files of checkpoints model.ckpt-STEP (empty: the state and the lookups read names)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    for step in steps:
        for suffix in ("index", "data-00000-of-00001"):
            (model_dir / f"model.ckpt-{step}.{suffix}").touch()


def state_names(model_dir: pathlib.Path) -> list:
    """The checkpoint names the state file holds: the newest, then every listed one."""
    return re.findall(r'"([^"]*)"', (model_dir / checkpoint_state.STATE_NAME).read_text())


@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
def test_kept_checkpoints_are_named_within_the_model_directory(tmp_path, monkeypatch, relative):
    monkeypatch.chdir(tmp_path)
    fake_checkpoints(tmp_path / "runs" / "t5_rte", 4, 6, 8)
    model_dir = "runs/t5_rte" if relative else str(tmp_path / "runs" / "t5_rte")
    assert checkpoint_state.keep_only(model_dir, [4, 8]) == [4, 8]
    assert state_names(tmp_path / "runs" / "t5_rte") == ["model.ckpt-8", "model.ckpt-4",
                                                         "model.ckpt-8"]
    assert tf.train.latest_checkpoint(model_dir) == f"{model_dir}/model.ckpt-8"
    monkeypatch.chdir(tmp_path / "runs")  # another working directory reads the same run
    assert tf.train.latest_checkpoint("t5_rte") == "t5_rte/model.ckpt-8"


def test_an_import_into_an_absolute_folder_names_its_checkpoint_within_it(tmp_path):
    pytest.importorskip("transformers")
    from tests.support.convert import import_folder, tiny_bert
    tiny_bert().save_pretrained(tmp_path / "bert")
    assert import_folder("bert", tmp_path / "bert", tmp_path / "ours") == 0
    assert state_names(tmp_path / "ours") == ["model.ckpt-0", "model.ckpt-0"]


# What resolves a run's newest checkpoint: --checkpoint's default (export, eval, decode), and
# the trainer's decode and validation when given none.
NEWEST = {
    "resolve_checkpoint": lambda model_dir: task_runs.resolve_checkpoint(model_dir, ""),
    "decode": lambda model_dir: runs.decode(types.SimpleNamespace(model_dir=model_dir), ["x"], 8),
    "evaluate": lambda model_dir: runs.evaluate(types.SimpleNamespace(model_dir=model_dir),
                                                None, 0),
}


@pytest.mark.parametrize("newest", NEWEST.values(), ids=NEWEST.keys())
def test_a_state_naming_a_missing_checkpoint_says_which_and_what_to_choose(tmp_path, newest):
    model_dir = tmp_path / "run"
    fake_checkpoints(model_dir, 4, 6)
    # As keep_only wrote it for `--model_dir runs/t5_rte` before the checkpoints were named
    # within the directory.
    (model_dir / "checkpoint").write_text('model_checkpoint_path: "../../model.ckpt-8"\n')
    with pytest.raises(FileNotFoundError) as raised:
        newest(str(model_dir))
    message = str(raised.value)
    assert f"{model_dir}/../../model.ckpt-8.index" in message
    assert "model.ckpt-4, model.ckpt-6" in message
    assert "--checkpoint model.ckpt-6" in message and "--checkpoint best" in message
    # The checkpoint it suggests is one --checkpoint resolves.
    assert task_runs.resolve_checkpoint(str(model_dir), "model.ckpt-6") == f"{model_dir}/model.ckpt-6"


def test_checkpoints_without_a_state_are_listed(tmp_path):
    fake_checkpoints(tmp_path, 4)
    with pytest.raises(FileNotFoundError, match=r"no checkpoint file .*--checkpoint model\.ckpt-4"):
        checkpoint_state.newest_checkpoint(str(tmp_path))


def test_a_missing_checkpoint_in_an_empty_folder_is_named(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-8"\n')
    with pytest.raises(FileNotFoundError, match=r"model\.ckpt-8.index\).* holds no checkpoint"):
        checkpoint_state.newest_checkpoint(str(tmp_path))
    assert checkpoint_state.newest_checkpoint(str(tmp_path / "nothing")) is None


def test_a_name_is_the_model_directorys_before_the_working_directorys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_checkpoints(tmp_path, 8)  # the working directory is another run's
    fake_checkpoints(tmp_path / "runs" / "t5_rte", 8)
    assert task_runs.resolve_checkpoint("runs/t5_rte", "model.ckpt-8") == "runs/t5_rte/model.ckpt-8"
