"""What an export carries so that its user need not guess (model/convert/card.py): a BERT
imported with its vocab.txt fine-tunes with no vocabulary given; a classifier's config.json
names the task's labels; every export's model card (README.md) tells the run, the task and its
recorded scores, and its Python runs as written, in a new process, against the folder (T5's:
tests/model/test_convert.py's padded import; SegaBERT's: tests/model/test_segabert_pytorch.py).

The runs are tiny: transformers' random models (tests/support/convert.py), one fine-tuning step
on 8 real MRPC pairs, checkpoints written with random heads as tests/model/test_convert.py's.
"""
import json

import gin
import numpy as np
import pytest

from model.convert import checkpoints
from model.trainer import runs
from model.trainer.model_config import ModelConfig
from tests.support.convert import (VOCAB, conversion, import_folder, run_card_snippet, run_convert,
                                   tiny_bert)
from tests.support.in_process import command

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MRPC_LABELS = ["not_equivalent", "equivalent"]


@pytest.fixture(scope="module")
def bert_mrpc(tmp_path_factory, shared_data):
    """A BERT folder with its vocab.txt imported, then fine-tuned one step on 8 MRPC pairs with
    the imported gin file and no vocabulary given: (imported folder, fine-tuned run, stdout)."""
    from model import train
    folder = tmp_path_factory.mktemp("bert_mrpc")
    tiny_bert(vocab_size=len(VOCAB)).save_pretrained(folder / "source")
    (folder / "source" / "vocab.txt").write_text("".join(piece + "\n" for piece in VOCAB))
    assert import_folder("bert", folder / "source", folder / "imported") == 0
    mrpc = folder / "mrpc.tsv"  # the header and 8 pairs
    mrpc.write_text("\n".join((shared_data / "tasks" / "glue_mrpc" / "dev.tsv").read_text(
        encoding="utf-8-sig").splitlines()[:9]) + "\n")
    printed = command(train.main, [
        "--mode", "finetune", "--task", "glue_mrpc", "--model_dir", str(folder / "tuned"),
        "--gin_file", str(folder / "imported" / checkpoints.GIN_NAME),
        "--gin_file", "bert/finetune_classification.gin",
        "--task_files", f"glue_mrpc:train={mrpc}", "--task_files", f"glue_mrpc:validation={mrpc}"],
        [f"TrainConfig.init_checkpoint = '{folder / 'imported'}'",
         "DataConfig.inputs_length = 32", "TrainConfig.tokens_per_batch = 128",
         "TrainConfig.train_steps = 1", "TrainConfig.save_checkpoints_steps = 1",
         "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"])
    return folder / "imported", folder / "tuned", printed


def test_berts_vocab_txt_comes_along_and_fine_tunes_without_a_vocabulary_flag(bert_mrpc):
    """A BERT folder's vocab.txt (BertTokenizer's: our WordPiece vocabulary) becomes the
    import's DataConfig.vocabulary, copied beside the checkpoint, so that fine-tuning from the
    imported gin file needs no vocabulary given (as T5's spiece.model)."""
    imported, tuned, printed = bert_mrpc
    copy = (imported / "vocab.txt").resolve()
    assert copy.read_text() == "".join(piece + "\n" for piece in VOCAB)
    assert f"DataConfig.vocabulary = '{copy}'" in (imported / checkpoints.GIN_NAME).read_text()
    assert json.loads(printed)["glue_mrpc/validation"]["step"] == 1
    assert str(copy) in (tuned / checkpoints.GIN_NAME).read_text()


def test_a_classifier_exports_its_tasks_labels_and_a_card_whose_snippet_runs(
        bert_mrpc, tmp_path, monkeypatch, clean_gin):
    """MRPC's classifier: config.json's id2label/label2id are the task's names (transformers'
    pipeline answers with them); README.md tells the run, the task, the labels and the scores
    its evaluation recorded for the checkpoint; its Python, run from where the export was made,
    prints one of the labels."""
    _, tuned, printed = bert_mrpc
    monkeypatch.chdir(tmp_path)
    assert run_convert("export", "--family", "bert", "--format", "hf", "--model_dir", tuned,
                       "--export_dir", "hf/bert_mrpc") == 0
    exported = tmp_path / "hf" / "bert_mrpc"
    config = transformers.AutoConfig.from_pretrained(str(exported))
    assert config.id2label == dict(enumerate(MRPC_LABELS))
    assert config.label2id == {name: i for i, name in enumerate(MRPC_LABELS)}
    classify = transformers.pipeline("text-classification", model=str(exported))
    assert classify({"text": "The cat sat.", "text_pair": "A cat sat."})["label"] in MRPC_LABELS

    card = (exported / "README.md").read_text()
    scores = json.loads(printed)["glue_mrpc/validation"]["scores"]
    for line in ("| family | bert (`ModelConfig.architecture = 'bert'`) |",
                 "| model | `BertForSequenceClassification` |",
                 "| size | d_model 16, d_ff 32, 2 layers, 2 heads of 8 |",
                 f"| steps | 1 (`{tuned / 'model.ckpt-1'}`) |",
                 f"| source checkpoint | `{tuned.parent / 'imported'}` "
                 f"(TrainConfig.init_checkpoint) |",
                 "| task | `glue_mrpc` |", "| labels | 0 `not_equivalent`, 1 `equivalent` |",
                 f"- `glue_mrpc/validation`: f1 {scores['f1']:.2f}, accuracy "
                 f"{scores['accuracy']:.2f}", "folder = 'hf/bert_mrpc'"):
        assert line in card, line
    assert run_card_snippet(exported, tmp_path).strip() in MRPC_LABELS


def test_a_card_without_a_recorded_evaluation_says_so_and_its_snippet_runs(bert_mrpc, tmp_path,
                                                                          clean_gin):
    """The import itself (no training, no evaluation): BertForPreTraining's card says where the
    weights came from and that no evaluation was recorded; its masked-LM snippet runs."""
    imported, _, _ = bert_mrpc
    assert run_convert("export", "--family", "bert", "--format", "hf", "--model_dir", imported,
                       "--export_dir", tmp_path / "out") == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"| source checkpoint | imported from {imported.parent / 'source'} |" in card
    assert "| task | none recorded |" in card and "No evaluation of this checkpoint" in card
    assert run_card_snippet(tmp_path / "out", tmp_path).strip()  # the masked piece


def test_gpt1s_multiple_choice_card_scores_as_our_head(tmp_path, shared_data, clean_gin):
    """GPT-1 fine-tuned for multiple choice over our SentencePiece vocabulary: the card's
    snippet loads T5TokenizerFast, builds each choice's `<extra_id_0> context <extra_id_1>
    choice <extra_id_2>` and scores them at the extract token: the scores our head gives the
    same COPA example in our fine-tuning's layout (model/families/gpt1/inputs.py)."""
    from model.families.gpt1 import hf as gpt1_hf
    from model.families.gpt1 import inputs as gpt1_inputs
    from model.tasks import discriminative
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / checkpoints.GIN_NAME).write_text(
        "ModelConfig.architecture = 'gpt1'\nModelConfig.d_model = 16\nModelConfig.d_ff = 64\n"
        "ModelConfig.num_heads = 2\nModelConfig.d_kv = 8\nModelConfig.num_layers = 2\n"
        "GPT1Config.max_positions = 32\nGPT1Config.head = 'multiple_choice'\n"
        "GPT1Config.num_classes = 2\nGPT1Config.sequences_per_example = 2\n"
        f"DataConfig.vocabulary = '{vocabulary.path}'\n")
    gin.clear_config()
    runs.parse_gin([str(tuned / checkpoints.GIN_NAME)], [])
    conv, model_config = conversion("gpt1"), ModelConfig()
    rng = np.random.RandomState(5)  # every weight random: each one matters
    values = {name: (rng.normal(0.0, 0.5, shape) + name.endswith("/g")).astype(np.float32)
              for name, shape in checkpoints.model_shapes(conv, model_config,
                                                          vocabulary.vocab_size).items()}
    checkpoints.write_checkpoint(conv, model_config, vocabulary.vocab_size, values, str(tuned))
    premise, question = gpt1_hf.COPA_CONTEXT.rsplit(" ", 1)
    example = discriminative.view("super_glue_copa").convert(
        {"premise": premise, "question": question, "choice1": gpt1_hf.COPA_CHOICES[0],
         "choice2": gpt1_hf.COPA_CHOICES[1], "label": 0})
    features = gpt1_inputs.head_features([example], discriminative.view("super_glue_copa"),
                                         vocabulary, 32)
    ours = checkpoints.checkpoint_outputs(conv, model_config, str(tuned),
                                          {"head_tokens": features["head_tokens"]},
                                          vocabulary=vocabulary)["mc_logits"][0]

    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir", tuned,
                       "--checkpoint", "model.ckpt-0", "--export_dir", tmp_path / "out") == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "<extra_id_0> context <extra_id_1> choice <extra_id_2>" in card
    assert "T5TokenizerFast" in card
    printed = run_card_snippet(tmp_path / "out", tmp_path).splitlines()
    np.testing.assert_allclose(json.loads(printed[0]), ours, rtol=0, atol=1e-5)
    assert printed[1] == gpt1_hf.COPA_CHOICES[int(np.argmax(ours))]
