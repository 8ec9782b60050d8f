"""Format `t5` (model/families/t5/mesh_tf.py): checkpoints of the t5 library's Mesh TF code.

Each source checkpoint is written with the variables (names, shapes: weights, Adafactor's slots,
the global step) of mtf's own transformer as T5's gin configs build it
(tests/support/t5_reference.py `t5_reference_model`, trained with mtf's Adafactor), in the three
layouts T5's checkpoints come in: T5.1.0 (legacy `layer_norm`/`final_layer_norm` names, ReLU,
tied logits), today's `rms_norm` names (mtf's current layer stack), and T5.1.1 (gated GELU,
untied logits, `rms_norm`), with float32 or bfloat16 values (the released checkpoints' slices
are bfloat16). The reference: transformers' T5ForConditionalGeneration reading the same source
with its own converter, `load_tf_weights_in_t5`. Imported, our decoder logits must equal its
within 1e-5 of the largest logit, the step and the optimizer's slots must be kept (T5 continues
training from them); exported to transformers, the logits must be equal again.
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model.convert import checkpoints
from tests.support import t5_library
from tests.support.convert import (CLASSES, assert_close, our_logits, run_convert,
                                   transformers_logits)
from tests.support.t5_library import STEP, failed_import, import_source, write_source
from tests.support.t5_reference import VOCAB_SIZE, reference_variables

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

SIZES = dict(d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=2)
ROWS = 128 * -(-VOCAB_SIZE // 128)  # mtf pads the vocabulary to a multiple of 128
LAYOUTS = {"t5.1.0": {},
           "rms_norm": {"legacy_norms": False},
           "t5.1.1": {"legacy_norms": False, "activation": ["gelu", "linear"], "tied": False}}


def layout_variables(layout: str) -> dict:
    from model.trainer.model_config import ModelConfig
    return reference_variables(ModelConfig(**SIZES), **LAYOUTS[layout])


def reference_model(layout: str, path) -> "transformers.T5ForConditionalGeneration":
    """transformers' T5 of the layout reading the source at `path`."""
    return t5_library.reference_model(path, SIZES, ROWS, gated="activation" in LAYOUTS[layout])


# T5.1.1's layout in bfloat16 is mT5's released one: tests/model/test_mt5_checkpoints.py imports it,
# and fine-tunes the import from its step.
@pytest.mark.parametrize("layout,dtype", [("t5.1.0", tf.float32), ("rms_norm", tf.bfloat16),
                                          ("t5.1.1", tf.float32)],
                         ids=["t5.1.0-float32", "rms_norm-bfloat16", "t5.1.1-float32"])
def test_round_trip_gives_the_references_logits_and_keeps_the_step(tmp_path, layout, dtype):
    variables = layout_variables(layout)
    assert any("/rms_norm/" in name for name in variables) == (layout != "t5.1.0")
    assert ("decoder/logits/kernel" in variables) == (layout == "t5.1.1")
    write_source(tmp_path / "source" / f"model.ckpt-{STEP}", variables, dtype)
    expected = transformers_logits("t5", reference_model(layout, tmp_path / "source"))
    assert import_source(tmp_path / "source", tmp_path / "ours") == 0
    assert_close(our_logits("t5", tmp_path / "ours"), expected)

    # Our names, float32, the step and every slot kept.
    source = tf.train.load_checkpoint(str(tmp_path / "source"))
    ours = tf.train.load_checkpoint(str(tmp_path / "ours"))
    assert ours.get_tensor(tf.GraphKeys.GLOBAL_STEP) == STEP
    stored = ours.get_variable_to_dtype_map()
    assert len(stored) == len(variables)
    assert {d for n, d in stored.items() if n != tf.GraphKeys.GLOBAL_STEP} == {tf.float32}
    norm = "rms_norm" if layout != "t5.1.0" else "final_layer_norm"
    for theirs, name in [(f"encoder/{norm}/scale_slot_v", "encoder/final_layer_norm/scale_slot_v"),
                         ("decoder/block_001/layer_000/SelfAttention/o_slot_v",
                          "decoder/block_001/layer_000/SelfAttention/o_slot_v")]:
        np.testing.assert_array_equal(ours.get_tensor(name),
                                      source.get_tensor(theirs).astype(np.float32))
    text = (tmp_path / "ours" / checkpoints.GIN_NAME).read_text()
    for line in (f"ModelConfig.tie_word_embeddings = {layout != 't5.1.1'}",
                 "ModelConfig.d_kv = 8", "ModelConfig.relative_attention_num_buckets = 32"):
        assert line in text

    assert run_convert("export", "--family", "t5", "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    exported = CLASSES["t5"].from_pretrained(str(tmp_path / "exported")).eval()
    assert_close(transformers_logits("t5", exported), expected)


# --- Bad sources: a clear message, nothing written ------------------------------------------

@pytest.fixture(scope="module")
def t5_1_0_variables():
    return layout_variables("t5.1.0")


def test_missing_unread_and_misshapen_variables_are_listed(tmp_path, capsys, t5_1_0_variables):
    lacking = dict(t5_1_0_variables)
    del lacking["decoder/block_001/layer_002/DenseReluDense/wo/kernel"]
    write_source(tmp_path / "bad" / "model.ckpt-1", lacking, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "bad")
    assert "lacks 1 variable(s) of this model:\n  decoder/block_001/layer_002/DenseReluDense/" \
           "wo/kernel" in error
    write_source(tmp_path / "extra" / "model.ckpt-1",
                 dict(t5_1_0_variables, **{"decoder/block_000/layer_002/adapter/kernel":
                                           ([16, 4], tf.float32)}), tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "extra")
    assert "holds 1 variable(s) that ours would drop:\n  decoder/block_000/layer_002/adapter/" \
           "kernel" in error
    misshapen = dict(t5_1_0_variables, **{
        "encoder/block_001/layer_001/DenseReluDense/wi/kernel": ([16, 40], tf.float32)})
    write_source(tmp_path / "misshapen" / "model.ckpt-1", misshapen, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "misshapen")
    assert "encoder/block_001/layer_001/DenseReluDense/wi/kernel: model ((16, 32), 'float32'), " \
           "checkpoint ((16, 40), 'float32')" in error


def test_slots_all_or_none(tmp_path, capsys, t5_1_0_variables):
    """A checkpoint of weights alone imports with zero slots; one missing some slots is
    refused."""
    weights = {n: v for n, v in t5_1_0_variables.items() if "_slot_" not in n}
    write_source(tmp_path / "weights" / "model.ckpt-7", weights, tf.float32)
    assert import_source(tmp_path / "weights", tmp_path / "ours") == 0
    ours = tf.train.load_checkpoint(str(tmp_path / "ours"))
    assert ours.get_tensor(tf.GraphKeys.GLOBAL_STEP) == STEP
    assert not ours.get_tensor("encoder/final_layer_norm/scale_slot_v").any()
    some = {n: v for n, v in t5_1_0_variables.items() if not n.startswith("decoder/") or
            "_slot_" not in n}
    write_source(tmp_path / "some" / "model.ckpt-7", some, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "some")
    assert "decoder/final_layer_norm/scale_slot_v" in error and "lacks" in error


def test_not_a_t5_checkpoint_and_disagreeing_gin_are_named(tmp_path, capsys, t5_1_0_variables):
    (tmp_path / "empty").mkdir()
    assert "no checkpoint at" in failed_import(capsys, tmp_path, tmp_path / "empty")
    write_source(tmp_path / "other" / "model.ckpt-1",
                 {"gpt1/token_embedding": ([90, 16], tf.float32)}, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "other")
    assert "has no shared/embedding: not a T5 encoder-decoder checkpoint" in error
    write_source(tmp_path / "t5" / "model.ckpt-1", t5_1_0_variables, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "t5", "ModelConfig.d_model = 32",
                          "ModelConfig.num_layers = 2")
    assert "ModelConfig.d_model: gin says 32, the source's config 16" in error
    assert "num_layers" not in error


def test_a_vocabulary_that_does_not_fill_the_embedding_is_refused(tmp_path, capsys,
                                                                  t5_1_0_variables, shared_data):
    """`DataConfig.vocabulary` (the release's SentencePiece model, given) against the
    embedding's rows, padded to 128 as ours."""
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    write_source(tmp_path / "t5" / "model.ckpt-1", t5_1_0_variables, tf.float32)
    error = failed_import(capsys, tmp_path, tmp_path / "t5",
                          f"DataConfig.vocabulary = '{vocabulary.path}'")
    rows = 128 * -(-vocabulary.vocab_size // 128)
    assert f"has {vocabulary.vocab_size} ids ({rows} embedding rows), the source's config " \
           f"{ROWS}" in error
