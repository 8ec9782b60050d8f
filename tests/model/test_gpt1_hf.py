"""GPT-1's forward pass against an independent implementation: transformers'
OpenAIGPTLMHeadModel holding the same weights (model/families/gpt1/hf.py maps them by name)."""
import dataclasses

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model.families.gpt1 import model as gpt1, hf as gpt1_hf

torch = pytest.importorskip("torch")

VOCAB = 300
# Heads x d_kv = d_model and d_ff = 4 x d_model: the shapes OpenAI GPT has.
SIZES = dict(d_model=32, d_ff=128, num_heads=4, d_kv=8, num_layers=2, dropout_rate=0.0)


def random_variables_and_logits(tokens: np.ndarray, seed: int = 0):
    """A tiny GPT-1 built in Mesh TensorFlow, every variable redrawn at random (biases and
    layer-norm gains too, which initialisation leaves at 0 and 1), and its logits for `tokens`
    [batch, length]: (our variables by name, logits [batch, length, vocab])."""
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.model_config import ModelConfig
    from model.trainer.mtf_compat import mtf
    config = dataclasses.replace(ModelConfig(), architecture=gpt1.ARCHITECTURE, **SIZES)
    model = gpt1.GPT1Model(config, gpt1.GPT1Config(max_positions=64), VOCAB, training=False,
                           variable_dtype=mtf.VariableDType())
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        shape = mtf.Shape([mtf.Dimension("batch", tokens.shape[0]),
                           mtf.Dimension("length", tokens.shape[1])])
        ids = mtf.import_tf_tensor(mesh, tf.constant(tokens, tf.int32), shape)
        positions = mtf.broadcast(mtf.range(mesh, shape.dims[-1], tf.int32), shape)
        hidden = model.hidden_states(ids, positions, mtf.ones(mesh, shape, tf.int32))
        logits = model.logits(hidden)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        logits = lowering.export_to_tf_tensor(logits)
        names = {v.name for v in graph.trainable_variables}
        masters = {v.op.name: v for v in tf.global_variables() if v.op.name in names}
        assert set(masters) == names
        rng = np.random.RandomState(seed)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for name, variable in masters.items():
                value = rng.normal(scale=0.3, size=variable.shape.as_list())
                if name.endswith("/g"):
                    value += 1.0
                variable.load(value.astype(np.float32), session)
            session.run(lowering.copy_masters_to_slices())
            values = session.run({name: v.read_value() for name, v in masters.items()})
            return values, session.run(logits), config


def hf_logits(variables, config, tokens):
    reference = gpt1_hf.openai_gpt_model(
        variables, gpt1_hf.openai_gpt_config(config, gpt1.GPT1Config(max_positions=64), VOCAB))
    with torch.no_grad():
        return reference(torch.from_numpy(tokens.astype(np.int64))).logits.numpy()


def test_logits_equal_transformers_openai_gpt_on_the_same_weights(clean_gin):
    """Same weights, same token ids: our logits equal OpenAIGPTLMHeadModel's within 1e-5 of the
    largest logit (post-layer-norm blocks, scaled causal attention, tanh GELU, learned
    positions, tied output)."""
    tokens = np.random.RandomState(1).randint(1, VOCAB, size=(2, 16))
    variables, ours, config = random_variables_and_logits(tokens)
    theirs = hf_logits(variables, config, tokens)
    assert ours.shape == theirs.shape == (2, 16, VOCAB)
    scale = np.abs(theirs).max()
    assert scale > 1.0  # random weights: logits far from zero, every parameter matters
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5 * scale)


def test_the_config_computes_openais_gelu_and_refuses_sizes_openai_gpt_cannot_have(clean_gin):
    """OpenAI's train.py `gelu` is the tanh form, as mtf.gelu; OpenAI GPT's activation table
    in transformers (modeling_openai.ACT_FNS) gives that form for the config's `afn`."""
    from transformers.models.openai.modeling_openai import ACT_FNS
    from model.trainer.model_config import ModelConfig
    config = dataclasses.replace(ModelConfig(), **SIZES)
    hf_config = gpt1_hf.openai_gpt_config(config, gpt1.GPT1Config(), VOCAB)
    assert hf_config.n_positions == 512
    x = np.linspace(-4, 4, 81)
    openai_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(ACT_FNS[hf_config.afn](torch.from_numpy(x)).numpy(), openai_gelu,
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="4 x d_model"):
        gpt1_hf.openai_gpt_config(dataclasses.replace(config, d_ff=64), gpt1.GPT1Config(), VOCAB)
    with pytest.raises(ValueError, match="heads x d_kv"):
        gpt1_hf.openai_gpt_config(dataclasses.replace(config, d_kv=16), gpt1.GPT1Config(), VOCAB)
