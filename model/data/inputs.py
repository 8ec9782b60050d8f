"""The pre-training input pipeline: text -> tokens -> chunks -> objective -> model features.

Text sources (all give a tf.data.Dataset of string scalars, in a fixed order; as documents, each
text also has its position: the shard, a file or the one TFDS split, and its number there):
  tfds:NAME@DATA_DIR     the "text" feature of a TFDS dataset, e.g. tfds:t5_c4/en@/data/tfds
                         (`t5_c4` is registered by importing tfds_c4); split "train".
  PATH or GLOB.jsonl.gz  JSON lines with a "text" field (the C4 pipeline's output); .json.gz
                         and uncompressed .jsonl are read the same way.
  FOLDER                 a finished C4 pipeline run's output folder: its train split, the
                         FOLDER/train-*.jsonl.gz files, as many as its stats.json says it
                         wrote (its validation split, validation-*.jsonl.gz, is the run's
                         validation text unless DataConfig.eval_source names another). A
                         folder whose run has not finished (or failed, or never wrote a
                         stats.json) is refused, as TFDS refuses a dataset that was not
                         prepared; another run's files beside the run's are not read.
  PATH or GLOB           plain text, one text per line; for .conllu files the `# text = ` lines.

`pretraining_dataset` makes model features of one pass over a text dataset; `PretrainingStream`
makes the training stream, epoch after epoch, with the position of every row, so that a resumed
run starts where its checkpoint left the input (model/data/input_position.py).
"""
from __future__ import annotations

import dataclasses
import glob as globlib
import gzip
import hashlib
import json
import pathlib
from typing import ClassVar, Iterator, Mapping, Optional, Sequence, Tuple

import tensorflow as tf

from model.data import features, objectives
from model.data.input_position import InputPosition
from model.data.vocabulary import Vocabulary

TOKENIZE_BATCH = 64  # texts tokenized per op call: amortizes the per-call overhead of tf-text
JSON_SUFFIXES = (".jsonl.gz", ".json.gz", ".jsonl", ".json")
# The shards of the C4 pipeline's splits in its output folder (pipelines/writers/output.py).
FOLDER_SPLITS = {"train": "train-*.jsonl.gz", "validation": "validation-*.jsonl.gz"}
# Those of a run that wrote `count` files of the split (its own, not another run's beside them).
RUN_SPLIT_FILES = {split: f"{split}-*-of-{{count:05d}}.jsonl.gz" for split in FOLDER_SPLITS}
# A pipeline run's report in its output folder (pipelines/stats/stats.py): a finished run's has neither
# "progress" nor "error", and gives under "shards" the number of files N of each split it wrote,
# named SPLIT-NNNNN-of-N (a run from before that record gives none: its folder's shards are
# read).
PIPELINE_STATS_FILE = "stats.json"
# Passes over the data a training stream offers: in effect without end.
MAX_EPOCHS = 2 ** 31
Document = dict[str, tf.Tensor]


def _files(pattern: str) -> list[str]:
    files = sorted(globlib.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no files match {pattern!r}")
    return files


def _unfinished_run(folder: pathlib.Path, split: str, why: str) -> ValueError:
    """TFDS's refusal of a dataset that was not prepared ("could not find data in ..."), said
    of a pipeline output folder."""
    return ValueError(
        f"pipeline output {folder}: could not find a finished run of pipelines.c4 in it ({why}). "
        "Please make sure its `python -m pipelines.c4` command has run to its end (rerun the "
        "same command: a run in parts or in stages resumes where it stopped) before using it as "
        "training data; to read its files as they are, give them as a glob: "
        f"'{folder / FOLDER_SPLITS[split]}'")


def folder_split_pattern(folder: pathlib.Path, split: str) -> str:
    """The pattern of the shards of `split` of the finished pipeline run in `folder` (as many as
    its stats.json says it wrote); a ValueError naming the folder and what to do when it holds
    no finished run."""
    stats_path = folder / PIPELINE_STATS_FILE
    try:
        record = json.loads(stats_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _unfinished_run(folder, split, f"it has no {PIPELINE_STATS_FILE}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise _unfinished_run(folder, split, f"its {PIPELINE_STATS_FILE} is unreadable: "
                                             f"{error}") from None
    if "error" in record:
        raise _unfinished_run(folder, split, f"its run failed: {record['error']}")
    if "progress" in record:
        raise _unfinished_run(folder, split, f"its {PIPELINE_STATS_FILE} says how far the run "
                                             "got: it has not finished")
    if "shards" not in record:
        return str(folder / FOLDER_SPLITS[split])
    return str(folder / RUN_SPLIT_FILES[split].format(count=record["shards"].get(split, 0)))


def _json_documents(files: list[str], first_shard: int, first_document: int) -> Iterator[tuple[int, int, str]]:
    """(file number, document number in the file, text) from document `first_document` of file
    `first_shard` on; the documents skipped are counted, not parsed."""
    for shard in range(first_shard, len(files)):
        path = files[shard]
        skip = first_document if shard == first_shard else 0
        document = 0
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                if document >= skip:
                    try:
                        text = json.loads(line)["text"]
                    except (json.JSONDecodeError, KeyError, TypeError) as error:
                        raise ValueError(f"{path}:{number}: not a JSON object with a \"text\" field ({error})") from None
                    yield shard, document, text
                document += 1


def _as_documents(shard, document, text) -> Document:
    return {"shard": tf.cast(shard, tf.int64), "document": tf.cast(document, tf.int64), "text": text}


def jsonl_documents(pattern: str, shard: int = 0, document: int = 0) -> tf.data.Dataset:
    """The "text" field of every line of the matching JSON-lines files (sorted by name); a shard
    is a file."""
    files = _files(pattern)
    return tf.data.Dataset.from_generator(
        lambda: _json_documents(files, shard, document),
        output_signature=(tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.string))
    ).map(_as_documents)


def jsonl_text_dataset(pattern: str) -> tf.data.Dataset:
    return jsonl_documents(pattern).map(lambda document: document["text"])


def plain_text_documents(pattern: str, shard: int = 0, document: int = 0) -> tf.data.Dataset:
    """Non-empty lines of plain text files, only the sentence text of CoNLL-U files; a shard is
    a file. Lines before `document` in the first file are read and dropped (one file at most)."""
    files = _files(pattern)
    conllu = all(f.endswith(".conllu") for f in files)
    prefix = "# text = "

    def file_documents(number):
        lines = tf.data.TextLineDataset(tf.gather(tf.constant(files), number))
        if conllu:
            lines = lines.filter(lambda line: tf.strings.regex_full_match(line, f"{prefix}.*"))
            lines = lines.map(lambda line: tf.strings.substr(line, len(prefix), -1))
        lines = lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)
        return lines.enumerate().map(lambda index, line: _as_documents(number, index, line))

    documents = tf.data.Dataset.range(shard, len(files)).flat_map(file_documents)
    if document:
        documents = documents.skip(document)
    return documents


def plain_text_dataset(pattern: str) -> tf.data.Dataset:
    return plain_text_documents(pattern).map(lambda document: document["text"])


def tfds_documents(name: str, split: str = "train", data_dir: str | None = None,
                   document: int = 0) -> tf.data.Dataset:
    """The "text" feature of a prepared TFDS dataset, in file order, from example `document` on
    (TFDS reads only the shards from there); one shard."""
    import tensorflow_datasets as tfds

    if name.split("/")[0] == "t5_c4":
        try:
            import tfds_c4  # noqa: F401  (registers the t5_c4 builder)
        except ImportError as error:
            raise RuntimeError(f"{name} needs the tfds_c4 package (the t5_c4 builder): {error}") from None
    try:
        dataset = tfds.load(name, split=f"{split}[{document}:]" if document else split,
                            data_dir=data_dir, shuffle_files=False)
    except (tfds.core.registered.DatasetNotFoundError, AssertionError, FileNotFoundError) as error:
        raise RuntimeError(f"cannot load TFDS dataset {name!r} (split {split}, data_dir {data_dir}): "
                           f"{str(error).splitlines()[0]}") from None
    return dataset.enumerate(start=document).map(lambda index, example: _as_documents(0, index, example["text"]))


def tfds_text_dataset(name: str, split: str = "train", data_dir: str | None = None) -> tf.data.Dataset:
    return tfds_documents(name, split, data_dir).map(lambda document: document["text"])


def tfds_spec(source: str) -> Optional[Tuple[str, Optional[str]]]:
    """(name, data_dir or None) of a `tfds:NAME@DIR` source spec; None for another spec."""
    if not source.startswith("tfds:"):
        return None
    name, _, data_dir = source[len("tfds:"):].partition("@")
    return name, data_dir or None


def validation_text(source: str, eval_source: str = "") -> tf.data.Dataset:
    """The validation text of a run: `eval_source`, else the validation split of a `tfds:`
    `source` or of a pipeline output folder."""
    if eval_source:
        return text_dataset_from_source(eval_source)
    if pathlib.Path(source).is_dir():
        return text_dataset_from_source(source, "validation")
    spec = tfds_spec(source)
    if spec is None:
        raise ValueError("DataConfig.eval_source is needed when the source is neither tfds: nor "
                         "a pipeline output folder")
    name, data_dir = spec
    return tfds_text_dataset(name, "validation", data_dir)


def documents_from_source(source: str, shard: int = 0, document: int = 0,
                          split: str = "train") -> tf.data.Dataset:
    """{"shard", "document", "text"} of a source spec (see the module docstring), one pass, from
    document `document` of shard `shard` on. Starting late costs a seek within one shard.

    `split` names a split of a TFDS source (`de`, `de-validation` of t5_c4/multilingual) or of
    a pipeline output folder (`train`, `validation`); files and globs have only `train`."""
    spec = tfds_spec(source)
    if spec is not None:
        if shard:
            raise ValueError(f"a TFDS source has one shard, not {shard}")
        name, data_dir = spec
        return tfds_documents(name, split, data_dir, document)
    if pathlib.Path(source).is_dir():
        if split not in FOLDER_SPLITS:
            raise ValueError(f"a pipeline output folder has the splits {sorted(FOLDER_SPLITS)}, "
                             f"not {split!r}")
        return jsonl_documents(folder_split_pattern(pathlib.Path(source), split), shard, document)
    if split != "train":
        raise ValueError(f"{source!r}: files have no split {split!r}")
    json_files = [f.endswith(JSON_SUFFIXES) for f in _files(source)]
    if all(json_files):
        return jsonl_documents(source, shard, document)
    if any(json_files):
        raise ValueError(f"{source!r} matches both JSON-lines and plain text files; give them apart")
    return plain_text_documents(source, shard, document)


def text_dataset_from_source(source: str, split: str = "train") -> tf.data.Dataset:
    """A text dataset from a source spec (see the module docstring) and a split of it
    (`documents_from_source`)."""
    return documents_from_source(source, split=split).map(lambda document: document["text"])


def tokenize(text_dataset: tf.data.Dataset, vocabulary: Vocabulary) -> tf.data.Dataset:
    """Strings -> {"targets": int32 tokens}, tokenized in batches inside the graph (tf-text)."""
    return tokenize_documents(text_dataset.map(lambda text: {"text": text}), vocabulary)


def tokenize_documents(documents: tf.data.Dataset, vocabulary: Vocabulary) -> tf.data.Dataset:
    """{"text", ...} -> {"targets": int32 tokens, ...}: the other features are kept."""

    def encode(batch):
        encoded = {key: value for key, value in batch.items() if key != "text"}
        encoded["targets"] = vocabulary.tf_encode(batch["text"])
        return encoded

    return documents.batch(TOKENIZE_BATCH).map(encode).unbatch()


def pretraining_dataset(text_dataset: tf.data.Dataset, vocabulary: Vocabulary, objective: str,
                        sequence_lengths: Mapping[str, int], converter: "type[features.FeatureConverter]",
                        seed: int, pack: bool = True,
                        config: objectives.ObjectiveConfig = objectives.ObjectiveConfig()) -> tf.data.Dataset:
    """text -> tokenize -> split into chunks -> objective (+EOS, trim) -> model features."""
    tokens = tokenize(text_dataset, vocabulary)
    examples = objectives.apply_objective(tokens, objective, sequence_lengths, vocabulary.token_ids,
                                          seed, config)
    return features.convert_features(examples, converter, sequence_lengths, pack=pack)


def packed_windows(examples: tf.data.Dataset, converter: "type[features.FeatureConverter]",
                   sequence_lengths: Mapping[str, int], pack: bool = True) -> tf.data.Dataset:
    """(example, position) pairs -> a batch of rows per packing window (the windows of
    `features.convert_features`, as long as every start is the first example of a window:
    positions record only those), each row with the position of the window's first example (any
    shape) and its number in the window, "row"."""
    conversion = converter(sequence_lengths, examples.element_spec[0])

    def window_rows(window_examples, positions):
        rows = conversion.convert(window_examples)
        num_rows = tf.shape(next(iter(rows.values())), out_type=tf.int64)[0]
        first = {key: tf.repeat(value[:1], num_rows, axis=0) for key, value in positions.items()}
        return rows, {**first, "row": tf.range(num_rows)}

    return (examples.map(lambda features_, position: (conversion.prepare(features_), position))
            .ragged_batch(features.PACKING_WINDOW if pack else 1)
            .map(window_rows))


@dataclasses.dataclass(frozen=True, kw_only=True)
class StreamRecipe:
    """How a training stream makes its examples, whatever text it reads: the vocabulary, the
    objective and its settings, the lengths, the feature converter, the seed of the noise and
    whether rows are packed. A single source's stream (`PretrainingStream`) and a language
    mixture (model/data/language_mixture.py, whose members are such streams) are both made
    with one, by name."""

    vocabulary: Vocabulary
    objective: str
    sequence_lengths: Mapping[str, int]
    converter: "type[features.FeatureConverter]"
    seed: int
    pack: bool = True
    config: objectives.ObjectiveConfig = objectives.ObjectiveConfig()

    def recipe(self, **changes) -> dict:
        """The recipe's fields by name, `changes` made: what a stream of the same examples is
        made with (a mixture's members: another seed)."""
        return {field.name: changes.get(field.name, getattr(self, field.name))
                for field in dataclasses.fields(StreamRecipe)}


@dataclasses.dataclass(frozen=True)
class PretrainingStream(StreamRecipe):
    """The training stream of `pretraining_dataset` over a source, epoch after epoch, that can
    start at any recorded `InputPosition` for the cost of one packing window.

    Epoch 0 gives exactly the rows of `pretraining_dataset` over the source; every later epoch
    reads the source again with fresh noise (the epoch is folded into the objective's seed).
    Packing windows restart with each epoch, so a window never mixes epochs.

    `shuffle_windows` (0: rows in document order, as T5's stream) shuffles the rows within
    blocks of that many consecutive packing windows, in an order seeded by the seed, the epoch
    and the block's first example, so that a batch draws its rows from across the block (GPT-1's
    randomly sampled minibatches). A block restarts with each epoch too, and the position of a
    row names its block's first window, `row` counting within the block: a resumed run rebuilds
    one block and sees the same order.
    """

    source: str
    shuffle_windows: int = 0
    split: str = "train"  # of a TFDS source or a pipeline output folder (documents_from_source)

    position_type: ClassVar[type] = InputPosition

    def __post_init__(self) -> None:
        if self.shuffle_windows < 0:
            raise ValueError(f"shuffle_windows must be >= 0, got {self.shuffle_windows}")
        # An empty source would make the stream look for a first row epoch after epoch, forever.
        if tf.executing_eagerly() and not any(
                True for _ in documents_from_source(self.source, split=self.split).take(1)):
            raise ValueError(f"the training source {self.source!r} (split {self.split}) has no text")

    def __call__(self) -> tf.data.Dataset:
        """The model features of one pass (epoch 0), without positions."""
        return pretraining_dataset(text_dataset_from_source(self.source, self.split), self.vocabulary,
                                   self.objective, self.sequence_lengths, self.converter, self.seed,
                                   self.pack, self.config)

    def identity(self) -> dict:
        """What determines the stream, as JSON values: a position is only valid for the same."""
        # The vocabulary by content: the same model copied elsewhere (a TPU host) is the same.
        return {"source": self.source, "vocabulary_sha256": hashlib.sha256(self.vocabulary.model_proto).hexdigest(),
                "objective": self.objective,
                "sequence_lengths": dict(self.sequence_lengths), "family": self.converter.name,
                "seed": self.seed, "pack": self.pack, "packing_window": features.PACKING_WINDOW,
                "objective_config": dataclasses.asdict(self.config),
                # Named only when set, so that the records written before the options existed
                # stay valid.
                **({"shuffle_windows": self.shuffle_windows} if self.shuffle_windows else {}),
                **({"split": self.split} if self.split != "train" else {})}

    def rows(self, start: InputPosition = InputPosition()) -> tf.data.Dataset:
        """(model features, position of the row) pairs from `start` on, without end."""
        later_epochs = tf.data.Dataset.range(start.epoch + 1, MAX_EPOCHS).flat_map(
            lambda epoch: self._epoch_rows(epoch, InputPosition()))
        return self._epoch_rows(tf.constant(start.epoch, tf.int64), start).skip(start.row).concatenate(later_epochs)

    def chunks(self, start: InputPosition = InputPosition()) -> tf.data.Dataset:
        """(chunk tokens, position of its example) pairs from the example at `start` on (its
        `row` aside), epoch after epoch, without end: what a mixture of streams draws from.
        Every pass after the first reads one pipeline again (built once: a mixture builds one
        per member, two for a member resumed mid-pass)."""
        whole_pass = self._pass_chunks(InputPosition())

        def numbered(epoch, chunks):
            return chunks.map(lambda tokens, position: (tokens, {"epoch": epoch, **position}))

        at_pass_start = dataclasses.replace(start, row=0) == InputPosition(epoch=start.epoch)
        first = whole_pass if at_pass_start else self._pass_chunks(start)
        later = tf.data.Dataset.range(start.epoch + 1, MAX_EPOCHS).flat_map(
            lambda epoch: numbered(epoch, whole_pass))
        return numbered(tf.constant(start.epoch, tf.int64), first).concatenate(later)

    def _pass_chunks(self, start: InputPosition) -> tf.data.Dataset:
        """(chunk tokens, position but the epoch) of one pass from `start` on."""
        documents = documents_from_source(self.source, start.shard, start.document, self.split)
        chunks = objectives.split_tokens(tokenize_documents(documents, self.vocabulary),
                                         objectives.chunk_length(self.objective, self.sequence_lengths, self.config))
        # The first document's chunks before the start were consumed before it.
        chunks = chunks.skip(start.chunk).enumerate(start=start.example)

        def with_position(index, chunk):
            return chunk["targets"], {"shard": chunk["shard"], "document": chunk["document"],
                                      "chunk": chunk["chunk"], "example": index}

        return chunks.map(with_position)

    def _epoch_examples(self, epoch: tf.Tensor, start: InputPosition) -> tf.data.Dataset:
        corrupt = objectives.corruption(self.objective, self.sequence_lengths, self.vocabulary.token_ids,
                                        self.seed, self.config)
        return self._pass_chunks(start).map(
            lambda tokens, position: (corrupt(tokens, position["example"], epoch), {"epoch": epoch, **position}))

    def _epoch_rows(self, epoch: tf.Tensor, start: InputPosition) -> tf.data.Dataset:
        windows = packed_windows(self._epoch_examples(epoch, start), self.converter,
                                 self.sequence_lengths, self.pack)
        if not self.shuffle_windows:
            return windows.unbatch()

        def shuffled_block(rows, positions):
            rows = {key: value.values for key, value in rows.items()}
            num_rows = tf.shape(positions["row"].values, out_type=tf.int64)[0]
            first = {key: value.values[0] for key, value in positions.items() if key != "row"}
            seed = tf.random.experimental.stateless_fold_in(
                tf.stack([tf.constant(self.seed, tf.int64), epoch]), first["example"])
            order = tf.random.experimental.stateless_shuffle(tf.range(num_rows), seed)
            block_positions = {key: tf.fill([num_rows], value) for key, value in first.items()}
            return ({key: tf.gather(value, order) for key, value in rows.items()},
                    {**block_positions, "row": tf.range(num_rows)})

        # A block starts at a window, as every recorded position does.
        return windows.ragged_batch(self.shuffle_windows).map(shuffled_block).unbatch()


def source_texts(specs: Sequence[str], split: str = "train") -> Iterator[str]:
    """Texts of each source spec's split in turn, decoded lazily (only what the sample needs is
    read)."""
    for spec in specs:
        for text in text_dataset_from_source(spec, split).as_numpy_iterator():
            yield text.decode("utf-8")
