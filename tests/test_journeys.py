"""Each family's documented journey at tiny size (issue 19): the commands of README.md and the
family's README (model/families/<family>/README.md) with only the flags they show, run through
the command lines in this process, and the result files README.md describes checked.

What stands in for the documents' placeholders: the family's tiny gin file for its base size
(the documents name them), the shared samples for the data (C4 pages for `DataConfig.source`,
the task release files for `--task_files`), a vocabulary trained by the documented command on
those pages, and a tiny run's length: `TrainConfig.train_steps`, `TrainConfig.tokens_per_batch`
and the task sample's size, settings model/TRAINING.md and README.md document. One thread
(`TrainConfig.intra_op_threads`, `inter_op_threads`) is the test machine's setting, as in every
trainer test. Nothing else is bound: a step that needs another binding is a gap in the documents
or the code, which this test exists to catch.
"""
import json
import pathlib
from typing import Dict, List

import pytest

from model import convert, tasks, train, train_vocab, wordpiece
from tests.in_process import command, printed_json
from tests.trained_vocab import trained_vocabulary  # `python -m model.train_vocab`, as documented

C4 = "c4_samples/olmo/*.json*.gz"
TASKS = "tasks"
# The test machine's, not the journey's (where a run ran is left to each command).
THREADS = ["TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]


def tiny_run(steps: int, tokens_per_batch: int) -> List[str]:
    """A short run of small batches: the run's length and its batch in tokens."""
    return [f"TrainConfig.train_steps = {steps}",
            f"TrainConfig.tokens_per_batch = {tokens_per_batch}"] + THREADS


def task_files(task: str, **splits: pathlib.Path) -> List[str]:
    return [flag for split, path in splits.items()
            for flag in ("--task_files", f"{task}:{split}={path}")]


def sample(source: pathlib.Path, folder: pathlib.Path, examples: int, header: bool) -> pathlib.Path:
    """The first `examples` examples of a release file (and its header line), as a file."""
    lines = source.read_text(encoding="utf-8-sig").splitlines()
    path = folder / f"{source.parent.name}_{examples}_{source.name}"
    path.write_text("\n".join(lines[:examples + header]) + "\n", encoding="utf-8")
    return path


def check_task_results(model_dir: pathlib.Path, printed: dict, task: str, split: str,
                       examples: int) -> int:
    """What README.md says a task run leaves and prints, for one task and split: the printed
    `{"TASK/SPLIT": {"step": N, "scores": {...}}}` with every metric of the task,
    `eval/<task>/<split>/predictions-<N>.jsonl` (inputs, targets, prediction per example),
    `scores.jsonl` holding the printed scores at step N, and `eval/best.json` naming the task.
    Returns N."""
    result = printed[f"{task}/{split}"]
    step, scores = result["step"], result["scores"]
    assert set(scores) == set(tasks.get(task).metric_names), scores
    folder = model_dir / "eval" / task / split
    predictions = [json.loads(line) for line in
                   (folder / f"predictions-{step}.jsonl").read_text().splitlines()]
    assert len(predictions) == examples
    assert all({"inputs", "targets", "prediction"} <= set(entry) for entry in predictions)
    recorded = {entry["step"]: entry for entry in
                map(json.loads, (folder / "scores.jsonl").read_text().splitlines())}
    assert {name: recorded[step][name] for name in scores} == scores
    best = json.loads((model_dir / "eval" / "best.json").read_text())
    assert f"{task}/{split}" in best
    return step


def hf_config(folder: pathlib.Path) -> dict:
    assert any((folder / name).is_file() for name in ("model.safetensors", "pytorch_model.bin"))
    return json.loads((folder / "config.json").read_text())


# --- T5 ------------------------------------------------------------------------------------

def test_t5_encoder_decoder_journey(shared_data, tmp_path):
    """README.md's T5 commands: pre-train with span corruption, fine-tune on RTE from the release
    files, eval, decode, export the best checkpoint."""
    vocabulary = trained_vocabulary(shared_data).path
    sizes = ["--gin_file", "sizes/tiny.gin", "--gin_file", "architectures/encoder_decoder.gin"]
    pretrained = tmp_path / "t5"
    printed = printed_json(command(train.main, [
        "--mode", "pretrain", "--model_dir", str(pretrained), *sizes,
        "--gin_file", "objectives/span_corruption.gin"], [
        f"DataConfig.source = '{shared_data / C4}'",
        f"DataConfig.vocabulary = '{vocabulary}'"] + tiny_run(2, 2048)))
    assert printed == {"step": 2}

    rte = shared_data / TASKS / "glue_rte"
    finetuned = tmp_path / "t5_rte"
    validation = task_files("glue_rte", validation=rte / "dev.tsv")
    printed = printed_json(command(train.main, [
        "--mode", "finetune", "--task", "glue_rte", "--model_dir", str(finetuned), *sizes,
        *task_files("glue_rte", train=rte / "train.tsv"), *validation], [
        f"TrainConfig.init_checkpoint = '{pretrained}'",
        f"DataConfig.vocabulary = '{vocabulary}'"] + tiny_run(2, 2048)))
    best = check_task_results(finetuned, printed, "glue_rte", "validation", 2)

    # eval and decode read the run's settings from its operative_config.gin.
    on_the_run = ["--task", "glue_rte", "--model_dir", str(finetuned), *validation]
    evaluated = printed_json(command(train.main, ["--mode", "eval", *on_the_run], THREADS))
    assert check_task_results(finetuned, evaluated, "glue_rte", "validation", 2) == best
    decoded = printed_json(command(train.main, ["--mode", "decode", *on_the_run], THREADS))
    assert check_task_results(finetuned, decoded, "glue_rte", "validation", 2) == 4

    exported = tmp_path / "hf_t5_rte"
    command(train.main, ["--mode", "export", "--model_dir", str(finetuned),
                         "--export_dir", str(exported), "--checkpoint", "best"], THREADS)
    config = hf_config(exported)
    assert (config["d_model"], config["num_layers"]) == (32, 2)
    assert (exported / "spiece.model").is_file()
    assert (exported / "generation_config.json").is_file()


# --- GPT-1 ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bpe_vocabulary(shared_data, tmp_path_factory) -> str:
    """GPT-1's vocabulary by the documented command (`--model_type bpe`, English alone)."""
    prefix = tmp_path_factory.mktemp("bpe") / "c4_bpe"
    command(train_vocab.main, ["--model_type", "bpe", "--size", "400", "--output", str(prefix),
                               "--source", f"en={shared_data / C4}", "--sample_size", "2000"])
    return f"{prefix}.model"


def test_gpt1_journey(shared_data, bpe_vocabulary, tmp_path):
    """README.md's GPT-1 commands: pre-train, fine-tune on COPA from the release files, eval,
    export the pre-trained model (a fine-tuned head has no place in OpenAIGPTLMHeadModel)."""
    sizes = ["--gin_file", "gpt1/tiny.gin"]
    vocabulary = f"DataConfig.vocabulary = '{bpe_vocabulary}'"
    pretrained = tmp_path / "gpt1"
    printed = printed_json(command(train.main, [
        "--mode", "pretrain", "--model_dir", str(pretrained), *sizes,
        "--gin_file", "gpt1/pretrain.gin"],
        [f"DataConfig.source = '{shared_data / C4}'", vocabulary] + tiny_run(2, 2048)))
    assert printed == {"step": 2}

    copa = shared_data / TASKS / "superglue_copa"
    validation = task_files("super_glue_copa", validation=sample(copa / "val.jsonl", tmp_path, 8,
                                                                 header=False))
    finetuned = tmp_path / "gpt1_copa"
    # 3 epochs of the 8 examples, one batch each (GPT-1's run length comes from the task).
    printed = printed_json(command(train.main, [
        "--mode", "finetune", "--task", "super_glue_copa", "--model_dir", str(finetuned), *sizes,
        "--gin_file", "gpt1/finetune.gin", *validation,
        *task_files("super_glue_copa", train=sample(copa / "train.jsonl", tmp_path, 8,
                                                    header=False))],
        [f"TrainConfig.init_checkpoint = '{pretrained}'", vocabulary] + THREADS))
    step = check_task_results(finetuned, printed, "super_glue_copa", "validation", 8)
    assert step == 3

    evaluated = printed_json(command(train.main, [
        "--mode", "eval", "--task", "super_glue_copa", "--model_dir", str(finetuned),
        *validation], THREADS))
    assert check_task_results(finetuned, evaluated, "super_glue_copa", "validation", 8) == step

    exported = tmp_path / "hf_gpt1"
    command(convert.main, ["export", "--family", "gpt1", "--format", "hf", "--model_dir",
                           str(pretrained), "--output", str(exported)])
    config = hf_config(exported)
    assert (config["n_embd"], config["n_layer"], config["vocab_size"]) == (32, 2, 500)


# --- BERT and SegaBERT ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def wordpiece_vocabulary(shared_data, tmp_path_factory) -> str:
    """BERT's and SegaBERT's vocabulary by the documented command."""
    path = tmp_path_factory.mktemp("wordpiece") / "c4_wordpiece.txt"
    command(wordpiece.main, ["--output", str(path), "--size", "1000", "--sample_size", "1000",
                             "--source", str(shared_data / C4)])
    return str(path)


@pytest.fixture(scope="module")
def mrpc(shared_data, tmp_path_factory) -> Dict[str, pathlib.Path]:
    """MRPC's release sample (its dev file): 8 pairs to train on, 8 to score."""
    folder = tmp_path_factory.mktemp("mrpc")
    lines = (shared_data / TASKS / "glue_mrpc" / "dev.tsv").read_text(
        encoding="utf-8-sig").splitlines()
    files = {}
    for split, rows in (("train", lines[1:9]), ("validation", lines[9:17])):
        files[split] = folder / f"{split}.tsv"
        files[split].write_text("\n".join([lines[0]] + rows) + "\n", encoding="utf-8")
    return files


def test_bert_journey(shared_data, wordpiece_vocabulary, mrpc, tmp_path):
    """README.md's BERT commands: pre-train at 128 then at 512 pieces, fine-tune on MRPC from
    the release files, eval, export the fine-tuned classifier."""
    sizes = ["--gin_file", "bert/tiny.gin"]
    vocabulary = f"DataConfig.vocabulary = '{wordpiece_vocabulary}'"
    source = f"DataConfig.source = '{shared_data / C4}'"
    phase_128 = tmp_path / "bert_128"
    printed = printed_json(command(train.main, [
        "--mode", "pretrain", "--model_dir", str(phase_128), *sizes,
        "--gin_file", "bert/pretrain_128.gin"], [vocabulary, source] + tiny_run(2, 1024)))
    assert printed == {"step": 2}
    phase_512 = tmp_path / "bert_512"
    printed = printed_json(command(train.main, [
        "--mode", "pretrain", "--model_dir", str(phase_512), *sizes,
        "--gin_file", "bert/pretrain_512.gin"],
        [f"TrainConfig.init_checkpoint = '{phase_128}'", vocabulary, source]
        + tiny_run(2, 2048)))
    assert printed["step"] >= 2

    finetuned = tmp_path / "bert_mrpc"
    validation = task_files("glue_mrpc", validation=mrpc["validation"])
    printed = printed_json(command(train.main, [
        "--mode", "finetune", "--task", "glue_mrpc", "--model_dir", str(finetuned), *sizes,
        "--gin_file", "bert/finetune_classification.gin", *validation,
        *task_files("glue_mrpc", train=mrpc["train"])],
        [f"TrainConfig.init_checkpoint = '{phase_512}'", vocabulary] + tiny_run(2, 1024)))
    step = check_task_results(finetuned, printed, "glue_mrpc", "validation", 8)

    evaluated = printed_json(command(train.main, [
        "--mode", "eval", "--task", "glue_mrpc", "--model_dir", str(finetuned), *validation],
        THREADS))
    assert check_task_results(finetuned, evaluated, "glue_mrpc", "validation", 8) == step

    exported = tmp_path / "hf_bert_mrpc"
    command(convert.main, ["export", "--family", "bert", "--format", "hf", "--model_dir",
                           str(finetuned), "--output", str(exported)])
    config = hf_config(exported)
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert (config["hidden_size"], config["num_hidden_layers"]) == (32, 2)


def test_segabert_journey(shared_data, wordpiece_vocabulary, mrpc, tmp_path):
    """README.md's SegaBERT commands: pre-train, fine-tune on MRPC with BERT's classification
    gin file then SegaBERT's, eval (SegaBERT has no export)."""
    sizes = ["--gin_file", "segabert/tiny.gin"]
    vocabulary = f"DataConfig.vocabulary = '{wordpiece_vocabulary}'"
    pretrained = tmp_path / "segabert"
    printed = printed_json(command(train.main, [
        "--mode", "pretrain", "--model_dir", str(pretrained), *sizes,
        "--gin_file", "segabert/pretrain.gin"],
        [vocabulary, f"DataConfig.source = '{shared_data / C4}'"] + tiny_run(2, 2048)))
    assert printed == {"step": 2}

    finetuned = tmp_path / "segabert_mrpc"
    validation = task_files("glue_mrpc", validation=mrpc["validation"])
    printed = printed_json(command(train.main, [
        "--mode", "finetune", "--task", "glue_mrpc", "--model_dir", str(finetuned), *sizes,
        "--gin_file", "bert/finetune_classification.gin", "--gin_file", "segabert/finetune.gin",
        *validation, *task_files("glue_mrpc", train=mrpc["train"])],
        [f"TrainConfig.init_checkpoint = '{pretrained}'", vocabulary] + tiny_run(2, 1024)))
    step = check_task_results(finetuned, printed, "glue_mrpc", "validation", 8)

    evaluated = printed_json(command(train.main, [
        "--mode", "eval", "--task", "glue_mrpc", "--model_dir", str(finetuned), *validation],
        THREADS))
    assert check_task_results(finetuned, evaluated, "glue_mrpc", "validation", 8) == step
