"""The pre-training input pipeline: text -> tokens -> chunks -> objective -> model features.

Text sources (all give a tf.data.Dataset of string scalars, in a fixed order):
  tfds:NAME@DATA_DIR     the "text" feature of a TFDS dataset, e.g. tfds:t5_c4/en@/data/tfds
                         (`t5_c4` is registered by importing tfds_c4); split "train".
  PATH or GLOB.jsonl.gz  JSON lines with a "text" field (the C4 pipeline's output); .json.gz
                         and uncompressed .jsonl are read the same way.
  PATH or GLOB           plain text, one text per line; for .conllu files the `# text = ` lines.
"""
from __future__ import annotations

import glob as globlib
import gzip
import json
import pathlib
from typing import Iterator, Mapping

import tensorflow as tf

from model import features, objectives
from model.vocabulary import Vocabulary

TOKENIZE_BATCH = 64  # texts tokenized per op call: amortizes the per-call overhead of tf-text
JSON_SUFFIXES = (".jsonl.gz", ".json.gz", ".jsonl", ".json")


def _files(pattern: str) -> list[str]:
    files = sorted(globlib.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no files match {pattern!r}")
    return files


def _json_texts(files: list[str]) -> Iterator[str]:
    for path in files:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)["text"]
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise ValueError(f"{path}:{number}: not a JSON object with a \"text\" field ({error})") from None


def jsonl_text_dataset(pattern: str) -> tf.data.Dataset:
    """The "text" field of every line of the matching JSON-lines files (sorted by name)."""
    files = _files(pattern)
    return tf.data.Dataset.from_generator(lambda: _json_texts(files),
                                          output_signature=tf.TensorSpec([], tf.string))


def plain_text_dataset(pattern: str) -> tf.data.Dataset:
    """Non-empty lines of plain text files; only the sentence text of CoNLL-U files."""
    files = _files(pattern)
    lines = tf.data.TextLineDataset(files)
    if all(f.endswith(".conllu") for f in files):
        prefix = "# text = "
        lines = lines.filter(lambda line: tf.strings.regex_full_match(line, f"{prefix}.*"))
        lines = lines.map(lambda line: tf.strings.substr(line, len(prefix), -1))
    return lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)


def tfds_text_dataset(name: str, split: str = "train", data_dir: str | None = None) -> tf.data.Dataset:
    """The "text" feature of a prepared TFDS dataset, in file order."""
    import tensorflow_datasets as tfds

    if name.split("/")[0] == "t5_c4":
        try:
            import tfds_c4  # noqa: F401  (registers the t5_c4 builder)
        except ImportError as error:
            raise RuntimeError(f"{name} needs the tfds_c4 package (the t5_c4 builder): {error}") from None
    try:
        dataset = tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
    except (tfds.core.registered.DatasetNotFoundError, AssertionError, FileNotFoundError) as error:
        raise RuntimeError(f"cannot load TFDS dataset {name!r} (split {split}, data_dir {data_dir}): "
                           f"{str(error).splitlines()[0]}") from None
    return dataset.map(lambda example: example["text"])


def text_dataset_from_source(source: str) -> tf.data.Dataset:
    """A text dataset from a source spec (see the module docstring)."""
    if source.startswith("tfds:"):
        name, _, data_dir = source[len("tfds:"):].partition("@")
        return tfds_text_dataset(name, "train", data_dir or None)
    if pathlib.Path(source).is_dir():
        return jsonl_text_dataset(str(pathlib.Path(source) / "*.jsonl.gz"))
    json_files = [f.endswith(JSON_SUFFIXES) for f in _files(source)]
    if all(json_files):
        return jsonl_text_dataset(source)
    if any(json_files):
        raise ValueError(f"{source!r} matches both JSON-lines and plain text files; give them apart")
    return plain_text_dataset(source)


def tokenize(text_dataset: tf.data.Dataset, vocabulary: Vocabulary) -> tf.data.Dataset:
    """Strings -> {"targets": int32 tokens}, tokenized in batches inside the graph (tf-text)."""
    return (text_dataset.batch(TOKENIZE_BATCH)
            .map(lambda texts: {"targets": vocabulary.tf_encode(texts)})
            .unbatch())


def pretraining_dataset(text_dataset: tf.data.Dataset, vocabulary: Vocabulary, objective: str,
                        sequence_lengths: Mapping[str, int], family: str, seed: int, pack: bool = True,
                        config: objectives.ObjectiveConfig = objectives.ObjectiveConfig()) -> tf.data.Dataset:
    """text -> tokenize -> split into chunks -> objective (+EOS, trim) -> model features."""
    tokens = tokenize(text_dataset, vocabulary)
    examples = objectives.apply_objective(tokens, objective, sequence_lengths, vocabulary.token_ids,
                                          seed, config)
    return features.convert_features(examples, family, sequence_lengths, pack=pack)
