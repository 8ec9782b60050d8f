"""GPT-1 with OpenAI's own vocabulary and weights: model/families/gpt1/bpe.py against
transformers' OpenAIGPTTokenizer, and finetune-transformer-lm's `model/` folder read by
model/families/gpt1/openai.py.

No network: the BPE files are learned here from the shared real text and written in OpenAI's
formats (`encoder_bpe_40000.json`: piece -> id; `vocab_40000.bpe`: a version line, then one
merge a line), and OpenAIGPTTokenizer is built from those same files.
"""
import collections
import json
import pathlib

import pytest

from model.families.gpt1 import bpe, inputs as gpt1_inputs
from model.families.gpt1.model import GPT1
from tests.support.texts import real_texts

transformers = pytest.importorskip("transformers")
from transformers.models.openai.tokenization_openai import BasicTokenizer  # noqa: E402

ENCODER, MERGES = "encoder_bpe_40000.json", "vocab_40000.bpe"



def learn_bpe(texts, num_merges):
    """(pieces, merges) of a small BPE learned the usual way on the words of transformers'
    basic tokenizer: every character, alone and word-final, then the most frequent adjacent
    pair merged, again and again."""
    counts = collections.Counter(word for text in texts
                                 for word in BasicTokenizer(do_lower_case=True).tokenize(text))
    words = {tuple(w[:-1]) + (w[-1] + "</w>",): n for w, n in counts.items()}
    pieces = {c + end for w in counts for c in w for end in ("", "</w>")}
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(sorted(pairs), key=pairs.get)
        merges.append(best)
        pieces.add("".join(best))
        merged = {}
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if word[i:i + 2] == best:
                    out.append("".join(best))
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return sorted(pieces), merges


def write_bpe(folder: pathlib.Path, pieces, merges, names=(ENCODER, MERGES)) -> pathlib.Path:
    """The two files in OpenAI's formats; returns the encoder file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / names[0]).write_text(json.dumps({p: i for i, p in enumerate(pieces)}))
    (folder / names[1]).write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return folder / names[0]


@pytest.fixture(scope="module")
def texts(shared_data):
    return real_texts(shared_data)


@pytest.fixture(scope="module")
def bpe_folder(tmp_path_factory, texts):
    pieces, merges = learn_bpe(texts, 400)
    folder = tmp_path_factory.mktemp("openai_bpe")
    write_bpe(folder, pieces, merges)
    return folder


def openai_tokenizer(folder, names=(ENCODER, MERGES)):
    reference = transformers.OpenAIGPTTokenizer(str(folder / names[0]), str(folder / names[1]))
    # Without ftfy and spaCy (not installed here) OpenAIGPTTokenizer runs BERT's basic
    # tokenizer, as ours; with them it would run OpenAI's own spaCy pre-tokenization.
    assert reference.fix_text is None and isinstance(reference.nlp, BasicTokenizer)
    return reference


def test_ids_equal_openai_gpt_tokenizer_on_real_text(bpe_folder, texts):
    ours = bpe.BpeVocabulary(bpe_folder / ENCODER)
    reference = openai_tokenizer(bpe_folder)
    merged = 0
    for text in texts:
        ids = ours.encode(text)
        assert ids == reference.encode(text), text[:80]
        merged += sum(len(ours.pieces[i].replace(bpe.END_OF_WORD, "")) > 1 for i in ids)
    assert sum(len(ours.encode(t)) for t in texts) > 10000 and merged > 5000
    assert ours.decode(ours.encode(texts[0])) == reference.decode(reference.encode(texts[0]))


def test_transformers_file_names_read_alike(bpe_folder, tmp_path, texts):
    """An OpenAIGPTTokenizer folder (`vocab.json`, `merges.txt`: the same files renamed)."""
    openai_tokenizer(bpe_folder).save_pretrained(str(tmp_path))
    ours = GPT1.vocabulary(str(tmp_path / "vocab.json"))
    assert isinstance(ours, bpe.BpeVocabulary) and ours.merges_path == tmp_path / "merges.txt"
    reference = openai_tokenizer(tmp_path, ("vocab.json", "merges.txt"))
    assert [ours.encode(t) for t in texts[:20]] == [reference.encode(t) for t in texts[:20]]


def test_a_piece_outside_the_encoder_is_id_0_as_openais_text_utils(bpe_folder):
    """OpenAI's text_utils.py encodes an unknown piece as 0; transformers' tokenizer gives None
    (its `<unk>` is no piece of OpenAI's encoder)."""
    ours = bpe.BpeVocabulary(bpe_folder / ENCODER)
    known = ours.encode("the story")
    assert ours.encode("the \u2603 story") == known[:1] + [bpe.UNKNOWN_PIECE_ID] + known[1:]
    assert openai_tokenizer(bpe_folder).encode("the \u2603 story") == known[:1] + [None] + known[1:]


def test_special_tokens_follow_the_pieces_as_openai_appended_them(bpe_folder, shared_data):
    """`_start_`, `_delimiter_`, `_classify_` after the pieces (OpenAI's train.py): GPT-1's
    start, delimiter and extract tokens, the last three ids (as our SentencePiece vocabularies'
    sentinels, which count down); a Story Cloze ending is framed by them."""
    ours = GPT1.vocabulary(str(bpe_folder / ENCODER))
    pieces = json.loads((bpe_folder / ENCODER).read_text())
    assert ours.vocab_size == len(pieces) + 3
    special = gpt1_inputs.vocabulary_special_tokens(ours)
    assert [ours.pieces[i] for i in (special.start, special.delimiter, special.extract)] == \
        ["_start_", "_delimiter_", "_classify_"] == list(bpe.SPECIAL_TOKENS)
    assert special.start == len(pieces)
    # The model is given the run's vocabulary (model_fn.ModelFnSetup): the same ids.
    from model.trainer.model_config import ModelConfig
    assert GPT1(ModelConfig(), ours.vocab_size, run_vocabulary=ours).special == special
    assert GPT1(ModelConfig(), ours.vocab_size).special.extract == special.extract - 2
    from model.tasks import discriminative
    path = shared_data / "tasks/story_cloze/cloze_test_val__spring2016.csv"
    example = next(iter(discriminative.examples("story_cloze", "validation", [str(path)])))
    view = discriminative.view("story_cloze")
    rows = gpt1_inputs.head_features([example], view, ours, 256)["head_tokens"].reshape(2, 256)
    for sequence, ending in zip(rows.tolist(), example.choices):
        end = sequence.index(special.extract)
        assert sequence[0] == special.start and sequence[end] == special.extract
        delimiter = sequence.index(special.delimiter)
        assert sequence[delimiter + 1:end] == ours.encode(ending)
        assert sequence[1:delimiter] == [t for s in example.segments for t in ours.encode(s)]
        assert not any(sequence[end + 1:])


def test_pretraining_refuses_the_bpe_vocabulary(bpe_folder, clean_gin):
    """Pre-training streams are SentencePiece's (tf.data tokenisation, padding 0, EOS 1)."""
    import gin
    from model import families
    from model.trainer import runs
    runs.parse_gin(["gpt1/tiny.gin"], [f"DataConfig.vocabulary = '{bpe_folder / ENCODER}'",
                                       "DataConfig.source = 'unused.txt'"])
    run = families.configured_run("unused")
    with pytest.raises(ValueError, match="GPT-1 pre-trains with a SentencePiece vocabulary; "
                                         "OpenAI's BPE .*encoder_bpe_40000.json"):
        GPT1.training_stream(run)
    gin.clear_config()


def test_bad_vocabulary_files_are_named(tmp_path, bpe_folder):
    with pytest.raises(ValueError, match="encoder_bpe_N.json .* or vocab.json"):
        bpe.BpeVocabulary(tmp_path / "pieces.json")
    write_bpe(tmp_path / "no_merges", ["a", "a</w>"], [])
    (tmp_path / "no_merges" / MERGES).unlink()
    with pytest.raises(FileNotFoundError, match=f"BPE merges file not found: .*{MERGES}"):
        bpe.BpeVocabulary(tmp_path / "no_merges" / ENCODER)
    write_bpe(tmp_path / "bad_merge", ["a", "a</w>"], [("a", "a</w>")])
    with (tmp_path / "bad_merge" / MERGES).open("a") as f:
        f.write("a b c\n")
    with pytest.raises(ValueError, match=f"{MERGES} line 3: a merge is two symbols, got 'a b c'"):
        bpe.BpeVocabulary(tmp_path / "bad_merge" / ENCODER)
    (tmp_path / "gap").mkdir()
    (tmp_path / "gap" / ENCODER).write_text(json.dumps({"a": 0, "b": 2}))
    (tmp_path / "gap" / MERGES).write_text("#version: 0.2\n")
    with pytest.raises(ValueError, match="the ids 0 to n - 1 once each"):
        bpe.BpeVocabulary(tmp_path / "gap" / ENCODER)


# --- Format `openai`: finetune-transformer-lm's model/ folder -------------------------------

# One block's parameters in the order of OpenAI's train.py variables: (scope, kind), kind `w`
# a conv1d kernel [1, in, out], `b` a bias, `g` a gain.
OPENAI_BLOCK = [("attn/c_attn", "w"), ("attn/c_attn", "b"), ("attn/c_proj", "w"),
                ("attn/c_proj", "b"), ("ln_1", "g"), ("ln_1", "b"), ("mlp/c_fc", "w"),
                ("mlp/c_fc", "b"), ("mlp/c_proj", "w"), ("mlp/c_proj", "b"), ("ln_2", "g"),
                ("ln_2", "b")]
N_CTX, N_EMBD, N_LAYER, N_HEAD = 32, 16, 2, 2


def write_release(model, folder: pathlib.Path, bpe_source: pathlib.Path):
    """The weights of an OpenAIGPTModel (or a head model's) in OpenAI's layout: the position
    and token embeddings, then each block's parameters, as one flat float32 vector in ten
    files, their shapes in params_shapes.json; the BPE files beside them; and the names list
    (`parameters_names.json`) that transformers' loader reads (OpenAI's release has none)."""
    import numpy as np
    import shutil
    body = getattr(model, "transformer", model)
    state = {name: tensor.numpy() for name, tensor in body.state_dict().items()}
    arrays = [state["positions_embed.weight"], state["tokens_embed.weight"]]
    names = ["model/we:0"]
    for block in range(body.config.n_layer):
        for scope, kind in OPENAI_BLOCK:
            tensor = state[f"h.{block}.{scope.replace('/', '.')}."
                           f"{'bias' if kind == 'b' else 'weight'}"]
            arrays.append(tensor[None] if kind == "w" else tensor)
            names.append(f"model/h{block}/{scope}/{kind}:0")
    folder.mkdir(parents=True)
    flat = np.concatenate([a.ravel() for a in arrays]).astype(np.float32)
    for n, part in enumerate(np.array_split(flat, 10)):
        np.save(folder / f"params_{n}.npy", part)
    (folder / "params_shapes.json").write_text(json.dumps([list(a.shape) for a in arrays]))
    (folder / "parameters_names.json").write_text(json.dumps(names))
    for name in (ENCODER, MERGES):
        shutil.copyfile(bpe_source / name, folder / name)


@pytest.fixture(scope="module")
def release(tmp_path_factory, bpe_folder):
    """(folder, reference OpenAIGPTLMHeadModel) of a tiny random GPT-1 over the learned BPE,
    written in OpenAI's layout and proven by transformers' `load_tf_weights_in_openai_gpt`."""
    import numpy as np
    from tests.support.convert import randomized
    from transformers.models.openai.modeling_openai import load_tf_weights_in_openai_gpt
    config = transformers.OpenAIGPTConfig(
        vocab_size=bpe.BpeVocabulary(bpe_folder / ENCODER).num_pieces, n_positions=N_CTX,
        n_embd=N_EMBD, n_layer=N_LAYER, n_head=N_HEAD, afn="gelu", layer_norm_epsilon=1e-5)
    reference = randomized(transformers.OpenAIGPTLMHeadModel(config))
    folder = tmp_path_factory.mktemp("release") / "model"
    write_release(reference, folder, bpe_folder)
    loaded = load_tf_weights_in_openai_gpt(transformers.OpenAIGPTModel(config), config,
                                           str(folder))
    expected = reference.transformer.state_dict()
    for name, tensor in loaded.state_dict().items():
        np.testing.assert_array_equal(tensor.numpy(), expected[name].numpy(), err_msg=name)
    return folder, reference


def import_release(source, model_dir, *gin_params):
    from tests.support.convert import run_convert
    argv = ["import", "--family", "gpt1", "--format", "openai", "--source", source,
            "--model_dir", model_dir]
    for binding in gin_params:
        argv += ["--gin_param", binding]
    return run_convert(*argv)


def test_release_imports_with_transformers_logits_and_exports(release, tmp_path, texts):
    """OpenAI's files -> ours: LM logits equal OpenAIGPTLMHeadModel's on real text's ids within
    1e-5 of the largest logit, the three special tokens' logits zero (their rows are new);
    the vocabulary comes along; then exported to transformers, equal again."""
    import gin
    import numpy as np
    import torch
    from model.convert import checkpoints
    from model.trainer import runs
    from model.trainer.model_config import ModelConfig
    from tests.support.convert import assert_close, conversion, run_convert
    folder, reference = release
    assert import_release(folder, tmp_path / "ours", f"ModelConfig.num_heads = {N_HEAD}") == 0
    ours_dir = tmp_path / "ours"
    text = (ours_dir / checkpoints.GIN_NAME).read_text()
    assert f"DataConfig.vocabulary = '{(ours_dir / ENCODER).resolve()}'" in text
    assert "GPT1Config.max_positions = 32" in text and "ModelConfig.num_layers = 2" in text
    vocabulary = GPT1.vocabulary(str(ours_dir / ENCODER))
    pieces = vocabulary.num_pieces
    tokens = np.array([vocabulary.encode(t)[:N_CTX] for t in texts[:2]])
    with torch.no_grad():
        expected = reference(torch.tensor(tokens)).logits.numpy()

    gin.clear_config()
    runs.parse_gin([str(ours_dir / checkpoints.GIN_NAME)], [])
    ours = checkpoints.checkpoint_outputs(conversion("gpt1"), ModelConfig(), str(ours_dir),
                                          {"tokens": tokens})["logits"]
    assert ours.shape == (2, N_CTX, pieces + 3)
    assert_close({"logits": ours[..., :pieces]}, {"logits": expected})
    assert not ours[..., pieces:].any()

    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir", ours_dir,
                       "--export_dir", tmp_path / "exported") == 0
    exported = transformers.OpenAIGPTLMHeadModel.from_pretrained(str(tmp_path / "exported"))
    with torch.no_grad():
        assert_close({"logits": exported.eval()(torch.tensor(tokens)).logits.numpy()},
                     {"logits": ours})


def test_the_hf_export_carries_a_tokenizer_of_our_ids(release, tmp_path, texts):
    """OpenAI's release imported, then exported to transformers: AutoTokenizer
    (OpenAIGPTTokenizerFast) gives our ids on real text, a piece outside the encoder id 0 as
    ours, and the special tokens their ids after the pieces."""
    from tests.support.convert import run_convert
    assert import_release(release[0], tmp_path / "ours", f"ModelConfig.num_heads = {N_HEAD}") == 0
    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir",
                       tmp_path / "ours", "--export_dir", tmp_path / "exported") == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    assert isinstance(tokenizer, transformers.OpenAIGPTTokenizerFast)
    vocabulary = GPT1.vocabulary(str(tmp_path / "ours" / ENCODER))
    assert (len(tokenizer), tokenizer.model_max_length) == (vocabulary.vocab_size, N_CTX)
    assert tokenizer.convert_tokens_to_ids(list(bpe.SPECIAL_TOKENS)) == \
        list(range(vocabulary.num_pieces, vocabulary.vocab_size))
    unknown = "the \u2603 story"
    assert bpe.UNKNOWN_PIECE_ID in vocabulary.encode(unknown)
    for text in texts + [unknown]:
        assert tokenizer(text).input_ids == vocabulary.encode(text), text[:80]


def failed_release_import(capsys, tmp_path, source, *gin_params) -> str:
    target = tmp_path / "target"
    assert import_release(source, target, *gin_params) == 2
    assert not target.exists() or not any(target.iterdir())  # nothing written
    return capsys.readouterr().err


def edited_release(release, tmp_path, edit) -> pathlib.Path:
    import shutil
    copy = tmp_path / "edited"
    shutil.copytree(release[0], copy)
    edit(copy)
    return copy


def test_bad_releases_are_named(release, tmp_path, capsys):
    import numpy as np
    missing = edited_release(release, tmp_path / "a", lambda f: (f / "params_3.npy").unlink())
    error = failed_release_import(capsys, tmp_path / "a", missing)
    assert f"{missing} lacks params_3.npy" in error
    from tests.support.convert import run_convert
    assert run_convert("import", "--family", "t5", "--format", "openai", "--source", release[0],
                       "--model_dir", tmp_path / "t5") == 2
    assert "--family t5 has no format 'openai'" in capsys.readouterr().err

    def short(folder):
        np.save(folder / "params_9.npy", np.load(folder / "params_9.npy")[:-5])
    error = failed_release_import(capsys, tmp_path / "b", edited_release(release, tmp_path / "b",
                                                                         short))
    assert "hold" in error and "values, params_shapes.json lists" in error

    def wrong_shape(folder):
        shapes = json.loads((folder / "params_shapes.json").read_text())
        shapes[5], shapes[6] = [N_EMBD * 2], [N_EMBD // 2]
        (folder / "params_shapes.json").write_text(json.dumps(shapes))
    error = failed_release_import(capsys, tmp_path / "c", edited_release(release, tmp_path / "c",
                                                                         wrong_shape))
    assert "2 parameter(s) of the wrong shape for n_embd 16" in error
    assert "entry 5 (h0/attn/c_proj/b): [32], expected [16]" in error

    def fewer_pieces(folder):
        pieces = json.loads((folder / ENCODER).read_text())
        (folder / ENCODER).write_text(json.dumps({p: i for p, i in pieces.items()
                                                  if i < len(pieces) - 1}))
    error = failed_release_import(capsys, tmp_path / "d", edited_release(release, tmp_path / "d",
                                                                         fewer_pieces))
    rows = bpe.BpeVocabulary(release[0] / ENCODER).num_pieces
    assert f"has {rows - 1} pieces; the token embedding of" in error and f"has {rows} rows" in error


def test_heads_the_release_does_not_record_come_from_gin(release, tmp_path, capsys):
    """OpenAI's 12 heads unless gin says otherwise; n_embd must divide among them."""
    error = failed_release_import(capsys, tmp_path, release[0])
    assert "n_embd = 16 and n_head = 12" in error
    error = failed_release_import(capsys, tmp_path, release[0], "ModelConfig.num_heads = 3")
    assert "n_embd = 16 and n_head = 3" in error


def test_release_fine_tuned_on_story_cloze_exports_to_double_heads(release, tmp_path,
                                                                   shared_data):
    """OpenAI's weights, fine-tuned here for a few steps on Story Cloze (GPT-1's multiple
    choice, with OpenAI's BPE and special tokens), export to OpenAIGPTDoubleHeadsModel: its
    multiple-choice scores and LM logits equal ours within 1e-5 of the largest; the special
    tokens' rows are the head's fresh ones, and fine-tuning moved the scores."""
    import gin
    import numpy as np
    import torch
    from model import train
    from model import convert_command as convert
    from model.tasks import discriminative
    from model.convert import checkpoints
    from model.trainer import runs
    from model.trainer.model_config import ModelConfig
    from tests.support.convert import assert_close, run_convert
    folder, reference = release
    assert import_release(folder, tmp_path / "imported", f"ModelConfig.num_heads = {N_HEAD}") == 0
    imported_gin = tmp_path / "imported" / checkpoints.GIN_NAME
    rows = (shared_data / "tasks/story_cloze/cloze_test_val__spring2016.csv").read_text(
        encoding="utf-8").splitlines()[:9]
    sample = tmp_path / "stories.csv"
    sample.write_text("\n".join(rows) + "\n", encoding="utf-8")
    steps = 4
    argv = ["--mode", "finetune", "--model_dir", str(tmp_path / "tuned"), "--task", "story_cloze",
            "--gin_file", str(imported_gin), "--gin_file", "gpt1/finetune.gin",
            "--task_files", f"story_cloze:train={sample}",
            "--task_files", f"story_cloze:validation={sample}"]
    for binding in [f"TrainConfig.init_checkpoint = '{tmp_path / 'imported'}'",
                    f"DataConfig.targets_length = {N_CTX}", f"GPT1FinetuneConfig.epochs = {steps}",
                    "GPT1FinetuneConfig.batch_size = 8", "lr.warmup_linear.peak = 0.01",
                    "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]:
        argv += ["--gin_param", binding]
    gin.clear_config()
    assert train.main(argv) == 0

    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir",
                       tmp_path / "tuned", "--export_dir", tmp_path / "exported") == 0
    exported = transformers.OpenAIGPTDoubleHeadsModel.from_pretrained(
        str(tmp_path / "exported")).eval()
    vocabulary = GPT1.vocabulary(str(tmp_path / "imported" / ENCODER))
    examples = list(discriminative.examples("story_cloze", "validation", [str(sample)]))[:4]
    head_tokens = gpt1_inputs.head_features(examples, discriminative.view("story_cloze"),
                                            vocabulary, N_CTX)["head_tokens"]
    choices = head_tokens.reshape(len(examples), 2, N_CTX)
    extract = gpt1_inputs.vocabulary_special_tokens(vocabulary).extract
    with torch.no_grad():
        out = exported(input_ids=torch.tensor(choices),
                       mc_token_ids=torch.tensor((choices == extract).argmax(-1)))
    theirs = {"logits": out.logits.numpy(), "mc_logits": out.mc_logits.numpy()}

    # Ours, configured as the export is: the fine-tuned run's recorded settings.
    gin.clear_config()
    runs.apply_recorded_bindings(str(tmp_path / "tuned"))
    conversion = convert.resolve("gpt1", "hf", "export").conversion()
    assert conversion.model_class == "OpenAIGPTDoubleHeadsModel"
    ours = checkpoints.checkpoint_outputs(conversion, ModelConfig(), str(tmp_path / "tuned"),
                                          {"head_tokens": head_tokens}, vocabulary)
    assert ours["logits"].shape == (len(examples), 2, N_CTX, vocabulary.vocab_size)
    assert_close({"logits": ours["logits"]}, {"logits": theirs["logits"]})
    # A head a few steps from its fresh start scores small: within 1e-5 of its largest score.
    scale = np.abs(theirs["mc_logits"]).max()
    assert ours["mc_logits"].shape == (len(examples), 2) and scale > 0.01
    np.testing.assert_allclose(ours["mc_logits"], theirs["mc_logits"], rtol=0, atol=1e-5 * scale)
    # The special tokens' rows are the head's (fresh, then trained), not the import's zeros;
    # fine-tuning moved the scores from those of the fresh head at the imported weights.
    assert np.abs(exported.transformer.tokens_embed.weight[-3:].detach().numpy()).min() > 0
    fresh = checkpoints.checkpoint_outputs(conversion, ModelConfig(),
                                           str(tmp_path / "tuned" / "model.ckpt-0"),
                                           {"head_tokens": head_tokens}, vocabulary)["mc_logits"]
    assert np.abs(fresh - ours["mc_logits"]).max() > 0.1 * np.abs(ours["mc_logits"]).max()
