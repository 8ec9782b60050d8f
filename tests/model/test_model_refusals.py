"""What the model command line refuses rather than give a wrong result with exit 0 (issue 48):
decoding text with a run that answers tasks (a fine-tuned BERT, GPT-1 or SegaBERT), exporting
a training run's step-0 checkpoint, and a damaged checkpoint, which is named with its files.
Each refusal's advice is run as the message gives it."""
import json
import pathlib
import shutil

import gin
import pytest

from model import __main__ as model_command
from model.data import inputs
from model.families.bert import wordpiece
from model.trainer import runs
from tests.support.training import configure
from tests.support.trained_vocab import trained_vocabulary

C4_SAMPLES = "c4_samples/olmo/*"
MRPC_PAIRS = 8


def command(argv, capsys) -> tuple:
    """`python -m model ARGV` in this process: (exit status, stdout, stderr)."""
    gin.clear_config()
    capsys.readouterr()
    status = model_command.main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    gin.clear_config()
    return status, out, err


@pytest.fixture(scope="module")
def mrpc_files(shared_data, tmp_path_factory) -> pathlib.Path:
    """The header and the first 8 real pairs of the shared MRPC dev file."""
    lines = (shared_data / "tasks" / "glue_mrpc" / "dev.tsv").read_text(
        encoding="utf-8-sig").splitlines()[:MRPC_PAIRS + 1]
    sample = tmp_path_factory.mktemp("mrpc") / "mrpc.tsv"
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sample


def task_files(sample: pathlib.Path) -> list:
    return ["--task_files", f"glue_mrpc:train={sample}", "--task_files",
            f"glue_mrpc:validation={sample}"]


@pytest.fixture(scope="module")
def fine_tuned_bert(shared_data, mrpc_files, tmp_path_factory) -> pathlib.Path:
    """A tiny BERT fine-tuned on MRPC for 2 steps from scratch by the command line (a few
    seconds): the folder holds model.ckpt-0, model.ckpt-2 and eval/best.json."""
    folder = tmp_path_factory.mktemp("bert_mrpc")
    texts = [d["text"].decode("utf-8") for d in inputs.documents_from_source(
        str(shared_data / C4_SAMPLES)).as_numpy_iterator()]
    vocabulary = wordpiece.train_vocabulary(texts[:200], str(folder / "vocab.txt"),
                                            wordpiece.WordPieceSettings(size=300))
    model_dir = folder / "run"
    argv = ["finetune", "--model_dir", model_dir, "--gin_file", "bert/tiny.gin",
            "--task", "glue_mrpc", *task_files(mrpc_files)]
    for binding in (f"DataConfig.vocabulary = '{vocabulary.path}'",
                    "BertConfig.head = 'classification'", "DataConfig.inputs_length = 32",
                    "TrainConfig.tokens_per_batch = 256", "TrainConfig.train_steps = 2",
                    "TrainConfig.save_checkpoints_steps = 2",
                    "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"):
        argv += ["--gin_param", binding]
    gin.clear_config()
    assert model_command.main([str(arg) for arg in argv]) == 0
    gin.clear_config()
    assert {path.name for path in model_dir.glob("model.ckpt-*.index")} == {
        "model.ckpt-0.index", "model.ckpt-2.index"}
    return model_dir


@pytest.fixture(scope="module")
def input_file(tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("decode") / "inputs.txt"
    path.write_text("The cat sat on the mat.\n")
    return path


# --- decode on a run that answers tasks ----------------------------------------------------------

def test_decode_on_a_fine_tuned_bert_is_refused_with_the_eval_and_export_to_run(
        fine_tuned_bert, input_file, capsys):
    """Before: an empty line on stdout and exit 0."""
    status, out, err = command(["decode", "--model_dir", fine_tuned_bert, "--input_file",
                                input_file], capsys)
    assert status != 0 and out == ""
    assert "classification head" in err and "writes no text" in err
    assert (f"python -m model eval --task glue_mrpc --model_dir {fine_tuned_bert}" in err)
    assert (f"python -m model export --family bert --format hf --model_dir {fine_tuned_bert} "
            f"--export_dir OUT) and run the Python of OUT/README.md" in err)


def test_the_eval_the_decode_refusal_names_scores_the_run(fine_tuned_bert, mrpc_files, capsys):
    status, out, err = command(["eval", "--task", "glue_mrpc", "--model_dir", fine_tuned_bert,
                                *task_files(mrpc_files)], capsys)
    assert status == 0, err
    assert json.loads(out)["glue_mrpc/validation"]["step"] == 2


def test_the_export_the_decode_refusal_names_writes_a_card_with_python(fine_tuned_bert, tmp_path,
                                                                      capsys):
    out_dir = tmp_path / "OUT"
    status, _, err = command(["export", "--family", "bert", "--format", "hf", "--model_dir",
                              fine_tuned_bert, "--export_dir", out_dir], capsys)
    assert status == 0, err
    card = (out_dir / "README.md").read_text()
    assert "```python" in card and "BertForSequenceClassification.from_pretrained" in card


def recorded_run(folder: pathlib.Path, *bindings: str) -> pathlib.Path:
    """A run folder holding only the operative config a training run records (no checkpoint,
    no vocabulary): a refusal decided from the configuration must come before either is read
    (otherwise the command fails on the missing checkpoint instead)."""
    folder.mkdir()
    (folder / runs.OPERATIVE_CONFIG_NAME).write_text("\n".join(bindings) + "\n")
    return folder


@pytest.mark.parametrize("bindings, expected", [
    (("ModelConfig.architecture = 'gpt1'",),
     ["GPT-1 is pre-trained here to be fine-tuned with heads",
      "python -m model export --family gpt1 --format hf"]),
    (("ModelConfig.architecture = 'gpt1'", "GPT1Config.head = 'classification'",
      "GPT1Config.num_classes = 2"),
     ["a GPT-1 run fine-tuned with a classification head answers its task, it writes no text",
      "python -m model eval --task TASK --model_dir"]),
    (("ModelConfig.architecture = 'gpt1'", "GPT1Config.head = 'multiple_choice'",
      "GPT1Config.num_classes = 2", "GPT1Config.sequences_per_example = 2"),
     ["multiple_choice head", "python -m model eval --task TASK",
      "python -m model export --family gpt1 --format hf"]),
    (("ModelConfig.architecture = 'segabert'", "BertConfig.head = 'span'"),
     ["a segabert run fine-tuned with a span head", "python -m model eval --task TASK"]),
])
def test_decode_is_refused_from_the_runs_configuration_before_anything_is_read(
        tmp_path, input_file, capsys, bindings, expected):
    model_dir = recorded_run(tmp_path / "run", *bindings)
    status, out, err = command(["decode", "--model_dir", model_dir, "--input_file", input_file],
                               capsys)
    assert status != 0 and out == ""
    assert "decode writes text" in err
    for part in expected:
        assert part in err
    # SegaBERT's format holds the masked LM alone; GPT-1's a multiple-choice head only.
    if "segabert" in bindings[0] or "classification" in "".join(bindings):
        assert "python -m model export" not in err


@pytest.mark.parametrize("bindings", [
    ("ModelConfig.architecture = 'bert'",),  # the pre-training head: masked LM pieces
    ("ModelConfig.architecture = 'segabert'", "BertConfig.head = 'mlm'"),
    ("ModelConfig.architecture = 'encoder_decoder'",),
])
def test_a_run_that_writes_text_is_not_refused(tmp_path, input_file, capsys, bindings):
    """These pass the refusal and stop where a run without a checkpoint stops."""
    model_dir = recorded_run(tmp_path / "run", *bindings)
    status, _, err = command(["decode", "--model_dir", model_dir, "--input_file", input_file],
                             capsys)
    assert status != 0
    assert "writes no text" not in err and "holds no checkpoint" in err


def test_a_runs_export_without_format_names_the_familys_formats(fine_tuned_bert, tmp_path,
                                                                capsys):
    """Before: `the bert family has no --mode export` (a flag python -m model does not have).
    The format it names exports: test_the_export_the_decode_refusal_names_writes_a_card..."""
    status, _, err = command(["export", "--model_dir", fine_tuned_bert, "--export_dir",
                              tmp_path / "out"], capsys)
    assert status != 0
    assert ("the bert family has no export without --format: python -m model export --family "
            "bert --format FORMAT writes its formats (hf)") in err


# --- export of an untrained checkpoint ----------------------------------------------------------

def stopped_after_first_checkpoint(run_dir: pathlib.Path, folder: pathlib.Path,
                                   keep_settings: bool = True) -> pathlib.Path:
    """A copy of a run as if killed right after it wrote model.ckpt-0: its step-0 checkpoint,
    checkpoint state and recorded configuration (without the trainer's run_settings.json when
    not `keep_settings`: an import's folder)."""
    folder.mkdir()
    for path in run_dir.glob("model.ckpt-0.*"):
        shutil.copy(path, folder / path.name)
    names = [runs.OPERATIVE_CONFIG_NAME] + ([runs.RUN_SETTINGS_NAME] if keep_settings else [])
    for name in names:
        shutil.copy(run_dir / name, folder / name)
    (folder / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-0"\n'
                                       'all_model_checkpoint_paths: "model.ckpt-0"\n')
    return folder


def test_export_of_a_run_stopped_at_step_0_is_refused_unless_asked_for(fine_tuned_bert, tmp_path,
                                                                       capsys):
    """Before: random weights (here a random head) exported with exit 0."""
    stopped = stopped_after_first_checkpoint(fine_tuned_bert, tmp_path / "stopped")
    export = ["export", "--family", "bert", "--format", "hf", "--model_dir", stopped]
    status, _, err = command([*export, "--export_dir", tmp_path / "refused"], capsys)
    assert status != 0
    assert "model.ckpt-0 is step 0" in err and "--allow_untrained" in err
    assert not (tmp_path / "refused").exists()
    status, _, err = command([*export, "--export_dir", tmp_path / "asked", "--allow_untrained"],
                             capsys)
    assert status == 0, err
    assert (tmp_path / "asked" / "config.json").is_file()


def test_export_names_a_trained_checkpoint_with_checkpoint_as_the_refusal_says(
        fine_tuned_bert, tmp_path, capsys):
    export = ["export", "--family", "bert", "--format", "hf", "--model_dir", fine_tuned_bert]
    status, _, err = command([*export, "--export_dir", tmp_path / "zero", "--checkpoint",
                              "model.ckpt-0"], capsys)
    assert status != 0 and "--allow_untrained" in err
    status, _, err = command([*export, "--export_dir", tmp_path / "two", "--checkpoint",
                              "model.ckpt-2"], capsys)
    assert status == 0, err


def test_a_step_0_checkpoint_without_the_trainers_settings_exports(fine_tuned_bert, tmp_path,
                                                                    capsys):
    """An import writes model.ckpt-0 and operative_config.gin alone: a released model."""
    imported = stopped_after_first_checkpoint(fine_tuned_bert, tmp_path / "imported",
                                              keep_settings=False)
    status, _, err = command(["export", "--family", "bert", "--format", "hf", "--model_dir",
                              imported, "--export_dir", tmp_path / "out",
                              "--gin_param", "BertConfig.head = 'classification'"], capsys)
    assert status == 0, err


@pytest.fixture(scope="module")
def t5_fine_tuned(t5_run, shared_data, tmp_path_factory) -> pathlib.Path:
    """A tiny T5 fine-tuned 1 step from t5_run's step 2: T5's step continues, so the run's
    first checkpoint, model.ckpt-2, holds the pre-trained weights."""
    model_dir = tmp_path_factory.mktemp("t5_tuned")
    data = [f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
            f"DataConfig.source = '{shared_data}/c4_samples/olmo/c4-sample.*.json.gz'"]
    run = configure(model_dir, data, f"TrainConfig.init_checkpoint = '{t5_run}'",
                    "TrainConfig.save_checkpoints_steps = 1", gin_files=("finetune.gin",))
    assert runs.train(run, run.training_examples(), run.vocabulary.vocab_size, 1) == 3
    gin.clear_config()
    assert {path.name for path in model_dir.glob("model.ckpt-*.index")} == {
        "model.ckpt-2.index", "model.ckpt-3.index"}
    return model_dir


def test_a_warm_started_runs_first_checkpoint_is_refused_for_export(t5_fine_tuned, tmp_path,
                                                                    capsys):
    """The pre-trained weights a fine-tuning run starts from are not its result."""
    export = ["export", "--model_dir", t5_fine_tuned]
    status, _, err = command([*export, "--export_dir", tmp_path / "first", "--checkpoint",
                              "model.ckpt-2"], capsys)
    assert status != 0
    assert "model.ckpt-2 is step 2 of the run" in err and "--allow_untrained" in err
    status, _, err = command([*export, "--export_dir", tmp_path / "trained"], capsys)
    assert status == 0, err


# --- damaged checkpoints -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def t5_run(shared_data, tmp_path_factory) -> pathlib.Path:
    """A tiny T5 trained 2 steps on real C4 pages (model.ckpt-0, model.ckpt-2)."""
    model_dir = tmp_path_factory.mktemp("t5")
    data = [f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
            f"DataConfig.source = '{shared_data}/c4_samples/olmo/c4-sample.*.json.gz'"]
    run = configure(model_dir, data, "TrainConfig.save_checkpoints_steps = 2")
    assert runs.train(run, run.training_examples(), run.vocabulary.vocab_size, 2) == 2
    gin.clear_config()
    return model_dir


def damaged_copy(run_dir: pathlib.Path, folder: pathlib.Path, damage) -> pathlib.Path:
    shutil.copytree(run_dir, folder)
    damage(folder / "model.ckpt-2")
    return folder


def cut_short(checkpoint: pathlib.Path) -> None:
    data = max(checkpoint.parent.glob(checkpoint.name + ".data-*"), key=lambda p: p.stat().st_size)
    with data.open("r+b") as file:
        file.truncate(data.stat().st_size // 2)


def flipped_index(checkpoint: pathlib.Path) -> None:
    index = checkpoint.with_name(checkpoint.name + ".index")
    with index.open("r+b") as file:
        file.truncate(100)


@pytest.mark.parametrize("damage", [cut_short, flipped_index])
@pytest.mark.parametrize("mode", ["decode", "export"])
def test_a_damaged_checkpoint_is_named_with_its_files(t5_run, tmp_path, input_file, capsys,
                                                      mode, damage):
    """Before: 37- and 138-line TensorFlow tracebacks naming no file."""
    model_dir = damaged_copy(t5_run, tmp_path / "run", damage)
    flags = (["--input_file", input_file] if mode == "decode"
             else ["--export_dir", tmp_path / "out"])
    status, out, err = command([mode, "--model_dir", model_dir, *flags], capsys)
    assert status != 0 and out == ""
    assert f"checkpoint {model_dir}/model.ckpt-2 is damaged" in err
    assert f"{model_dir}/model.ckpt-2.index" in err and "Traceback" not in err
    assert f"choose another with --checkpoint ({model_dir} also holds model.ckpt-0)" in err


def test_the_other_checkpoint_a_damage_message_names_decodes(t5_run, tmp_path, input_file, capsys):
    model_dir = damaged_copy(t5_run, tmp_path / "run", cut_short)
    status, out, err = command(["decode", "--model_dir", model_dir, "--input_file", input_file,
                                "--checkpoint", "model.ckpt-0"], capsys)
    assert status == 0, err
    assert len(out.splitlines()) == 1


# --- a task file of another layout -------------------------------------------------------------

@pytest.mark.parametrize("task, given, layout", [
    ("super_glue_copa", "glue_rte/dev.tsv", "SuperGLUE JSONL (train.jsonl, val.jsonl, test.jsonl)"),
    ("glue_rte", "superglue_copa/val.jsonl", "GLUE TSV (train.tsv, dev.tsv, test.tsv)"),
])
def test_a_task_file_of_another_layout_names_the_file_the_task_and_the_layout(
        t5_run, shared_data, capsys, task, given, layout):
    """Before: `error: Expecting value: line 1 column 1 (char 0)` for COPA given RTE's TSV."""
    path = shared_data / "tasks" / given
    status, out, err = command(["eval", "--task", task, "--model_dir", t5_run, "--task_files",
                                f"{task}:validation={path}"], capsys)
    assert status != 0 and out == ""
    assert f"{path}: not the files {task} reads ({layout})" in err
