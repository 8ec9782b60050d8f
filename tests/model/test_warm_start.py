"""Warm start from a checkpoint in the naming of T5's released Mesh TF checkpoints.

The checkpoint is written with plain TensorFlow variables, named and shaped as mtf's own
`make_layer_stack` T5 model and mtf's Adafactor name them (weights, optimizer slots, global
step), holding random values; our trainer must load every one of them, continue the global step
and fail, naming them, on variables the checkpoint lacks."""
import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model.trainer import runs
from model.trainer.hooks import logged_losses
from model.trainer.warm_start import WarmStartError, restore_plan
from tests.support.t5_reference import VOCAB_SIZE, reference_variables
from tests.support.training import TINY_BINDINGS, synthetic_examples

# Each test binds gin for its run; none of it may leak into later test modules.
pytestmark = pytest.mark.usefixtures("clean_gin")

CHECKPOINT_STEP = 1000





def write_checkpoint(path, variables: dict, seed: int = 0) -> dict:
    """Random values under the given names; returns them."""
    rng = np.random.RandomState(seed)
    values = {}
    with tf.Graph().as_default():
        tf_variables = []
        for name, (shape, dtype) in sorted(variables.items()):
            if name == tf.GraphKeys.GLOBAL_STEP:
                value = np.int64(CHECKPOINT_STEP)
            else:
                value = rng.uniform(0.1, 1.0, size=shape).astype(dtype.as_numpy_dtype)
            values[name] = value
            tf_variables.append(tf.Variable(value, name=name))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(tf_variables).save(session, str(path))
    return values


def configure(model_dir, init_checkpoint, *extra) -> runs.Run:
    gin.clear_config()
    runs.parse_gin(["finetune.gin"], TINY_BINDINGS + [
        "ModelConfig.dropout_rate = 0.0", "TrainConfig.tokens_per_batch = 128",
        # Learning rate 0: Adafactor leaves the weights as they were loaded.
        "lr.constant.value = 0.0",
        f"TrainConfig.init_checkpoint = '{init_checkpoint}'", *extra])
    return families.configured_run(str(model_dir))


@pytest.fixture(scope="module")
def t5_checkpoint(tmp_path_factory):
    gin.clear_config()
    runs.parse_gin([], TINY_BINDINGS)
    config = families.configured_run("unused").model_config
    variables = reference_variables(config)
    path = tmp_path_factory.mktemp("t5") / "model.ckpt-1000"
    return path, variables, write_checkpoint(path, variables)


def test_t5_named_checkpoint_loads_and_the_step_continues(tmp_path, t5_checkpoint):
    path, variables, values = t5_checkpoint
    assert "encoder/block_000/layer_000/SelfAttention/q" in variables
    assert "decoder/block_000/layer_001/EncDecAttention/k_slot_v" in variables  # Adafactor
    run = configure(tmp_path, path)
    assert runs.train(run, synthetic_examples(), VOCAB_SIZE, max_steps=2) == CHECKPOINT_STEP + 2
    logged = [entry["step"] for entry in logged_losses(str(tmp_path))]
    assert logged == [CHECKPOINT_STEP + 1, CHECKPOINT_STEP + 2]
    trained = tf.train.latest_checkpoint(str(tmp_path))
    for name, value in values.items():
        if "_slot_" not in name and name != tf.GraphKeys.GLOBAL_STEP:
            np.testing.assert_allclose(tf.train.load_variable(trained, name), value, rtol=1e-6,
                                       err_msg=name)


def test_variables_missing_from_the_checkpoint_are_an_error(tmp_path, t5_checkpoint):
    _, variables, _ = t5_checkpoint
    lacking = {n: v for n, v in variables.items()
               if not n.startswith("decoder/block_001/layer_002/")}
    path = tmp_path / "partial" / "model.ckpt-1000"
    write_checkpoint(path, lacking)
    run = configure(tmp_path / "run", path)
    missing = "decoder/block_001/layer_002/DenseReluDense/wi/kernel"
    with pytest.raises(WarmStartError, match=missing):
        runs.train(run, synthetic_examples(), VOCAB_SIZE, max_steps=1)
    # Variables a run declares fresh (a new head, say) may be missing.
    run = configure(tmp_path / "fresh", path,
                    "TrainConfig.warm_start_fresh = ('decoder/block_001/layer_002/.*',)")
    assert runs.train(run, synthetic_examples(), VOCAB_SIZE, max_steps=1) == CHECKPOINT_STEP + 1


def test_restore_plan_checks_names_shapes_and_dtypes():
    model = {"a": ((2, 3), "float32"), "b": ((4,), "float32"), "head/w": ((4,), "float32")}
    checkpoint = {"a": ((2, 3), "float32"), "b": ((4,), "float32"), "unused": ((1,), "float32")}
    assert restore_plan(model, checkpoint, fresh=["head/.*"]) == {"a": "a", "b": "b"}
    with pytest.raises(WarmStartError, match=r"lacks 1 variable\(s\) of this model:\n  head/w"):
        restore_plan(model, checkpoint)
    with pytest.raises(WarmStartError, match="b: model .*float32.*checkpoint .*bfloat16"):
        restore_plan(model, dict(checkpoint, b=((4,), "bfloat16"), **{"head/w": ((4,), "float32")}))


def test_restore_plan_reads_a_variable_under_its_first_alias_the_checkpoint_has():
    model = {"enc/layer_norm/scale": ((4,), "float32"), "enc/final_layer_norm/scale": ((4,), "float32")}
    checkpoint = {"enc/rms_norm/scale": ((4,), "float32"), "enc/layer_norm/scale": ((4,), "float32")}
    aliases = [(r"/(final_)?layer_norm/", "/rms_norm/")]
    assert restore_plan(model, checkpoint, aliases=aliases) == {
        "enc/layer_norm/scale": "enc/layer_norm/scale", "enc/rms_norm/scale": "enc/final_layer_norm/scale"}
    with pytest.raises(WarmStartError, match="enc/final_layer_norm/scale: model .*checkpoint .*8"):
        restore_plan(model, dict(checkpoint, **{"enc/rms_norm/scale": ((8,), "float32")}),
                     aliases=aliases)


def test_checkpoint_with_todays_rms_norm_names_loads(tmp_path, t5_checkpoint):
    """A checkpoint as today's t5 gin files write it (mtf's `sublayer_rms_norm`: every norm,
    final ones included, under `rms_norm`, Adafactor's slots too) loads in full."""
    _, variables, _ = t5_checkpoint
    renamed = {name.replace("/final_layer_norm/", "/rms_norm/").replace("/layer_norm/", "/rms_norm/"):
               spec for name, spec in variables.items()}
    assert "encoder/rms_norm/scale" in renamed
    assert "decoder/block_001/layer_002/rms_norm/scale_slot_v" in renamed
    path = tmp_path / "rms_norm" / "model.ckpt-1000"
    values = write_checkpoint(path, renamed)
    run = configure(tmp_path / "run", path)
    assert runs.train(run, synthetic_examples(), VOCAB_SIZE, max_steps=1) == CHECKPOINT_STEP + 1
    trained = tf.train.latest_checkpoint(str(tmp_path / "run"))
    for ours, theirs in [("encoder/final_layer_norm/scale", "encoder/rms_norm/scale"),
                         ("decoder/block_001/layer_000/layer_norm/scale",
                          "decoder/block_001/layer_000/rms_norm/scale")]:
        np.testing.assert_allclose(tf.train.load_variable(trained, ours), values[theirs],
                                   rtol=1e-6)


def test_slots_factored_otherwise_name_the_optimizers_setting():
    """A checkpoint whose Adafactor factored from dimension 32 (d_model 32: the embedding's
    slots `_slot_vr`/`_slot_vc`) meets a run at mtf's default 128 (`_slot_v`)."""
    from model.trainer.model_config import ModelConfig
    config = ModelConfig(d_model=32, d_ff=64, num_heads=2, d_kv=8, num_layers=1)
    ours = reference_variables(config)
    theirs = reference_variables(config, min_dim_size_to_factor=32)
    with pytest.raises(WarmStartError) as error:
        restore_plan(ours, theirs)
    message = str(error.value)
    assert "shared/embedding_slot_v\n" in message
    assert "AdafactorOptimizer.min_dim_size_to_factor is 128 here, the checkpoint's slots " \
           "were written with 17 to 32; bind one of those." in message
    assert "architecture and size" not in message
