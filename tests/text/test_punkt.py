"""The NLTK Punkt splitter option: punkt_tab data from a path or NLTK_DATA, a clear error without
it, and the released rules with Punkt equal to the TFDS code with the same Punkt model.

No download: a Punkt model is trained here from real C4 text and saved in the punkt_tab layout
(`<root>/tokenizers/punkt_tab/english/`) with NLTK's own writer.
"""
import gzip
import json
import pickle

import nltk.data
import pytest
from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTrainer, save_punkt_params
from tensorflow_datasets.text import c4_utils

from pipelines import c4
from text import punkt
from text.splitters import load_splitter
from tests.support.released_c4 import BADWORDS, REALNEWS, ours
from tests.support.tfds_reference import tfds_c4

C4_SAMPLES = "c4_samples/olmo"
TEXT = ("Dr. Smith arrived at 5 p.m. on Jan. 3rd. He met Mrs. Jones at the U.S. embassy. "
        "They talked about etc. and so on. Then they left! Did they? Yes.")


@pytest.fixture(scope="module")
def trained(shared_data, tmp_path_factory):
    """(root of an NLTK data folder holding the trained english punkt_tab model, its params)."""
    texts = []
    for path in sorted((shared_data / C4_SAMPLES).glob("*.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts += [json.loads(line)["text"] for line in lines]
    trainer = PunktTrainer()
    trainer.train("\n".join(texts), finalize=True)
    root = tmp_path_factory.mktemp("nltk_data")
    model_dir = root / "tokenizers" / "punkt_tab" / "english"
    model_dir.mkdir(parents=True)
    with pytest.MonkeyPatch.context() as patch:  # NLTK writes only under its data folders.
        patch.setattr(nltk.data, "path", [str(root)] + nltk.data.path)
        save_punkt_params(trainer.get_params(), dir=str(model_dir))
    return root, trainer.get_params()


def test_loads_punkt_tab_from_a_path(trained):
    root, params = trained
    reference = PunktSentenceTokenizer(params).tokenize(TEXT)
    assert len(reference) >= 4
    for path in (root, root / "tokenizers" / "punkt_tab" / "english"):
        assert punkt.load_punkt(str(path))(TEXT) == reference
    assert load_splitter("punkt", str(root))(TEXT) == reference


def test_loads_punkt_tab_from_nltk_data(trained, monkeypatch):
    root, params = trained
    monkeypatch.setenv("NLTK_DATA", str(root))
    assert punkt.load_punkt()(TEXT) == PunktSentenceTokenizer(params).tokenize(TEXT)


def test_splitter_travels_to_workers(trained):
    splitter = punkt.load_punkt(str(trained[0]))
    assert pickle.loads(pickle.dumps(splitter))(TEXT) == splitter(TEXT)


def test_missing_model_is_a_clear_error(tmp_path, monkeypatch, shared_data):
    with pytest.raises(punkt.PunktDataMissing, match="no punkt_tab model .* in " + str(tmp_path)):
        punkt.load_punkt(str(tmp_path))
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "none")])
    with pytest.raises(punkt.PunktDataMissing, match="--punkt_data"):
        punkt.load_punkt()
    with pytest.raises(SystemExit, match="no punkt_tab model"):
        c4.main(["--splitter", "punkt", "--punkt_data", str(tmp_path), "--input",
                 str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"),
                 "--output", str(tmp_path / "out"), "--badwords", str(shared_data / BADWORDS)])


def test_released_rules_with_punkt_equal_tfds_with_punkt(trained, shared_data, tmp_path,
                                                         monkeypatch):
    """With the same Punkt model on both sides there is no splitter difference left."""
    root, _ = trained
    wet_paths = [shared_data / "wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz"]
    monkeypatch.setattr(c4_utils, "_get_sentences", punkt.load_punkt(str(root)))
    expected = tfds_c4(wet_paths, "en", shared_data / BADWORDS, shared_data / REALNEWS, ())
    got = ours(tmp_path, "en", wet_paths, shared_data / BADWORDS, shared_data / REALNEWS, (),
               extra=("--splitter", "punkt", "--punkt_data", str(root)))
    assert len(expected) >= 50
    assert got == expected


def test_paper_rules_count_punkt_sentences(trained, shared_data, tmp_path):
    root, params = trained
    tokenizer = PunktSentenceTokenizer(params)
    c4.main(["--variant", "en", "--splitter", "punkt", "--punkt_data", str(root),
             "--input", str(shared_data / "wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz"),
             "--output", str(tmp_path), "--badwords", str(shared_data / BADWORDS),
             "--train_shards", "1"])
    with gzip.open(tmp_path / "train-00000-of-00001.jsonl.gz", "rt", encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines]
    assert len(texts) >= 50
    assert all(sum(len(tokenizer.tokenize(line)) for line in text.split("\n")) >= 3
               for text in texts)
    run_config = json.loads((tmp_path / "run_config.json").read_text())
    assert "punkt" in json.dumps(run_config)
