"""mT5 (Xue et al., 2021): its sizes (gin/sizes/mt5/) against transformers' MT5 models. Its
vocabulary and language mixture: tests/test_mt5_data.py; its checkpoints:
tests/test_mt5_checkpoints.py."""
import gin
import pytest

from model import families  # noqa: F401  (registers the families' gin configurables)
from model.families.t5.architectures import count_parameters
from model.trainer import gin_files, runs
from model.trainer.model_config import ModelConfig

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

SIZES = ["small", "base", "large", "xl", "xxl"]
# The released mT5 vocabulary: 250,000 pieces and 100 sentinels; the embedding has 250,112 rows.
MT5_VOCABULARY = 250_100


def mt5_config(size: str) -> ModelConfig:
    gin.clear_config()
    runs.parse_gin(["architectures/t5.1.1.gin", f"sizes/mt5/{size}.gin"], [])
    return ModelConfig()


def transformers_mt5(size: str) -> "transformers.MT5Config":
    """The configuration of google/mt5-SIZE, as transformers' hub folders state it."""
    d_model, d_ff, num_heads, num_layers = {
        "small": (512, 1024, 6, 8), "base": (768, 2048, 12, 12), "large": (1024, 2816, 16, 24),
        "xl": (2048, 5120, 32, 24), "xxl": (4096, 10240, 64, 24)}[size]
    return transformers.MT5Config(
        vocab_size=250_112, d_model=d_model, d_ff=d_ff, num_heads=num_heads, d_kv=64,
        num_layers=num_layers, num_decoder_layers=num_layers, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False)


@pytest.mark.parametrize("size", SIZES)
def test_sizes_are_the_released_mt5_and_count_as_transformers(size):
    config = mt5_config(size)
    released = transformers_mt5(size)
    assert (config.d_model, config.d_ff, config.num_heads, config.d_kv, config.num_layers) == (
        released.d_model, released.d_ff, released.num_heads, released.d_kv, released.num_layers)
    assert (config.feed_forward_proj, config.tie_word_embeddings) == ("gated-gelu", False)
    # Built on the meta device: no memory, even for XXL's 13 billion.
    with torch.device("meta"):
        expected = sum(p.numel() for p in transformers.MT5ForConditionalGeneration(released).parameters())
    assert count_parameters(config, MT5_VOCABULARY) == expected
    assert f"{expected:,} parameters" in (gin_files.GIN_DIR / f"sizes/mt5/{size}.gin").read_text()
