"""Training a tiny T5 end to end on CPU through TPUEstimator (use_tpu=False) and Mesh TensorFlow.

Real text: `t5_c4/en` built by our TFDS builder from the shared WET file of 800 real C4 pages and
read back with tfds.load, a SentencePiece vocabulary trained on the shared text, span corruption,
packing. Meshes: one device, and two devices (PlacementMeshImpl)
data parallel on `batch` and model parallel on `d_ff`/`heads`/`vocab`.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import gin
import numpy as np
import pytest
import tensorflow_datasets as tfds
from apache_beam.options.pipeline_options import PipelineOptions

import tfds_c4  # noqa: F401  (registers t5_c4)

from model import families
from model import train
from model.tasks import task_runs
from model.trainer import runs
from model.trainer.hooks import LOSS_LOG_NAME, NonFiniteLossError
from model.trainer.mesh import MeshConfig
from tests.support.training import (TINY_BINDINGS, checkpoint_token_metrics, configure,
                                    synthetic_examples)
from tests.support.trained_vocab import trained_vocabulary

REPO = pathlib.Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def c4_data_dir(shared_data, tmp_path_factory) -> pathlib.Path:
    """A TFDS data_dir holding t5_c4/en, built by the DirectRunner from real C4 pages."""
    data_dir = tmp_path_factory.mktemp("tfds")
    builder = tfds.builder(
        "t5_c4/en", data_dir=str(data_dir),
        wet_files=[str(shared_data / "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz")],
        badwords=str(shared_data / "badwords/en"),
        # These pages come from the released C4's validation split (md5 of the URL % 1000 == 0),
        # which our split reproduces at 0.1%; a smaller fraction splits inside that thousandth,
        # 0.005% keeping about 5% of them for validation.
        validation_fraction=0.00005)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        beam_options=PipelineOptions(["--runner=DirectRunner"])))
    return data_dir


@pytest.fixture(scope="module")
def data_bindings(shared_data, c4_data_dir):
    vocabulary = trained_vocabulary(shared_data)
    # eval_source defaults to the validation split of the tfds: source.
    return [f"DataConfig.vocabulary = '{vocabulary.path}'",
            f"DataConfig.source = 'tfds:t5_c4/en@{c4_data_dir}'"]





def run_train(run: runs.Run, max_steps: int) -> int:
    return runs.train(run, run.training_examples(), run.vocabulary.vocab_size, max_steps)


def logged_losses(model_dir) -> dict:
    """{step: loss}, the last logged value of each step (a resumed run logs steps again)."""
    lines = (pathlib.Path(model_dir) / LOSS_LOG_NAME).read_text().splitlines()
    return {entry["step"]: entry["loss"] for entry in map(json.loads, lines)}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, data_bindings):
    """A tiny encoder-decoder pre-trained for 60 steps (dropout 0.1, T5's Adafactor)."""
    model_dir = tmp_path_factory.mktemp("pretrained")
    run = configure(model_dir, data_bindings, "lr.constant.value = 0.01",
                    "OptimizationConfig.learning_rate_schedule = @lr.constant",
                    "TrainConfig.save_checkpoints_steps = 20", "TrainConfig.keep_checkpoint_max = 2")
    assert run_train(run, 60) == 60
    return run


def test_loss_falls_on_real_text_and_checkpoints_rotate(pretrained):
    losses = logged_losses(pretrained.model_dir)
    assert sorted(losses) == list(range(1, 61))
    first, last = np.mean([losses[s] for s in range(1, 6)]), np.mean(
        [losses[s] for s in range(56, 61)])
    assert first > np.log(1000)  # starts near uniform over the vocabulary
    assert last < first - 1.5, (first, last)
    kept = sorted(p.name for p in pathlib.Path(pretrained.model_dir).glob("model.ckpt-*.index"))
    assert kept == ["model.ckpt-40.index", "model.ckpt-60.index"]
    assert (pathlib.Path(pretrained.model_dir) / "operative_config.gin").is_file()
    assert list(pathlib.Path(pretrained.model_dir).glob("events.out.tfevents.*"))


def test_eval_reports_loss_and_token_accuracy(pretrained):
    """runs.evaluate (TPUEstimator's EVAL mode, model_fn's metrics) reports the token loss and
    accuracy that numpy computes from the checkpoint's teacher-forced logits on the same
    validation examples (eval_steps 4 of 8: the first 32)."""
    examples = lambda: pretrained.validation_examples()
    metrics = runs.evaluate(pretrained, examples, pretrained.vocabulary.vocab_size)
    expected = checkpoint_token_metrics(pretrained, examples, num_examples=4 * 8)
    low, high = expected["token_accuracy_range"]  # equal unless two logits nearly tie
    assert metrics["step"] == 60
    assert low - 1e-6 <= metrics["token_accuracy"] <= high + 1e-6, (metrics, expected)
    # Neither 1 - accuracy nor any value but the checkpoint's passes.
    assert not low - 1e-6 <= 1 - metrics["token_accuracy"] <= high + 1e-6, (metrics, expected)
    assert high - low < 0.02, expected
    assert metrics["loss"] == pytest.approx(expected["loss"], rel=1e-4)


def test_greedy_decode_returns_text(pretrained):
    texts = ["The quick brown fox <extra_id_0> over the lazy dog.",
             "Thank you for <extra_id_0> to our newsletter."]
    decodes = runs.decode(pretrained, texts, inputs_length=32)
    assert len(decodes) == 2 and all(isinstance(d, str) for d in decodes)
    assert any(d.strip() for d in decodes)
    # Greedy decoding is deterministic.
    assert runs.decode(pretrained, texts, inputs_length=32) == decodes





# model:2 splits every layer and the vocabulary; batch:2 the batch.
@pytest.mark.parametrize("mesh_shape", ["batch:2", "model:2"])
def test_two_device_meshes_match_one_device(tmp_path, data_bindings, mesh_shape):
    def losses(mesh, model_dir):
        run = configure(model_dir, data_bindings, "ModelConfig.dropout_rate = 0.0",
                        "TrainConfig.tokens_per_batch = 128",
                        f"MeshConfig.mesh_shape = '{mesh}'")
        runs.train(run, synthetic_examples(), vocab_size=200, max_steps=3)
        return logged_losses(model_dir)

    single = losses("", tmp_path / "single")
    parallel = losses(mesh_shape, tmp_path / "parallel")
    assert sorted(single) == [1, 2, 3]
    # float32 sums in another order (split over devices, or over threads when an earlier test's
    # session fixed TF's thread pools) drift by up to ~1e-4 after a few steps; a wrong split of
    # the batch, d_ff, heads or vocab changes the loss by far more.
    for step in single:
        assert parallel[step] == pytest.approx(single[step], rel=1e-3)


# Slow (a minute: a real process killed mid-run); resuming at a checkpoint is also checked in
# the default set by tests/model/test_segabert.py and tests/model/test_gpt1.py.
@pytest.mark.slow
def test_killed_run_resumes_on_the_same_loss_curve(tmp_path, data_bindings):
    common = ["ModelConfig.dropout_rate = 0.0", "TrainConfig.save_checkpoints_steps = 4"]
    reference_dir, killed_dir = tmp_path / "reference", tmp_path / "killed"
    reference = configure(reference_dir, data_bindings, *common)
    run_train(reference, 10)
    expected = logged_losses(reference_dir)

    # A real process, killed with SIGKILL once its step-4 checkpoint is written.
    command = [sys.executable, "-m", "model.train", "--mode", "pretrain",
               "--model_dir", str(killed_dir)]
    for binding in TINY_BINDINGS + data_bindings + common + ["TrainConfig.train_steps = 100000"]:
        command += ["--gin_param", binding]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(REPO)))
    deadline = time.monotonic() + 120
    # Written means recorded: the checkpoint state names it (the saver writes the index file
    # first) and its input position is beside it.
    def step_4_recorded() -> bool:
        step = runs.checkpoint_step(str(killed_dir))
        return step >= 4 and (killed_dir / "input_positions" / f"step-{step:09d}.json").is_file()
    while not step_4_recorded():
        assert process.poll() is None and time.monotonic() < deadline, "trainer never checkpointed"
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = runs.checkpoint_step(str(killed_dir))
    assert killed_at in (4, 8)
    # The input position of the checkpoint is recorded: the resumed run seeks there, skips nothing.
    assert (killed_dir / "input_positions" / f"step-{killed_at:09d}.json").is_file()

    resumed = configure(killed_dir, data_bindings, *common)
    assert run_train(resumed, 10) == 10
    got = logged_losses(killed_dir)
    assert sorted(got) == list(range(1, 11))
    for step in range(1, 11):
        assert got[step] == pytest.approx(expected[step], rel=1e-3), step


def test_non_finite_loss_stops_with_a_clear_message(tmp_path, data_bindings):
    run = configure(tmp_path, data_bindings, "OptimizationConfig.learning_rate_schedule = @lr.constant",
                    "lr.constant.value = 1e30")
    with pytest.raises(NonFiniteLossError, match=r"training loss is (nan|inf) at step \d+"):
        run_train(run, 20)


def test_command_line_reports_bad_configuration(tmp_path, capsys):
    assert train.main(["--mode", "eval", "--model_dir", str(tmp_path),
                       "--gin_file", "no_such.gin"]) == 2
    assert "gin file no_such.gin not found" in capsys.readouterr().err


def test_eval_and_export_read_the_runs_recorded_settings(pretrained, tmp_path, capsys, clean_gin):
    """`--mode eval|export` on a model directory alone builds the model its operative config
    records (tiny sizes, vocabulary, lengths, tfds source): eval reports what runs.evaluate
    reports for the configured run, and export writes a d_model 32 model (without the recorded
    settings it built a base-size model and failed on its shapes)."""
    gin.clear_config()  # nothing from the fixture's bindings: only the recorded config
    assert train.main(["--mode", "eval", "--model_dir", pretrained.model_dir]) == 0, \
        capsys.readouterr().err
    by_command_line = json.loads(capsys.readouterr().out)
    examples = lambda: pretrained.validation_examples()
    assert by_command_line == pytest.approx(
        runs.evaluate(pretrained, examples, pretrained.vocabulary.vocab_size), rel=1e-6)
    pytest.importorskip("transformers")
    gin.clear_config()
    export_dir = tmp_path / "hf"
    assert train.main(["--mode", "export", "--model_dir", pretrained.model_dir,
                       "--export_dir", str(export_dir)]) == 0, capsys.readouterr().err
    exported = json.loads((export_dir / "config.json").read_text())
    assert (exported["d_model"], exported["num_layers"], exported["d_ff"]) == (32, 2, 64)


def test_a_flag_given_again_overrides_the_recorded_setting_with_a_warning(
        pretrained, capsys, clean_gin):
    gin.clear_config()
    assert train.main(["--mode", "eval", "--model_dir", pretrained.model_dir,
                       "--gin_param", "TrainConfig.eval_steps = 1",
                       "--gin_param", "ModelConfig.d_model = 32"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, captured.err  # d_model 32 agrees with the record: no warning
    assert warnings[0].startswith("warning: TrainConfig.eval_steps = 1 overrides 4 recorded in ")
    # One batch of 8 examples evaluated, not the recorded 4 batches.
    examples = lambda: pretrained.validation_examples()
    one_batch = runs.evaluate(dataclasses_replace(pretrained, eval_steps=1), examples,
                               pretrained.vocabulary.vocab_size)
    assert json.loads(captured.out) == pytest.approx(one_batch, rel=1e-6)


def dataclasses_replace(run: runs.Run, **train_fields) -> runs.Run:
    import dataclasses
    return dataclasses.replace(run, train_config=dataclasses.replace(run.train_config, **train_fields))


def test_a_fine_tuning_runs_recorded_settings_hold_in_the_eval_scope(tmp_path, clean_gin):
    """A fine-tuning run records its bindings in the `finetune/` gin scope (gin's
    operative_config_str, as hooks.py's GinConfigSaverHook writes it); read back for eval they
    configure the same run, its machine settings (threads, mesh) left to the new command."""
    gin.clear_config()
    runs.parse_gin(["finetune.gin", "sizes/tiny.gin"],
                    ["DataConfig.vocabulary = 'spiece.model'", "DataConfig.inputs_length = 84",
                     "TrainConfig.init_checkpoint = '/pretrained'",
                     "TrainConfig.intra_op_threads = 1", "MeshConfig.mesh_shape = 'model:2'"])
    with gin.config_scope("finetune"):
        fine_tuned = families.configured_run(str(tmp_path))
    operative = gin.operative_config_str()
    assert "finetune/ModelConfig.d_model = " in operative
    (tmp_path / runs.OPERATIVE_CONFIG_NAME).write_text(operative)
    gin.clear_config()
    recorded = runs.apply_recorded_bindings(str(tmp_path))
    assert "ModelConfig.d_model" in recorded and "TrainConfig.intra_op_threads" not in recorded
    with gin.config_scope("eval"):
        evaluated = families.configured_run(str(tmp_path))
    assert evaluated.model_config == fine_tuned.model_config
    assert evaluated.data_config == fine_tuned.data_config
    assert evaluated.optimization == fine_tuned.optimization
    assert evaluated.train_config == dataclasses_replace(
        fine_tuned, intra_op_threads=0).train_config
    assert evaluated.mesh_config == MeshConfig()
    # With --task, a fine-tuning run's lengths (its tasks') still hold.
    assert runs.recorded_bindings(str(tmp_path), for_tasks=True)["DataConfig.inputs_length"] == 84


def test_with_a_task_a_pretraining_runs_lengths_are_left_to_the_task(pretrained):
    """`--mode export|eval --task T` on a pre-trained run: its 32/8 pre-training lengths would
    count as bound by the user and beat the task's (finetune.with_task_lengths); left out."""
    recorded = runs.recorded_bindings(pretrained.model_dir)
    assert recorded["DataConfig.inputs_length"] == 32 and recorded["TrainConfig.decode_length"] == 8
    for_tasks = runs.recorded_bindings(pretrained.model_dir, for_tasks=True)
    assert not runs.SEQUENCE_LENGTH_SETTINGS & set(for_tasks)
    assert for_tasks["ModelConfig.d_model"] == 32


@pytest.fixture
def run_with_best(pretrained, tmp_path) -> pathlib.Path:
    """A copy of the pre-trained run (checkpoints 40 and 60) whose eval/best.json, in
    evaluation.best_checkpoints' format, names step 40 for glue_rte and 60 for glue_cola."""
    import shutil
    from model.tasks import evaluation
    model_dir = tmp_path / "run"
    shutil.copytree(pretrained.model_dir, model_dir)
    best = {f"{task}/validation": {"step": step, "checkpoint": f"model.ckpt-{step}",
                                   "scores": {"accuracy": 50.0}, "data": None, "decoding": None}
            for task, step in (("glue_rte", 40), ("glue_cola", 60))}
    (model_dir / evaluation.EVAL_DIR).mkdir()
    (model_dir / evaluation.EVAL_DIR / evaluation.BEST_NAME).write_text(json.dumps(best))
    return model_dir


def test_checkpoints_resolve_by_the_names_the_run_prints(run_with_best):
    model_dir = str(run_with_best)
    assert task_runs.resolve_checkpoint(model_dir, "model.ckpt-40") == f"{model_dir}/model.ckpt-40"
    assert task_runs.resolve_checkpoint(model_dir, f"{model_dir}/model.ckpt-40") == \
        f"{model_dir}/model.ckpt-40"
    assert task_runs.resolve_checkpoint(model_dir, "") == f"{model_dir}/model.ckpt-60"
    assert task_runs.resolve_checkpoint(model_dir, "best", "glue_rte") == f"{model_dir}/model.ckpt-40"
    assert task_runs.resolve_checkpoint(model_dir, "best", "glue_cola") == f"{model_dir}/model.ckpt-60"
    with pytest.raises(ValueError, match="names .*model.ckpt-40.*model.ckpt-60.*--task"):
        task_runs.resolve_checkpoint(model_dir, "best")  # two tasks, two best steps
    with pytest.raises(FileNotFoundError, match=r"--checkpoint model.ckpt-20: no checkpoint"):
        task_runs.resolve_checkpoint(model_dir, "model.ckpt-20")  # rotated away


def test_export_takes_the_best_checkpoint_and_says_which(run_with_best, tmp_path, capsys,
                                                        clean_gin):
    pytest.importorskip("transformers")
    gin.clear_config()
    assert train.main(["--mode", "export", "--model_dir", str(run_with_best), "--checkpoint",
                       "best", "--task", "glue_rte", "--export_dir", str(tmp_path / "hf")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["checkpoint"] == f"{run_with_best}/model.ckpt-40"
    assert f"exporting {run_with_best}/model.ckpt-40" in captured.err.splitlines()
    assert train.main(["--mode", "export", "--model_dir", str(run_with_best), "--checkpoint",
                       "model.ckpt-7", "--export_dir", str(tmp_path / "hf")]) == 2
    error = capsys.readouterr().err
    assert "--checkpoint model.ckpt-7" in error and "TrainConfig" not in error
