"""`python -m model.train` as a user runs it: progress and results, no library noise; the
operative gin config holds every parameter the built model used."""
import json
import os
import pathlib
import subprocess
import sys

from tests.trained_vocab import trained_vocabulary

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_pretrain_prints_progress_and_result_only(shared_data, tmp_path):
    vocabulary = trained_vocabulary(shared_data)
    source = shared_data / "c4_samples/olmo/c4-sample.01.json.gz"
    command = [sys.executable, "-m", "model.train", "--mode", "pretrain",
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
