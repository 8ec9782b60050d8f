"""mT5's task readers give what the TFDS datasets give once loaded: each builder's
`_generate_examples` on the same release file, passed through the dataset's features
(serialized, parsed, decoded) as tfds.load passes it. XNLI, XNLI-MT, PAWS-X and WikiAnn are read
by model.tasks.multilingual_sources; the QA files (XQuAD, MLQA, TyDi QA GoldP) by
sources.read_squad_json."""
import collections
import csv

import pytest

from model.tasks import sources
from model.tasks.multilingual_sources import (read_paws_x_tsv, read_wikiann,
                                              read_xnli_mt_tsv, read_xnli_tsv)

XNLI_LANGUAGES = ["ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"]
PAWS_X_LANGUAGES = ["de", "en", "es", "fr", "ja", "ko", "zh"]
WIKIANN_LANGUAGES = ["af", "ar", "bg", "bn", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fr", "he", "hi",
                     "hu", "id", "it", "ja", "jv", "ka", "kk", "ko", "ml", "mr", "ms", "my", "nl", "pt", "ru",
                     "sw", "ta", "te", "th", "tl", "tr", "ur", "vi", "yo", "zh"]


@pytest.fixture(scope="module")
def task_data(shared_data):
    return shared_data / "tasks"


@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tfds"))


def builder(name, tfds_dir):
    import tensorflow_datasets as tfds
    return tfds.builder(name, data_dir=tfds_dir)


def as_loaded(features, generated):
    """What tfds.load yields for a builder's generated examples, as plain Python."""
    import tensorflow_datasets as tfds
    return [sources._python(tfds.as_numpy(features.deserialize_example(features.serialize_example(raw))))
            for _, raw in generated]


# --- XNLI 1.0 ---------------------------------------------------------------------------------

def xnli_features(xnli, languages):
    """The xnli dataset's features for files holding only some of its languages: its Translation
    premise needs every language it names."""
    import tensorflow_datasets as tfds
    features = xnli.info.features
    return tfds.features.FeaturesDict({"premise": tfds.features.Translation(languages=sorted(languages)),
                                       "hypothesis": features["hypothesis"], "label": features["label"]})


def write_xnli_tsv(path, rows):
    """rows of (language, gold_label, sentence1, sentence2, pairID) as an XNLI 1.0 TSV."""
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write("language\tgold_label\tsentence1\tsentence2\tpairID\n")
        f.writelines("\t".join(row) + "\n" for row in rows)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_xnli_tsv_equals_tfds_xnli(task_data, tfds_dir, split):
    path = str(task_data / f"xnli/XNLI-1.0/xnli.{split}.tsv")
    xnli = builder("xnli", tfds_dir)
    theirs = as_loaded(xnli.info.features, xnli._generate_examples(filepath=path))
    ours = list(read_xnli_tsv(path))
    assert len(ours) == 1 and sorted(ours[0]["premise"]) == XNLI_LANGUAGES  # PROVENANCE: one pair, 15 languages
    assert ours == theirs


@pytest.mark.parametrize("split", ["dev", "test"])
def test_xnli_jsonl_equals_tfds_xnli_on_the_same_rows(task_data, tfds_dir, tmp_path, split):
    import json
    jsonl = task_data / f"xnli/XNLI-1.0/xnli.{split}.jsonl"
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    tsv = tmp_path / "xnli.tsv"
    write_xnli_tsv(tsv, [(r["language"], r["gold_label"], r["sentence1"], r["sentence2"], r["pairID"]) for r in rows])
    xnli = builder("xnli", tfds_dir)
    theirs = as_loaded(xnli_features(xnli, {"ar"}), xnli._generate_examples(filepath=str(tsv)))
    ours = list(read_xnli_tsv(str(jsonl)))
    assert len(ours) == 5 and ours == theirs  # PROVENANCE: 5 Arabic pairs


@pytest.mark.parametrize("split", ["dev", "test"])
def test_xnli_mt_translate_test_files_equal_tfds_xnli(task_data, tfds_dir, split):
    # English translations of the Arabic pairs, still marked `ar` (PROVENANCE).
    path = str(task_data / f"xnli/XNLI-MT-1.0/xnli/xnli.{split}.en.tsv")
    xnli = builder("xnli", tfds_dir)
    theirs = as_loaded(xnli_features(xnli, {"ar"}), xnli._generate_examples(filepath=path))
    ours = list(read_xnli_tsv(path))
    assert len(ours) == 4 and ours == theirs


def test_xnli_pairs_group_interleaved_rows_and_keep_quotes(tfds_dir, tmp_path):
    path = tmp_path / "xnli.dev.tsv"
    # The rows of pair 7 disagree on its label: the builder takes the first row's.
    write_xnli_tsv(path, [("en", "contradiction", '"Quoted," he said.', 'It was "fine"', "7"),
                          ("en", "entailment", "A man sleeps.", "Someone sleeps.", "3"),
                          ("de", "neutral", '"Zitiert", sagte er.', "Es war gut", "7"),
                          ("de", "entailment", "Ein Mann schläft.", "Jemand schläft.", "3")])
    xnli = builder("xnli", tfds_dir)
    theirs = as_loaded(xnli_features(xnli, {"en", "de"}), xnli._generate_examples(filepath=str(path)))
    assert list(read_xnli_tsv(str(path))) == theirs


def test_xnli_file_without_its_columns_is_a_clear_error(tmp_path):
    path = tmp_path / "xnli.dev.tsv"
    path.write_text("language\tsentence1\tsentence2\tpairID\nen\ta\tb\t1\n")
    with pytest.raises(ValueError, match=r"xnli\.dev\.tsv.*gold_label"):
        list(read_xnli_tsv(str(path)))


# --- XNLI-MT 1.0 translate-train ----------------------------------------------------------------

@pytest.mark.parametrize("language", XNLI_LANGUAGES)
def test_xnli_mt_rows_are_xnli_pairs_of_one_language(task_data, tfds_dir, tmp_path, language):
    path = task_data / f"xnli/XNLI-MT-1.0/multinli/multinli.train.{language}.tsv"
    ours = list(read_xnli_mt_tsv(str(path)))
    # PROVENANCE: the first 4 MultiNLI train pairs, neutral 1, entailment 3.
    # TFDS xnli's ClassLabel names=['entailment', 'neutral', 'contradiction']: ids 1 and 0.
    assert collections.Counter(e["label"] for e in ours) == {1: 1, 0: 3}
    # Each row, written as an XNLI 1.0 pair of its language, is what the xnli builder gives.
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    as_xnli = tmp_path / "xnli.tsv"
    write_xnli_tsv(as_xnli, [(language, label, premise, hypothesis, str(i)) for i, (premise, hypothesis, label)
                             in enumerate(rows)])
    xnli = builder("xnli", tfds_dir)
    assert ours == as_loaded(xnli_features(xnli, {language}), xnli._generate_examples(filepath=str(as_xnli)))


def test_xnli_mt_english_starts_with_the_first_multinli_pair(task_data):
    first = next(read_xnli_mt_tsv(str(task_data / "xnli/XNLI-MT-1.0/multinli/multinli.train.en.tsv")))
    assert first["premise"]["en"].startswith("Conceptually cream skimming")  # PROVENANCE
    assert first["hypothesis"]["language"] == ["en"]


def test_xnli_mt_contradictory_is_xnli_contradiction(tfds_dir, tmp_path):
    path = tmp_path / "multinli.train.fr.tsv"
    path.write_text("premise\thypo\tlabel\nIl pleut .\tIl fait beau .\tcontradictory\n", encoding="utf-8")
    # TFDS's xtreme_xnli reads XTREME's `contradictory` as xnli's class `contradiction`.
    contradiction = builder("xnli", tfds_dir).info.features["label"].str2int("contradiction")
    assert list(read_xnli_mt_tsv(str(path))) == [
        {"premise": {"fr": "Il pleut ."}, "hypothesis": {"language": ["fr"], "translation": ["Il fait beau ."]},
         "label": contradiction}]


def test_xnli_mt_language_comes_from_the_name_or_the_caller(tmp_path):
    path = tmp_path / "translated.tsv"
    path.write_text("premise\thypo\tlabel\na\tb\tneutral\n")
    with pytest.raises(ValueError, match=r"translated\.tsv.*no language"):
        list(read_xnli_mt_tsv(str(path)))
    assert next(read_xnli_mt_tsv(str(path), language="sw"))["premise"] == {"sw": "a"}


def test_xnli_mt_other_header_is_a_clear_error(tmp_path):
    path = tmp_path / "multinli.train.de.tsv"
    path.write_text("sentence1\tsentence2\tlabel\na\tb\tneutral\n")
    with pytest.raises(ValueError, match=r"multinli\.train\.de\.tsv: header \['sentence1', 'sentence2', 'label'\]"):
        list(read_xnli_mt_tsv(str(path)))


# --- PAWS-X --------------------------------------------------------------------------------------

PAWS_X_FILES = [(language, name) for language in PAWS_X_LANGUAGES
                for name in ("train.tsv" if language == "en" else "translated_train.tsv", "dev_2k.tsv", "test_2k.tsv")]


@pytest.mark.parametrize("language,name", PAWS_X_FILES)
def test_paws_x_tsv_equals_tfds_paws_x_wiki(task_data, tfds_dir, language, name):
    path = str(task_data / "paws_x/x-final" / language / name)
    paws_x = builder(f"paws_x_wiki/{language}", tfds_dir)
    ours = list(read_paws_x_tsv(path))
    assert len(ours) == 4 and ours == as_loaded(paws_x.info.features, paws_x._generate_examples(path=path))


def test_paws_x_quotes_and_garbled_rows_as_tfds_reads_them(tfds_dir, tmp_path):
    path = tmp_path / "dev_2k.tsv"
    # Rows 3 (short), 7 (a tab too many) and 4 to 6 (an open quote swallows the rest) have no 0/1 label.
    path.write_text('id\tsentence1\tsentence2\tlabel\n1\t"Quoted" start\tplain\t1\n2\ta "middle" quote\tb\t0\n'
                    '3\tonly two fields\n7\textra\ttab\tinside\t1\n4\t"unclosed\tx\t1\n5\ty\tz\t0\n'
                    '6\tlast\tone\t1', encoding="utf-8")
    paws_x = builder("paws_x_wiki/en", tfds_dir)
    ours = list(read_paws_x_tsv(str(path)))
    assert len(ours) == 2 and ours == as_loaded(paws_x.info.features, paws_x._generate_examples(path=str(path)))


def test_paws_x_file_missing_a_column_is_a_clear_error(tmp_path):
    path = tmp_path / "test_2k.tsv"
    path.write_text("id\tsentence1\tlabel\n1\ta\t0")
    with pytest.raises(ValueError, match=r"test_2k\.tsv: header .* lacks sentence2"):
        list(read_paws_x_tsv(str(path)))


# --- WikiAnn --------------------------------------------------------------------------------------

@pytest.mark.parametrize("language", WIKIANN_LANGUAGES)
def test_wikiann_equals_tfds_wikiann(task_data, tfds_dir, language):
    wikiann = builder(f"wikiann/{language}", tfds_dir)
    for split in ("train", "dev", "test"):
        path = str(task_data / "wikiann" / language / split)
        ours = list(read_wikiann(path, language=language))
        assert len(ours) == 1 and ours == as_loaded(wikiann.info.features, wikiann._generate_examples(filepath=path))


def test_wikiann_samples_hold_the_tags_provenance_counts(task_data):
    tags = collections.Counter()
    sentences = 0
    for path in (task_data / "wikiann").glob("*/*"):
        for sentence in read_wikiann(str(path)):
            sentences += 1
            tags.update(sentence["tags"])
    assert sentences == 120
    # By TFDS wikiann's ClassLabel ids, names=["O", "B-PER", "I-PER", "B-ORG", "I-ORG",
    # "B-LOC", "I-LOC"]: O 1026, I-ORG 151, I-PER 68, I-LOC 63, B-ORG 57, B-LOC 56, B-PER 35.
    assert tags == {0: 1026, 4: 151, 2: 68, 6: 63, 3: 57, 5: 56, 1: 35}


def test_wikiann_colons_ill_formed_spans_and_separators_as_tfds_reads_them(tfds_dir, tmp_path):
    path = tmp_path / "dev"
    path.write_bytes("-DOCSTART-\tO\n\nen:http://a.b\tB-ORG\r\nen:and\tO \nen:Bob\tI-PER\nen:Lee\tI-LOC\n"
                     "en::\tO\n\n\nde:Köln\tB-LOC\nde:Bonn\tB-LOC\nde:Stadt\tI-LOC\nde:x\tO".encode("utf-8"))
    wikiann = builder("wikiann/en", tfds_dir)
    ours = list(read_wikiann(str(path)))
    assert len(ours) == 2 and ours == as_loaded(wikiann.info.features, wikiann._generate_examples(filepath=str(path)))


def test_wikiann_line_without_a_tab_is_a_clear_error(tmp_path):
    path = tmp_path / "train"
    path.write_text("en:Bob\tB-PER\nen:sleeps O\n\n")
    with pytest.raises(ValueError, match=r"train, line 2: no tab"):
        list(read_wikiann(str(path)))


def test_wikiann_unknown_tag_or_other_language_is_a_clear_error(tmp_path):
    path = tmp_path / "test"
    path.write_text("en:Bob\tB-PER\nen:Corp\tB-MISC\n\n")
    with pytest.raises(ValueError, match=r"test, line 2: tag 'B-MISC'"):
        list(read_wikiann(str(path)))
    with pytest.raises(ValueError, match=r"test, line 1: language 'en', expected 'de'"):
        list(read_wikiann(str(path), language="de"))


# --- QA: SQuAD v1.1 JSON read by sources.read_squad_json -------------------------------------------

QA_FILES = ([("xquad/en", f"xquad/xquad.{lang}.json") for lang in ("en", "de", "zh")]
            + [("xquad/en", f"xquad/hf_dummy_subset/xquad.{lang}.json") for lang in ("ar", "hi", "th")]
            + [("mlqa/en", f"mlqa/MLQA_V1/dev/dev-context-{lang}-question-{lang}.json") for lang in ("de", "zh")]
            + [("mlqa/en", "mlqa/hf_dummy/MLQA_V1/dev/dev-context-en-question-en.json"),
               ("mlqa/en", "mlqa/hf_dummy/MLQA_V1/test/test-context-en-question-en.json"),
               ("tydi_qa/goldp", "tydiqa_goldp/hf_dummy/tydiqa-goldp-v1.1-dev.json"),
               ("tydi_qa/goldp", "tydiqa_goldp/hf_dummy/tydiqa-goldp-v1.1-train.json")]
            + [("tydi_qa/goldp", f"tydiqa_goldp/xtreme_mock_labels/test-{lang}.json")
               for lang in ("ar", "bn", "en", "fi", "id", "ko", "ru", "sw", "te")])


@pytest.mark.parametrize("dataset,name", QA_FILES)
def test_squad_reader_equals_tfds_qa_builders(task_data, tfds_dir, dataset, name):
    path = str(task_data / name)
    qa = builder(dataset, tfds_dir)
    ours = list(sources.read_squad_json(path))
    assert ours and ours == as_loaded(qa.info.features, qa._generate_examples(filepath=path))


def test_xquad_files_hold_provenance_question_counts(task_data):
    assert len(list(sources.read_squad_json(str(task_data / "xquad/xquad.zh.json")))) == 1190
    assert len(list(sources.read_squad_json(str(task_data / "mlqa/MLQA_V1/dev/dev-context-de-question-de.json")))) == 512


# --- any reader: a missing file ------------------------------------------------------------------

@pytest.mark.parametrize("read", [read_xnli_tsv, read_xnli_mt_tsv, read_paws_x_tsv, read_wikiann])
def test_missing_file_is_an_error_naming_it(tmp_path, read):
    path = tmp_path / "multinli.train.de.tsv"
    with pytest.raises(FileNotFoundError, match="multinli.train.de.tsv"):
        list(read(str(path)))
