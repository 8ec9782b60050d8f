"""Pre-training objectives: exact outputs on a tiny vocabulary, invariants on real C4 text."""
import collections

import numpy as np
import pytest
import tensorflow as tf
from warcio.archiveiterator import ArchiveIterator

from model.data import objectives
from model.data.inputs import jsonl_text_dataset, tokenize
from model.trainer.gin_files import literal_bindings
from model.data.vocabulary import EOS_ID, TokenIds
from tests.support.trained_vocab import trained_vocabulary

# A tiny vocabulary: the words of the paper's Table 3 sentence are ids 10..20, sentinels 129 down.
WORDS = "Thank you for inviting me to your party last week .".split()
TINY = TokenIds(vocab_size=130)
SENTENCE = [10 + i for i in range(len(WORDS))]


def words(ids) -> str:
    def word(i):
        if i == EOS_ID:
            return "</s>"
        if i >= TINY.first_sentinel_id:
            return f"<{TINY.vocab_size - 1 - i}>"
        return WORDS[i - 10] if 10 <= i < 10 + len(WORDS) else f"#{i}"  # "#i": a random token
    return " ".join(word(int(i)) for i in ids)


def run(name, seed, tokens=SENTENCE, lengths=None, config=None):
    dataset = tf.data.Dataset.from_tensors({"targets": tf.constant(tokens, tf.int32)})
    out = objectives.apply_objective(dataset, name, lengths or {"inputs": 16, "targets": 16}, TINY, seed,
                                     config or objectives.ObjectiveConfig(noise_density=0.25, mean_noise_span_length=2))
    return [{k: v.tolist() for k, v in ex.items()} for ex in out.as_numpy_iterator()]


def test_sentinels_replace_spans_as_in_table_3():
    mask = [w in ("for", "inviting", "last") for w in WORDS]
    out = objectives.spans_to_sentinels(tf.constant(SENTENCE), tf.constant(mask), TINY)
    assert words(out["inputs"].numpy()) == "Thank you <0> me to your party <1> week ."
    assert words(out["targets"].numpy()) == "<0> for inviting <1> last <2>"


def test_no_final_sentinel_when_the_text_ends_with_a_span():
    mask = [w in ("Thank", ".") for w in WORDS]
    out = objectives.spans_to_sentinels(tf.constant(SENTENCE), tf.constant(mask), TINY)
    assert words(out["inputs"].numpy()) == "<0> you for inviting me to your party last week <1>"
    assert words(out["targets"].numpy()) == "<0> Thank <1> ."


def test_drop_tokens_as_in_table_3():
    mask = [w in ("for", "inviting", "last") for w in WORDS]
    out = objectives.drop_tokens(tf.constant(SENTENCE), tf.constant(mask))
    assert words(out["inputs"].numpy()) == "Thank you me to your party week ."
    assert words(out["targets"].numpy()) == "for inviting last"


# Outputs at 25% corruption and spans of mean length 2, for seeds 0 and 1 (checked by hand:
# rates, span counts, sentinel order, and what each objective keeps).
EXPECTED = {
    "iid_noise_sentinels": [
        ("<0> you for inviting me to your <1> last week <2> </s>", "<0> Thank <1> party <2> . </s>"),
        ("Thank you for inviting me to your party <0> week <1> </s>", "<0> last <1> . </s>")],
    # round(11 * 0.25) = 3 noisy tokens in round(3 / 2) = 2 spans, the last span at the end.
    "span_corruption": [
        ("Thank you for <0> me to your party last <1> </s>", "<0> inviting <1> week . </s>"),
        ("Thank <0> for inviting me to your party last <1> </s>", "<0> you <1> week . </s>")],
    "iid_drop": [
        ("you for inviting me to your last week </s>", "Thank party . </s>"),
        ("Thank you for inviting me to your party week </s>", "last . </s>")],
    "bert": [
        ("Thank you for inviting me to <0> party last week . </s>", " ".join(WORDS) + " </s>"),
        # Same corrupted tokens as MASS below; "Thank" drew a random token (#25) instead of <0>.
        ("#25 you for inviting me to your party last <0> . </s>", " ".join(WORDS) + " </s>")],
    "mass": [
        ("Thank you for inviting me to <0> party last week . </s>", " ".join(WORDS) + " </s>"),
        ("<0> you for inviting me to your party last <0> . </s>", " ".join(WORDS) + " </s>")],
    "prefix_lm": [
        ("Thank </s>", "you for inviting me to your party last week . </s>"),
        ("Thank you for inviting me to your party last week </s>", ". </s>")],
    "deshuffle": [
        (". party Thank me week you inviting for your last to </s>", " ".join(WORDS) + " </s>"),
        (". last me your inviting to you for party week Thank </s>", " ".join(WORDS) + " </s>")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_outputs_on_the_table_3_sentence(name, seed):
    [example] = run(name, seed)
    assert (words(example["inputs"]), words(example["targets"])) == EXPECTED[name][seed]


def test_lm_keeps_the_whole_text_as_targets():
    assert run("lm", 0, lengths={"targets": 16}) == [{"targets": SENTENCE + [EOS_ID]}]


def test_long_documents_are_split_into_chunks_and_trimmed():
    chunks = run("lm", 0, tokens=SENTENCE, lengths={"targets": 5})
    assert [c["targets"] for c in chunks] == [SENTENCE[0:4] + [1], SENTENCE[4:8] + [1], SENTENCE[8:] + [1]]


def test_span_corruption_lengths_match_t5():
    assert objectives.span_corruption_chunk_length(512, 0.15, 3.0) == (568, 114)
    with pytest.raises(ValueError, match="needs a targets length of 114"):
        run("span_corruption", 0, lengths={"inputs": 512, "targets": 64}, config=objectives.ObjectiveConfig())


@pytest.mark.parametrize("ends_with_noise", [True, False])
def test_spans_past_the_sentinel_budget_merge_and_rebuild_the_text(ends_with_noise):
    """150 one-token spans: the first ones keep their own sentinels, the rest merge into the last
    one (with the text between them), and inputs + targets still rebuild every token."""
    tokens = [3 + i % 27 for i in range(300 + (0 if ends_with_noise else 1))]  # below the sentinels
    mask = [i % 2 == 1 for i in range(len(tokens))]
    out = objectives.spans_to_sentinels(tf.constant(tokens), tf.constant(mask), TINY)
    inputs, targets = out["inputs"].numpy().tolist(), out["targets"].numpy().tolist()
    sentinels = [t for t in inputs + targets if t >= TINY.first_sentinel_id]
    assert len(set(sentinels)) == TINY.num_sentinels  # every sentinel used, none invented
    budget = TINY.num_sentinels - (0 if ends_with_noise else 1)
    assert inputs[:2 * (budget - 1)] == [t for i in range(budget - 1) for t in (tokens[2 * i], TINY.sentinel_id(i))]
    assert merge_spans(inputs, targets, TINY) == tokens


def test_many_spans_do_not_stop_an_objective():
    tokens = [3 + i % 27 for i in range(500)]
    [example] = run("iid_noise_sentinels", 0, tokens=tokens, lengths={"inputs": 512, "targets": 512},
                    config=objectives.ObjectiveConfig(noise_density=0.5))
    example = strip_eos(example)
    assert merge_spans(example["inputs"], example["targets"], TINY) == tokens


def test_each_epoch_draws_fresh_noise():
    tokens = [3 + i % 27 for i in range(100)]
    config = objectives.ObjectiveConfig()

    def corrupt(epoch):
        dataset = tf.data.Dataset.from_tensors({"targets": tf.constant(tokens, tf.int32)})
        out = objectives.apply_objective(dataset, "span_corruption", {"inputs": 128, "targets": 64}, TINY,
                                         seed=5, config=config, epoch=epoch)
        return [{k: v.tolist() for k, v in ex.items()} for ex in out.as_numpy_iterator()]

    assert corrupt(0) == run("span_corruption", 5, tokens=tokens, lengths={"inputs": 128, "targets": 64},
                             config=config)
    assert corrupt(1) == corrupt(1)
    assert len({str(corrupt(epoch)) for epoch in range(4)}) == 4


@pytest.mark.parametrize("name", ["bert", "mass", "deshuffle", "prefix_lm"])
def test_full_text_objectives_refuse_targets_shorter_than_inputs(name):
    """At T5's span corruption lengths (512/114) they would silently take 113-token chunks."""
    with pytest.raises(ValueError, match="would cut chunks of 512 input tokens to 113"):
        objectives.get_objective(name).chunk_length({"inputs": 512, "targets": 114}, objectives.ObjectiveConfig())


def test_bad_names_and_parameters_are_rejected():
    with pytest.raises(ValueError, match="unknown objective 'bogus'"):
        objectives.get_objective("bogus")
    with pytest.raises(ValueError, match="noise_density"):
        objectives.ObjectiveConfig(noise_density=1.5)


# --------------------------------------------------------------------------------------------
# Invariants on real text.

LENGTHS = {"inputs": 128, "targets": 128}
SPAN_LENGTHS = {"inputs": 128, "targets": 32}


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    return trained_vocabulary(shared_data)


@pytest.fixture(scope="module")
def documents(shared_data, vocabulary):
    text = jsonl_text_dataset(str(shared_data / "c4_samples/olmo/*.json*.gz"))
    return tokenize(text, vocabulary).cache()


def outputs_and_chunks(documents, vocabulary, name, lengths, seed=7, config=objectives.ObjectiveConfig()):
    """Each output beside the raw chunk it was made from (the split is deterministic)."""
    chunk_length = objectives.get_objective(name).chunk_length(lengths, config)
    chunks = [c["targets"].tolist() for c in objectives.split_tokens(documents, chunk_length).as_numpy_iterator()]
    out = objectives.apply_objective(documents, name, lengths, vocabulary.token_ids, seed, config)
    examples = [{k: v.tolist() for k, v in ex.items()} for ex in out.as_numpy_iterator()]
    assert len(examples) == len(chunks) > 50
    return examples, chunks


def strip_eos(example):
    for key, tokens in example.items():
        assert tokens[-1] == EOS_ID and EOS_ID not in tokens[:-1]
    return {k: v[:-1] for k, v in example.items()}


def merge_spans(inputs, targets, token_ids):
    """Rebuilds the text from sentinel inputs and targets; checks the sentinel order on the way."""
    spans, current = {}, None
    for token in targets:
        if token >= token_ids.first_sentinel_id:
            current = token
            spans[current] = []
        else:
            spans[current].append(token)
    sentinels_in = [t for t in inputs if t >= token_ids.first_sentinel_id]
    assert sentinels_in == [token_ids.sentinel_id(i) for i in range(len(sentinels_in))]
    assert list(spans)[:len(sentinels_in)] == sentinels_in
    return [t for token in inputs for t in (spans[token] if token in spans else [token])]


@pytest.mark.parametrize("name,lengths", [("iid_noise_sentinels", LENGTHS), ("span_corruption", SPAN_LENGTHS)])
def test_sentinel_objectives_keep_every_token(documents, vocabulary, name, lengths):
    examples, chunks = outputs_and_chunks(documents, vocabulary, name, lengths)
    noisy = total = 0
    spans = 0
    for example, chunk in zip(examples, chunks):
        assert all(len(example[k]) <= lengths[k] for k in example)
        example = strip_eos(example)
        assert merge_spans(example["inputs"], example["targets"], vocabulary.token_ids) == chunk
        num_spans = sum(t >= vocabulary.token_ids.first_sentinel_id for t in example["inputs"])
        noisy += len(example["targets"]) - len([t for t in example["targets"] if t >= vocabulary.token_ids.first_sentinel_id])
        spans += num_spans
        total += len(chunk)
    assert abs(noisy / total - 0.15) < 0.02
    if name == "span_corruption":
        assert abs(noisy / spans - 3.0) < 0.3


def test_iid_drop_targets_are_the_dropped_tokens_in_order(documents, vocabulary):
    examples, chunks = outputs_and_chunks(documents, vocabulary, "iid_drop", LENGTHS)
    dropped = total = 0
    for example, chunk in zip(examples, chunks):
        example = strip_eos(example)
        assert collections.Counter(example["inputs"] + example["targets"]) == collections.Counter(chunk)
        rest = iter(chunk)
        assert all(any(t == c for c in rest) for t in example["targets"])  # a subsequence of the chunk
        dropped += len(example["targets"])
        total += len(chunk)
    assert abs(dropped / total - 0.15) < 0.02


@pytest.mark.parametrize("name", ["bert", "mass"])
def test_masking_objectives_corrupt_the_requested_share(documents, vocabulary, name):
    examples, chunks = outputs_and_chunks(documents, vocabulary, name, LENGTHS)
    mask_id, changed, masked, total = vocabulary.token_ids.mask_id, 0, 0, 0
    for example, chunk in zip(examples, chunks):
        example = strip_eos(example)
        assert example["targets"] == chunk
        inputs, original = np.array(example["inputs"]), np.array(chunk)
        corrupted = (inputs == mask_id) | (inputs != original)
        changed += int(corrupted.sum())
        masked += int((inputs == mask_id).sum())
        total += len(chunk)
        assert inputs.max() < vocabulary.vocab_size and inputs.min() >= 0
    assert abs(changed / total - 0.15) < 0.02
    if name == "mass":
        assert masked == changed
    else:
        # 10% of the corrupted tokens become random ones (a random draw may equal the original).
        assert 0.05 < 1 - masked / changed < 0.15


def test_prefix_deshuffle_and_lm_preserve_the_text(documents, vocabulary):
    for name in ("prefix_lm", "deshuffle"):
        examples, chunks = outputs_and_chunks(documents, vocabulary, name, LENGTHS)
        for example, chunk in zip(examples, chunks):
            example = strip_eos(example)
            if name == "prefix_lm":
                assert example["inputs"] + example["targets"] == chunk
            else:
                assert example["targets"] == chunk and sorted(example["inputs"]) == sorted(chunk)
    examples, chunks = outputs_and_chunks(documents, vocabulary, "lm", {"targets": 64})
    assert [strip_eos(e)["targets"] for e in examples] == chunks


def test_same_seed_same_outputs_other_seed_other_outputs(documents, vocabulary):
    first, _ = outputs_and_chunks(documents, vocabulary, "span_corruption", SPAN_LENGTHS, seed=3)
    again, _ = outputs_and_chunks(documents, vocabulary, "span_corruption", SPAN_LENGTHS, seed=3)
    other, _ = outputs_and_chunks(documents, vocabulary, "span_corruption", SPAN_LENGTHS, seed=4)
    assert first == again
    assert first != other


# --------------------------------------------------------------------------------------------
# The default sequence lengths of each objective (model/gin/objectives/) on real C4 pages.

FULL_TEXT = {"bert", "mass", "deshuffle", "prefix_lm"}


@pytest.fixture(scope="module")
def c4_pages(shared_data, vocabulary):
    """The 840 real C4 pages of the samples (800 in the round-trip WET file, 40 JSON lines)."""
    texts = [t.decode() for t in jsonl_text_dataset(str(shared_data / "c4_samples/olmo/*.json*.gz")).as_numpy_iterator()]
    with open(shared_data / "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz", "rb") as stream:
        texts += [r.content_stream().read().decode() for r in ArchiveIterator(stream) if r.rec_type == "conversion"]
    assert len(texts) == 840
    return tokenize(tf.data.Dataset.from_tensor_slices(texts), vocabulary).cache()


def gin_lengths(name):
    bindings = literal_bindings(f"objectives/{name}.gin")
    assert bindings["DataConfig.objective"] == name
    return {key: bindings[f"DataConfig.{key}_length"] for key in ("inputs", "targets")
            if f"DataConfig.{key}_length" in bindings}


@pytest.mark.parametrize("name", sorted(objectives.OBJECTIVES))
def test_default_lengths_cut_no_target_and_fill_the_chunks(c4_pages, vocabulary, name):
    lengths = gin_lengths(name)
    objective = objectives.get_objective(name)
    config = objectives.ObjectiveConfig()
    chunk_length = objective.chunk_length(lengths, config)
    chunks = objectives.split_tokens(c4_pages, chunk_length)
    # The objective's own outputs, before append_eos_after_trim could cut them.
    raw = chunks.enumerate().map(lambda i, ex: {"chunk": ex["targets"], **objective.fn(
        ex["targets"], objectives.example_seed(11, i), config, vocabulary.token_ids)})
    full = 0
    for example in raw.as_numpy_iterator():
        chunk = example.pop("chunk").tolist()
        for key, tokens in example.items():
            assert len(tokens) + 1 <= lengths[key], (name, key, len(tokens))  # + EOS
        full += len(chunk) == chunk_length
        if name in FULL_TEXT | {"lm"}:
            assert sum(len(t) for t in example.values()) == len(chunk) * (1 if name in ("prefix_lm", "lm") else 2)
    assert full > 300  # many chunks are whole, so the tails of the distributions are exercised
    expected_chunk = {"span_corruption": 568, "lm": 511}.get(name, 511)
    assert chunk_length == expected_chunk
