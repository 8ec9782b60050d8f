"""mT5 (Xue et al., 2021): its sizes (gin/sizes/mt5/) against transformers' MT5 models, and the
language mixture it pre-trains on (model/data/languages.py, model/data/inputs.py)."""
import json

import gin
import numpy as np
import pytest

from model import families  # noqa: F401  (registers the families' gin configurables)
from model import train
from model.data import input_position, language_mixture
from model.families.t5.architectures import count_parameters
from model.trainer import gin_files, hooks, runs
from model.trainer.model_config import ModelConfig
from tests.support import mc4_corpus
from tests.support.training import TINY_BINDINGS

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


# --------------------------------------------------------------------------------------------
# The language mixture of pre-training (model/data/language_mixture.py).

LENGTHS = {"inputs": 32, "targets": 8}
BATCH = 16


@pytest.fixture(scope="module")
def mc4_output(shared_data):
    return mc4_corpus.mc4_output(shared_data)


@pytest.fixture(scope="module")
def mt5_vocabulary(shared_data):
    return mc4_corpus.mt5_vocabulary(shared_data)


def mixture(root, vocabulary, **overrides) -> language_mixture.LanguageMixtureStream:
    settings = dict(root=str(root), vocabulary=vocabulary, objective="span_corruption",
                    sequence_lengths=LENGTHS, family="encoder_decoder", seed=3) | overrides
    return language_mixture.LanguageMixtureStream(**settings)


def pages_written(folder) -> int:
    return json.loads((folder / "stats.json").read_text())["stages"]["write"]["pages.written:train"]


def test_the_mixture_is_multilingual_t5s_mc4_over_the_languages_with_text(mc4_output, mt5_vocabulary):
    """Every language with training pages but und, each at rate_num_examples(temperature=1/0.3)
    of its pages: |L|^0.3, normalized."""
    stream = mixture(mc4_output, mt5_vocabulary)
    sizes = {folder.name: pages_written(folder) for folder in mc4_output.iterdir()
             if folder.is_dir() and folder.name != "und" and pages_written(folder) > 0}
    assert stream.names == tuple(sorted(sizes)) and len(sizes) > 15
    weights = {name: size ** 0.3 for name, size in sizes.items()}
    assert stream.rates == pytest.approx({name: w / sum(weights.values()) for name, w in weights.items()},
                                         rel=1e-12)
    chosen = mixture(mc4_output, mt5_vocabulary, languages=("und", "de"), exponent=1.0)
    assert chosen.names == ("de", "und")
    assert chosen.rates["und"] / chosen.rates["de"] == pytest.approx(
        pages_written(mc4_output / "und") / pages_written(mc4_output / "de"))
    with pytest.raises(ValueError, match="no language"):
        mixture(mc4_output, mt5_vocabulary, languages=("xx",))


def test_the_shares_of_a_long_seeded_stream_are_the_rates(mc4_output, mt5_vocabulary):
    """Two million draws: each language's share is within 5 standard deviations of its rate
    (sqrt(p(1-p)/n), 0.0002 at most here: a chance of 1 in 1.7 million per language that a
    correct mixture fails). The same seed draws the same members from any draw on; another
    seed draws others."""
    stream = mixture(mc4_output, mt5_vocabulary)
    draws = 2_000_000
    members = np.concatenate(list(stream.choices().take(draws).batch(2 ** 18).as_numpy_iterator()))
    shares = np.bincount(members, minlength=len(stream.names)) / draws
    for index, name in enumerate(stream.names):
        rate = stream.rates[name]
        assert abs(shares[index] - rate) <= 5 * np.sqrt(rate * (1 - rate) / draws), name
    later = np.concatenate(list(stream.choices(123_457).take(10_000).batch(10_000).as_numpy_iterator()))
    np.testing.assert_array_equal(later, members[123_457:133_457])
    other_seed = mixture(mc4_output, mt5_vocabulary, seed=4)
    assert not np.array_equal(next(other_seed.choices().batch(1000).as_numpy_iterator()), members[:1000])


def as_lists(batch):
    return {key: value.tolist() for key, value in batch.items()}


def batches(stream, model_dir, start_step, count, record_every=5):
    dataset = input_position.training_batches(stream, BATCH, start_step, str(model_dir),
                                              lambda step: step % record_every == 0)
    return [as_lists(b) for b in dataset.take(count).as_numpy_iterator()]


def test_a_resumed_mixture_sees_the_batches_of_an_uninterrupted_run(mc4_output, mt5_vocabulary, tmp_path):
    """Records at steps 5, 10, ... (here a row is an example: 256 rows a packing window): a run
    resumed at a recorded step (mid-window, members in their later passes) or at an unrecorded
    one sees the same batches; each drawn example is its drawn member's, whose position moves on
    by one example."""
    stream = mixture(mc4_output, mt5_vocabulary, languages=("de", "en", "hy", "uk", "zh"))
    total = 40
    uninterrupted = batches(stream, tmp_path, 0, total)
    records = sorted((tmp_path / input_position.RECORD_DIR).glob("step-*.json"))
    positions = [json.loads(record.read_text())["position"] for record in records]
    assert len(positions) == total // 5 and any(position["row"] > 0 for position in positions)
    # Members of one short page (hy, uk) start their later passes: "epoch", the first field.
    assert max(member[0] for member in positions[-1]["members"]) > 0
    for step in (20, 38):
        count = min(3, total - step)
        assert batches(stream, tmp_path, step, count) == uninterrupted[step:step + count], step
    examples = list(stream.drawn_examples().take(200).as_numpy_iterator())
    choices = list(stream.choices().take(200).as_numpy_iterator())
    for (_, before), (_, after), member in zip(examples, examples[1:], choices):
        moved = np.flatnonzero((before["members"] != after["members"]).any(axis=1))
        assert list(moved) == [member] and after["draw"] == before["draw"] + 1


def test_a_tiny_mt5_pretrains_on_the_mc4_of_the_samples(mc4_output, mt5_vocabulary, tmp_path):
    """T5.1.1's architecture at a tiny size with the mT5 recipe's vocabulary, pre-trained on the
    language mixture of the samples' mC4 from the command line (six languages of five scripts:
    each member costs its pipeline's build): the loss falls, and the run records the mixture's
    positions."""
    bindings = TINY_BINDINGS + [
        f"DataConfig.vocabulary = '{mt5_vocabulary.path}'",
        f"DataConfig.source = 'languages:{mc4_output}'",
        "DataConfig.languages = ('en', 'es', 'ko', 'ru', 'vi', 'zh')",
        "OptimizationConfig.learning_rate_schedule = @lr.constant", "lr.constant.value = 0.01",
        "TrainConfig.train_steps = 40", "TrainConfig.save_checkpoints_steps = 20"]
    model_dir = tmp_path / "mt5"
    argv = ["--mode", "pretrain", "--model_dir", str(model_dir), "--gin_file", "architectures/t5.1.1.gin"]
    for binding in bindings:
        argv += ["--gin_param", binding]
    assert train.main(argv) == 0
    losses = {entry["step"]: entry["loss"] for entry in map(
        json.loads, (model_dir / hooks.LOSS_LOG_NAME).read_text().splitlines())}
    first, last = np.mean([losses[s] for s in range(1, 6)]), np.mean([losses[s] for s in range(36, 41)])
    assert first > np.log(1000) and last < first - 1.0, (first, last)
    record = json.loads((model_dir / input_position.RECORD_DIR / "step-000000040.json").read_text())
    assert record["stream"]["root"] == str(mc4_output) and len(record["position"]["members"]) == 6
