"""Checkpoints in the t5 library's layout (format `t5`, model/families/t5/mesh_tf.py) for the
import tests (tests/model/test_t5_checkpoints.py, tests/model/test_mt5_checkpoints.py): random
values under the variables of mtf's own T5 (tests/support/t5_reference.py), the reference
transformers model that reads the same files with its own converter, and the import command."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.support.convert import run_convert

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

STEP = 1000  # the sources' global step


def write_source(path, variables: dict, dtype, seed: int = 0) -> None:
    """Random values under the given names: weights around 0 (norm scales around 1), slots
    positive, the global step STEP; floating point ones stored as `dtype`."""
    rng = np.random.RandomState(seed)
    with tf.Graph().as_default():
        written = []
        for name, (shape, variable_dtype) in sorted(variables.items()):
            if name == tf.GraphKeys.GLOBAL_STEP:
                written.append(tf.Variable(np.int64(STEP), name=name))
                continue
            if "_slot_" in name:
                value = rng.uniform(0.1, 1.0, shape)
            else:
                value = rng.normal(0.0, 0.3, shape) + name.endswith("norm/scale")
            written.append(tf.Variable(tf.cast(tf.constant(value, tf.float32), dtype), name=name))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(written).save(session, str(path))


def reference_model(path, sizes: dict, rows: int, gated: bool,
                    model_class=transformers.T5ForConditionalGeneration):
    """`model_class` (T5's or mT5's) of the source's sizes (ModelConfig's d_model, d_ff,
    num_heads, d_kv, num_layers) over `rows` embedding rows, T5.1.1's gated GELU and untied
    logits if `gated`, loaded by transformers' own converter (every parameter set to NaN first,
    and none left so)."""
    from transformers.models.t5.modeling_t5 import load_tf_weights_in_t5
    config = model_class.config_class(
        vocab_size=rows, num_decoder_layers=sizes["num_layers"], dropout_rate=0.0,
        feed_forward_proj="gated-gelu" if gated else "relu", tie_word_embeddings=not gated,
        decoder_start_token_id=0, **sizes)
    model = model_class(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    load_tf_weights_in_t5(model, config, str(path))
    model.tie_weights()
    assert not any(torch.isnan(p).any() for p in model.parameters())
    return model.eval()


def import_source(source, model_dir, *gin_params):
    """`python -m model import --family t5 --format t5` in process (its exit status)."""
    argv = ["import", "--family", "t5", "--format", "t5", "--source", source, "--model_dir",
            model_dir]
    for binding in gin_params:
        argv += ["--gin_param", binding]
    return run_convert(*argv)


def failed_import(capsys, tmp_path, source, *gin_params) -> str:
    """The error of an import that must fail and write nothing."""
    assert import_source(source, tmp_path / "target", *gin_params) == 2
    assert not (tmp_path / "target").exists() or not any((tmp_path / "target").iterdir())
    return capsys.readouterr().err
