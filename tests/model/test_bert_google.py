"""BERT from Google's released folders: format `google` (model/families/bert/google.py) and
vocabularies in Google's layout (model/families/bert/wordpiece.py).

The round trip starts from a tiny random BertForPreTraining of transformers, written as a Google
TF checkpoint in the test (tf.compat.v1 variables under Google's names, as transformers'
convert_bert_pytorch_checkpoint_to_original_tf names BertModel's, with run_pretraining.py's
heads) that transformers' own reader, `load_tf_weights_in_bert`, loads back into the same model.
It is imported with `python -m model import --format google`; our MLM and NSP logits
must equal transformers' within 1e-5 of the largest logit, and again after `export --format hf`.
Google's vocabularies ([PAD] 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, then
the pieces) are rebuilt from pieces learned on the shared C4 samples, cased and uncased, and
must tokenise real text to the ids of transformers' BertTokenizer.
"""
import json
import pathlib
import shutil

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model.families.bert import google, inputs as bert_inputs, wordpiece
from model.convert import checkpoints
from model.trainer import runs
from model.trainer.model_config import ModelConfig
from tests.support.convert import (GOOGLE_RESERVED, VOCAB, assert_close, conversion,
                                   randomized, run_convert)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("clean_gin")

GOOGLE_IDS = wordpiece.SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)
# [CLS] A [SEP] B [SEP] with padding, in Google's ids.
TOKENS = np.array([[101, 104, 106, 108, 102, 105, 107, 109, 113, 102, 0, 0],
                   [101, 116, 117, 102, 104, 118, 119, 110, 114, 115, 111, 102]])
TYPES = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0],
                  [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]])
# The names of transformers' convert_bert_pytorch_checkpoint_to_original_tf (var_map,
# tensors_to_transpose), and run_pretraining.py's head variables that it does not write.
VAR_MAP = (("layer.", "layer_"), ("word_embeddings.weight", "word_embeddings"),
           ("position_embeddings.weight", "position_embeddings"),
           ("token_type_embeddings.weight", "token_type_embeddings"), (".", "/"),
           ("LayerNorm/weight", "LayerNorm/gamma"), ("LayerNorm/bias", "LayerNorm/beta"),
           ("weight", "kernel"))
TRANSPOSED = ("dense.weight", "attention.self.query", "attention.self.key",
              "attention.self.value")
HEADS = {"cls.predictions.bias": "cls/predictions/output_bias",
         "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
         "cls.seq_relationship.bias": "cls/seq_relationship/output_bias"}


def tiny_bert(vocab_size=len(VOCAB)):
    """Google's GELU is the tanh form: transformers' gelu_new."""
    config = transformers.BertConfig(
        vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, hidden_act="gelu_new")
    return randomized(transformers.BertForPreTraining(config))


def google_variables(model):
    """Google's variables of a BertForPreTraining (the decoder is the tied word embedding)."""
    variables = {}
    for name, tensor in model.state_dict().items():
        if name.startswith("cls.predictions.decoder") or name.endswith("position_ids"):
            continue
        value = tensor.numpy()
        if name in HEADS:
            variables[HEADS[name]] = value
            continue
        google_name = name
        for pattern, replacement in VAR_MAP:
            google_name = google_name.replace(pattern, replacement)
        variables[google_name] = value.T if any(t in name for t in TRANSPOSED) else value
    return variables


def write_checkpoint(variables, folder: pathlib.Path):
    with tf.Graph().as_default():
        saved = {name: tf.Variable(value, name=name) for name, value in variables.items()}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(saved).save(session, str(folder / google.CHECKPOINT),
                                       write_meta_graph=False)


def google_config(model, hidden_act="gelu"):
    c = model.config
    return {"attention_probs_dropout_prob": 0.1, "hidden_act": hidden_act,
            "hidden_dropout_prob": 0.1, "hidden_size": c.hidden_size,
            "initializer_range": 0.02, "intermediate_size": c.intermediate_size,
            "max_position_embeddings": c.max_position_embeddings,
            "num_attention_heads": c.num_attention_heads,
            "num_hidden_layers": c.num_hidden_layers, "type_vocab_size": c.type_vocab_size,
            "vocab_size": c.vocab_size}


def write_folder(folder: pathlib.Path, model, variables=None, config=None, vocab=VOCAB):
    """Google's folder of `model`: the checkpoint (also holding a pre-training run's Adam slot
    and global step, which an import skips), bert_config.json and vocab.txt."""
    folder.mkdir(parents=True)
    if variables is None:
        variables = {**google_variables(model), "global_step": np.int64(10),
                     "bert/pooler/dense/kernel/adam_m": np.zeros([16, 16], np.float32)}
    write_checkpoint(variables, folder)
    (folder / google.CONFIG).write_text(json.dumps(config or google_config(model), indent=2))
    (folder / google.VOCABULARY).write_text("".join(piece + "\n" for piece in vocab))
    return folder


@pytest.fixture(scope="module")
def reference():
    return tiny_bert()


@pytest.fixture(scope="module")
def google_folder(reference, tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("google") / "uncased_L-2_H-16_A-2", reference)


def transformers_logits(model):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(TOKENS),
                    attention_mask=torch.tensor(TOKENS > 0, dtype=torch.long),
                    token_type_ids=torch.tensor(TYPES))
    return {"mlm_logits": out.prediction_logits.numpy(),
            "nsp_logits": out.seq_relationship_logits.numpy()}


def import_google(source, model_dir, *argv):
    return run_convert("import", "--family", "bert", "--format", "google", "--source", source,
                       "--model_dir", model_dir, *argv)


def test_the_written_checkpoint_is_googles_as_transformers_reads_it(reference, google_folder):
    """load_tf_weights_in_bert (transformers' reader of Google's checkpoints) fills every
    parameter of a fresh model with the reference's values."""
    from transformers.models.bert.modeling_bert import load_tf_weights_in_bert
    fresh = transformers.BertForPreTraining(reference.config)
    with torch.no_grad():
        for parameter in fresh.parameters():
            parameter.fill_(float("nan"))
    load_tf_weights_in_bert(fresh, fresh.config, str(google_folder / google.CHECKPOINT))
    expected = reference.state_dict()
    for name, value in fresh.state_dict().items():
        assert torch.equal(value, expected[name]), name


def test_round_trip_gives_transformers_logits(reference, google_folder, tmp_path):
    expected = transformers_logits(reference)
    assert import_google(google_folder, tmp_path / "ours") == 0
    gin_file = tmp_path / "ours" / checkpoints.GIN_NAME
    text = gin_file.read_text()
    copy = (tmp_path / "ours" / google.VOCABULARY).resolve()
    for line in ("BertConfig.hidden_act = 'gelu_new'", "BertConfig.layer_norm_epsilon = 1e-12",
                 f"DataConfig.vocabulary = '{copy}'",
                 "# BertConfig.hidden_act: bert_config.json's 'gelu' is modeling.py's tanh "
                 "approximation", "# vocab.txt is uncased", "'cls': 101, 'sep': 102"):
        assert line in text, line
    gin.clear_config()
    runs.parse_gin([str(gin_file)], [])
    ours = checkpoints.checkpoint_outputs(conversion("bert"), ModelConfig(),
                                          str(tmp_path / "ours"),
                                          {"tokens": TOKENS, "token_types": TYPES})
    assert_close(ours, expected)

    assert run_convert("export", "--family", "bert", "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    exported = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "exported"))
    assert exported.config.hidden_act == "gelu_new"
    assert_close(transformers_logits(exported.eval()), expected)


# --- Bad sources: a clear message, nothing written ------------------------------------------

def failed_import(capsys, source, tmp_path, *argv) -> str:
    target = tmp_path / "target"
    assert import_google(source, target, *argv) == 2
    assert not target.exists() or not any(target.iterdir())
    return capsys.readouterr().err


@pytest.mark.parametrize("left_out", ["bert_config.json", "vocab.txt", "bert_model.ckpt.index",
                                      "bert_model.ckpt.data-00000-of-00001"])
def test_a_missing_file_is_named(google_folder, tmp_path, capsys, left_out):
    source = tmp_path / "uncased_L-2_H-16_A-2"
    shutil.copytree(google_folder, source)
    (source / left_out).unlink()
    error = failed_import(capsys, source, tmp_path)
    named = left_out if not left_out.startswith("bert_model.ckpt.data") \
        else "bert_model.ckpt.data-*"
    assert f"lacks ['{named}']" in error


def test_a_transformers_folder_is_pointed_to_format_hf(reference, tmp_path, capsys):
    reference.save_pretrained(tmp_path / "hf")
    error = failed_import(capsys, tmp_path / "hf", tmp_path)
    assert "bert_config.json" in error and "--format hf" in error


def test_a_checkpoint_of_another_family_is_refused(reference, tmp_path, capsys):
    """T5's variables (shared/, encoder/) under Google's file names are no BERT."""
    variables = {"shared/embedding": np.zeros([120, 16], np.float32),
                 "encoder/block_000/layer_000/SelfAttention/q": np.zeros([16, 16], np.float32)}
    source = write_folder(tmp_path / "t5", reference, variables=variables)
    error = failed_import(capsys, source, tmp_path)
    assert "is not a BERT checkpoint: none of its 2 variables is under bert/" in error
    assert "['encoder', 'shared']" in error


def test_another_family_has_no_google_format(google_folder, tmp_path, capsys):
    assert run_convert("import", "--family", "gpt1", "--format", "google", "--source",
                       google_folder, "--model_dir", tmp_path / "ours") == 2
    assert "--family gpt1 has no format 'google'" in capsys.readouterr().err


def test_google_has_no_export(tmp_path, capsys):
    assert run_convert("export", "--family", "bert", "--format", "google", "--model_dir",
                       tmp_path, "--export_dir", tmp_path / "out") == 2
    assert "--family bert --format google has no export (it has import)" in \
        capsys.readouterr().err


def test_a_config_field_that_disagrees_with_gin_names_both_values(google_folder, tmp_path,
                                                                   capsys):
    error = failed_import(capsys, google_folder, tmp_path, "--gin_param",
                          "ModelConfig.num_layers = 3")
    assert "ModelConfig.num_layers: gin says 3, the source's config 2" in error


def test_an_activation_ours_does_not_compute_is_refused(reference, tmp_path, capsys):
    source = write_folder(tmp_path / "relu", reference,
                          config=google_config(reference, hidden_act="relu"))
    error = failed_import(capsys, source, tmp_path)
    assert "hidden_act = 'relu'" in error and "['gelu']" in error


def test_missing_wrong_shape_and_unread_variables_are_listed(reference, tmp_path, capsys):
    variables = google_variables(reference)
    del variables["bert/encoder/layer_1/output/dense/bias"]
    variables["bert/pooler/dense/kernel"] = variables["bert/pooler/dense/kernel"][:, :8]
    variables["cls/squad/output_weights"] = np.zeros([2, 16], np.float32)
    source = write_folder(tmp_path / "bad", reference, variables=variables)
    error = failed_import(capsys, source, tmp_path)
    assert "bert/pooler/dense/kernel: source [16, 8], ours [16, 16]" in error
    assert ("bert/encoder/block_001/feedforward/output/bias (the source's "
            "bert/encoder/layer_1/output/dense/bias)") in error
    assert "cls/squad/output_weights" in error


def test_a_folder_named_cased_with_an_uncased_vocabulary_is_refused(reference, tmp_path, capsys):
    source = write_folder(tmp_path / "cased_L-2_H-16_A-2", reference)
    error = failed_import(capsys, source, tmp_path)
    assert "vocab.txt is uncased (it has no upper-case pieces) but the folder's name says " \
           "cased" in error


def test_a_fine_tuning_head_is_refused(google_folder, tmp_path, capsys):
    error = failed_import(capsys, google_folder, tmp_path, "--gin_param",
                          "BertConfig.head = 'classification'")
    assert "import with BertConfig.head = 'pretraining' (gin binds 'classification')" in error


# --- Google's vocabularies ------------------------------------------------------------------

@pytest.fixture(scope="module")
def c4_texts(shared_data):
    from model.data import inputs
    documents = inputs.documents_from_source(str(shared_data / "c4_samples/olmo/*"))
    return [d["text"].decode("utf-8") for d in documents.as_numpy_iterator()]


def google_vocabulary(texts, lower_case, path: pathlib.Path) -> pathlib.Path:
    """Pieces learned from `texts` in Google's layout (reserved and unused ids first)."""
    pieces = wordpiece.learn_vocabulary(texts, wordpiece.WordPieceSettings(
        size=1000, lower_case=lower_case))
    path.write_text("".join(piece + "\n" for piece in GOOGLE_RESERVED
                            + [p for p in pieces if not p.startswith("[")]))
    return path


TRICKY = ["Café MÜNCHEN: naïve résumé, e.g. 3.14!", "Wait… “quoted” – dash — ½ ﬁne ™",
          "東京 and ＡＢＣ full width", "tab\there\u200bzero width, e\u0301 combining",
          "bell\x07 nel\x85 x\x1cy \ufffd z\u00a0w\u3000v", "İstanbul ǅ ß ﬀ"]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_googles_layout_tokenises_as_bert_tokenizer(c4_texts, tmp_path, lower_case):
    """Ids equal transformers' BertTokenizer with do_lower_case as the vocabulary says, on every
    sentence of the C4 samples; the special ids are the file's."""
    path = google_vocabulary(c4_texts, lower_case, tmp_path / "vocab.txt")
    vocabulary = wordpiece.WordPieceVocabulary(str(path))
    assert vocabulary.lower_case == lower_case
    assert vocabulary.special == GOOGLE_IDS
    oracle = transformers.BertTokenizer(str(path), do_lower_case=lower_case)
    sentences = [s for text in c4_texts for s in bert_inputs.page_sentences(text)] + TRICKY
    assert len(sentences) > 800
    for sentence, ids in zip(sentences, vocabulary.encode_batch(sentences)):
        assert ids == oracle.convert_tokens_to_ids(oracle.tokenize(sentence)), sentence


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_the_hf_export_carries_a_bert_tokenizer_of_our_ids(c4_texts, tmp_path, lower_case):
    """A Google folder over a vocabulary of real pieces, imported and exported to transformers:
    AutoTokenizer reads the export's vocab.txt with do_lower_case as our vocabulary reads text,
    gives our ids on every sentence of the C4 samples and frames a pair with the file's [CLS]
    and [SEP] (Google's ids, not our learner's)."""
    path = google_vocabulary(c4_texts, lower_case, tmp_path / "vocab.txt")
    vocabulary = wordpiece.WordPieceVocabulary(str(path))
    write_folder(tmp_path / "google", tiny_bert(vocabulary.vocab_size), vocab=vocabulary.pieces)
    assert import_google(tmp_path / "google", tmp_path / "ours") == 0
    assert run_convert("export", "--family", "bert", "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    assert (tokenizer.do_lower_case, len(tokenizer), tokenizer.model_max_length) == \
        (lower_case, vocabulary.vocab_size, 32)
    special = {"pad": tokenizer.pad_token_id, "unk": tokenizer.unk_token_id,
               "cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id,
               "mask": tokenizer.mask_token_id}
    assert wordpiece.SpecialIds(**special) == vocabulary.special == GOOGLE_IDS
    sentences = [s for text in c4_texts for s in bert_inputs.page_sentences(text)]
    ours = vocabulary.encode_batch(sentences)
    assert tokenizer(sentences, add_special_tokens=False).input_ids == ours
    assert tokenizer(sentences[0], sentences[1]).input_ids == \
        [GOOGLE_IDS.cls, *ours[0], GOOGLE_IDS.sep, *ours[1], GOOGLE_IDS.sep]


def test_pretraining_examples_use_the_vocabularys_special_ids(c4_texts, tmp_path):
    vocabulary = wordpiece.WordPieceVocabulary(
        str(google_vocabulary(c4_texts, True, tmp_path / "vocab.txt")))
    examples = bert_inputs.window_examples(c4_texts[:8], vocabulary, 64,
                                           np.random.default_rng(0), bert_inputs.BertDataConfig())
    masked = replaced = 0
    for example in examples:
        tokens, labels = example["bert_input_tokens"], example["masked_lm_ids"]
        count = int(example["masked_lm_weights"].sum())
        original = tokens.copy()
        original[example["masked_lm_positions"][:count]] = labels[:count]
        assert original[0] == GOOGLE_IDS.cls and np.sum(original == GOOGLE_IDS.sep) in (1, 2)
        now = tokens[example["masked_lm_positions"][:count]]
        masked += int(np.sum(now == GOOGLE_IDS.mask))
        changed = now[(now != GOOGLE_IDS.mask) & (now != labels[:count])]
        replaced += len(changed)
        assert not set(changed.tolist()) & set(GOOGLE_IDS.reserved)  # never a reserved id
        assert not set(labels[:count].tolist()) & {GOOGLE_IDS.cls, GOOGLE_IDS.sep}
    assert masked > 5 * replaced > 0


def test_random_pieces_skip_the_reserved_ids():
    reserved = GOOGLE_IDS.reserved
    drawn = [bert_inputs.skip_reserved(i, reserved) for i in range(120 - len(reserved))]
    assert sorted(drawn) == [i for i in range(120) if i not in reserved]


def test_the_model_reads_the_run_vocabularys_special_ids(google_folder):
    """PREDICT's token types (and SegaBERT's indices) split at the run's [SEP]: the run gives
    its vocabulary to the family through the model function's setup; the model reads no gin."""
    from model.families.bert.model import Bert
    from model.trainer.mesh import MeshConfig
    from model.trainer.model_fn import ModelFnSetup, OptimizationConfig
    config = ModelConfig(architecture="bert", d_model=16, d_ff=32, num_heads=2, d_kv=8)
    path = str(google_folder / google.VOCABULARY)
    assert Bert(config, 120).special == wordpiece.LEARNED_IDS
    gin.bind_parameter("DataConfig.vocabulary", path)
    assert Bert(config, 120).special == wordpiece.LEARNED_IDS
    run = runs.Run(Bert, config, MeshConfig(), OptimizationConfig(), runs.DataConfig(),
                   runs.TrainConfig(), "unused")
    assert run.model_vocabulary.special == GOOGLE_IDS
    setup = ModelFnSetup(family_class=Bert, model_config=config, mesh_config=MeshConfig(),
                         optimization=OptimizationConfig(), vocab_size=120, model_dir="unused",
                         save_checkpoints_steps=1, keep_checkpoint_max=1, decode_length=4,
                         train_steps=1, vocabulary=run.model_vocabulary)
    assert setup.family.special == GOOGLE_IDS
    gin.clear_config()
    assert runs.Run(Bert, config, MeshConfig(), OptimizationConfig(), runs.DataConfig(),
                    runs.TrainConfig(), "unused").model_vocabulary is None


@pytest.mark.parametrize("pieces,message", [
    (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"], "['[MASK]'] not found"),
    (["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"], "[PAD] is id 1"),
])
def test_a_vocabulary_without_bert_special_tokens_is_refused(tmp_path, pieces, message):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(piece + "\n" for piece in pieces))
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        wordpiece.WordPieceVocabulary(str(path))
