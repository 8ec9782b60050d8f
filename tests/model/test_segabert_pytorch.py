"""SegaBERT from the authors' released PyTorch checkpoints: format `pytorch`
(model/families/segabert/pytorch.py).

The authors' code (rsvp-ai/segatron_aaai, modeling_segabert.py) is not installed, so the source is
a random state dict in its layout (their names, the fused query_key_value, the three index
tables, the unused position table and NSP layer), saved with torch.save as pytorch_model.bin
beside their config.json and a vocab.txt. The reference computation is their forward pass: the
embedding sum word + token type + token-in-sentence + sentence-in-paragraph +
paragraph-in-document tables (BertEmbeddings.forward with all three indices) computed here in
torch and given as `inputs_embeds` to transformers' BertForMaskedLM holding the rest of their
weights (query, key and value split from the fused Linear, the position table zero): their
encoder and MLM head are BERT's. Our SegaBERT's MLM logits on the imported checkpoint must equal
it within 1e-5 of the largest logit.
"""
import json
import pathlib
import shutil

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import convert_command as convert
from model.convert import checkpoints
from model.trainer import runs
from model.trainer.model_config import ModelConfig
from tests.support.convert import VOCAB, assert_close, run_card_snippet, run_convert

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

HIDDEN, LAYERS, FF = 16, 2, 32
TABLES = {"token_position_embeddings": 64, "sent_position_embeddings": 16,
          "para_position_embeddings": 8}
# [CLS] A [SEP] B [SEP] in Google's ids (SegaBERT uses BERT's uncased vocabulary), padded.
TOKENS = np.array([[101, 104, 106, 108, 102, 105, 107, 109, 113, 102, 0, 0],
                   [101, 116, 117, 102, 104, 118, 119, 110, 114, 115, 111, 102]])
TYPES = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0],
                  [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]])
TOKEN_INDEX = np.array([[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 0],
                        [0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 4]])
SENTENCE_INDEX = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                           [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]])
PARAGRAPH_INDEX = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0],
                            [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]])
INPUTS = {"tokens": TOKENS, "token_types": TYPES, "token_index": TOKEN_INDEX,
          "sentence_index": SENTENCE_INDEX, "paragraph_index": PARAGRAPH_INDEX}


def authors_config():
    return {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": HIDDEN,
            "initializer_range": 0.02, "intermediate_size": FF, "max_position_embeddings": 32,
            "max_token_position_embeddings": TABLES["token_position_embeddings"],
            "max_sent_position_embeddings": TABLES["sent_position_embeddings"],
            "max_para_position_embeddings": TABLES["para_position_embeddings"],
            "num_attention_heads": 2, "num_hidden_layers": LAYERS, "type_vocab_size": 2,
            "vocab_size": len(VOCAB)}


def authors_state(seed=0):
    """A random state dict of their SegaBERT (their Megatron BertForPreTraining's names):
    gains around 1, everything else around 0."""
    generator = torch.Generator().manual_seed(seed)
    shapes = {"bert.embeddings.word_embeddings.weight": [len(VOCAB), HIDDEN],
              "bert.embeddings.position_embeddings.weight": [32, HIDDEN],
              "bert.embeddings.token_type_embeddings.weight": [2, HIDDEN],
              **{f"bert.embeddings.{name}.weight": [rows, HIDDEN]
                 for name, rows in TABLES.items()},
              "bert.embeddings.LayerNorm.weight": [HIDDEN],
              "bert.embeddings.LayerNorm.bias": [HIDDEN],
              "bert.pooler.dense.weight": [HIDDEN, HIDDEN], "bert.pooler.dense.bias": [HIDDEN],
              "cls.predictions.transform.dense.weight": [HIDDEN, HIDDEN],
              "cls.predictions.transform.dense.bias": [HIDDEN],
              "cls.predictions.transform.LayerNorm.weight": [HIDDEN],
              "cls.predictions.transform.LayerNorm.bias": [HIDDEN],
              "cls.predictions.bias": [len(VOCAB)],
              "cls.seq_relationship.weight": [2, HIDDEN], "cls.seq_relationship.bias": [2]}
    for layer in range(LAYERS):
        prefix = f"bert.encoder.layer.{layer}"
        shapes.update({
            f"{prefix}.attention.self.query_key_value.weight": [3 * HIDDEN, HIDDEN],
            f"{prefix}.attention.self.query_key_value.bias": [3 * HIDDEN],
            f"{prefix}.attention.output.dense.weight": [HIDDEN, HIDDEN],
            f"{prefix}.attention.output.dense.bias": [HIDDEN],
            f"{prefix}.attention.output.LayerNorm.weight": [HIDDEN],
            f"{prefix}.attention.output.LayerNorm.bias": [HIDDEN],
            f"{prefix}.intermediate.dense.weight": [FF, HIDDEN],
            f"{prefix}.intermediate.dense.bias": [FF],
            f"{prefix}.output.dense.weight": [HIDDEN, FF], f"{prefix}.output.dense.bias": [HIDDEN],
            f"{prefix}.output.LayerNorm.weight": [HIDDEN],
            f"{prefix}.output.LayerNorm.bias": [HIDDEN]})
    return {name: torch.randn(shape, generator=generator) * 0.3
            + (1.0 if name.endswith("LayerNorm.weight") else 0.0)
            for name, shape in shapes.items()}


def reference_logits(state):
    """Their forward pass (the module's docstring): [batch, length, vocab] MLM logits."""
    config = transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=2, intermediate_size=FF, max_position_embeddings=32,
        hidden_act="gelu")
    model = transformers.BertForMaskedLM(config).eval()
    bert_state = {name: value for name, value in state.items()
                  if not name.startswith(("cls.seq_relationship", "bert.pooler"))
                  and not any(table in name for table in TABLES)}
    for layer in range(LAYERS):
        prefix = f"bert.encoder.layer.{layer}.attention.self"
        for kind in ("weight", "bias"):
            fused = bert_state.pop(f"{prefix}.query_key_value.{kind}")
            for name, part in zip(("query", "key", "value"), fused.split(HIDDEN)):
                bert_state[f"{prefix}.{name}.{kind}"] = part
    bert_state["bert.embeddings.position_embeddings.weight"] = torch.zeros(32, HIDDEN)
    bert_state["cls.predictions.decoder.weight"] = \
        state["bert.embeddings.word_embeddings.weight"]
    bert_state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    missing, unexpected = model.load_state_dict(bert_state, strict=False)
    assert not unexpected and set(missing) <= {"bert.embeddings.position_ids"}, (missing,
                                                                               unexpected)
    embeddings = state["bert.embeddings.word_embeddings.weight"][torch.tensor(TOKENS)]
    for table, index in (("token_position_embeddings", TOKEN_INDEX),
                         ("sent_position_embeddings", SENTENCE_INDEX),
                         ("para_position_embeddings", PARAGRAPH_INDEX)):
        embeddings = embeddings + state[f"bert.embeddings.{table}.weight"][torch.tensor(index)]
    with torch.no_grad():
        out = model(inputs_embeds=embeddings, token_type_ids=torch.tensor(TYPES),
                    attention_mask=torch.tensor(TOKENS > 0, dtype=torch.long))
    return out.logits.numpy()


def write_folder(folder: pathlib.Path, state, config=None):
    folder.mkdir(parents=True)
    torch.save(state, folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(config or authors_config(), indent=2))
    (folder / "vocab.txt").write_text("".join(piece + "\n" for piece in VOCAB))
    return folder


@pytest.fixture(scope="module")
def state():
    return authors_state()


@pytest.fixture(scope="module")
def source(state, tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("segabert") / "segabert-uncased-base", state)


def import_authors(source, model_dir, *argv):
    return run_convert("import", "--family", "segabert", "--format", "pytorch", "--source",
                       source, "--model_dir", model_dir, *argv)


def test_imported_logits_equal_the_authors_forward_pass(state, source, tmp_path):
    expected = {"mlm_logits": reference_logits(state)}
    assert import_authors(source, tmp_path / "ours") == 0
    gin_file = tmp_path / "ours" / checkpoints.GIN_NAME
    text = gin_file.read_text()
    for line in ("ModelConfig.architecture = 'segabert'", "BertConfig.head = 'mlm'",
                 "BertConfig.hidden_act = 'gelu'", "StructureLimits.tokens_per_sentence = 64",
                 "StructureLimits.sentences_per_paragraph = 16",
                 "StructureLimits.paragraphs_per_document = 8",
                 "# Left out of the authors' checkpoint: ['bert.embeddings.position_embeddings."
                 "weight', 'cls.seq_relationship.weight', 'cls.seq_relationship.bias']"):
        assert line in text, line
    gin.clear_config()
    runs.parse_gin([str(gin_file)], [])
    conv = convert.resolve("segabert", "pytorch", "import").conversion()
    ours = checkpoints.checkpoint_outputs(conv, ModelConfig(), str(tmp_path / "ours"), INPUTS)
    assert_close(ours, expected)
    # The tables matter: without the paragraph table's rows the reference moves far.
    moved = dict(state, **{"bert.embeddings.para_position_embeddings.weight":
                           torch.zeros(TABLES["para_position_embeddings"], HIDDEN)})
    assert np.abs(reference_logits(moved) - expected["mlm_logits"]).max() > \
        1000 * 1e-5 * np.abs(expected["mlm_logits"]).max()


# --- Bad sources: a clear message, nothing written ------------------------------------------

def failed_import(capsys, source, tmp_path, *argv) -> str:
    target = tmp_path / "target"
    assert import_authors(source, target, *argv) == 2
    assert not target.exists() or not any(target.iterdir())
    return capsys.readouterr().err


@pytest.mark.parametrize("left_out,message", [
    ("config.json", "lacks ['config.json']"), ("vocab.txt", "lacks ['vocab.txt']"),
    ("pytorch_model.bin", "no weights in")])
def test_a_missing_file_is_named(source, tmp_path, capsys, left_out, message):
    copy = tmp_path / "copy"
    shutil.copytree(source, copy)
    (copy / left_out).unlink()
    assert message in failed_import(capsys, copy, tmp_path)


def test_a_bert_folder_is_no_segabert(tmp_path, capsys):
    """A BERT without the index tables (transformers' save_pretrained folder)."""
    model = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=FF))
    model.save_pretrained(tmp_path / "bert")
    (tmp_path / "bert" / "vocab.txt").write_text("".join(p + "\n" for p in VOCAB))
    error = failed_import(capsys, tmp_path / "bert", tmp_path)
    assert "names no structure tables" in error and "--family bert --format hf" in error


def test_a_config_field_that_disagrees_with_gin_names_both_values(source, tmp_path, capsys):
    error = failed_import(capsys, source, tmp_path, "--gin_param",
                          "StructureLimits.paragraphs_per_document = 50")
    assert "StructureLimits.paragraphs_per_document: gin says 50, the source's config 8" in error


def test_missing_and_wrong_shape_tensors_are_listed(state, tmp_path, capsys):
    bad = dict(state)
    del bad["bert.encoder.layer.1.output.dense.bias"]
    bad["bert.embeddings.sent_position_embeddings.weight"] = torch.zeros(8, HIDDEN)
    error = failed_import(capsys, write_folder(tmp_path / "bad", bad), tmp_path)
    assert "bert.embeddings.sent_position_embeddings.weight: source [8, 16], ours [16, 16]" \
        in error
    assert ("bert/encoder/block_001/feedforward/output/bias (the source's "
            "bert.encoder.layer.1.output.dense.bias)") in error


def test_a_head_other_than_masked_lm_is_refused(source, tmp_path, capsys):
    error = failed_import(capsys, source, tmp_path, "--gin_param",
                          "BertConfig.head = 'classification'")
    assert "import with BertConfig.head = 'mlm' (gin binds 'classification'" in error


# --- Export: the authors' layout, which the import reads back ----------------------------------

def test_export_writes_the_authors_folder_that_imports_back_bit_for_bit(state, source, tmp_path):
    """`export --format pytorch` of an imported checkpoint: their config.json, pytorch_model.bin
    (their names, the fused query_key_value, the three tables; not the position table and NSP
    layer SegaBERT does not read) and vocab.txt; the authors' forward pass on it gives our
    logits, and its import holds the same variables, bit for bit."""
    assert import_authors(source, tmp_path / "ours") == 0
    assert run_convert("export", "--family", "segabert", "--format", "pytorch", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    exported = tmp_path / "exported"
    written = torch.load(exported / "pytorch_model.bin", weights_only=True)
    kept = {name: value for name, value in state.items() if name not in (
        "bert.embeddings.position_embeddings.weight", "cls.seq_relationship.weight",
        "cls.seq_relationship.bias")}
    assert set(written) == set(kept) | {"cls.predictions.decoder.weight"}
    for name, value in kept.items():
        assert torch.equal(written[name], value), name
    config = json.loads((exported / "config.json").read_text())
    for field, value in authors_config().items():
        if field != "max_position_embeddings":  # the table SegaBERT does not read
            assert config[field] == value, field
    assert (exported / "vocab.txt").read_text() == (source / "vocab.txt").read_text()
    assert_close({"mlm_logits": reference_logits(written)},
                 {"mlm_logits": reference_logits(state)})

    # The model card's Python reads the folder (their modeling code is not in transformers).
    printed = run_card_snippet(exported, tmp_path)
    assert "'bert.embeddings.para_position_embeddings.weight': (8, 16)" in printed
    assert "| model | `BertForMaskedLM` |" in (exported / "README.md").read_text()

    assert import_authors(exported, tmp_path / "again") == 0
    before = tf.train.load_checkpoint(str(tmp_path / "ours"))
    after = tf.train.load_checkpoint(str(tmp_path / "again"))
    names = before.get_variable_to_shape_map()
    assert set(after.get_variable_to_shape_map()) == set(names)
    for name in names:
        np.testing.assert_array_equal(after.get_tensor(name), before.get_tensor(name), name)


def test_export_refuses_a_fine_tuned_head(source, tmp_path, capsys):
    """The authors' layout is their masked-LM model: a classifier has no place in it."""
    assert import_authors(source, tmp_path / "ours") == 0
    assert run_convert("export", "--family", "segabert", "--format", "pytorch", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "out", "--gin_param",
                       "BertConfig.head = 'classification'") == 2
    assert "export with BertConfig.head = 'mlm' (gin binds 'classification'" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()
