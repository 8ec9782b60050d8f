"""The five architectures: T5's layer details and the published parameter counts.

Counts come from the variable shapes of an mtf graph that is never lowered or initialised."""
import gin
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model.families.t5.architectures import build_model, count_parameters
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf
from model.trainer.gin_files import GIN_DIR
from tests.support.t5_reference import t5_reference_model

T5_VOCAB_SIZE = 32100  # 32000 SentencePiece pieces + 100 sentinels, padded to 32128 in the model

# Published sizes (T5 paper / released checkpoints), with the tolerance the paper's rounding needs.
PUBLISHED_PARAMETERS = {
    "small": 60e6,
    "base": 220e6,
    "large": 770e6,
    "3B": 2.8e9,
    "11B": 11e9,
}


def size_config(size: str, architecture: str = "encoder_decoder") -> ModelConfig:
    gin.clear_config()
    gin.parse_config_files_and_bindings(
        [str(GIN_DIR / "sizes" / f"{size}.gin"),
         str(GIN_DIR / "architectures" / f"{architecture}.gin")], [])
    config = ModelConfig()
    gin.clear_config()
    return config


def model_variables(model) -> dict:
    """{name: shape as a list} of the trainable variables of an mtf transformer model."""
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        tokens = mtf.ones(mesh, mtf.Shape([mtf.Dimension("batch", 2),
                                           mtf.Dimension("length", 6)]), tf.int32)
        model.call_simple(inputs=tokens, targets=tokens, compute_loss=False, mode="eval")
        return {v.name: v.outputs[0].shape.to_integer_list for v in graph.trainable_variables}


def variables(config: ModelConfig, vocab_size: int = 200) -> dict:
    return model_variables(build_model(config, vocab_size))


@pytest.mark.parametrize("size", sorted(PUBLISHED_PARAMETERS))
def test_parameter_count_matches_published_figure(size):
    with tf.Graph().as_default():
        count = count_parameters(size_config(size), T5_VOCAB_SIZE)
    assert count == pytest.approx(PUBLISHED_PARAMETERS[size], rel=0.05)


def test_base_is_the_paper_baseline():
    config = size_config("base")
    assert (config.d_model, config.d_ff, config.num_heads, config.d_kv, config.num_layers) == (
        768, 3072, 12, 64, 12)
    assert config.dropout_rate == 0.1


TINY = ModelConfig(d_model=16, d_ff=24, num_heads=2, d_kv=4, num_layers=2)


def test_t5_layer_details():
    names = variables(TINY)
    # One embedding, shared by encoder, decoder and the output layer (no separate logits matrix).
    embeddings = [n for n in names if "embedding" in n]
    assert embeddings == ["shared/embedding"] and names["shared/embedding"] == [256, 16]
    assert not any("logits" in n or "positional" in n for n in names)
    # No biases anywhere; scale-only norms of size d_model.
    assert not any(n.endswith("bias") and "relative_attention" not in n for n in names)
    norms = [n for n in names if "norm" in n]
    assert norms and all(names[n] == [16] for n in norms)
    # Pre-norm: one norm per sub-layer plus a final norm per stack (2+3 per block, 2 blocks).
    assert len(norms) == 2 * 2 + 3 * 2 + 2
    # Relative position biases: one [heads, 32 buckets] table per stack, shared across layers;
    # none for encoder-decoder attention.
    relative = sorted(n for n in names if "relative_attention_bias" in n)
    assert relative == ["decoder/block_000/layer_000/SelfAttention/relative_attention_bias",
                        "encoder/block_000/layer_000/SelfAttention/relative_attention_bias"]
    assert all(names[n] == [2, 32] for n in relative)
    # ReLU feed-forward: wi [d_model, d_ff] and wo [d_ff, d_model], kernels only.
    ffn = sorted(n for n in names if "DenseReluDense" in n)
    assert [names[n] for n in ffn] == [[16, 24], [24, 16]] * 4


def test_architectures_share_and_halve_parameters_as_the_paper_says():
    def count(arch):
        with tf.Graph().as_default():
            return count_parameters(ModelConfig(
                architecture=arch, d_model=64, d_ff=256, num_heads=4, d_kv=16, num_layers=4), 1000)

    full = count("encoder_decoder")
    shared, half = count("encoder_decoder_shared"), count("encoder_decoder_half_layers")
    lm, prefix = count("decoder_only_lm"), count("prefix_lm")
    # Table 2: encoder-decoder 2P; shared, half-layers, LM and prefix LM about P.
    assert lm == prefix
    for p_sized in (shared, half, lm):
        assert 0.45 * full < p_sized < 0.65 * full
    assert shared > lm  # the shared stack also holds the decoder's encoder-decoder attention





def test_variables_are_named_as_t5_checkpoints():
    ours = variables(TINY)
    assert ours == model_variables(t5_reference_model(TINY, 200))
    # Names of the released T5 checkpoints.
    for name in ("encoder/block_000/layer_000/SelfAttention/q",
                 "decoder/block_000/layer_001/EncDecAttention/k",
                 "decoder/block_001/layer_002/DenseReluDense/wo/kernel",
                 "encoder/block_001/layer_001/layer_norm/scale",
                 "encoder/final_layer_norm/scale", "shared/embedding"):
        assert name in ours


def test_shared_encoder_decoder_reuses_encoder_weights():
    shared = variables(ModelConfig(architecture="encoder_decoder_shared", d_model=16, d_ff=24,
                                   num_heads=2, d_kv=4, num_layers=2))
    assert not any(n.startswith(("encoder/", "decoder/")) for n in shared)
    # One stack's weights: the decoder's (its encoder-decoder attention included), no more.
    decoder = {n: v for n, v in variables(TINY).items() if n.startswith("decoder/")}
    assert sorted(shared) == sorted(["shared/embedding"] + [
        n.replace("decoder/", "encoder_decoder/", 1) for n in decoder])


def test_bad_configuration_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown architecture 'transformer_xl'"):
        families.family_class("transformer_xl")
    with pytest.raises(ValueError, match="num_heads must be positive"):
        ModelConfig(num_heads=0)
