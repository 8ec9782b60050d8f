"""The shared vocabulary: special ids, sentinels, lossless round trips in Python and in TF."""
import dataclasses
import json
import pathlib
import re
import unicodedata
import warnings

import pytest
import tensorflow as tf

from model import train_vocab
from model.data.vocabulary import EOS_ID, NUM_SENTINELS, PAD_ID, UNK_ID, MixtureShortfallWarning, TokenIds, Vocabulary, VocabularySettings, lines_per_source, mixture_sample, train_vocabulary
from tests.support.trained_vocab import SIZE, trained_vocabulary


@pytest.fixture(scope="module")
def vocabulary(shared_data) -> Vocabulary:
    return trained_vocabulary(shared_data)


def sentences(shared_data: pathlib.Path) -> dict[str, list[str]]:
    """Every 40th sentence of each language's files (treebank `# text =` lines and tatoeba)."""
    text = shared_data / "text"
    files = {"en": sorted(text.glob("*/tatoeba.*.eng")), "de": sorted(text.glob("de/*")),
             "fr": sorted(text.glob("fr/*.conllu")) + [text / "fr/tatoeba.fra-eng.fra"],
             "ro": sorted(text.glob("ro/*.conllu")) + [text / "ro/tatoeba.ron-eng.ron"]}
    out = {}
    for language, paths in files.items():
        lines = []
        for path in paths:
            for line in path.read_text(encoding="utf-8").splitlines():
                if path.suffix == ".conllu":
                    if not line.startswith("# text = "):
                        continue
                    line = line[len("# text = "):]
                lines.append(line)
        out[language] = lines[::40]
    return out


def normalized(text: str) -> str:
    """What SentencePiece's nmt_nfkc normalization keeps: NFKC, whitespace runs collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def test_special_ids_and_sentinels_follow_t5(vocabulary):
    assert vocabulary.num_pieces == SIZE
    assert vocabulary.vocab_size == SIZE + NUM_SENTINELS
    assert vocabulary.token_ids.sentinel_id(0) == vocabulary.vocab_size - 1
    assert vocabulary.token_ids.sentinel_id(99) == SIZE
    assert vocabulary.decode([vocabulary.vocab_size - 1]) == "<extra_id_0>"
    assert vocabulary.decode([SIZE]) == "<extra_id_99>"
    assert vocabulary.token_ids.sentinel_id(5) in vocabulary.encode("a <extra_id_5> b")
    assert EOS_ID not in vocabulary.encode("Hello world.")
    assert vocabulary.encode("\u2603")[-1] == UNK_ID  # a character absent from the sample


def test_sentinels_are_word_start_pieces_as_in_seqio(vocabulary):
    """" <extra_id_0>" is one piece `▁<extra_id_0>`: no stray `▁` token before it."""
    sentinel = vocabulary.token_ids.sentinel_id(0)
    assert vocabulary.encode("fox <extra_id_0>") == vocabulary.encode("fox") + [sentinel]
    ids = vocabulary.encode("Thank you <extra_id_0> me to your party <extra_id_1> week.")
    assert ids.count(sentinel) == 1 and vocabulary.token_ids.sentinel_id(1) in ids
    assert vocabulary.tf_encode(tf.constant("fox <extra_id_0>")).numpy().tolist() == vocabulary.encode("fox <extra_id_0>")
    assert vocabulary.decode(ids) == "Thank you <extra_id_0> me to your party <extra_id_1> week."


def test_ids_past_the_vocabulary_decode_as_unk(vocabulary):
    """The embedding is padded to a multiple of 128 rows: a model may emit those ids."""
    ids = vocabulary.encode("Guten Morgen")
    padded_rows = list(range(vocabulary.vocab_size, -(-vocabulary.vocab_size // 128) * 128))
    assert padded_rows
    expected = vocabulary.decode(ids + [UNK_ID] * len(padded_rows))
    assert vocabulary.decode(ids + padded_rows) == expected
    assert vocabulary.tf_decode(tf.constant(ids + padded_rows)).numpy().decode() == expected
    batch = vocabulary.tf_decode(tf.constant([ids + padded_rows, ids + [UNK_ID] * len(padded_rows)]))
    assert [t.decode() for t in batch.numpy()] == [expected, expected]


def test_decode_stops_at_eos_and_skips_padding(vocabulary):
    ids = vocabulary.encode("Guten Morgen")
    assert vocabulary.decode(ids + [EOS_ID] + vocabulary.encode("junk") + [PAD_ID]) == "Guten Morgen"
    assert vocabulary.tf_decode(tf.constant(ids + [EOS_ID, PAD_ID, PAD_ID])).numpy().decode() == "Guten Morgen"


@pytest.mark.parametrize("language", ["en", "de", "fr", "ro"])
def test_round_trip_is_lossless_in_python_and_tensorflow(vocabulary, shared_data, language):
    texts = sentences(shared_data)[language]
    assert len(texts) >= 20
    ragged = vocabulary.tf_encode(tf.constant(texts))
    decoded = vocabulary.tf_decode(ragged.to_tensor()).numpy()
    for text, tf_ids, tf_text in zip(texts, ragged.to_list(), decoded):
        ids = vocabulary.encode(text)
        assert UNK_ID not in ids, text
        assert tf_ids == ids
        assert vocabulary.decode(ids) == normalized(text)
        assert tf_text.decode("utf-8") == normalized(text)


def test_settings_are_recorded_beside_the_model(vocabulary):
    record = json.loads(vocabulary.path.with_suffix(".json").read_text())
    assert record["size"] == SIZE
    assert record["weights"] == {"en": 10.0, "de": 1.0, "fr": 1.0, "ro": 1.0}
    assert record["special_ids"] == {"pad": 0, "eos": 1, "unk": 2, "bos": -1}
    assert record["character_coverage"] == 1.0 and record["byte_fallback"] is False
    assert 0 < record["lines_taken"]["de"] <= 60_000 * 1 / 13  # at most its 10:1:1:1 share
    assert vocabulary.path.with_suffix(".vocab").is_file()


def test_mixture_shares_follow_the_weights():
    settings = VocabularySettings(sample_size=13_000, weights={"en": 10, "de": 1, "fr": 1, "ro": 1})
    assert lines_per_source(settings) == {"en": 10_000, "de": 1_000, "fr": 1_000, "ro": 1_000}


def test_a_short_source_is_reported_or_repeated_up_to_its_weight():
    sources = {"en": [f"English line {i}." for i in range(200)], "de": ["Ein Satz.", "Noch einer."]}
    settings = VocabularySettings(sample_size=110, weights={"en": 10, "de": 1})
    with pytest.warns(MixtureShortfallWarning, match=r"de gave 2 of its 10 lines \(2\.0% of the sample instead of 9\.1%\)"):
        sample, taken, used = mixture_sample(sources, settings)
    assert (taken, used) == ({"en": 100, "de": 2}, {"en": 100, "de": 2}) and len(sample) == 102
    repeated = dataclasses.replace(settings, repeat_short_sources=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixtureShortfallWarning)
        sample, taken, used = mixture_sample(sources, repeated)
    assert (taken, used) == ({"en": 100, "de": 2}, {"en": 100, "de": 10})
    assert sample[:10] == ["Ein Satz.", "Noch einer."] * 5  # sources in name order


def test_train_vocab_command_warns_or_repeats(tmp_path, capsys, shared_data):
    """The German tatoeba sample has 1,000 lines, half of its share of 4,000 at 1:1."""
    arguments = ["--size", "200", "--sample_size", "4000", "--weights", "en=1,de=1",
                 "--source", f"en={shared_data}/text/*/tatoeba.*.eng", "--source", f"de={shared_data}/text/de/tatoeba.deu-eng.deu"]
    assert train_vocab.main(["--output", str(tmp_path / "short"), *arguments]) == 0
    assert re.search(r"train_vocab: warning: .*de gave 1,000 of its 2,000 lines", capsys.readouterr().err)
    assert train_vocab.main(["--output", str(tmp_path / "repeated"), "--repeat_short_sources", *arguments]) == 0
    assert "warning" not in capsys.readouterr().err
    record = json.loads((tmp_path / "repeated.json").read_text())
    assert record["repeat_short_sources"] and record["lines_in_sample"] == {"en": 2000, "de": 2000}
    assert record["lines_taken"] == {"en": 2000, "de": 1000}
    assert record["corpus"] == {"sources": {"en": [f"{shared_data}/text/*/tatoeba.*.eng"],
                                            "de": [f"{shared_data}/text/de/tatoeba.deu-eng.deu"]}}


def test_training_is_deterministic(tmp_path, shared_data):
    lines = sentences(shared_data)
    settings = VocabularySettings(size=150, sample_size=400, weights={"en": 1, "de": 1})
    first = train_vocabulary({"en": lines["en"], "de": lines["de"]}, settings, tmp_path / "a")
    second = train_vocabulary({"en": lines["en"], "de": lines["de"]}, settings, tmp_path / "b")
    # The model protos differ only in the recorded output prefix; the pieces must be identical.
    assert (tmp_path / "a.vocab").read_text() == (tmp_path / "b.vocab").read_text()
    for line in lines["en"][:20] + lines["de"][:20]:
        assert first.encode(line) == second.encode(line)


def test_bad_inputs_give_clear_errors(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="not found"):
        Vocabulary(tmp_path / "missing.model")
    with pytest.raises(ValueError, match="leaves no ordinary tokens"):
        TokenIds(vocab_size=50)
    code = train_vocab.main(["--output", str(tmp_path / "v"), "--source", "en=x", "--weights", "en=ten"])
    assert code == 2 and "not a number" in capsys.readouterr().err
    code = train_vocab.main(["--output", str(tmp_path / "v"), "--source", f"en={tmp_path}/none*.txt",
                             "--weights", "en=1"])
    assert code == 2 and "no files match" in capsys.readouterr().err


def test_one_language_bpe_vocabulary_needs_no_weights(tmp_path, capsys, shared_data):
    """`--model_type bpe --source en=...` as the GPT-1 README runs it: no --weights (the default
    once named de, fr and ro and stopped on 'sources without text'). The 1,000 English lines fall
    short of the 4,000 asked; with one language the mixture is as asked (100%), so the warning
    says the sample is smaller, not '100.0% of the sample instead of 100.0%'."""
    arguments = ["--output", str(tmp_path / "bpe"), "--model_type", "bpe", "--size", "300",
                 "--sample_size", "4000", "--source", f"en={shared_data}/text/de/tatoeba.deu-eng.eng"]
    assert train_vocab.main(arguments) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "train_vocab: warning: the vocabulary's sample has 1,000 lines instead of 4,000 " \
           "(en gave 1,000 of its 4,000 lines)" in err, err
    assert "instead of 100.0%" not in err
    record = json.loads((tmp_path / "bpe.json").read_text())
    assert record["weights"] == {"en": 10.0} and record["model_type"] == "bpe"
    assert record["lines_in_sample"] == {"en": 1000}


def test_default_weights_are_t5s_for_the_languages_given():
    assert train_vocab.default_weights(["en", "de"]) == {"en": 10.0, "de": 1.0}
    assert train_vocab.default_weights(["en", "code"]) == {"en": 10.0, "code": 1.0}


def test_every_source_short_alike_keeps_the_mixture_and_says_the_sample_is_smaller():
    sources = {"en": [f"English line {i}." for i in range(20)], "de": [f"Satz {i}." for i in range(2)]}
    with pytest.warns(MixtureShortfallWarning, match=r"sample has 22 lines instead of 110 \(de gave "
                                                     r"2 of its 10 lines; en gave 20 of its 100 lines\)"):
        mixture_sample(sources, VocabularySettings(sample_size=110, weights={"en": 10, "de": 1}))
