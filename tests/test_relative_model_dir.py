"""A model directory given as a relative path (issue 25): its checkpoint state names the
checkpoints within the directory, so every later command on the run finds them, from any
working directory."""
import pathlib
import re

import pytest
import tensorflow.compat.v1 as tf

from model.tasks import evaluation
from model.trainer import checkpoint_state


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
    assert evaluation.keep_only(model_dir, [4, 8]) == [4, 8]
    assert state_names(tmp_path / "runs" / "t5_rte") == ["model.ckpt-8", "model.ckpt-4",
                                                         "model.ckpt-8"]
    assert tf.train.latest_checkpoint(model_dir) == f"{model_dir}/model.ckpt-8"
    monkeypatch.chdir(tmp_path / "runs")  # another working directory reads the same run
    assert tf.train.latest_checkpoint("t5_rte") == "t5_rte/model.ckpt-8"


def test_an_import_into_an_absolute_folder_names_its_checkpoint_within_it(tmp_path):
    pytest.importorskip("transformers")
    from tests.test_convert import import_folder, tiny_bert
    tiny_bert().save_pretrained(tmp_path / "bert")
    assert import_folder("bert", tmp_path / "bert", tmp_path / "ours") == 0
    assert state_names(tmp_path / "ours") == ["model.ckpt-0", "model.ckpt-0"]
