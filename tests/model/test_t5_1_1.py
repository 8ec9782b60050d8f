"""T5.1.1 (gin/architectures/t5.1.1.gin): the t5 library's models/t5.1.1.*.gin architecture,
checked against transformers' T5ForConditionalGeneration built from the same config: parameter
counts at the library's sizes, and the logits of a model trained here, exported and loaded."""
import json

import gin
import numpy as np
import pytest

from model import families
from model import train
from model.families.t5.architectures import count_parameters
from model.trainer import gin_files
from model.trainer import runs
from model.trainer.model_config import ModelConfig
from tests.support.checkpoint_logits import TEXTS, our_logits
from tests.support.training import TINY_BINDINGS
from tests.support.trained_vocab import trained_vocabulary

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

T5_1_1 = "architectures/t5.1.1.gin"


def t5_1_1_config(size: str) -> ModelConfig:
    gin.clear_config()
    runs.parse_gin([T5_1_1, f"sizes/t5.1.1/{size}.gin"], [])
    return ModelConfig()


def transformers_parameters(config: ModelConfig) -> int:
    """Parameters of transformers' T5ForConditionalGeneration of the same config (built on the
    meta device: no memory, even for XXL)."""
    hf = transformers.T5Config(
        vocab_size=32128, d_model=config.d_model, d_ff=config.d_ff, num_heads=config.num_heads,
        d_kv=config.d_kv, num_layers=config.num_layers, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False)
    with torch.device("meta"):
        return sum(p.numel() for p in transformers.T5ForConditionalGeneration(hf).parameters())


# Larger sizes build the same layers at other sizes (tests/model/test_mt5.py counts all five, at
# mT5's vocabulary).
@pytest.mark.parametrize("size", ["small", "base"])
def test_parameter_counts_equal_transformers_t5_v1_1(size):
    config = t5_1_1_config(size)
    assert count_parameters(config, 32100) == transformers_parameters(config)


@pytest.mark.parametrize("size", ["small", "base", "large", "xl", "xxl"])
def test_each_size_states_its_parameter_count(size):
    expected = transformers_parameters(t5_1_1_config(size))
    written = (gin_files.GIN_DIR / f"sizes/t5.1.1/{size}.gin").read_text()
    assert f"{expected:,} parameters" in written


def test_no_dropout_in_pretraining_and_0_1_when_fine_tuning():
    t5_1_1_config("small")
    with gin.config_scope("pretrain"):
        assert ModelConfig().dropout_rate == 0.0
    with gin.config_scope("finetune"):
        assert ModelConfig().dropout_rate == 0.1
    config = ModelConfig()
    assert (config.feed_forward_proj, config.tie_word_embeddings) == ("gated-gelu", False)


def test_unknown_feed_forward_is_refused():
    with pytest.raises(ValueError, match="feed_forward_proj must be one of"):
        ModelConfig(feed_forward_proj="swiglu")


def main_argv(mode, model_dir, bindings, *extra):
    argv = ["--mode", mode, "--model_dir", str(model_dir), "--gin_file", T5_1_1, *extra]
    for binding in bindings:
        argv += ["--gin_param", binding]
    return argv


# Slow: T5.1.1's export is tested by tests/model/test_t5_checkpoints.py (imported, then exported
# with equal logits) and tests/model/test_mt5_checkpoints.py (trained, then exported); this one
# runs the command lines from pre-training on.
@pytest.mark.slow
def test_pretrained_t5_1_1_exports_to_transformers_with_equal_logits(tmp_path, shared_data):
    """Pre-trained two steps from the command line (in the `pretrain` scope: no dropout), then
    exported: transformers reads the untied `decoder/logits/kernel` and the gated `wi_0`/`wi_1`
    and gives our logits."""
    bindings = TINY_BINDINGS + [
        f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
        f"DataConfig.source = '{shared_data}/c4_samples/olmo/c4-sample.*.json.gz'",
        "TrainConfig.train_steps = 2", "TrainConfig.save_checkpoints_steps = 2"]
    model_dir = tmp_path / "model"
    assert train.main(main_argv("pretrain", model_dir, bindings)) == 0
    assert "pretrain/ModelConfig.dropout_rate = 0.0" in (model_dir / "operative_config.gin").read_text()
    export_dir = tmp_path / "hf"
    assert train.main(main_argv("export", model_dir, bindings, "--export_dir", str(export_dir))) == 0
    config = json.loads((export_dir / "config.json").read_text())
    assert (config["feed_forward_proj"], config["tie_word_embeddings"]) == ("gated-gelu", False)
    model = transformers.T5ForConditionalGeneration.from_pretrained(str(export_dir)).eval()

    gin.clear_config()
    runs.parse_gin([T5_1_1], bindings)
    run = families.configured_run(str(model_dir))
    encoder = runs.encode_inputs(TEXTS, run.vocabulary, 32)
    targets = np.random.RandomState(0).randint(3, run.vocabulary.vocab_size, size=(2, 8))
    ours = our_logits(run, encoder, targets)
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(encoder, dtype=torch.long),
                       attention_mask=torch.tensor(encoder > 0, dtype=torch.long),
                       labels=torch.tensor(targets, dtype=torch.long)).logits.numpy()
    assert not torch.equal(model.lm_head.weight, model.shared.weight)
    np.testing.assert_allclose(theirs, ours, atol=1e-5 * np.abs(ours).max(), rtol=0)
