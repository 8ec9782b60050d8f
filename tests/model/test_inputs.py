"""Text sources of the input pipeline: formats read and clear errors on bad input."""
import gzip
import json
import logging

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from model.data import features, inputs
from model.data import input_position
from tests.support.streams import as_lists, training_batches
from tests.support.trained_vocab import trained_vocabulary


def test_jsonl_and_conllu_sources(tmp_path, shared_data):
    path = tmp_path / "train-00000-of-00001.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(json.dumps({"text": "Erste Seite.\nZweite Zeile.", "url": "u"}) + "\n\n")
        out.write(json.dumps({"text": "Page two."}) + "\n")
    (tmp_path / "stats.json").write_text('{"variant": "en", "stages": {}}')  # A finished run.
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


# --------------------------------------------------------------------------------------------
# The training stream and resuming it at a recorded position.

LENGTHS = {"inputs": 64, "targets": 16}
BATCH = 8


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    return trained_vocabulary(shared_data)


def stream(source, vocabulary, **overrides):
    settings = dict(source=source, vocabulary=vocabulary, objective="span_corruption",
                    sequence_lengths=LENGTHS, converter=features.EncoderDecoderConverter, seed=3) | overrides
    return inputs.PretrainingStream(**settings)


def batches(training, model_dir, start_step, count):
    return training_batches(training, BATCH, model_dir, start_step, count, record_every=7)


def test_identity_names_the_converter_as_positions_recorded_before_did(shared_data, vocabulary):
    """A recorded input position is valid for the same stream identity; those recorded before
    converters were classes named the converter by its string under "family", as it still is."""
    identity = stream(str(shared_data / "c4_samples/olmo/*.json*.gz"), vocabulary).identity()
    assert identity["family"] == "encoder_decoder"
    assert json.loads(json.dumps(identity)) == identity


def test_first_epoch_is_the_pretraining_dataset(shared_data, vocabulary):
    source = str(shared_data / "c4_samples/olmo/*.json*.gz")
    training = stream(source, vocabulary)
    expected = [as_lists(r) for r in inputs.pretraining_dataset(
        inputs.text_dataset_from_source(source), vocabulary, "span_corruption", LENGTHS,
        features.EncoderDecoderConverter, seed=3).as_numpy_iterator()]
    assert [as_lists(r) for r in training().as_numpy_iterator()] == expected
    rows = [(as_lists(f), p) for f, p in training.rows().take(len(expected) + 1).as_numpy_iterator()]
    assert len(expected) > 2 * features.PACKING_WINDOW  # several windows per epoch
    assert [f for f, _ in rows[:len(expected)]] == expected
    assert {int(p["epoch"]) for _, p in rows[:len(expected)]} == {0} and rows[-1][1]["epoch"] == 1


@pytest.mark.parametrize("source", ["c4_samples/olmo/*.json*.gz",
                                    pytest.param("text/*/tatoeba.*-eng.eng", marks=pytest.mark.slow)])
def test_resumed_stream_sees_the_batches_of_an_uninterrupted_run(shared_data, vocabulary, tmp_path, source):
    """Resume at recorded steps (mid-window, mid-document, later shards, later epochs) and at an
    unrecorded one: the same batches as one run; each epoch draws fresh noise."""
    training = stream(str(shared_data / source), vocabulary)
    rows_per_epoch = sum(1 for _ in training())
    total = 2 * rows_per_epoch // BATCH + 20  # into the third epoch
    uninterrupted = batches(training, tmp_path, 0, total)
    records = sorted((tmp_path / input_position.RECORD_DIR).glob("step-*.json"))
    assert len(records) == total // 7
    positions = [json.loads(r.read_text())["position"] for r in records]
    assert {p["epoch"] for p in positions} == {0, 1, 2} and len({p["shard"] for p in positions}) > 1
    assert any(p["row"] > 1 for p in positions)
    assert any(p["chunk"] > 0 for p in positions) == ("olmo" in source)  # C4 pages span several chunks
    for step in (7, 7 * (total // 14), 7 * (total // 7), 7 * (total // 7) - 3):
        count = min(5, total - step)
        assert batches(training, tmp_path, step, count) == uninterrupted[step:step + count], step
    # The same chunks in the first and second epochs, with other noise.
    epoch_batches = rows_per_epoch // BATCH
    assert uninterrupted[0]["encoder_input_tokens"] != uninterrupted[epoch_batches + 1]["encoder_input_tokens"]


def test_a_source_without_text_is_refused(tmp_path, vocabulary):
    (tmp_path / "empty.txt").write_text("\n  \n")
    with pytest.raises(ValueError, match="has no text"):
        stream(str(tmp_path / "empty.txt"), vocabulary)


def test_a_record_of_another_stream_is_not_used(shared_data, vocabulary, tmp_path, caplog):
    source = str(shared_data / "c4_samples/olmo/*.json*.gz")
    uninterrupted = batches(stream(source, vocabulary), tmp_path, 0, 16)
    other_seed = stream(source, vocabulary, seed=4)
    other = batches(other_seed, tmp_path / "other", 0, 16)
    with caplog.at_level(logging.WARNING):
        assert batches(other_seed, tmp_path, 14, 2) == other[14:16]
    assert "for another input stream" in caplog.text and uninterrupted[14:16] != other[14:16]


class TinyText(tfds.core.GeneratorBasedBuilder):
    """A TFDS dataset of 40 numbered texts, to seek into as a training source."""

    VERSION = tfds.core.Version("1.0.0")

    @tfds.core.utils.classproperty
    @classmethod
    def url_infos(cls):
        """Nothing to download (TFDS would look for a checksums file beside this module)."""
        return {}

    def _info(self):
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict({"text": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for number in range(40):
            yield number, {"text": f"Text number {number}."}


def test_tfds_source_starts_at_a_document(tmp_path):
    builder = TinyText(data_dir=str(tmp_path))
    builder.download_and_prepare()
    everything = list(inputs.documents_from_source(f"tfds:tiny_text@{tmp_path}").as_numpy_iterator())
    assert [d["document"] for d in everything] == list(range(40)) and {d["shard"] for d in everything} == {0}
    later = list(inputs.documents_from_source(f"tfds:tiny_text@{tmp_path}", document=27).as_numpy_iterator())
    assert [(d["document"], d["text"]) for d in later] == [(d["document"], d["text"]) for d in everything[27:]]
