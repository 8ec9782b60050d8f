"""The same task results for every family (issue 19): GPT-1, BERT and SegaBERT fine-tuned at tiny
size through the command line (`model.train.main`) on real task samples write and print what T5
writes (model/tasks/evaluation.py): per task and split `eval/<task>/<split>/predictions-<step>.jsonl`,
`scores.jsonl` and TensorBoard events for every checkpoint the run trained, `eval/best.json`
naming the best, and `{"TASK/SPLIT": {"step": N, "scores": {...}}}` with every metric of the
task, computed from the head's answers as the predictions file records them. The checkpoint of
the weights the run started from (step 0: these families restart the step) is never scored, and
`--mode eval` afterwards finds nothing left to score.

Each run starts from fresh weights (the step-0 checkpoint stands for a warm start's: the family
tests warm-start from their pre-trained fixtures, tests/model/test_gpt1.py and
tests/model/test_bert.py), with
4 steps and a checkpoint every 2: checkpoints 0, 2 and 4, of which 2 and 4 are scored.
"""
import json
import pathlib
from typing import Dict, List, Sequence

import numpy as np
import pytest
import sklearn.metrics
import tensorflow.compat.v1 as tf

from model import tasks, train
from model.tasks import discriminative
from tests.support import in_process
from tests.support.in_process import printed_json

THREADS = ["TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]
TRAINED = [2, 4]  # the checkpoints a run of 4 steps saving every 2 trained
MRPC = "tasks/glue_mrpc/dev.tsv"
RACE = "tasks/race/RACE"


def command(argv: List[str], bindings: Sequence[str]) -> dict:
    """`python -m model.train ARGV --gin_param B ...` in this process; the JSON it prints."""
    return printed_json(in_process.command(train.main, argv, bindings))


def listing(folder: pathlib.Path) -> Dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def event_scalars(folder: pathlib.Path) -> Dict[str, Dict[int, float]]:
    """{tag: {step: value}} of the scalars in a folder's TensorBoard event files."""
    scalars: Dict[str, Dict[int, float]] = {}
    for path in folder.glob("events.out.tfevents.*"):
        for event in tf.train.summary_iterator(str(path)):
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = float(
                    tf.make_ndarray(value.tensor))
    return scalars


def check_results(model_dir: pathlib.Path, printed: dict, task: str, split: str,
                  labels: Sequence, metric_names: Sequence[str], score) -> List[dict]:
    """The files and printed result of a fine-tuning run on one task and split, every trained
    checkpoint scored; `score(targets, predictions)` is the metrics' oracle, applied to what
    the predictions file records. Returns the predictions of the best step."""
    name = f"{task}/{split}"
    folder = model_dir / "eval" / task / split
    recorded = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in recorded] == TRAINED  # never step 0, the starting weights
    assert sorted(p.name for p in folder.glob("predictions-*.jsonl")) == \
        [f"predictions-{step}.jsonl" for step in TRAINED]
    events = event_scalars(folder)
    assert set(events) == {f"{name}/{metric}" for metric in metric_names}
    by_step = {}
    for entry in recorded:
        step = entry["step"]
        predictions = [json.loads(line) for line in
                       (folder / f"predictions-{step}.jsonl").read_text().splitlines()]
        assert [p["targets"] for p in predictions] == list(labels)
        assert all({"inputs", "targets", "prediction"} <= set(p) for p in predictions)
        expected = score([p["targets"] for p in predictions], [p["prediction"] for p in predictions])
        assert set(expected) == set(metric_names)
        for metric, value in expected.items():
            assert entry[metric] == pytest.approx(value, abs=1e-9)
            assert events[f"{name}/{metric}"][step] == pytest.approx(value, rel=1e-6)
        assert entry["decoding"] is None and entry["data"].startswith("local files ")
        by_step[step] = predictions
    result = printed[name]
    assert result["step"] in TRAINED and result["checkpoint"] == f"model.ckpt-{result['step']}"
    entry = recorded[TRAINED.index(result["step"])]
    assert result["scores"] == {metric: entry[metric] for metric in metric_names}
    assert json.loads((model_dir / "eval" / "best.json").read_text()) == printed
    return by_step[result["step"]]


def check_eval_adds_nothing(model_dir: pathlib.Path, argv: List[str], bindings: Sequence[str],
                            printed: dict) -> None:
    """`--mode eval` on the fine-tuned run: nothing left to score, the same best reported."""
    before = listing(model_dir / "eval")
    assert command(["--mode", "eval"] + argv, bindings) == printed
    assert listing(model_dir / "eval") == before


def accuracy(targets, predictions) -> Dict[str, float]:
    return {"accuracy": 100 * float(np.mean(np.equal(targets, predictions)))}


def test_gpt1_on_copa_writes_the_task_results(shared_data, tmp_path, clean_gin):
    """GPT-1's multiple-choice head on COPA (32 training examples, 100 validation examples):
    accuracy, the registry's metric for COPA, of the chosen answers."""
    from tests.support.trained_vocab import trained_vocabulary
    copa = shared_data / "tasks/superglue_copa"
    model_dir = tmp_path / "gpt1_copa"
    argv = ["--model_dir", str(model_dir), "--task", "super_glue_copa",
            "--task_files", f"super_glue_copa:validation={copa / 'val.jsonl'}"]
    finetune = ["--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/finetune.gin",
                "--task_files", f"super_glue_copa:train={copa / 'train.jsonl'}"]
    bindings = [f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
                "GPT1FinetuneConfig.epochs = 2", "GPT1FinetuneConfig.batch_size = 16",
                "TrainConfig.save_checkpoints_steps = 2"] + THREADS
    printed = command(["--mode", "finetune"] + argv + finetune, bindings)
    labels = [e.label for e in discriminative.examples("super_glue_copa", "validation",
                                                       [str(copa / "val.jsonl")])]
    best = check_results(model_dir, printed, "super_glue_copa", "validation", labels,
                         tasks.get("super_glue_copa").metric_names, accuracy)
    assert {p["prediction"] for p in best} <= {0, 1}
    assert best[0]["inputs"]["choices"] == ["The toilet filled with water.",
                                            "Water flowed from the spout."]
    check_eval_adds_nothing(model_dir, argv, THREADS, printed)


@pytest.fixture(scope="module")
def wordpiece_vocabulary(shared_data, tmp_path_factory) -> str:
    """A small WordPiece vocabulary of the MRPC and RACE samples' text."""
    from model.families.bert import wordpiece
    texts = [line.split("\t", 3)[3] for line in
             (shared_data / MRPC).read_text(encoding="utf-8-sig").splitlines()[1:]]
    texts += [" ".join((raw["article"], raw["question"], *raw["options"]))
              for raw in discriminative.read_race(str(shared_data / RACE))]
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    return wordpiece.train_vocabulary(texts, str(path), wordpiece.WordPieceSettings(size=600)).path


def head_bindings(vocabulary: str, length: int, rows: int, row_length: int) -> List[str]:
    return [f"DataConfig.vocabulary = '{vocabulary}'", f"DataConfig.inputs_length = {length}",
            f"TrainConfig.tokens_per_batch = {rows * row_length}", "TrainConfig.train_steps = 4",
            "TrainConfig.save_checkpoints_steps = 2", "lr.bert_linear.peak = 1e-3"] + THREADS


def mrpc_f1_and_accuracy(targets, predictions) -> Dict[str, float]:
    """GLUE's MRPC metrics (sklearn's binary F1 of class 1, and accuracy), in percent."""
    return {"f1": 100 * sklearn.metrics.f1_score(targets, predictions, zero_division=0.0),
            **accuracy(targets, predictions)}


def test_bert_on_mrpc_writes_the_task_results(shared_data, wordpiece_vocabulary, tmp_path,
                                              clean_gin):
    """BERT's classification head on MRPC (16 training pairs, 24 other validation pairs): F1
    and accuracy, the registry's metrics for MRPC, of the predicted classes."""
    lines = (shared_data / MRPC).read_text(encoding="utf-8-sig").splitlines()
    files = {}
    for split, rows in (("train", lines[1:17]), ("validation", lines[17:41])):
        files[split] = tmp_path / f"{split}.tsv"
        files[split].write_text("\n".join([lines[0]] + rows) + "\n", encoding="utf-8")
    model_dir = tmp_path / "bert_mrpc"
    argv = ["--model_dir", str(model_dir), "--task", "glue_mrpc",
            "--task_files", f"glue_mrpc:validation={files['validation']}"]
    finetune = ["--gin_file", "bert/tiny.gin", "--gin_file", "bert/finetune_classification.gin",
                "--task_files", f"glue_mrpc:train={files['train']}"]
    printed = command(["--mode", "finetune"] + argv + finetune,
                      head_bindings(wordpiece_vocabulary, 64, 8, 64))
    labels = [int(line.split("\t")[0]) for line in lines[17:41]]
    assert 0 < np.mean(labels) < 1
    best = check_results(model_dir, printed, "glue_mrpc", "validation", labels,
                         ("f1", "accuracy"), mrpc_f1_and_accuracy)
    assert {p["prediction"] for p in best} <= {0, 1}
    check_eval_adds_nothing(model_dir, argv, THREADS, printed)


def test_segabert_on_race_writes_the_task_results(shared_data, wordpiece_vocabulary, tmp_path,
                                                  clean_gin):
    """SegaBERT's multiple-choice head on RACE (the 17 questions of the dev sample to train, the
    22 of the test sample to score): accuracy, RACE's metric outside the task registry, of the
    chosen options."""
    race = shared_data / RACE
    model_dir = tmp_path / "segabert_race"
    argv = ["--model_dir", str(model_dir), "--task", "race",
            "--task_files", f"race:validation={race / 'test'}"]
    finetune = ["--gin_file", "segabert/tiny.gin", "--gin_file", "bert/finetune_classification.gin",
                "--gin_file", "segabert/finetune.gin", "--task_files", f"race:train={race / 'dev'}"]
    printed = command(["--mode", "finetune"] + argv + finetune,
                      head_bindings(wordpiece_vocabulary, 64, 4, 4 * 64))
    labels = [e.label for e in discriminative.examples("race", "validation", [str(race / "test")])]
    best = check_results(model_dir, printed, "race", "validation", labels, ("accuracy",), accuracy)
    assert {p["prediction"] for p in best} <= {0, 1, 2, 3} and len(best) == 22
    check_eval_adds_nothing(model_dir, argv, THREADS, printed)
