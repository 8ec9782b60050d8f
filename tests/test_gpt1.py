"""GPT-1 (model/families/gpt1.py) and the discriminative views of tasks it fine-tunes on
(model/tasks/discriminative.py)."""
import dataclasses

import pytest
import tensorflow.compat.v1 as tf

from model import tasks, train
from model.families import gpt1
from model.tasks import discriminative


# --- discriminative views ------------------------------------------------------------------

def test_every_view_of_a_registry_task_converts_its_release_files(shared_data):
    files = {"glue_rte": ("glue_rte/train.tsv", "train"), "glue_mrpc": ("glue_mrpc/dev.tsv", "validation"),
             "glue_stsb": ("glue_stsb/train.tsv", "train"), "glue_qqp": ("glue_qqp/train.tsv", "train"),
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
        "story_cloze", "validation", [str(shared_data / "tasks/story_cloze/cloze_test_val__spring2016.csv")]))
    assert stories[0].segments[0].startswith("Rick grew up in a troubled household. He never")
    assert stories[0].choices == ("He is happy now.", "He joined a gang.") and stories[0].label == 0
    race = list(discriminative.examples("race", "dev", [str(shared_data / "tasks/race/RACE/dev")]))
    assert race and all(len(e.choices) == 4 and 0 <= e.label < 4 for e in race)
    with pytest.raises(ValueError, match="release files"):
        discriminative.examples("race", "dev")


def test_a_task_without_view_is_a_clear_error():
    with pytest.raises(KeyError, match="no discriminative view.*glue_rte"):
        discriminative.view("squad_v1")


# --- GPT-1: architecture ------------------------------------------------------------------

@pytest.fixture
def gpt1_sizes(clean_gin):
    """ModelConfig as gin/gpt1/base.gin binds it."""
    from model.architectures import ModelConfig
    train.parse_gin(["gpt1/base.gin"], [])
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
    from model.mtf_compat import mtf
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


def test_schedules_warm_up_then_decay_to_zero():
    from model import schedules
    with tf.Graph().as_default(), tf.Session() as session:
        cosine = [session.run(schedules.warmup_cosine(tf.constant(s), peak=1.0, warmup_steps=10,
                                                      total_steps=110)) for s in (0, 5, 10, 60, 110)]
        linear = [session.run(schedules.warmup_linear(tf.constant(s), peak=1.0, warmup_fraction=0.1,
                                                      total_steps=100, start_step=1000))
                  for s in (1000, 1005, 1010, 1055, 1100)]
    assert cosine == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0], abs=1e-6)
    assert linear == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0], abs=1e-6)


# --- GPT-1: input transformations ---------------------------------------------------------

WORDS = {"a": 10, "good": 11, "film": 12, "it": 13, "rains": 14, "wet": 15, "dry": 16,
         "ground": 17, "is": 18, "why": 19}
S, D, E = dataclasses.astuple(gpt1.special_tokens(1100))  # start, delimiter, extract


def encode(text):
    return [WORDS[word] for word in text.split()]


def transformed(task, example, length=16):
    return gpt1.transform(example, discriminative.view(task), encode, gpt1.special_tokens(1100),
                          length)


def test_special_tokens_are_the_vocabulary_special_pieces(shared_data):
    from tests.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    special = gpt1.special_tokens(vocabulary.vocab_size)
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


def test_head_features_pad_each_sequence_to_the_length(shared_data):
    from tests.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    view = discriminative.view("glue_qqp")
    examples = [discriminative.Example(("Is it?", "Is it not?"), 1)]
    rows = gpt1.head_features(examples, view, vocabulary, 12)
    assert rows["head_tokens"].shape == (1, 24) and rows["label"].tolist() == [[1]]
    first, second = rows["head_tokens"][0, :12], rows["head_tokens"][0, 12:]
    for row, (a, b) in ((first, ("Is it?", "Is it not?")), (second, ("Is it not?", "Is it?"))):
        expected = [S] + vocabulary.encode(a) + [D] + vocabulary.encode(b) + [E]
        assert row.tolist() == expected + [0] * (12 - len(expected))
    with pytest.raises(ValueError, match="regression"):
        gpt1.head_features(examples, discriminative.view("glue_stsb"), vocabulary, 12)
