"""Export to Hugging Face: a tiny T5 trained briefly on real C4 pages is exported with
`--mode export`, loaded by transformers (T5ForConditionalGeneration, T5Tokenizer), and gives our
teacher-forced logits within float tolerance and, by its exported generation config alone, our
greedy decodes token for token."""
import copy
import json

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import train
from model.data.vocabulary import EOS_ID
from model.families.t5.hf import hf_config
from model.trainer import runs
from model.trainer.decoding import strip_after_eos
from tests.support.checkpoint_logits import TEXTS, our_logits
from tests.support.texts import real_texts
from tests.support.training import configure
from tests.support.trained_vocab import trained_vocabulary

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

INPUTS_LENGTH, TARGETS_LENGTH = 32, 8
TINY_EXPORT = ["ModelConfig.d_model = 32", "ModelConfig.d_ff = 64", "ModelConfig.num_heads = 4",
               "ModelConfig.d_kv = 8", "ModelConfig.num_layers = 2"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_data):
    model_dir = tmp_path_factory.mktemp("export_source")
    data = [f"DataConfig.vocabulary = '{trained_vocabulary(shared_data).path}'",
            f"DataConfig.source = '{shared_data}/c4_samples/olmo/c4-sample.*.json.gz'"]
    run = configure(model_dir, data, "ModelConfig.dropout_rate = 0.0",
                    "OptimizationConfig.learning_rate_schedule = @lr.constant", "lr.constant.value = 0.01",
                    "TrainConfig.save_checkpoints_steps = 20")
    runs.train(run, run.training_examples(), run.vocabulary.vocab_size, 20)
    return run, data


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    run, data = trained
    export_dir = tmp_path_factory.mktemp("hf")
    argv = ["--mode", "export", "--model_dir", run.model_dir, "--export_dir", str(export_dir)]
    for binding in (TINY_EXPORT + [f"DataConfig.inputs_length = {INPUTS_LENGTH}",
                                   f"TrainConfig.decode_length = {TARGETS_LENGTH}"] + data):
        argv += ["--gin_param", binding]
    assert train.main(argv) == 0
    model = transformers.T5ForConditionalGeneration.from_pretrained(str(export_dir)).eval()
    return model, transformers.T5Tokenizer.from_pretrained(str(export_dir))


def export_for_task(trained, export_dir, task: str, *gin_files: str) -> dict:
    """The generation config and tokenizer config that `--mode export --task TASK` writes."""
    run, data = trained
    gin.clear_config()  # the training's bindings (its lengths among them) stay out of the export
    argv = ["--mode", "export", "--model_dir", run.model_dir, "--export_dir", str(export_dir),
            "--task", task]
    for gin_file in gin_files:
        argv += ["--gin_file", gin_file]
    for binding in TINY_EXPORT + data:
        argv += ["--gin_param", binding]
    assert train.main(argv) == 0
    return {name: json.loads((export_dir / f"{name}.json").read_text())
            for name in ("generation_config", "tokenizer_config")}





def test_tokenizer_gives_our_ids(trained, exported):
    run, _ = trained
    _, tokenizer = exported
    vocabulary = run.vocabulary
    for text in TEXTS:
        assert tokenizer(text).input_ids == vocabulary.encode(text) + [EOS_ID]
    assert tokenizer.convert_tokens_to_ids("<extra_id_0>") == vocabulary.vocab_size - 1


def test_every_tokenizer_of_the_export_gives_our_ids_on_real_text(trained, exported, shared_data):
    """AutoTokenizer (T5TokenizerFast, converted from spiece.model) as T5Tokenizer: our ids on
    C4 pages, Story Cloze stories and German sentences, and one id for each piece and sentinel
    of ours (the embedding's padding rows are no tokens)."""
    run, _ = trained
    _, tokenizer = exported
    fast = transformers.AutoTokenizer.from_pretrained(tokenizer.name_or_path)
    assert isinstance(fast, transformers.T5TokenizerFast)
    vocabulary = run.vocabulary
    assert len(tokenizer) == len(fast) == vocabulary.vocab_size
    for text in real_texts(shared_data):
        assert fast(text).input_ids == tokenizer(text).input_ids == vocabulary.encode(text) + [EOS_ID]


def test_logits_equal_ours(trained, exported):
    run, _ = trained
    model, _ = exported
    encoder = runs.encode_inputs(TEXTS, run.vocabulary, INPUTS_LENGTH)
    targets = np.random.RandomState(0).randint(3, run.vocabulary.vocab_size, size=(2, TARGETS_LENGTH))
    ours = our_logits(run, encoder, targets)
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(encoder, dtype=torch.long),
                       attention_mask=torch.tensor(encoder > 0, dtype=torch.long),
                       labels=torch.tensor(targets, dtype=torch.long)).logits.numpy()
    assert model.config.vocab_size == hf_config(run.model_config, run.vocabulary.vocab_size).vocab_size
    assert theirs.shape == ours.shape
    assert np.abs(ours).max() > 1.0  # trained, not uniform
    np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=1e-4)


def test_greedy_generation_gives_our_tokens(trained, exported):
    run, _ = trained
    model, _ = exported
    encoder = runs.encode_inputs(TEXTS, run.vocabulary, INPUTS_LENGTH)
    estimator = run.estimator(len(TEXTS))
    ours = [strip_after_eos(p["outputs"]) for p in estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"inputs": encoder}).batch(
            params["batch_size"], drop_remainder=True),
        yield_single_examples=True)]
    # The exported generation config alone: greedy, up to our decode length (+ the start token).
    assert (model.generation_config.max_length, model.generation_config.num_beams) == (TARGETS_LENGTH + 1, 1)
    with torch.no_grad():
        generated = model.generate(input_ids=torch.tensor(encoder, dtype=torch.long),
                                   attention_mask=torch.tensor(encoder > 0, dtype=torch.long))
    assert generated.shape[1] <= TARGETS_LENGTH + 1
    theirs = [strip_after_eos(row[1:]) for row in generated.numpy()]  # row[0]: the start token
    assert any(ours)
    assert theirs == ours


def test_generation_never_reaches_the_embeddings_padding_rows(trained, exported):
    """The embedding's rows past the vocabulary (padded to a multiple of 128) are no token's:
    T5Tokenizer.decode raises on them. With a padding row made the argmax of the first step (its
    output row the first greedy token's, scaled up), the exported generation config still
    generates the ids of the unchanged model, greedy, and valid ids with beam search."""
    run, _ = trained
    model, tokenizer = exported
    vocab_size = run.vocabulary.vocab_size
    padding = list(range(vocab_size, model.config.vocab_size))
    assert padding and model.generation_config.suppress_tokens == padding
    encoder = runs.encode_inputs(TEXTS, run.vocabulary, INPUTS_LENGTH)
    inputs = {"input_ids": torch.tensor(encoder, dtype=torch.long),
              "attention_mask": torch.tensor(encoder > 0, dtype=torch.long)}
    with torch.no_grad():
        unchanged = model.generate(**inputs)
        tampered = copy.deepcopy(model)
        tampered.lm_head.weight[padding[0]] = 10.0 * tampered.lm_head.weight[unchanged[0, 1]]
        unsuppressed = tampered.generate(**inputs, suppress_tokens=None)
        greedy = tampered.generate(**inputs)
        beams = tampered.generate(**inputs, num_beams=4)
    assert unsuppressed[0, 1] == padding[0]
    with pytest.raises(IndexError, match="piece id is out of range"):
        tokenizer.decode(unsuppressed[0])
    assert torch.equal(greedy, unchanged)
    assert int(beams.max()) < vocab_size
    assert len(tokenizer.batch_decode(beams)) == len(TEXTS)


def test_export_for_a_task_writes_its_lengths_and_decoding(trained, tmp_path, clean_gin):
    """With --task: the task's targets length (+ the start token that transformers counts) and
    the tokenizer's model_max_length 512 (T5's inputs length); greedy by default, the final
    models' beam search (4 beams, alpha 0.6) for CNN/DM under beam_search.gin."""
    rte = export_for_task(trained, tmp_path / "rte", "glue_rte")
    assert rte["generation_config"]["max_length"] == 84 + 1
    assert rte["generation_config"].get("num_beams", 1) == 1
    assert rte["tokenizer_config"]["model_max_length"] == 512
    cnn = export_for_task(trained, tmp_path / "cnn", "cnn_dailymail", "beam_search.gin")
    assert cnn["generation_config"]["max_length"] == 512 + 1
    assert (cnn["generation_config"]["num_beams"], cnn["generation_config"]["length_penalty"]) == (4, 0.6)
    loaded = transformers.GenerationConfig.from_pretrained(str(tmp_path / "cnn"))
    assert (loaded.num_beams, loaded.max_length, loaded.decoder_start_token_id) == (4, 513, 0)
    assert transformers.T5Tokenizer.from_pretrained(str(tmp_path / "cnn")).model_max_length == 512
