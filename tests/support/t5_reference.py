"""T5 as mtf's own code builds it, the reference our T5 is tested against
(tests/model/test_architectures.py, tests/model/test_warm_start.py,
tests/model/test_t5_checkpoints.py)."""
import functools

import tensorflow.compat.v1 as tf

from model.families.t5.architectures import LAYER_NORM_EPSILON
from model.trainer.mesh import MeshConfig, cpu_mesh_impl
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf, transformer, transformer_layers

VOCAB_SIZE = 200  # the reference's vocabulary in the warm-start and checkpoint tests


def t5_reference_model(config: ModelConfig, vocab_size: int, legacy_norms: bool = True,
                       activation="relu", tied: bool = True) -> transformer.Bitransformer:
    """T5's encoder-decoder as its gin configs build it through mtf's `make_layer_stack` (which
    names the layers of the released checkpoints), with legacy-mode layer stacks (`layer_norm`,
    `final_layer_norm`) and shared relative attention biases, as those checkpoints have.
    `legacy_norms=False`: the layer stack of mtf's current defaults (defaults.gin's sublayers,
    every norm `rms_norm`), as today's t5 gin files build it; T5.1.1: `activation=["gelu",
    "linear"]`, `tied=False`."""
    attention = {"num_heads": config.num_heads, "key_value_size": config.d_kv}
    self_attention = dict(attention, relative_attention_type="bias_shared")
    if legacy_norms:
        layer_stack = functools.partial(transformer.LayerStack, dropout_rate=0.0,
                                        norm_epsilon=LAYER_NORM_EPSILON)
    else:
        layer_stack = functools.partial(
            transformer.LayerStack, sublayers_initial=[transformer.sublayer_dropout],
            sublayers_per_layer=[transformer.sublayer_rms_norm, transformer.sublayer_call_layer,
                                 transformer.sublayer_dropout, transformer.sublayer_residual],
            sublayers_final=[transformer.sublayer_rms_norm, transformer.sublayer_dropout])
    feed_forward = [transformer_layers.DenseReluDense,
                    {"hidden_size": config.d_ff, "activation": activation}]

    def stack(name, layers):
        return transformer.Unitransformer(
            layer_stack=transformer.make_layer_stack(layers, layer_stack, config.num_layers),
            d_model=config.d_model, input_vocab_size=vocab_size,
            output_vocab_size=vocab_size if name == "decoder" else None,
            autoregressive=name == "decoder", max_length=None, name=name,
            positional_embedding=False, shared_embedding_and_softmax_weights=tied)

    encoder = stack("encoder", [[transformer_layers.SelfAttention, self_attention],
                                feed_forward])
    decoder = stack("decoder", [[transformer_layers.SelfAttention, self_attention],
                                [transformer_layers.EncDecAttention, attention], feed_forward])
    return transformer.Bitransformer(encoder, decoder, shared_embedding=True)


def reference_variables(config, vocab_size: int = VOCAB_SIZE, min_dim_size_to_factor: int = 128,
                        **layout) -> dict:
    """{name: (shape, dtype)} of the TF variables of mtf's T5 over `vocab_size` ids trained with
    mtf's Adafactor, factoring from `min_dim_size_to_factor` (mtf's default 128; its slot names
    say which variables it factored), `layout`: t5_reference_model's norm names, activation and
    tying."""
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        tokens = mtf.ones(mesh, mtf.Shape([mtf.Dimension("batch", 2),
                                           mtf.Dimension("length", 6)]), tf.int32)
        _, loss = t5_reference_model(config, vocab_size, **layout).call_simple(
            inputs=tokens, targets=tokens, compute_loss=True, mode="train")
        variables = graph.trainable_variables
        gradients = mtf.gradients([loss], [v.outputs[0] for v in variables])
        updates = mtf.optimize.AdafactorOptimizer(
            learning_rate=0.01, min_dim_size_to_factor=min_dim_size_to_factor).apply_grads(
            gradients, variables)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        for op in updates:
            lowering.lowered_operation(op)
        return {v.op.name: (v.shape.as_list(), v.dtype.base_dtype)
                for v in tf.global_variables()}
