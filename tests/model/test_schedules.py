"""Learning-rate schedules follow the run's length, and progress lines come at the checkpoints.

Setting TrainConfig.train_steps is enough for every family: the trainer gives the schedule the
run's steps (model/trainer/schedules.py `span`), a gin binding of `total_steps` still wins, and a
fixed warm-up too long for the run is scaled with a line saying so. Through the command line, as
a user runs it: the `step N: loss X` lines on stderr come exactly at the steps whose checkpoints
are saved, for a run from step 0 and one that continues a warm-start checkpoint's step.
"""
import io
import json
import pathlib
import subprocess

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families, train
from model.trainer import runs, schedules
from tests.support.in_process import run_main
from tests.support.trained_vocab import trained_vocabulary

C4_SAMPLE = "c4_samples/olmo/c4-sample.01.json.gz"


def rates_of_run(gin_files, train_steps, *bindings):
    """The learning rate at steps 0 .. train_steps - 1 (the global step before each update) of
    a run configured by `gin_files`, given only its steps, as the model function computes it."""
    gin.clear_config()
    runs.parse_gin(gin_files, [f"TrainConfig.train_steps = {train_steps}", *bindings])
    run = families.configured_run("unused")
    with tf.Graph().as_default(), tf.Session() as session:
        return np.array(session.run([
            run.optimization.learning_rate(tf.constant(step, tf.int64), 0,
                                           run.train_config.train_steps)
            for step in range(train_steps)]))


@pytest.mark.parametrize("gin_files", [
    ["pretrain.gin", "gpt1/tiny.gin", "gpt1/pretrain.gin"],
    ["finetune.gin", "gpt1/tiny.gin", "gpt1/finetune.gin"],
    ["finetune.gin", "bert/tiny.gin", "bert/finetune_classification.gin"],
    ["finetune.gin", "bert/tiny.gin", "bert/finetune_squad.gin"],
    ["pretrain.gin", "segabert/tiny.gin", "segabert/pretrain.gin"],
    ["finetune.gin", "segabert/tiny.gin", "bert/finetune_classification.gin",
     "segabert/finetune.gin"]])
def test_each_familys_schedule_decays_to_zero_over_the_runs_steps(gin_files, clean_gin):
    rates = rates_of_run(gin_files, 80)
    peak = rates.max()
    assert peak > 0
    # Down to the last update (a step past the run it is 0): the decay ends with the run.
    assert rates[-1] < 0.03 * peak and np.all(np.diff(rates[np.argmax(rates):]) <= 0)


def test_berts_two_pretraining_phases_are_one_schedule_over_their_steps(clean_gin):
    """Phase 1 (bert/pretrain_128.gin) trains 90% of the schedule, ending at a tenth of the
    peak; phase 2 (bert/pretrain_512.gin, from step 0 of its own run) the rest, down to 0."""
    phase1 = rates_of_run(["pretrain.gin", "bert/tiny.gin", "bert/pretrain_128.gin"], 900)
    phase2 = rates_of_run(["pretrain.gin", "bert/tiny.gin", "bert/pretrain_512.gin"], 100)
    peak = 1e-4  # the paper's, reached after a warm-up over 1% of the 1,000 steps
    assert phase1[10] == pytest.approx(peak * 0.99, rel=1e-5)
    assert phase1[-1] == pytest.approx(peak * 101 / 1000, rel=1e-4)
    assert phase2[0] == pytest.approx(peak * 100 / 1000, rel=1e-4)
    assert phase2[-1] == pytest.approx(peak / 1000, rel=1e-3)


def test_a_bound_total_wins_over_the_runs_steps(clean_gin):
    gpt1 = ["pretrain.gin", "gpt1/tiny.gin", "gpt1/pretrain.gin"]
    bound = rates_of_run(gpt1, 60, "lr.warmup_cosine.total_steps = 120",
                         "lr.warmup_cosine.warmup_steps = 20")
    # The cosine runs to step 120: at the run's last step the rate is still 2/3 of the peak.
    assert bound[20] == pytest.approx(2.5e-4, rel=1e-5)
    assert bound[59] > 0.5 * 2.5e-4


def test_a_warmup_too_long_for_the_schedule_is_scaled_and_said(capsys):
    with tf.Graph().as_default(), tf.Session() as session:
        rates = session.run(schedules.warmup_cosine(tf.constant([3, 6, 60]), 60, peak=1.0,
                                                    warmup_steps=2000))
    assert rates.tolist() == pytest.approx([0.5, 1.0, 0.0], abs=1e-6)
    assert capsys.readouterr().err.splitlines() == [
        "lr.warmup_cosine: the warm-up of 2000 steps does not fit the schedule's 60: scaled to "
        "6 steps (10% of them)"]


def test_spans_and_warmups_refuse_what_they_cannot_mean():
    assert schedules.span(0, 900000, (0.0, 0.9)) == schedules.Span(1000000, 0)
    assert schedules.span(0, 100000, (0.9, 1.0)) == schedules.Span(1000000, 900000)
    # A run that continues a checkpoint's step (T5) ends its schedule at its own last step.
    assert schedules.span(5000, 100) == schedules.Span(5100, 0)
    with pytest.raises(ValueError, match=r"schedule_part \(0.5, 0.5\)"):
        schedules.span(0, 10, (0.5, 0.5))
    with pytest.raises(ValueError, match="warmup_steps \\(10\\) and warmup_fraction \\(0.1\\)"):
        schedules.warmup_length("bert_linear", 100, 10, 0.1)
    with pytest.raises(ValueError, match="warmup_fraction 1.0 must be in"):
        schedules.warmup_length("warmup_linear", 100, None, 1.0)
    with pytest.raises(ValueError, match="lr.warmup_cosine.total_steps"):
        schedules.total_steps_of("warmup_cosine", None, None)


# --- through the command line ------------------------------------------------------------

def train_command(model_dir, gin_files, bindings) -> subprocess.CompletedProcess:
    """`python -m model pretrain ...`, run in this process (the same main and argv;
    a TensorFlow start-up saved): its exit status and what it printed."""
    argv = ["--mode", "pretrain", "--model_dir", str(model_dir)]
    for gin_file in gin_files:
        argv += ["--gin_file", gin_file]
    for binding in bindings:
        argv += ["--gin_param", binding]
    out, err = io.StringIO(), io.StringIO()
    status = run_main(train.main, argv, out, err)
    assert status == 0, err.getvalue()
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def progress_steps(stderr: str) -> list:
    return [int(line.split()[1].rstrip(":")) for line in stderr.splitlines()
            if line.startswith("step ")]


def saved_steps(model_dir) -> list:
    state = tf.train.get_checkpoint_state(str(model_dir))
    return [int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths]


def scalars(model_dir, tag) -> dict:
    values = {}
    for events in pathlib.Path(model_dir).glob("events.out.tfevents.*"):
        for event in tf.train.summary_iterator(str(events)):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


def test_progress_lines_come_at_the_saved_checkpoints(shared_data, tmp_path):
    """Every 2 steps from the step a run starts at, and its last: from 0 (2, 4, 5), and
    continuing a warm-start checkpoint's step 5, as T5's fine-tuning does (7, 9, 10)."""
    vocabulary = trained_vocabulary(shared_data)
    common = [f"DataConfig.source = '{shared_data / C4_SAMPLE}'",
              f"DataConfig.vocabulary = '{vocabulary.path}'",
              "DataConfig.inputs_length = 32", "DataConfig.targets_length = 8",
              "TrainConfig.tokens_per_batch = 256", "TrainConfig.train_steps = 5",
              "TrainConfig.save_checkpoints_steps = 2", "TrainConfig.keep_checkpoint_max = 10"]
    first = train_command(tmp_path / "first", ["sizes/tiny.gin"], common)
    assert progress_steps(first.stderr) == [2, 4, 5]
    assert saved_steps(tmp_path / "first") == [0, 2, 4, 5]
    warm = train_command(tmp_path / "warm", ["sizes/tiny.gin"], common + [
        f"TrainConfig.init_checkpoint = '{tmp_path / 'first'}'"])
    assert progress_steps(warm.stderr) == [7, 9, 10]
    assert saved_steps(tmp_path / "warm") == [5, 7, 9, 10]
    # Each line's loss is the one logged for its step.
    logged = {entry["step"]: entry["loss"] for entry in map(
        json.loads, (tmp_path / "warm" / "train_loss.jsonl").read_text().splitlines())}
    assert f"step 10: loss {logged[10]:.4f}" in warm.stderr.splitlines()


def test_gpt1_runs_60_steps_with_its_warmup_scaled(shared_data, tmp_path):
    """GPT-1's 2,000-step warm-up does not fit 60 steps: scaled to 6, said once; then the cosine
    decay ends at the run's last step (the rates the run logged to TensorBoard)."""
    vocabulary = trained_vocabulary(shared_data)
    result = train_command(tmp_path, ["gpt1/tiny.gin", "gpt1/pretrain.gin"], [
        f"DataConfig.source = '{shared_data / C4_SAMPLE}'",
        f"DataConfig.vocabulary = '{vocabulary.path}'", "DataConfig.targets_length = 32",
        "TrainConfig.tokens_per_batch = 64", "TrainConfig.train_steps = 60",
        "TrainConfig.save_checkpoints_steps = 60"])
    training, scaled, progress = result.stderr.splitlines()
    assert training.startswith("training gpt1 in ")
    assert scaled == ("lr.warmup_cosine: the warm-up of 2000 steps does not fit the schedule's "
                      "60: scaled to 6 steps (10% of them)")
    assert progress.startswith("step 60: loss ")
    rates = scalars(tmp_path, "learning_rate")
    assert sorted(rates) == list(range(1, 61))
    peak = 2.5e-4
    # Step N's update uses the rate of global step N - 1.
    assert rates[4] == pytest.approx(peak * 3 / 6, rel=1e-5)
    assert rates[7] == pytest.approx(peak, rel=1e-5)
    assert rates[60] < 0.01 * peak
