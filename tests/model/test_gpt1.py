"""GPT-1 (model/families/gpt1/model.py) and the discriminative views of tasks it fine-tunes on
(model/tasks/discriminative.py)."""
import contextlib
import dataclasses
import io
import json
import pathlib

import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model import families
from model import tasks, train
from model.data.features import PACKING_WINDOW
from model.families.gpt1 import finetune as gpt1_finetune
from model.families.gpt1 import inputs as gpt1_inputs
from model.families.gpt1 import model as gpt1
from model.tasks import discriminative
from model.trainer import runs
from model.trainer.hooks import LOSS_LOG_NAME
from tests.support.mtf_optimizer import optimizer_steps
from tests.support.streams import training_batches


# --- discriminative views ------------------------------------------------------------------

def test_every_view_of_a_registry_task_converts_its_release_files(shared_data):
    files = {"glue_rte": ("glue_rte/train.tsv", "train"),
             "glue_mrpc": ("glue_mrpc/dev.tsv", "validation"),
             "glue_stsb": ("glue_stsb/train.tsv", "train"),
             "glue_qqp": ("glue_qqp/train.tsv", "train"),
             "super_glue_boolq": ("superglue_boolq/boolq.jsonl", "train"),
             "super_glue_cb": ("superglue_cb/train.jsonl", "train"),
             "super_glue_copa": ("superglue_copa/train.jsonl", "train")}
    for name, (path, split) in files.items():
        view = discriminative.view(name)
        raws = list(tasks.get(name).local_examples(str(shared_data / "tasks" / path)))
        examples = list(discriminative.examples(name, split, [str(shared_data / "tasks" / path)]))
        assert len(examples) == len(raws) > 0
        for raw, example in zip(raws, examples):
            assert example.label == raw["label"]
            if view.kind == discriminative.MULTIPLE_CHOICE:
                assert len(example.choices) == view.num_classes and len(example.segments) == 1
            else:
                assert example.choices == () and all(s in raw.values() for s in example.segments)
    stsb = next(discriminative.examples("glue_stsb", "train",
                                        [str(shared_data / "tasks/glue_stsb/train.tsv")]))
    assert isinstance(stsb.label, float) and discriminative.view("glue_stsb").kind == "regression"
    assert {n for n, v in discriminative.VIEWS.items() if v.symmetric} == {"glue_mrpc", "glue_qqp",
                                                                         "glue_stsb"}


def test_views_name_fields_in_reading_order():
    mnli = discriminative.view("glue_mnli").convert(
        {"premise": "P.", "hypothesis": "H.", "label": 2, "idx": 0})
    assert mnli == discriminative.Example(("P.", "H."), 2)
    copa = discriminative.view("super_glue_copa").convert(
        {"premise": "The man fell.", "question": "cause", "choice1": "He slipped.",
         "choice2": "He sang.", "label": 0, "idx": 3})
    assert copa == discriminative.Example(("The man fell. cause",), 0, ("He slipped.", "He sang."))


def test_story_cloze_and_race_read_their_release_files(shared_data):
    stories = list(discriminative.examples(
        "story_cloze", "validation",
        [str(shared_data / "tasks/story_cloze/cloze_test_val__spring2016.csv")]))
    assert stories[0].segments[0].startswith("Rick grew up in a troubled household. He never")
    assert stories[0].choices == ("He is happy now.", "He joined a gang.") and stories[0].label == 0
    race = list(discriminative.examples("race", "dev", [str(shared_data / "tasks/race/RACE/dev")]))
    assert race and all(len(e.choices) == 4 and 0 <= e.label < 4 for e in race)
    with pytest.raises(ValueError, match="release files"):
        discriminative.examples("race", "dev")


def test_a_task_without_view_is_a_clear_error():
    with pytest.raises(KeyError, match="no discriminative view.*glue_rte"):
        discriminative.view("squad_v1")


@pytest.mark.parametrize("count, epochs, batch_size", [
    (20, 3.0, 32), (100, 3.0, 32), (64, 3.0, 32), (1, 0.5, 32), (33, 1.0, 32)])
def test_finetuning_steps_make_the_epochs_over_the_batch_actually_used(count, epochs, batch_size):
    config = gpt1_finetune.GPT1FinetuneConfig(epochs=epochs, batch_size=batch_size)
    batch, steps = gpt1_finetune.batch_and_steps(config, count)
    assert batch == min(batch_size, count)
    # The fewest steps whose examples cover the epochs (at least one step).
    assert steps >= 1 and steps * batch >= epochs * count
    assert steps == 1 or (steps - 1) * batch < epochs * count
    if count < batch_size:  # a small task: one batch is one epoch
        assert steps == max(1, int(np.ceil(epochs)))


# --- GPT-1: architecture ------------------------------------------------------------------

@pytest.fixture
def gpt1_sizes(clean_gin):
    """ModelConfig as gin/gpt1/base.gin binds it."""
    from model.trainer.model_config import ModelConfig
    runs.parse_gin(["gpt1/base.gin"], [])
    return ModelConfig()


def test_base_parameter_count_equals_transformers_openai_gpt(gpt1_sizes):
    torch = pytest.importorskip("torch")
    from transformers import OpenAIGPTConfig, OpenAIGPTModel
    assert (gpt1_sizes.num_layers, gpt1_sizes.d_model, gpt1_sizes.num_heads, gpt1_sizes.d_ff) == \
        (12, 768, 12, 3072)
    for d_model, d_ff, heads, layers, vocab in [(768, 3072, 12, 12, 40478), (32, 128, 4, 2, 1100)]:
        config = dataclasses.replace(gpt1_sizes, d_model=d_model, d_ff=d_ff, num_heads=heads,
                                     d_kv=d_model // heads, num_layers=layers)
        with torch.device("meta"):  # shapes only, no memory
            reference = OpenAIGPTModel(OpenAIGPTConfig(
                vocab_size=vocab, n_positions=512, n_embd=d_model, n_layer=layers, n_head=heads))
        expected = sum(p.numel() for p in reference.parameters())
        assert gpt1.count_parameters(config, vocab) == expected
    assert expected != gpt1.count_parameters(config, vocab, gpt1.GPT1Config(max_positions=256))
    assert gpt1.count_parameters(gpt1_sizes, 40478) == 116_534_784  # the paper's "117M"


def test_modified_l2_decays_weights_not_biases_or_gains(gpt1_sizes):
    from model.trainer.mtf_compat import mtf
    config = dataclasses.replace(gpt1_sizes, d_model=16, d_ff=32, num_heads=2, d_kv=8,
                                 num_layers=1)
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    tokens = mtf.ones(mesh, mtf.Shape([mtf.Dimension("batch", 1), mtf.Dimension("length", 4)]),
                      dtype=tf.int32)
    model = gpt1.GPT1Model(config, gpt1.GPT1Config(), 64, False, mtf.VariableDType())
    model.logits(model.hidden_states(tokens, tokens, tokens))
    decayed = {v.name for v in graph.trainable_variables if gpt1.is_weight(v.name)}
    kept = {v.name for v in graph.trainable_variables} - decayed
    assert all(name.endswith(("/kernel", "_embedding")) for name in decayed)
    assert "gpt1/block_000/attention/q/kernel" in decayed and "gpt1/token_embedding" in decayed
    assert all(name.endswith(("/bias", "/g", "/b")) for name in kept)
    assert "gpt1/block_000/attention/q/bias" in kept  # a [heads, d_kv] matrix, still a bias
    assert "gpt1/block_000/mlp_norm/g" in kept


def openai_adam_steps(params, gradient, steps, lr, b1=0.9, b2=0.999, e=1e-8, l2=0.01):
    """A numpy restatement of `adam` in openai/finetune-transformer-lm's opt.py (vector_l2 off,
    constant schedule): lrt = lr * sqrt(1 - b2^t) / (1 - b1^t) scales both the Adam step and the
    L2 term `l2 * p`, which only parameters of rank > 1 get. `gradient(params)` gives the
    gradients; returns the parameters after each step."""
    m = {k: np.zeros_like(p) for k, p in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    history = []
    for t in range(1, steps + 1):
        grads = gradient(params)
        lrt = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        new = {}
        for k, p in params.items():
            m[k] = b1 * m[k] + (1 - b1) * grads[k]
            v[k] = b2 * v[k] + (1 - b2) * grads[k] * grads[k]
            decay = l2 * p if p.ndim > 1 else 0.0
            new[k] = p - lrt * (m[k] / (np.sqrt(v[k]) + e) + decay)
        params = new
        history.append(params)
    return history


def test_gpt_adam_updates_as_openai_opt_py():
    """GPTAdam over 12 steps equals OpenAI's `adam` (opt.py) on the same loss: the decay of a
    weight is scaled by the bias-corrected step size as the Adam step is (unscaled, it is 3.2x
    OpenAI's at step 1), a bias is not decayed, and epsilon sits outside the bias correction."""
    from model.trainer.mtf_compat import mtf
    rng = np.random.RandomState(0)
    start = {"w/kernel": rng.normal(size=(3, 4)).astype(np.float32),
             "w/bias": rng.normal(size=(4,)).astype(np.float32)}
    x = rng.normal(size=(3,)).astype(np.float32)
    target = rng.normal(size=(4,)).astype(np.float32)
    # A tiny gradient on one entry, where epsilon's place in the formula shows.
    scale = np.ones((3, 4), np.float32)
    scale[0, 0] = 1e-6

    def gradient(params):  # of sum((x @ (scale * kernel) + bias - target)^2)
        residual = 2 * (x @ (scale * params["w/kernel"]) + params["w/bias"] - target)
        return {"w/kernel": scale * np.outer(x, residual), "w/bias": residual}

    steps, lr = 12, 0.05
    # In float64: what remains is TF's float32 rounding (~1e-6 after 12 steps of 0.05), far
    # below the departures (3e-4 for the decay, 1e-2 for epsilon, at step 1).
    expected = openai_adam_steps({k: p.astype(np.float64) for k, p in start.items()}, gradient,
                                 steps, lr)
    rows, cols = mtf.Dimension("rows", 3), mtf.Dimension("cols", 4)

    def loss(mesh, variables):
        inputs = mtf.import_tf_tensor(mesh, tf.constant(x), mtf.Shape([rows]))
        scaled = variables["w/kernel"] * mtf.import_tf_tensor(mesh, tf.constant(scale),
                                                              mtf.Shape([rows, cols]))
        prediction = mtf.einsum([inputs, scaled], reduced_dims=[rows]) + variables["w/bias"]
        return mtf.reduce_sum(mtf.square(
            prediction - mtf.import_tf_tensor(mesh, tf.constant(target), mtf.Shape([cols]))))

    got = optimizer_steps(lambda: gpt1.GPTAdam(tf.constant(lr), weight_decay=0.01),
                          {"w/kernel": mtf.Shape([rows, cols]), "w/bias": mtf.Shape([cols])},
                          start, loss, steps)
    for step in range(steps):
        for name in start:
            np.testing.assert_allclose(got[step][name], expected[step][name], rtol=0, atol=1e-5,
                                       err_msg=f"{name} at step {step + 1}")


def test_schedules_warm_up_then_decay_to_zero():
    from model.trainer import schedules
    with tf.Graph().as_default(), tf.Session() as session:
        cosine = [session.run(schedules.warmup_cosine(tf.constant(s), 110, peak=1.0,
                                                      warmup_steps=10))
                  for s in (0, 5, 10, 60, 110)]
        linear = [session.run(schedules.warmup_linear(tf.constant(s), 100, peak=1.0,
                                                      warmup_fraction=0.1))
                  for s in (0, 5, 10, 55, 100)]
    assert cosine == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0], abs=1e-6)
    assert linear == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0], abs=1e-6)


# --- GPT-1: input transformations ---------------------------------------------------------

WORDS = {"a": 10, "good": 11, "film": 12, "it": 13, "rains": 14, "wet": 15, "dry": 16,
         "ground": 17, "is": 18, "why": 19}
S, D, E = dataclasses.astuple(gpt1_inputs.special_tokens(1100))  # start, delimiter, extract


def encode(text):
    return [WORDS[word] for word in text.split()]


def transformed(task, example, length=16):
    return gpt1_inputs.transform(example, discriminative.view(task), encode, gpt1_inputs.special_tokens(1100),
                          length)


def test_special_tokens_are_the_vocabulary_special_pieces(shared_data):
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    special = gpt1_inputs.special_tokens(vocabulary.vocab_size)
    assert [vocabulary.decode([i]) for i in (special.start, special.delimiter, special.extract)] \
        == ["<extra_id_0>", "<extra_id_1>", "<extra_id_2>"]
    assert (special.start, special.delimiter, special.extract) == (S, D, E) == (1099, 1098, 1097)


def test_each_transformation_by_example():
    # Classification: start text extract.
    assert transformed("glue_sst2", discriminative.Example(("a good film",), 1)) == \
        [[S, 10, 11, 12, E]]
    # Entailment: start premise delimiter hypothesis extract.
    assert transformed("glue_rte", discriminative.Example(("it rains", "ground is wet"), 0)) == \
        [[S, 13, 14, D, 17, 18, 15, E]]
    # Similarity: both orders.
    assert transformed("glue_mrpc", discriminative.Example(("it rains", "ground is wet"), 1)) == \
        [[S, 13, 14, D, 17, 18, 15, E], [S, 17, 18, 15, D, 13, 14, E]]
    # Multiple choice: start context delimiter answer extract, one per answer.
    copa = discriminative.view("super_glue_copa").convert(
        {"premise": "ground is", "question": "why", "choice1": "wet", "choice2": "dry",
         "label": 0, "idx": 0})
    assert transformed("super_glue_copa", copa) == [[S, 17, 18, 19, D, 15, E],
                                                    [S, 17, 18, 19, D, 16, E]]


def test_long_segments_are_cut_from_the_longest_keeping_special_tokens():
    example = discriminative.Example(("a good film " * 4, "it rains"), 0)
    (sequence,) = transformed("glue_rte", example, length=10)
    assert sequence == [S, 10, 11, 12, 10, 11, D, 13, 14, E]


def test_a_choice_sequence_gives_way_in_its_article_first():
    """Even where the question is the longest part left, the article gives way: start, 2 of the
    article's 6 tokens, the 4 of the question, delimiter, answer, extract."""
    race = discriminative.Example(("a good film a good film", "why is it wet"), 0,
                                  ("dry", "wet", "dry", "wet"))
    assert transformed("race", race, length=10)[:2] == [[S, 10, 11, 19, 18, 13, 15, D, 16, E],
                                                       [S, 10, 11, 19, 18, 13, 15, D, 15, E]]


def test_race_keeps_question_and_answer_and_trims_the_article(shared_data, vocabulary,
                                                              tmp_path):
    """RACE as the paper's `[z; q; $; a_k]` (Radford et al. 2018, Section 3.3): start, article,
    question, delimiter, answer, extract. A 600-word article (real RACE articles one after the
    other, with the first one's real question and options) is cut from its end; the question and
    every answer survive whole in the 512-token sequences."""
    files = sorted((shared_data / "tasks/race/RACE").rglob("*.txt"))
    articles = [json.loads(path.read_text()) for path in files]
    first = articles[0]
    words = []
    for article in articles:
        words += article["article"].split()
        if len(words) >= 600:
            break
    long_article = " ".join(words)
    race_file = tmp_path / "600.txt"
    race_file.write_text(json.dumps({**first, "article": long_article,
                                     "questions": first["questions"][:1],
                                     "options": first["options"][:1],
                                     "answers": first["answers"][:1]}))
    (example,) = discriminative.examples("race", "dev", [str(race_file)])
    view = discriminative.view("race")
    rows = gpt1_inputs.head_features([example], view, vocabulary, 512)
    article, question = (vocabulary.encode(text) for text in (long_article, first["questions"][0]))
    assert len(article) > 512 and len(question) >= 5
    for choice, sequence in zip(example.choices, rows["head_tokens"][0].reshape(4, 512).tolist()):
        answer = vocabulary.encode(choice)
        kept = 512 - 3 - len(question) - len(answer)
        assert sequence == [S] + article[:kept] + question + [D] + answer + [E]
    assert rows["label"].tolist() == [["ABCD".index(first["answers"][0])]]


def test_head_features_pad_each_sequence_to_the_length(shared_data):
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    view = discriminative.view("glue_qqp")
    examples = [discriminative.Example(("Is it?", "Is it not?"), 1)]
    rows = gpt1_inputs.head_features(examples, view, vocabulary, 12)
    assert rows["head_tokens"].shape == (1, 24) and rows["label"].tolist() == [[1]]
    first, second = rows["head_tokens"][0, :12], rows["head_tokens"][0, 12:]
    for row, (a, b) in ((first, ("Is it?", "Is it not?")), (second, ("Is it not?", "Is it?"))):
        expected = [S] + vocabulary.encode(a) + [D] + vocabulary.encode(b) + [E]
        assert row.tolist() == expected + [0] * (12 - len(expected))


def test_stsb_features_are_both_orders_and_the_float_score(shared_data, vocabulary):
    path = str(shared_data / "tasks/glue_stsb/train.tsv")
    first, second = list(discriminative.examples("glue_stsb", "train", [path]))[:2]
    assert first.segments == ("A plane is taking off.", "An air plane is taking off.")
    rows = gpt1_inputs.head_features([first, second], discriminative.view("glue_stsb"), vocabulary, 40)
    a, b = (vocabulary.encode(text) for text in first.segments)
    for order, (x, y) in enumerate(((a, b), (b, a))):
        expected = [S] + x + [D] + y + [E]
        assert rows["head_tokens"][0, order * 40:(order + 1) * 40].tolist() == \
            expected + [0] * (40 - len(expected))
    # The label keeps its fraction (3.8), which an int32 feature would drop.
    assert rows["label"].dtype == np.float32 and rows["label"][:, 0].tolist() == \
        pytest.approx([5.0, 3.8])


# --- GPT-1: training through the trainer ----------------------------------------------------

TINY_RUN = ["DataConfig.targets_length = 64", "TrainConfig.tokens_per_batch = 512",
            "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1",
            "TrainConfig.save_checkpoints_steps = 20", "ModelConfig.dropout_rate = 0.0"]
PRETRAIN_STEPS = 40
FINETUNE_STEPS = 45  # 16 examples, one batch per epoch


def logged_losses(model_dir) -> dict:
    lines = (pathlib.Path(model_dir) / LOSS_LOG_NAME).read_text().splitlines()
    return {entry["step"]: entry["loss"] for entry in map(json.loads, lines)}


def configure(model_dir, gin_files, bindings) -> runs.Run:
    gin.clear_config()
    runs.parse_gin(gin_files, bindings)
    return families.configured_run(str(model_dir))


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    from tests.support.trained_vocab import trained_vocabulary
    return trained_vocabulary(shared_data)


@pytest.fixture(scope="module")
def pretrained(shared_data, vocabulary, tmp_path_factory):
    """Tiny GPT-1 pre-trained on real C4 pages (the shared sample) by the command line, in two
    runs of 20 steps: the second resumes from the first's checkpoint (the schedule's length is
    bound: both runs are on one 40-step schedule)."""
    model_dir = tmp_path_factory.mktemp("gpt1_pretrained")
    source = shared_data / "c4_samples/olmo/c4-sample.01.json.gz"
    bindings = [f"DataConfig.vocabulary = '{vocabulary.path}'", f"DataConfig.source = '{source}'",
                f"lr.warmup_cosine.total_steps = {PRETRAIN_STEPS}", "lr.warmup_cosine.peak = 0.003",
                "lr.warmup_cosine.warmup_steps = 5"] + TINY_RUN
    steps = []
    gin.clear_config()
    for train_steps in (PRETRAIN_STEPS // 2, PRETRAIN_STEPS):
        argv = ["--mode", "pretrain", "--model_dir", str(model_dir),
                "--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/pretrain.gin"]
        for binding in bindings + [f"TrainConfig.train_steps = {train_steps}"]:
            argv += ["--gin_param", binding]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert train.main(argv) == 0
        steps.append(json.loads(out.getvalue())["step"])
    gin.clear_config()
    return model_dir, steps


def test_pretraining_on_c4_lowers_the_loss_and_resumes(pretrained):
    model_dir, steps = pretrained
    assert steps == [PRETRAIN_STEPS // 2, PRETRAIN_STEPS]
    losses = logged_losses(model_dir)
    assert sorted(losses) == list(range(1, PRETRAIN_STEPS + 1))
    first = np.mean([losses[s] for s in (1, 2, 3)])
    last = np.mean([losses[s] for s in range(PRETRAIN_STEPS - 2, PRETRAIN_STEPS + 1)])
    assert first == pytest.approx(np.log(1100), rel=0.05)  # uniform over the vocabulary at first
    assert last < first - 1.0
    names = {name for name, _ in tf.train.list_variables(str(model_dir))}
    assert {"gpt1/position_embedding", "gpt1/block_001/mlp_norm/g",
            "gpt1/token_embedding/adam_v"} <= names


def test_the_hf_export_carries_a_tokenizer_of_our_sentencepiece_ids(pretrained, vocabulary,
                                                                     shared_data, tmp_path):
    """The pre-trained model exported to transformers: AutoTokenizer (T5TokenizerFast, as T5's
    export: the SentencePiece model with our sentinels as its extra ids) gives our ids on real
    text, each followed by EOS as in our pre-training stream, and GPT-1's special tokens
    (sentinels) their ids."""
    import transformers
    from model.data.vocabulary import EOS_ID
    from tests.support.convert import run_convert
    from tests.support.texts import real_texts
    model_dir, _ = pretrained
    assert run_convert("export", "--family", "gpt1", "--format", "hf", "--model_dir", model_dir,
                       "--export_dir", tmp_path) == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert isinstance(tokenizer, transformers.T5TokenizerFast)
    assert len(tokenizer) == vocabulary.vocab_size
    special = gpt1_inputs.vocabulary_special_tokens(vocabulary)
    assert tokenizer.convert_tokens_to_ids(["<extra_id_0>", "<extra_id_1>", "<extra_id_2>"]) == \
        [special.start, special.delimiter, special.extract]
    for text in real_texts(shared_data):
        assert tokenizer(text).input_ids == vocabulary.encode(text) + [EOS_ID], text[:80]


# --- GPT-1: the pre-training stream -------------------------------------------------------

STREAM_LENGTHS = {"inputs": 64, "targets": 64}
STREAM_BATCH = 8


def gpt1_stream(shared_data, vocabulary, shuffle_windows, seed=0):
    from model.data import features, inputs
    return inputs.PretrainingStream(
        str(shared_data / "c4_samples/olmo/*.json*.gz"), shuffle_windows, vocabulary=vocabulary,
        objective="lm", sequence_lengths=STREAM_LENGTHS, converter=features.DecoderOnlyConverter,
        seed=seed)


def epoch_rows(stream, epochs=1):
    """(row tokens, position) of the stream's first `epochs` epochs, a list per epoch."""
    rows = [[] for _ in range(epochs)]
    for row, position in stream.rows().as_numpy_iterator():
        if position["epoch"] == epochs:
            return rows
        rows[position["epoch"]].append((tuple(row["decoder_target_tokens"].tolist()), position))
    raise AssertionError("the stream ended")


def test_pretraining_rows_are_shuffled_within_seeded_blocks(shared_data, vocabulary):
    """GPT-1 trains on randomly sampled minibatches (Radford et al. 2018, Section 4.1): the
    stream's rows come in a seeded random order within blocks of `shuffle_windows` packing
    windows, each block holding exactly the rows of its windows in document order; every epoch
    in another order."""
    (in_order,) = epoch_rows(gpt1_stream(shared_data, vocabulary, 0))
    shuffled, next_epoch = epoch_rows(gpt1_stream(shared_data, vocabulary, 2), epochs=2)
    windows = sorted({int(p["example"]) for _, p in in_order})
    assert len(windows) >= 3  # a block of two windows, and the last one of what is left
    for block in range(0, len(windows), 2):
        first, members = windows[block], set(windows[block:block + 2])
        expected = [row for row, p in in_order if int(p["example"]) in members]
        got = [row for row, p in shuffled if int(p["example"]) == first]
        assert sorted(got) == sorted(expected) and got != expected
        assert [int(p["row"]) for _, p in shuffled if int(p["example"]) == first] == \
            list(range(len(got)))
    rows = [row for row, _ in shuffled]
    assert sorted(row for row, _ in next_epoch) == sorted(rows) and \
        [row for row, _ in next_epoch] != rows
    other_seed = gpt1_stream(shared_data, vocabulary, 2, seed=1).rows().take(20)
    assert [tuple(r["decoder_target_tokens"].tolist()) for r, _ in
            other_seed.as_numpy_iterator()] != rows[:20]


def stream_batches(stream, model_dir, start_step, count):
    return training_batches(stream, STREAM_BATCH, model_dir, start_step, count, record_every=7)


def test_a_resumed_shuffled_stream_sees_the_batches_of_an_uninterrupted_run(shared_data,
                                                                           vocabulary, tmp_path):
    """Resume at recorded steps (mid-block, the next epoch) and an unrecorded one: the same
    batches, in the same shuffled order, as one run (model/data/input_position.py)."""
    from model.data import input_position
    stream = gpt1_stream(shared_data, vocabulary, 2)
    rows_per_epoch = sum(1 for _ in stream())
    total = rows_per_epoch // STREAM_BATCH + 10  # into the second epoch
    uninterrupted = stream_batches(stream, tmp_path, 0, total)
    records = sorted((tmp_path / input_position.RECORD_DIR).glob("step-*.json"))
    positions = [json.loads(r.read_text())["position"] for r in records]
    assert {p["epoch"] for p in positions} == {0, 1}
    assert any(p["row"] > PACKING_WINDOW for p in positions)  # past a block's first window
    for step in (7, 7 * (total // 14), 7 * (total // 7), 7 * (total // 7) - 3):
        count = min(5, total - step)
        assert stream_batches(stream, tmp_path, step, count) == uninterrupted[step:step + count]


def test_gpt1_pretraining_turns_the_shuffle_on_and_t5_keeps_document_order(shared_data,
                                                                           vocabulary, tmp_path,
                                                                           clean_gin):
    settings = [f"DataConfig.vocabulary = '{vocabulary.path}'",
                f"DataConfig.source = '{shared_data / 'c4_samples/olmo/c4-sample.01.json.gz'}'"]
    gpt1_run = configure(tmp_path, ["pretrain.gin", "gpt1/tiny.gin", "gpt1/pretrain.gin"],
                         settings)
    assert gpt1_run.training_examples().shuffle_windows == 64
    assert gpt1_run.training_examples().identity()["shuffle_windows"] == 64
    t5_run = configure(tmp_path, ["pretrain.gin", "sizes/small.gin"], settings)
    assert t5_run.training_examples().shuffle_windows == 0
    assert "shuffle_windows" not in t5_run.training_examples().identity()


def synthetic_lm_examples(num=16, length=16, seed=0):
    rng = np.random.RandomState(seed)
    tokens = rng.randint(3, 150, size=(num, length)).astype(np.int32)
    features = {"decoder_target_tokens": tokens,
                "decoder_input_tokens": np.pad(tokens[:, :-1], [(0, 0), (1, 0)]),
                "decoder_segment_ids": np.ones_like(tokens),
                "decoder_positions": np.tile(np.arange(length, dtype=np.int32), (num, 1)),
                "decoder_loss_weights": np.ones_like(tokens)}
    return lambda: tf.data.Dataset.from_tensor_slices(features)


def mesh_losses(mesh_shape, model_dir) -> dict:
    """Three steps' losses. The learning rate is small: Adam's normalised update turns float
    noise in near-zero gradients into full steps, so at 1e-2 the meshes' losses (equal at step 1)
    part by ~1e-3 after two updates."""
    run = configure(model_dir, ["pretrain.gin", "gpt1/tiny.gin", "gpt1/pretrain.gin"],
                    TINY_RUN + ["TrainConfig.tokens_per_batch = 64",
                                "lr.warmup_cosine.peak = 0.001",
                                "lr.warmup_cosine.warmup_steps = 1",
                                f"MeshConfig.mesh_shape = '{mesh_shape}'"])
    runs.train(run, synthetic_lm_examples(), vocab_size=200, max_steps=3)
    gin.clear_config()
    return logged_losses(model_dir)


@pytest.fixture(scope="module")
def one_device_losses(tmp_path_factory):
    return mesh_losses("", tmp_path_factory.mktemp("gpt1_one_device"))


# model:2 splits heads, d_ff and vocab (the embedding gather, the tied logits); batch:2 the batch
# (the only check of GPT-1's data parallelism).
@pytest.mark.parametrize("mesh_shape", ["model:2", "batch:2"])
def test_two_device_meshes_match_one_device(tmp_path, one_device_losses, mesh_shape):
    single = one_device_losses
    parallel = mesh_losses(mesh_shape, tmp_path)
    assert sorted(single) == [1, 2, 3] and single[3] < single[1]
    for step in single:
        assert parallel[step] == pytest.approx(single[step], rel=1e-3), (single, parallel)


def test_tpu_path_graph_builds(tmp_path, clean_gin):
    """The TRAIN spec as TPUEstimator builds it (use_tpu=False, the same model function), with
    bfloat16 activations as on TPU, for pre-training, a multiple-choice head and a regression
    head (its float label imported as float32)."""
    from model.trainer.mesh import MeshConfig
    from model.trainer.model_config import ModelConfig
    from model.trainer.model_fn import ModelFnSetup, OptimizationConfig, PrecisionConfig, make_model_fn
    runs.parse_gin(["gpt1/tiny.gin", "gpt1/pretrain.gin"],
                    ["lr.warmup_cosine.warmup_steps = 2"])
    for head in ([], ["GPT1Config.head = 'multiple_choice'", "GPT1Config.num_classes = 2",
                      "GPT1Config.sequences_per_example = 2"],
                 ["GPT1Config.head = 'regression'", "GPT1Config.num_classes = 1"]):
        gin.parse_config(head)
        family = families.family_class(ModelConfig().architecture)
        setup = ModelFnSetup(
            family_class=family, model_config=ModelConfig(), mesh_config=MeshConfig(),
            optimization=OptimizationConfig(), vocab_size=128, model_dir=str(tmp_path),
            save_checkpoints_steps=10, keep_checkpoint_max=1, decode_length=4, train_steps=10,
            precision=PrecisionConfig(activation_dtype="bfloat16"),
            family_config=family.configured_family_config())
        with tf.Graph().as_default():
            shapes = {"head_tokens": [2, 16], "label": [2, 1]}
            float_keys = setup.family.float_feature_keys
            features = {key: tf.fill(shapes.get(key, [2, 8]), 2.5 if key in float_keys else 1)
                        for key in setup.family.feature_keys}
            spec = make_model_fn(setup)(features, None, tf.estimator.ModeKeys.TRAIN, {})
            assert spec.loss.dtype == tf.float32 and spec.train_op is not None
            assert any(op.type == "Cast" and op.get_attr("DstT") == tf.bfloat16
                       for op in tf.get_default_graph().get_operations())
            assert not tf.get_collection(tf.GraphKeys.SAVERS)  # the saver is the scaffold's
            assert ("head_tokens" in features) == bool(head)
            assert float_keys == (("label",) if "regression" in str(head) else ())


# --- GPT-1: fine-tuning with a head -------------------------------------------------------

def fresh_head_outputs(task, examples, vocabulary, length, fetch, seed=0, embedding_stddev=None):
    """`fetch(family, model, batch)` (mtf tensors) on a freshly initialised tiny model with the
    head of `task`'s view, fed `examples`, as numpy. `embedding_stddev` redraws the token
    embedding wider than GPT-1's 0.02, so that the LM's token losses differ visibly."""
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.model_config import ModelConfig
    from model.trainer.model_fn import import_features
    from model.trainer.mtf_compat import mtf
    view = discriminative.view(task)
    gin.clear_config()
    runs.parse_gin(["gpt1/tiny.gin"], ["ModelConfig.dropout_rate = 0.0"])
    family = gpt1.GPT1(ModelConfig(), vocabulary.vocab_size, family_config=dataclasses.replace(
        gpt1.GPT1Config(), head=view.kind, num_classes=view.num_classes,
        sequences_per_example=gpt1_inputs.sequences_per_example(view)))
    rows = gpt1_inputs.head_features(examples, view, vocabulary, length)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        batch = import_features({k: tf.constant(v) for k, v in rows.items()}, family.feature_keys,
                                mesh, family.float_feature_keys)
        tensors = fetch(family, family.build(False), batch)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        results = [lowering.export_to_tf_tensor(t) for t in tensors]
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            if embedding_stddev:
                (embedding,) = [v for v in tf.global_variables()
                                if v.op.name == "gpt1/token_embedding"]
                session.run(embedding.assign(
                    tf.random.normal(embedding.shape, stddev=embedding_stddev, seed=seed)))
            session.run(lowering.copy_masters_to_slices())
            return session.run(results)


def head_losses(task, examples, vocabulary, length=24, seed=0):
    """Per-example classification losses of a freshly initialised tiny model with a head."""
    def fetch(family, model, batch):
        return [family.losses(model, batch, "eval").metrics["classification_loss"][0]]
    return fresh_head_outputs(task, examples, vocabulary, length, fetch, seed)[0]


def test_similarity_adds_both_orders_and_choices_are_scored_alike(vocabulary, clean_gin):
    a, b = "The cat sat on the mat.", "A dog ran in the park today."
    pair, swapped = discriminative.Example((a, b), 1), discriminative.Example((b, a), 1)
    symmetric = head_losses("glue_mrpc", [pair, swapped], vocabulary)
    # At initialisation the head's logits are small (weights of 0.02): ordered pairs' losses
    # differ from the sixth digit on, far above float noise (< 1e-7).
    assert abs(symmetric[0] - symmetric[1]) < 1e-7
    ordered = head_losses("glue_rte", [pair, swapped], vocabulary)
    assert abs(ordered[0] - ordered[1]) > 1e-6
    # Softmax over answers: the same answers in another order, with the label following.
    choices = ("He slipped on the ice.", "He sang a song.")
    context = ("The man fell. cause",)
    mc = head_losses("super_glue_copa", [discriminative.Example(context, 0, choices),
                                         discriminative.Example(context, 1, choices[::-1])],
                     vocabulary)
    assert abs(mc[0] - mc[1]) < 1e-7 and mc[0] > 0


def regression_outputs(examples, vocabulary, length=40):
    """A fresh tiny model's regression head on `examples`: predicted values (the PREDICT path),
    per-example squared errors, the loss and the objective (the EVAL path), as numpy."""
    def fetch(family, model, batch):
        losses = family.losses(model, batch, "eval")
        with tf.variable_scope("", reuse=True):
            values = family.predict(model, batch["head_tokens"], decode_length=1)
        return [values, losses.metrics["squared_error"][0], losses.loss, losses.objective]
    return fresh_head_outputs("glue_stsb", examples, vocabulary, length, fetch)


def test_regression_head_loss_is_the_squared_error_plus_half_the_lm_loss(vocabulary, clean_gin):
    a, b = "A plane is taking off.", "An air plane is taking off."
    examples = [discriminative.Example((a, b), 3.8), discriminative.Example((b, a), 1.25)]
    values, squared_error, loss, objective = regression_outputs(examples, vocabulary)
    assert values.shape == (2, 1) and values.dtype == np.float32
    # The similarity transformation: both orders, states added, so a swapped pair scores alike.
    assert values[0, 0] == pytest.approx(values[1, 0], abs=1e-6)
    labels = np.array([3.8, 1.25])
    assert squared_error == pytest.approx((values[:, 0] - labels) ** 2, rel=1e-5)
    assert loss == pytest.approx(np.mean((values[:, 0] - labels) ** 2), rel=1e-5)
    # The LM auxiliary loss at weight 0.5: a fresh model's LM loss is near log(vocabulary).
    lm = (objective - loss) / 0.5
    assert lm == pytest.approx(np.log(vocabulary.vocab_size), rel=0.05)


def openai_lm_losses(logits, tokens):
    """Per-sequence LM losses as OpenAI's train.py `model` computes them: cross entropy of the
    states at positions [:-1] against the tokens X[:, 1:], weighted by the mask M[:, 1:] (M is 1
    over start ... extract, so the delimiter and extract tokens are targets) and divided by
    M[:, 1:]'s sum. `logits` [sequences, length, vocab], `tokens` [sequences, length]."""
    mask = (tokens != 0).astype(np.float64)
    logits = logits.astype(np.float64)
    log_z = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    target = np.take_along_axis(logits[:, :-1], tokens[:, 1:, None], -1)[..., 0]
    cross_entropy = log_z[:, :-1] - target
    return (cross_entropy * mask[:, 1:]).sum(1) / mask[:, 1:].sum(1)


def test_auxiliary_lm_loss_is_openais_over_every_token_after_the_start(vocabulary, shared_data,
                                                                      clean_gin):
    """The objective adds 0.5 x the mean over sequences of OpenAI's per-sequence LM loss
    (openai/finetune-transformer-lm train.py `model`, `lm_losses`; `lm_coef` 0.5 in
    `mgpu_train`), and the special tokens' output logits come from the rows that embed them at
    the input (OpenAI's one `we` matrix, special rows appended)."""
    from model.trainer.mtf_compat import mtf
    path = str(shared_data / "tasks/superglue_copa/train.jsonl")
    examples = list(discriminative.examples("super_glue_copa", "train", [path]))[:3]

    def fetch(family, model, batch):
        losses = family.losses(model, batch, "train")
        with tf.variable_scope("", reuse=True):
            _, hidden, tokens = family._head_outputs(model, batch["head_tokens"])
            logits = model.logits(hidden)
        variables = {v.name: v.outputs[0] for v in tokens.mesh.graph.trainable_variables}
        return [losses.loss, losses.objective, mtf.cast(logits, tf.float32), hidden, tokens,
                variables["gpt1/head/special_embedding"], variables["gpt1/token_embedding"]]

    loss, objective, logits, hidden, tokens, special, pretrained = fresh_head_outputs(
        "super_glue_copa", examples, vocabulary, 64, fetch, embedding_stddev=0.5)
    sequences = tokens.reshape(-1, tokens.shape[-1])
    per_sequence = openai_lm_losses(logits.reshape(*sequences.shape, -1), sequences)
    assert objective - loss == pytest.approx(0.5 * per_sequence.mean(), rel=1e-5)
    # What the test tells apart, far beyond its tolerance: the mean over all tokens, and the
    # special tokens left out of the targets.
    mask = sequences[:, 1:] != 0
    per_token = (per_sequence * mask.sum(1)).sum() / mask.sum()
    text_only = openai_lm_losses(logits.reshape(*sequences.shape, -1),
                                 np.where(np.isin(sequences, (D, E)), 0, sequences))
    for other in (per_token, text_only.mean()):
        assert abs(other - per_sequence.mean()) > 1e-3 * per_sequence.mean()
    # Start, delimiter and extract: output rows = their input rows (special_embedding in id
    # order: extract, delimiter, start), not the pre-trained sentinels' rows.
    for row, token in enumerate((E, D, S)):
        expected = hidden @ special[row]
        np.testing.assert_allclose(logits[..., token], expected, rtol=1e-4, atol=1e-5)
        assert not np.allclose(logits[..., token], hidden @ pretrained[token], atol=1e-3)
    assert ((sequences == D).sum(1) == 1).all() and ((sequences == E).sum(1) == 1).all()


def test_head_memorises_real_copa_examples_from_the_pretrained_model(pretrained, shared_data,
                                                                     vocabulary, tmp_path,
                                                                     clean_gin):
    model_dir, _ = pretrained
    sample = tmp_path / "copa16.jsonl"
    lines = (shared_data / "tasks/superglue_copa/train.jsonl").read_text().splitlines()[:16]
    sample.write_text("\n".join(lines) + "\n")
    task_files = ["--task_files", f"super_glue_copa:train={sample}",
                  "--task_files", f"super_glue_copa:validation={sample}"]
    bindings = [f"DataConfig.vocabulary = '{vocabulary.path}'",
                f"TrainConfig.init_checkpoint = '{model_dir}'",
                "DataConfig.targets_length = 48", f"GPT1FinetuneConfig.epochs = {FINETUNE_STEPS}",
                "GPT1FinetuneConfig.batch_size = 16", "lr.warmup_linear.peak = 0.01",
                "lr.warmup_linear.warmup_fraction = 0.1", "ModelConfig.dropout_rate = 0.0",
                "GPT1Config.classifier_dropout = 0.0", "TrainConfig.save_checkpoints_steps = 30",
                "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]
    argv = ["--model_dir", str(tmp_path / "copa"), "--task", "super_glue_copa",
            "--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/finetune.gin"] + task_files
    for binding in bindings:
        argv += ["--gin_param", binding]
    assert train.main(["--mode", "finetune"] + argv) == 0
    losses = logged_losses(tmp_path / "copa")
    # Warm start restores the weights only and the step starts at 0, as OpenAI's train.py
    # (the parameters loaded, Adam at t = 0).
    assert sorted(losses) == list(range(1, FINETUNE_STEPS + 1))
    # Every checkpoint the run trained is scored (model/tasks/evaluation.py), not the warm
    # start's step 0: the newest gets every example right.
    scored = [json.loads(line) for line in (tmp_path / "copa/eval/super_glue_copa/validation"
                                            / "scores.jsonl").read_text().splitlines()]
    assert [(entry["step"], entry["accuracy"]) for entry in scored][-1] == (FINETUNE_STEPS, 100.0)
    assert [entry["step"] for entry in scored] == [30, FINETUNE_STEPS]
    # `eval` finds nothing left to score and reports the best.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert train.main(["--mode", "eval"] + argv) == 0
    best = json.loads(out.getvalue())["super_glue_copa/validation"]
    assert best["scores"] == {"accuracy": 100.0} and best["step"] in (30, FINETUNE_STEPS)
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "copa"))}
    assert {"gpt1/head/classifier/kernel", "gpt1/head/special_embedding"} <= names


STSB_STEPS = 80  # 9 pairs, one batch per epoch


def test_regression_head_memorises_real_stsb_pairs(pretrained, shared_data, vocabulary,
                                                   tmp_path, clean_gin):
    """STS-B's float scores reach the head through the command line (finetune, then eval: the
    task's Pearson and Spearman correlation of the predicted values)."""
    model_dir, _ = pretrained
    pairs = str(shared_data / "tasks/glue_stsb/train.tsv")
    bindings = [f"DataConfig.vocabulary = '{vocabulary.path}'",
                f"TrainConfig.init_checkpoint = '{model_dir}'",
                "DataConfig.targets_length = 40", f"GPT1FinetuneConfig.epochs = {STSB_STEPS}",
                "GPT1FinetuneConfig.batch_size = 9", "lr.warmup_linear.peak = 0.003",
                "lr.warmup_linear.warmup_fraction = 0.1", "ModelConfig.dropout_rate = 0.0",
                "GPT1Config.classifier_dropout = 0.0", "TrainConfig.save_checkpoints_steps = 80",
                "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1"]
    argv = ["--model_dir", str(tmp_path / "stsb"), "--task", "glue_stsb",
            "--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/finetune.gin",
            "--task_files", f"glue_stsb:train={pairs}",
            "--task_files", f"glue_stsb:validation={pairs}"]
    for binding in bindings:
        argv += ["--gin_param", binding]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert train.main(["--mode", "finetune"] + argv) == 0
    result = json.loads(out.getvalue())["glue_stsb/validation"]
    scores = result["scores"]
    assert result["step"] == STSB_STEPS
    assert scores["pearson_corrcoef"] > 95 and scores["spearman_corrcoef"] > 95, scores
    predictions = [json.loads(line) for line in (tmp_path / "stsb/eval/glue_stsb/validation" /
                                                 f"predictions-{STSB_STEPS}.jsonl").read_text().splitlines()]
    labels = [e.label for e in discriminative.examples("glue_stsb", "train", [pairs])]
    assert [p["targets"] for p in predictions] == labels and len(labels) == 9
    # Squared error far below the scores' own variance (what a constant prediction would get).
    squared_error = np.mean([(p["prediction"] - p["targets"]) ** 2 for p in predictions])
    assert squared_error < 0.1 * np.var(labels), squared_error


def test_train_vocab_bpe_option(tmp_path, shared_data, capsys):
    from sentencepiece import sentencepiece_model_pb2
    from model import train_vocab
    from model.data.vocabulary import Vocabulary
    prefix = tmp_path / "bpe"
    assert train_vocab.main(["--output", str(prefix), "--size", "300", "--sample_size", "5000",
                             "--model_type", "bpe", "--weights", "en=1",
                             "--source", f"en={shared_data}/c4_samples/olmo/*.json*.gz"]) == 0
    proto = sentencepiece_model_pb2.ModelProto.FromString((tmp_path / "bpe.model").read_bytes())
    assert proto.trainer_spec.model_type == sentencepiece_model_pb2.TrainerSpec.BPE
    assert json.loads((tmp_path / "bpe.json").read_text())["model_type"] == "bpe"
    vocabulary = Vocabulary(f"{prefix}.model")
    assert vocabulary.vocab_size == 400
    text = "The weather is nice today."
    assert vocabulary.decode(vocabulary.encode(text)) == text
