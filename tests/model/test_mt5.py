"""mT5 (Xue et al., 2021): its sizes (gin/sizes/mt5/) against transformers' MT5 models. Its
vocabulary and language mixture: tests/model/test_mt5_data.py; its checkpoints:
tests/model/test_mt5_checkpoints.py."""
import json

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


def test_the_sizes_are_the_five_released():
    gins = (gin_files.GIN_DIR / "sizes/mt5").glob("*.gin")
    assert sorted(path.stem for path in gins) == sorted(SIZES)


@pytest.fixture(scope="module")
def t5_1_1_run(tmp_path_factory, shared_data):
    """A tiny T5.1.1 trained 1 step, recording T5's transformers model type: what an export
    gets from each size's gin is that gin's own."""
    from tests.support.trained_vocab import trained_vocabulary
    from tests.support.training import configure
    model_dir = tmp_path_factory.mktemp("t5_1_1")
    data = [f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
            f"DataConfig.source = '{shared_data}/c4_samples/olmo/c4-sample.*.json.gz'"]
    run = configure(model_dir, data, "TrainConfig.save_checkpoints_steps = 1",
                    gin_files=("pretrain.gin", "architectures/t5.1.1.gin"))
    assert runs.train(run, run.training_examples(), run.vocabulary.vocab_size, 1) == 1
    gin.clear_config()
    assert "ModelConfig.hf_model_type = 't5'" in (
        model_dir / runs.OPERATIVE_CONFIG_NAME).read_text()
    return model_dir


@pytest.mark.parametrize("size", SIZES)
def test_every_sizes_gin_exports_an_mt5_model(t5_1_1_run, tmp_path, size):
    """Behaviour 10 of issue 48: `python -m model export --gin_file sizes/mt5/SIZE.gin` writes
    transformers' mT5 (config.json's model_type "mt5", MT5ForConditionalGeneration, as
    google/mt5-SIZE's). The sizes are the tiny run's (bound after the gin file): every other
    setting of the size's gin is the gin's own."""
    from model import __main__ as model_command
    from tests.support.training import TINY_BINDINGS
    sizes = [binding for binding in TINY_BINDINGS if binding.startswith("ModelConfig.")]
    argv = ["export", "--model_dir", str(t5_1_1_run), "--export_dir", str(tmp_path / "hf"),
            "--gin_file", f"sizes/mt5/{size}.gin"]
    for binding in sizes:
        argv += ["--gin_param", binding]
    gin.clear_config()
    assert model_command.main(argv) == 0
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["model_type"] == "mt5"
    assert config["architectures"] == ["MT5ForConditionalGeneration"]
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(tmp_path / "hf"))
    assert type(model).__name__ == "MT5ForConditionalGeneration"
