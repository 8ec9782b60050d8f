"""Text sources of the input pipeline: formats read and clear errors on bad input."""
import gzip
import json

import pytest
import tensorflow as tf

from model import inputs


def test_jsonl_and_conllu_sources(tmp_path, shared_data):
    path = tmp_path / "train-00000-of-00001.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(json.dumps({"text": "Erste Seite.\nZweite Zeile.", "url": "u"}) + "\n\n")
        out.write(json.dumps({"text": "Page two."}) + "\n")
    texts = [t.decode() for t in inputs.text_dataset_from_source(str(tmp_path)).as_numpy_iterator()]
    assert texts == ["Erste Seite.\nZweite Zeile.", "Page two."]
    conllu = inputs.text_dataset_from_source(str(shared_data / "text/ro/ro_rrt-ud-dev.conllu"))
    first = next(conllu.as_numpy_iterator()).decode()
    assert first.startswith("Într-o zi senină") and not first.startswith("#")


def test_bad_sources_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "no text"}\n')
    # tf.data reports the generator's error as an InvalidArgumentError carrying its message.
    with pytest.raises(tf.errors.InvalidArgumentError, match='bad.jsonl:1: not a JSON object with a "text" field'):
        list(inputs.jsonl_text_dataset(str(bad)).as_numpy_iterator())
    with pytest.raises(FileNotFoundError, match="no files match"):
        inputs.text_dataset_from_source(str(tmp_path / "missing*.txt"))
    with pytest.raises(RuntimeError, match="cannot load TFDS dataset"):
        inputs.text_dataset_from_source(f"tfds:no_such_dataset_here@{tmp_path}")
