"""mT5 in and out: a checkpoint of the t5 library's mT5 (T5.1.1's layout, gated GELU, untied
logits, bfloat16 as released) imports with `--format t5` and exports to transformers'
MT5ForConditionalGeneration with its tokenizer.

The source: a tiny random mT5-shaped model, the variables of mtf's own T5.1.1
(tests/support/t5_reference.py) over the test vocabulary (1,100 ids: its 1,152 embedding rows a
multiple of 128, as mT5's 250,112), trained with Adafactor factoring from dimension 32 (as the
issue's checkpoint: its slots are `_slot_vr`/`_slot_vc` where mtf's default keeps `_slot_v`),
with that SentencePiece model beside the checkpoint as `spiece.model`. The reference:
MT5ForConditionalGeneration reading the same files with transformers' own converter. Our
logits within 1e-5 of its largest logit, again after the export, and again for the import
fine-tuned a few steps; the source's factoring bound in the imported model's gin file, its
slots kept and restored by the fine-tuning.
"""
import json
import pathlib
import shutil
from typing import NamedTuple

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model.convert import checkpoints
from model.data.vocabulary import EOS_ID, Vocabulary
from model.families.t5 import hf
from model.trainer import adafactor_slots, runs
from model.trainer.model_config import ModelConfig
from tests.support.checkpoint_logits import TEXTS
from tests.support.convert import (OUR_INPUTS, assert_close, import_folder, our_logits,
                                   run_convert, transformers_logits)
from tests.support.t5_library import (STEP, failed_import, import_source, reference_model,
                                      write_source)
from tests.support.t5_reference import reference_variables
from tests.support.trained_vocab import trained_vocabulary
from tests.support.training import synthetic_examples

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

SIZES = dict(d_model=32, d_ff=64, num_heads=2, d_kv=8, num_layers=2)
T5_1_1_LAYOUT = {"legacy_norms": False, "activation": ["gelu", "linear"], "tied": False}
MT5 = "ModelConfig.hf_model_type = 'mt5'"


class Imported(NamedTuple):
    folder: pathlib.Path  # source/ (the t5 library's checkpoint) and ours/ (the import)
    vocabulary: Vocabulary
    expected: dict  # the reference's logits
    variables: dict  # the source's: name -> (shape, dtype)


@pytest.fixture(scope="module")
def imported(tmp_path_factory, shared_data):
    vocabulary = trained_vocabulary(shared_data)
    folder = tmp_path_factory.mktemp("mt5")
    config = ModelConfig(feed_forward_proj="gated-gelu", tie_word_embeddings=False, **SIZES)
    variables = reference_variables(config, vocabulary.vocab_size, min_dim_size_to_factor=32,
                                    **T5_1_1_LAYOUT)
    write_source(folder / "source" / f"model.ckpt-{STEP}", variables, tf.bfloat16)
    shutil.copyfile(vocabulary.path, folder / "source" / "spiece.model")
    rows = hf.embedding_rows(vocabulary.vocab_size)
    reference = reference_model(folder / "source", SIZES, rows, gated=True,
                                model_class=transformers.MT5ForConditionalGeneration)
    assert import_source(folder / "source", folder / "ours", MT5) == 0
    return Imported(folder, vocabulary, transformers_logits("t5", reference), variables)


def export(model_dir, output) -> dict:
    """`export --format hf` of `model_dir`'s newest checkpoint; the written config.json."""
    assert run_convert("export", "--family", "t5", "--format", "hf", "--model_dir", model_dir,
                       "--export_dir", output) == 0
    return json.loads((output / "config.json").read_text())


def test_import_gives_the_mt5_references_logits_and_records_mt5(imported):
    folder, vocabulary, expected = imported.folder, imported.vocabulary, imported.expected
    assert_close(our_logits("t5", folder / "ours"), expected)
    text = (folder / "ours" / checkpoints.GIN_NAME).read_text()
    assert MT5 in text
    assert "ModelConfig.feed_forward_proj = 'gated-gelu'" in text
    assert "ModelConfig.tie_word_embeddings = False" in text
    assert tf.train.load_variable(str(folder / "ours"), "shared/embedding").shape == (
        hf.embedding_rows(vocabulary.vocab_size), SIZES["d_model"])


@pytest.fixture(scope="module")
def exported(imported):
    """The imported model's `export --format hf` folder."""
    export(imported.folder / "ours", imported.folder / "exported")
    return imported.folder / "exported"


def test_export_is_an_mt5_folder_with_the_tokenizer_of_our_vocabulary(imported, exported):
    vocabulary, expected = imported.vocabulary, imported.expected
    config = json.loads((exported / "config.json").read_text())
    assert config["model_type"] == "mt5"
    assert config["architectures"] == ["MT5ForConditionalGeneration"]
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(exported))
    assert type(model) is transformers.MT5ForConditionalGeneration
    assert_close(transformers_logits("t5", model.eval()), expected)

    tokenizer_config = json.loads((exported / "tokenizer_config.json").read_text())
    assert tokenizer_config["tokenizer_class"] == "MT5Tokenizer"
    assert (exported / "spiece.model").read_bytes() == vocabulary.path.read_bytes()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(exported))
    for text in TEXTS:
        assert tokenizer(text).input_ids == vocabulary.encode(text) + [EOS_ID]
    assert tokenizer.convert_tokens_to_ids("<extra_id_0>") == vocabulary.vocab_size - 1


def test_an_mt5_transformers_folder_imports_as_mt5(imported, exported, tmp_path):
    """`--format hf` of a folder like google/mt5-*'s: config.json's model_type is recorded."""
    assert import_folder("t5", exported, tmp_path / "ours") == 0
    assert MT5 in (tmp_path / "ours" / checkpoints.GIN_NAME).read_text()
    assert_close(our_logits("t5", tmp_path / "ours"), imported.expected)


def test_fine_tuned_import_exports_its_logits_as_mt5(imported, tmp_path):
    """`TrainConfig.init_checkpoint = DIR` continues from the source's step and its Adafactor
    statistics, factored as the source's; the run's operative config records mT5, so its
    export is MT5ForConditionalGeneration again."""
    folder, vocabulary, expected = imported.folder, imported.vocabulary, imported.expected
    gin.clear_config()
    runs.parse_gin(["finetune.gin", str(folder / "ours" / checkpoints.GIN_NAME)], [
        f"TrainConfig.init_checkpoint = '{folder / 'ours'}'", "ModelConfig.dropout_rate = 0.0",
        "TrainConfig.tokens_per_batch = 96", "TrainConfig.intra_op_threads = 1",
        "TrainConfig.inter_op_threads = 1", "lr.constant.value = 0.01"])
    with gin.config_scope("finetune"):
        run = families.configured_run(str(tmp_path / "tuned"))
    assert runs.train(run, synthetic_examples(), vocabulary.vocab_size, max_steps=2) == STEP + 2
    # Restored, not fresh: at step 1000 Adafactor's decay keeps 99.6% of the statistics (fresh
    # ones would hold 0.4% of a batch's squared gradients).
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path / "tuned"), "shared/embedding_slot_vr"),
        tf.train.load_variable(str(folder / "source"), "shared/embedding_slot_vr").astype(
            np.float32), rtol=0.05)
    tuned = checkpoints.checkpoint_outputs(hf.conversion(run.family), run.model_config,
                                           str(tmp_path / "tuned"), OUR_INPUTS["t5"])
    assert np.abs(tuned["logits"] - expected["logits"]).max() > 1e-3  # it trained

    config = export(tmp_path / "tuned", tmp_path / "exported")
    assert config["model_type"] == "mt5"
    model = transformers.MT5ForConditionalGeneration.from_pretrained(str(tmp_path / "exported"))
    assert_close(transformers_logits("t5", model.eval()), tuned)


# --- Adafactor's factoring, read from the source's slots ------------------------------------
# At d_model 32, factoring from 32 factors the embedding, the logits and the feed-forward
# kernels (second-largest dimension 32) and keeps the attention kernels ([32, 16]) whole: the
# source's slots say 17 to 32, which mtf's default 128 is not.
SETTING = "AdafactorOptimizer.min_dim_size_to_factor"


def test_the_sources_factoring_is_bound_and_its_slots_kept(imported):
    folder, variables = imported.folder, imported.variables
    assert {"shared/embedding_slot_vr", "shared/embedding_slot_vc",
            "encoder/block_000/layer_000/SelfAttention/q_slot_v"} <= set(variables)
    text = (folder / "ours" / checkpoints.GIN_NAME).read_text()
    assert f"\n{SETTING} = 32\n" in text
    assert f"# {SETTING}: read from the source's Adafactor slots (it was written with 17 to " \
           f"32; mtf's default 128 would factor others)." in text
    ours = tf.train.load_checkpoint(str(folder / "ours"))
    assert len(ours.get_variable_to_shape_map()) == len(variables)
    np.testing.assert_array_equal(
        ours.get_tensor("shared/embedding_slot_vr"),
        tf.train.load_variable(str(folder / "source"), "shared/embedding_slot_vr").astype(
            np.float32))


def test_a_gin_factoring_is_kept_where_the_slots_allow_it_and_else_named(imported, tmp_path,
                                                                         capsys):
    folder, variables = imported.folder, imported.variables
    error = failed_import(capsys, tmp_path, folder / "source", f"{SETTING} = 128")
    assert f"{SETTING}: gin says 128, the checkpoint's Adafactor slots were written with 17 to " \
           f"32" in error
    stored = {name: (tuple(shape), dtype.name) for name, (shape, dtype) in variables.items()}
    for value in (17, 20, 32):  # recorded, for fine-tuning to make the same slots
        gin.bind_parameter(SETTING, value)
        assert adafactor_slots.source_binding(stored) == {SETTING: value}


def test_slots_that_no_factoring_explains_are_refused(imported, tmp_path, capsys):
    """The feed-forward kernel [32, 64] kept whole, the embedding [1152, 32] factored: no
    single min_dim_size_to_factor does both."""
    variables = imported.variables
    kernel = "encoder/block_000/layer_001/DenseReluDense/wi_0/kernel"
    garbled = {name: spec for name, spec in variables.items()
               if name not in (f"{kernel}_slot_vr", f"{kernel}_slot_vc")}
    garbled[f"{kernel}_slot_v"] = variables[kernel]
    write_source(tmp_path / "garbled" / "model.ckpt-1", garbled, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "garbled")
    assert f"no value of {SETTING} gives the checkpoint's Adafactor slots" in error
    assert f"is factored (_slot_vr, _slot_vc: {SETTING} <= 32) but {kernel} [32, 64] is not " \
           f"(_slot_v: {SETTING} > 32)" in error
