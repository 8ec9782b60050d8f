"""model/convert/command.py and model/convert/checkpoints.py: transformers folders in, transformers
folders out (format `hf` of each family).

Each round trip starts from a tiny random model made by transformers' own classes (the
reference: T5ForConditionalGeneration of modeling_t5.py, OpenAIGPTLMHeadModel of
modeling_openai.py, BertForPreTraining of modeling_bert.py) and saved by `save_pretrained`. It is
imported with `python -m model import`, our Mesh TensorFlow model is run on the
imported checkpoint (model/convert/checkpoints.py `checkpoint_outputs`: the family's own
graph) and its logits compared with transformers' within 1e-5 of the largest logit (T5:
teacher-forced decoder logits; GPT-1: LM logits; BERT: MLM and NSP logits); then the checkpoint
is exported with `python -m model export` and the exported model, loaded by
transformers, must give the same logits again. Every parameter is redrawn at random (norm gains
and biases too, which initialisation leaves at 1 and 0) so that each one matters.
"""
import json
import pathlib
import shutil

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import convert_command as convert
from model import families
from model.convert import checkpoints
from model.trainer import runs
from model.trainer.model_config import ModelConfig

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.support.convert import (  # noqa: E402  (needs torch and transformers)
    BERT_TOKENS, BERT_TYPES, CLASSES, OUR_INPUTS, TOLERANCE, assert_close, conversion,
    import_folder, our_logits, randomized, run_card_snippet, run_convert, tiny_bert, tiny_gpt1,
    tiny_t5, transformers_logits)

pytestmark = pytest.mark.usefixtures("clean_gin")


@pytest.mark.parametrize("family,make", [
    ("t5", lambda: tiny_t5(gated=False)), ("t5", lambda: tiny_t5(gated=True)),
    ("gpt1", tiny_gpt1), ("bert", tiny_bert), ("bert", lambda: tiny_bert(hidden_act="gelu"))],
    ids=["t5.1.0", "t5.1.1", "gpt1", "bert", "bert-erf-gelu"])
def test_round_trip_gives_transformers_logits(tmp_path, family, make):
    reference = make()
    reference.save_pretrained(tmp_path / "source")
    expected = transformers_logits(family, reference)
    assert import_folder(family, tmp_path / "source", tmp_path / "ours") == 0
    assert_close(our_logits(family, tmp_path / "ours"), expected)

    assert run_convert("export", "--family", family, "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    exported = CLASSES[family].from_pretrained(str(tmp_path / "exported")).eval()
    assert_close(transformers_logits(family, exported), expected)


def test_bert_import_writes_the_weights_alone_and_the_source_sizes(tmp_path):
    """BERT's warm start reads the trainable variables only (model/trainer/warm_start.py): no optimizer
    slots, no step; the gin file records the source's sizes."""
    tiny_bert().save_pretrained(tmp_path / "bert")
    assert import_folder("bert", tmp_path / "bert", tmp_path / "ours_bert") == 0
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "ours_bert"))}
    assert "global_step" not in names and "bert/embeddings/word_embeddings" in names
    assert not any("adam" in name or "slot" in name for name in names)
    text = (tmp_path / "ours_bert" / checkpoints.GIN_NAME).read_text()
    for line in ("BertConfig.max_positions = 32", "ModelConfig.architecture = 'bert'",
                 "BertConfig.layer_norm_epsilon = 0.01", "ModelConfig.d_ff = 32"):
        assert line in text


# --- Bad sources: a clear message, nothing written ------------------------------------------

@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert_source")
    tiny_bert().save_pretrained(folder)
    return folder


def failed_import(capsys, tmp_path, family, source, *gin_params) -> str:
    target = tmp_path / "target"
    assert import_folder(family, source, target, *gin_params) == 2
    assert not target.exists() or not any(target.iterdir())  # nothing written
    return capsys.readouterr().err


def test_missing_config_and_missing_weights_are_named(tmp_path, capsys, bert_folder):
    (tmp_path / "empty").mkdir()
    assert "no config.json in" in failed_import(capsys, tmp_path, "bert", tmp_path / "empty")
    (tmp_path / "config_only").mkdir()
    (tmp_path / "config_only" / "config.json").write_text(
        (bert_folder / "config.json").read_text())
    error = failed_import(capsys, tmp_path, "bert", tmp_path / "config_only")
    assert "no weights in" in error and "model.safetensors" in error


def test_a_folder_of_another_family_is_refused(tmp_path, capsys, bert_folder):
    error = failed_import(capsys, tmp_path, "gpt1", bert_folder)
    assert "--family gpt1 reads transformers' model_type 'openai-gpt'" in error
    assert "model_type 'bert'" in error


def test_a_config_field_that_disagrees_with_gin_names_both_values(tmp_path, capsys, bert_folder):
    error = failed_import(capsys, tmp_path, "bert", bert_folder, "ModelConfig.d_model = 64",
                          "BertConfig.max_positions = 32")  # agrees: not reported
    assert "ModelConfig.d_model: gin says 64, the source's config 16" in error
    assert "max_positions" not in error


def test_an_activation_ours_does_not_compute_is_refused(tmp_path, capsys):
    """Our BERT computes transformers' "gelu_new" (tanh, Google's modeling.py) and "gelu" (erf,
    the hub's configs); not SiLU."""
    model = transformers.BertForPreTraining(transformers.BertConfig(
        vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, hidden_act="silu"))
    model.save_pretrained(tmp_path / "silu")
    error = failed_import(capsys, tmp_path, "bert", tmp_path / "silu")
    assert "hidden_act = 'silu'" in error and "['gelu', 'gelu_new']" in error


def test_erf_gelu_and_its_gradient_equal_the_normal_cdfs():
    """BertConfig.hidden_act = 'gelu': x * Phi(x) (transformers' activations.GELUActivation,
    torch's exact gelu) and its derivative Phi(x) + x * phi(x), against scipy's normal CDF."""
    from scipy.special import ndtr
    from model.families.bert.activations import erf_gelu
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.mtf_compat import mtf
    x = np.linspace(-5.0, 5.0, 41)
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        inputs = mtf.import_tf_tensor(mesh, tf.constant(x, tf.float64),
                                      mtf.Shape([mtf.Dimension("x", len(x))]))
        outputs = erf_gelu(inputs)
        [gradient] = mtf.gradients([mtf.reduce_sum(outputs)], [inputs])
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        with tf.Session() as session:
            value, slope = session.run([lowering.export_to_tf_tensor(outputs),
                                        lowering.export_to_tf_tensor(gradient)])
    np.testing.assert_allclose(value, x * ndtr(x), rtol=0, atol=1e-12)
    np.testing.assert_allclose(slope, ndtr(x) + x * np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi),
                               rtol=0, atol=1e-12)


def test_missing_wrong_shape_and_unread_tensors_are_listed(tmp_path, capsys, bert_folder):
    from safetensors.torch import load_file, save_file
    state = load_file(str(bert_folder / "model.safetensors"))
    del state["bert.encoder.layer.1.output.dense.bias"]
    state["bert.pooler.dense.weight"] = state["bert.pooler.dense.weight"][:, :8].contiguous()
    state["classifier.weight"] = torch.zeros(2, 16)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((bert_folder / "config.json").read_text())
    save_file(state, str(bad / "model.safetensors"), metadata={"format": "pt"})
    error = failed_import(capsys, tmp_path, "bert", bad)
    assert "bert.pooler.dense.weight: source [16, 8], ours [16, 16]" in error
    assert "bert/encoder/block_001/feedforward/output/bias" in error
    assert "bert.encoder.layer.1.output.dense.bias" in error
    assert "classifier.weight" in error


def test_tied_copies_that_differ_are_refused(tmp_path, capsys):
    """OpenAIGPTLMHeadModel ties lm_head to tokens_embed, as ours: a file whose two copies
    differ is no model of ours (save_pretrained writes one copy; this one was edited)."""
    from safetensors.torch import load_file, save_file
    tiny_gpt1().save_pretrained(tmp_path / "source")
    state = load_file(str(tmp_path / "source" / "model.safetensors"))
    state["lm_head.weight"] = state["transformer.tokens_embed.weight"] + 1.0
    save_file(state, str(tmp_path / "source" / "model.safetensors"), metadata={"format": "pt"})
    error = failed_import(capsys, tmp_path, "gpt1", tmp_path / "source")
    assert "tied tensors differ" in error and "lm_head.weight" in error


def test_export_refuses_a_checkpoint_with_a_fine_tuning_head(tmp_path, capsys):
    """OpenAIGPTLMHeadModel has no place for GPT-1's classifier or its fresh special rows."""
    tiny_gpt1().save_pretrained(tmp_path / "source")
    assert import_folder("gpt1", tmp_path / "source", tmp_path / "ours") == 0
    path = tf.train.latest_checkpoint(str(tmp_path / "ours"))
    reader = tf.train.load_checkpoint(path)
    with tf.Graph().as_default():
        variables = [tf.Variable(reader.get_tensor(name), name=name)
                     for name in reader.get_variable_to_shape_map()]
        variables.append(tf.Variable(np.zeros([16, 2], np.float32),
                                     name="gpt1/head/classifier/kernel"))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(variables).save(session, str(tmp_path / "tuned" / "model.ckpt"))
    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir",
                       tmp_path / "tuned", "--export_dir", tmp_path / "out", "--gin_file",
                       tmp_path / "ours" / checkpoints.GIN_NAME) == 2
    error = capsys.readouterr().err
    assert "gpt1/head/classifier/kernel" in error and "OpenAIGPTLMHeadModel" in error
    assert not (tmp_path / "out").exists()


def test_export_dir_names_the_export_and_output_still_works_with_a_warning(tmp_path, capsys):
    """`--export_dir`, as model.train --mode export spells it; `--output`, the former name,
    writes the same folder and says to spell it --export_dir; both disagreeing, or neither, is
    refused."""
    tiny_gpt1().save_pretrained(tmp_path / "source")
    assert import_folder("gpt1", tmp_path / "source", tmp_path / "ours") == 0
    export = ["export", "--family", "gpt1", "--format", "hf", "--model_dir", tmp_path / "ours"]
    capsys.readouterr()
    assert run_convert(*export, "--export_dir", tmp_path / "new") == 0
    assert "--output" not in capsys.readouterr().err
    assert run_convert(*export, "--output", tmp_path / "old") == 0
    assert "warning: --output is --export_dir's former name (model export's); it " \
           "still works, spell it --export_dir" in capsys.readouterr().err
    for name in ("config.json", "model.safetensors"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()
    assert run_convert(*export, "--export_dir", tmp_path / "a", "--output", tmp_path / "b") == 2
    assert f"--export_dir {tmp_path / 'a'} and --output {tmp_path / 'b'} disagree" in \
        capsys.readouterr().err
    assert run_convert(*export) == 2
    assert "export needs --export_dir" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_import_refuses_a_folder_that_already_holds_a_checkpoint(tmp_path, capsys, bert_folder):
    assert import_folder("bert", bert_folder, tmp_path / "ours") == 0
    before = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert import_folder("bert", bert_folder, tmp_path / "ours") == 2
    assert "already holds a checkpoint" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == before


def decoder_only_examples(num: int = 16, length: int = 12, seed: int = 0):
    """GPT-1's pre-training features (model/data/features.py's decoder_only keys), one row a
    sequence."""
    tokens = np.random.RandomState(seed).randint(1, 90, size=(num, length)).astype(np.int32)
    features = {"decoder_target_tokens": tokens, "decoder_segment_ids": np.ones_like(tokens),
                "decoder_input_tokens": np.pad(tokens[:, :-1], [(0, 0), (1, 0)]),
                "decoder_positions": np.tile(np.arange(length, dtype=np.int32), (num, 1)),
                "decoder_loss_weights": np.ones_like(tokens)}
    return lambda: tf.data.Dataset.from_tensor_slices(features)


def bert_pretraining_examples(num: int = 16, length: int = 12, predictions: int = 3, seed: int = 0):
    """BERT's pre-training features (model/families/bert/inputs.py's keys): [CLS] A [SEP] B
    [SEP] rows of the tiny vocabulary, `predictions` masked positions each, random NSP labels."""
    rng = np.random.RandomState(seed)
    tokens = rng.randint(5, 60, size=(num, length)).astype(np.int32)
    tokens[:, 0], tokens[:, length // 2], tokens[:, -1] = 2, 3, 3
    types = np.zeros_like(tokens)
    types[:, length // 2 + 1:] = 1
    positions = np.stack([rng.choice(np.arange(1, length // 2), predictions, replace=False)
                          for _ in range(num)]).astype(np.int32)
    features = {"bert_input_tokens": tokens, "bert_token_types": types,
                "masked_lm_positions": positions,
                "masked_lm_ids": np.take_along_axis(tokens, positions, 1),
                "masked_lm_weights": np.ones_like(positions),
                "next_sentence_labels": rng.randint(0, 2, size=(num, 1)).astype(np.int32)}
    return lambda: tf.data.Dataset.from_tensor_slices(features)


@pytest.mark.parametrize("family", ["t5", "gpt1", "bert"])
def test_imported_checkpoint_fine_tunes_and_exports_what_it_computes(tmp_path, family):
    """`TrainConfig.init_checkpoint = DIR` warm-starts from an import (T5: weights, Adafactor's
    slots and step; GPT-1 and BERT: the weights, model/trainer/warm_start.py); after three steps
    the export of the fine-tuned run gives in transformers the logits it gives here (BERT: MLM
    and NSP), and they moved."""
    from tests.support.training import synthetic_examples
    reference = {"t5": lambda: tiny_t5(gated=True), "gpt1": tiny_gpt1, "bert": tiny_bert}[family]()
    reference.save_pretrained(tmp_path / "source")
    assert import_folder(family, tmp_path / "source", tmp_path / "imported") == 0
    if family == "t5":  # T5 continues training: Adafactor's slots (zero) and step 0 are there
        names = {name for name, _ in tf.train.list_variables(str(tmp_path / "imported"))}
        assert "global_step" in names and any("_slot_" in name for name in names)
        assert tf.train.load_variable(str(tmp_path / "imported"), "global_step") == 0
        text = (tmp_path / "imported" / checkpoints.GIN_NAME).read_text()
        for line in ("ModelConfig.d_model = 16", "ModelConfig.feed_forward_proj = 'gated-gelu'",
                     "ModelConfig.tie_word_embeddings = False",
                     "ModelConfig.relative_attention_num_buckets = 8"):
            assert line in text
    gin.clear_config()
    runs.parse_gin(["finetune.gin", str(tmp_path / "imported" / checkpoints.GIN_NAME)], [
        f"TrainConfig.init_checkpoint = '{tmp_path / 'imported'}'",
        "ModelConfig.dropout_rate = 0.0",
        "TrainConfig.tokens_per_batch = 96", "TrainConfig.save_checkpoints_steps = 3",
        "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1",
        "lr.constant.value = 0.01"])
    with gin.config_scope("finetune"):
        run = families.configured_run(str(tmp_path / "tuned"))
    examples = {"t5": synthetic_examples, "gpt1": decoder_only_examples,
                "bert": bert_pretraining_examples}[family]()
    assert runs.train(run, examples, reference.config.vocab_size, max_steps=3) == 3
    ours = checkpoints.checkpoint_outputs(conversion(family), run.model_config,
                                          run.model_dir, OUR_INPUTS[family])
    assert run_convert("export", "--family", family, "--format", "hf", "--model_dir",
                       run.model_dir, "--export_dir", tmp_path / "exported") == 0
    exported = CLASSES[family].from_pretrained(str(tmp_path / "exported")).eval()
    assert_close(ours, transformers_logits(family, exported))
    before = transformers_logits(family, reference)
    for name, logits in before.items():
        assert np.abs(ours[name] - logits).max() > 100 * TOLERANCE * np.abs(logits).max(), name


def test_a_vocabulary_of_another_size_is_refused(tmp_path, capsys, bert_folder):
    """DataConfig.vocabulary (BERT: a WordPiece vocab.txt) must have the source's vocab_size."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                               + [f"word{i}" for i in range(50)]) + "\n")
    error = failed_import(capsys, tmp_path, "bert", bert_folder,
                          f"DataConfig.vocabulary = '{vocab}'")
    assert f"vocab_size: DataConfig.vocabulary {vocab} has 55 ids (55 embedding rows), the " \
           "source's config 60" in error


def test_t5s_spiece_model_comes_along_and_must_fill_the_embedding(tmp_path, capsys,
                                                                   shared_data):
    """A T5 folder's spiece.model (T5Tokenizer's, with 100 extra ids: our Vocabulary) becomes
    the import's DataConfig.vocabulary, checked against the embedding's rows (padded to 128)."""
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    rows = 128 * -(-vocabulary.vocab_size // 128)
    for folder, vocab_size in (("fits", rows), ("short", rows - 128)):
        config = transformers.T5Config(vocab_size=vocab_size, d_model=8, d_ff=16, num_layers=1,
                                       num_heads=2, d_kv=4, decoder_start_token_id=0)
        transformers.T5ForConditionalGeneration(config).save_pretrained(tmp_path / folder)
        shutil.copyfile(vocabulary.path, tmp_path / folder / "spiece.model")
    assert import_folder("t5", tmp_path / "fits", tmp_path / "ours") == 0
    copy = (tmp_path / "ours" / "spiece.model").resolve()
    assert copy.read_bytes() == pathlib.Path(vocabulary.path).read_bytes()
    assert f"DataConfig.vocabulary = '{copy}'" in \
        (tmp_path / "ours" / checkpoints.GIN_NAME).read_text()
    error = failed_import(capsys, tmp_path, "t5", tmp_path / "short")
    assert f"has {vocabulary.vocab_size} ids ({rows} embedding rows), the source's config " \
           f"{rows - 128}" in error


@pytest.mark.parametrize("gated", [False, True], ids=["t5.1.0", "t5.1.1"])
def test_a_t5_vocabulary_of_len_tokenizer_rows_is_padded_to_128(tmp_path, capsys, shared_data,
                                                                 gated):
    """A folder saved with `vocab_size=len(tokenizer)` (its spiece.model's ids and 100 extra
    ids, no padding) imports padded to our embedding's multiple of 128 and says so (stderr and
    the gin file); the real ids' logits are transformers', the padding ids' 0."""
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    size = len(checkpoints.sentencepiece_tokenizer(vocabulary, 512))
    rows = 128 * -(-size // 128)
    assert size % 128 and size == vocabulary.vocab_size
    config = transformers.T5Config(
        vocab_size=size, d_model=16, d_ff=32, num_layers=2, num_heads=2, d_kv=8,
        relative_attention_num_buckets=8, dropout_rate=0.0, decoder_start_token_id=0,
        feed_forward_proj="gated-gelu" if gated else "relu", tie_word_embeddings=not gated)
    reference = randomized(transformers.T5ForConditionalGeneration(config))
    reference.save_pretrained(tmp_path / "source")
    shutil.copyfile(vocabulary.path, tmp_path / "source" / "spiece.model")
    capsys.readouterr()
    assert import_folder("t5", tmp_path / "source", tmp_path / "ours") == 0
    said = f"padded the vocabulary from {size} to {rows} rows (a multiple of 128, as the t5 " \
           f"library's): {tmp_path / 'source'}'s config.json says vocab_size {size}; the " \
           f"{rows - size} new rows of the embedding and LM head are zero"
    assert said in capsys.readouterr().err
    assert f"# {said}" in (tmp_path / "ours" / checkpoints.GIN_NAME).read_text()
    # The embedding [rows, d_model]; T5.1.1's LM head [d_model, rows].
    tables = [tf.train.load_variable(str(tmp_path / "ours"), "shared/embedding")]
    if gated:
        tables.append(tf.train.load_variable(str(tmp_path / "ours"), "decoder/logits/kernel").T)
    for table in tables:
        assert table.shape[0] == rows and not table[size:].any() and table[:size].all()
    ours = our_logits("t5", tmp_path / "ours")
    expected = transformers_logits("t5", reference)
    assert_close({"logits": ours["logits"][..., :size]}, expected)
    assert not ours["logits"][..., size:].any()
    # Exported, generate never gives a padding id (its carried vocabulary has `size` ids).
    assert run_convert("export", "--family", "t5", "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    exported = transformers.GenerationConfig.from_pretrained(str(tmp_path / "exported"))
    assert exported.suppress_tokens == list(range(size, rows))
    # Its model card's Python (model/convert/card.py) loads it and generates, as written.
    assert "| model | `T5ForConditionalGeneration` |" in \
        (tmp_path / "exported" / "README.md").read_text()
    if gated:  # once: a new process
        run_card_snippet(tmp_path / "exported", tmp_path)


def test_a_base_model_folder_imports_under_the_head_models_names(tmp_path):
    """The hub's openai-gpt folder holds OpenAIGPTModel's tensors (`tokens_embed.weight`, no
    `transformer.` prefix; transformers' from_pretrained adds it): the LM head is tied, so the
    base model gives every variable of ours."""
    reference = tiny_gpt1()
    reference.transformer.save_pretrained(tmp_path / "base")
    assert import_folder("gpt1", tmp_path / "base", tmp_path / "ours") == 0
    assert_close(our_logits("gpt1", tmp_path / "ours"), transformers_logits("gpt1", reference))


@pytest.mark.parametrize("head,classes,model_class,recorded_in", [
    ("classification", 3, "BertForSequenceClassification", "operative_config"),
    ("classification", 3, "BertForSequenceClassification", "run_settings"),
    ("regression", 1, "BertForSequenceClassification", "operative_config"),
    ("multiple_choice", 3, "BertForMultipleChoice", "operative_config"),
    ("span", 2, "BertForQuestionAnswering", "operative_config")])
def test_a_fine_tuned_bert_exports_to_its_heads_transformers_model(tmp_path, head, classes,
                                                                    model_class, recorded_in):
    """A BERT checkpoint with a fine-tuning head (BertConfig.head: recorded in the run's
    run_settings.json, the family's config as data, over its operative_config.gin's; runs
    written before that file bound it in gin, so their operative_config.gin holds it) exports
    to transformers' model of that head, with our head's outputs:
    run_classifier's dense layer on the pooled [CLS] (BertForSequenceClassification, one
    regression label), the paper's SWAG score per choice's pooled [CLS]
    (BertForMultipleChoice: each choice's sequence in turn here, [batch, choices, length]
    there) or run_squad's start/end vectors (BertForQuestionAnswering's qa_outputs)."""
    tiny_bert().save_pretrained(tmp_path / "source")
    assert import_folder("bert", tmp_path / "source", tmp_path / "pretrained") == 0
    recorded = (tmp_path / "pretrained" / checkpoints.GIN_NAME).read_text()
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    if recorded_in == "operative_config":
        recorded += f"BertConfig.head = '{head}'\nBertConfig.num_classes = {classes}\n"
    else:  # the gin record says the pre-training head, the family config the one trained
        recorded += "BertConfig.head = 'pretraining'\nBertConfig.num_classes = 2\n"
        (tuned / runs.RUN_SETTINGS_NAME).write_text(json.dumps(
            {"BertConfig": {"head": head, "num_classes": classes}}))
    (tuned / checkpoints.GIN_NAME).write_text(recorded)
    gin.clear_config()
    runs.apply_recorded_bindings(str(tuned))
    conv, config = conversion("bert"), ModelConfig()
    assert conv.model_class == model_class
    reader = tf.train.load_checkpoint(str(tmp_path / "pretrained"))
    rng = np.random.RandomState(3)
    shapes = checkpoints.model_shapes(conv, config, 60)
    fresh = [name for name in shapes if not reader.has_tensor(name)]
    assert fresh and all(name.startswith(("cls/classifier/", "cls/squad/")) for name in fresh)
    values = {name: reader.get_tensor(name) if reader.has_tensor(name)
              else rng.normal(0.0, 0.5, shape).astype(np.float32) for name, shape in shapes.items()}
    # At a step after 0: a fine-tuned run's checkpoint (its step 0 is refused for export).
    checkpoints.write_checkpoint(conv, config, 60, values, str(tuned), step=2)
    tokens, types = BERT_TOKENS, BERT_TYPES
    if head == "multiple_choice":  # choice c: segment B's ids moved by 5c
        tokens = np.stack([np.where(BERT_TYPES == 1, BERT_TOKENS + 5 * c, BERT_TOKENS)
                           * (BERT_TOKENS > 0) for c in range(classes)], axis=1)
        types = np.stack([BERT_TYPES] * classes, axis=1)
    ours = checkpoints.checkpoint_outputs(
        conv, config, str(tuned),
        {"tokens": tokens.reshape(len(tokens), -1), "token_types": types.reshape(len(types), -1)})

    assert run_convert("export", "--family", "bert", "--format", "hf", "--model_dir", tuned,
                       "--checkpoint", "model.ckpt-2", "--export_dir", tmp_path / "exported") == 0
    model = getattr(transformers, model_class).from_pretrained(str(tmp_path / "exported")).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(tokens),
                    attention_mask=torch.tensor(tokens > 0, dtype=torch.long),
                    token_type_ids=torch.tensor(types))
    if head == "span":
        theirs = {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
    else:
        theirs = {"logits": out.logits.numpy().reshape(ours["logits"].shape)}
        assert out.logits.shape == (2, classes)
    assert_close(ours, theirs)


@pytest.mark.parametrize("family,bindings,message", [
    ("bert", ["BertConfig.head = 'mlm'"],
     "BERT's 'mlm' head (BertConfig.head) has no transformers model here"),
    ("gpt1", ["GPT1Config.head = 'classification'", "GPT1Config.num_classes = 2"],
     "GPT-1's classification head (GPT1Config.head) has no transformers model here")])
def test_export_refuses_a_head_without_a_transformers_model(tmp_path, capsys, family, bindings,
                                                            message):
    """The run's head (bound over an imported checkpoint's recorded config) has no model."""
    (tiny_bert() if family == "bert" else tiny_gpt1()).save_pretrained(tmp_path / "source")
    assert import_folder(family, tmp_path / "source", tmp_path / "run") == 0
    argv = ["export", "--family", family, "--format", "hf", "--model_dir", tmp_path / "run",
            "--export_dir", tmp_path / "out"]
    for binding in bindings:
        argv += ["--gin_param", binding]
    assert run_convert(*argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("family,format_name,message", [
    ("t6", "hf", "unknown family 't6'; choose one of ['bert', 'gpt1', 'segabert', 't5']"),
    ("bert", "onnx", "--family bert has no format 'onnx'; it has ['google', 'hf']")])
def test_an_unknown_family_or_format_is_named_with_the_known_ones(tmp_path, capsys, family,
                                                                  format_name, message):
    argv = ["import", "--family", family, "--format", format_name, "--source", tmp_path,
            "--model_dir", tmp_path / "ours"]
    assert run_convert(*argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ours").exists()


def test_the_command_line_fails_in_one_line_on_stderr(tmp_path):
    """`python -m model import` as a user runs it: TensorFlow's start-up messages stay off
    stderr, the error is one line, the status 2."""
    import subprocess
    import sys
    (tmp_path / "empty").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "model", "import", "--family", "bert", "--format", "hf",
         "--source", str(tmp_path / "empty"), "--model_dir", str(tmp_path / "ours")],
        capture_output=True, text=True, cwd=pathlib.Path(convert.__file__).parents[1])
    assert result.returncode == 2
    assert result.stderr == f"error: no config.json in {tmp_path / 'empty'} (a transformers " \
                            f"save_pretrained folder is expected)\n"
