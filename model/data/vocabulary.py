"""The shared input/output vocabulary: SentencePiece pieces plus 100 sentinel ids.

Ids 0, 1 and 2 are pad, end-of-sequence and unknown (SentencePiece is trained with exactly these
ids and no BOS). The 100 sentinels used by the span objectives are appended after the pieces in
reverse order, as T5 does: `<extra_id_0>` is the last id of the vocabulary, `<extra_id_99>` the
first id after the pieces. They are written into the model proto as user-defined pieces
`▁<extra_id_k>` (with the word-start mark, as seqio's vocabulary adds them), so the same model
encodes and decodes them in Python (sentencepiece) and inside tf.data (tensorflow_text), and
" <extra_id_3>" in text is one token, not a stray `▁` followed by the sentinel.

A model trained with SentencePiece's byte fallback (`VocabularySettings.byte_fallback`, mT5's
recipe) holds the 256 pieces `<0x00>` ... `<0xFF>` right after unk (ids 3 to 258): a character
without a piece of its own encodes to the pieces of its UTF-8 bytes, never to UNK, and decodes
back to that character. The sentinels follow every piece, the byte pieces included.

The model's embedding has more rows than the vocabulary (padded to a multiple of 128): ids from
`vocab_size` on can come out of a decoder and decode to UNK (as seqio does), not an error.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import pathlib
import warnings
import weakref
from typing import Iterable, Iterator, Mapping, Sequence

import sentencepiece as spm
import tensorflow as tf
import tensorflow_text
from sentencepiece import sentencepiece_model_pb2

PAD_ID = 0
EOS_ID = 1
UNK_ID = 2
NUM_SENTINELS = 100
# Ids 0..2 are never drawn as "random replacement" tokens by the BERT-style objective.
NUM_RESERVED_IDS = 3


@dataclasses.dataclass(frozen=True)
class TokenIds:
    """The id layout the objectives need, without the SentencePiece model (tiny test vocabularies).

    `vocab_size` counts the sentinels; the SentencePiece pieces are ids below `first_sentinel_id`.
    """

    vocab_size: int
    num_sentinels: int = NUM_SENTINELS

    def __post_init__(self) -> None:
        if self.vocab_size <= self.num_sentinels + NUM_RESERVED_IDS:
            raise ValueError(
                f"vocab_size {self.vocab_size} leaves no ordinary tokens beside "
                f"{self.num_sentinels} sentinels and {NUM_RESERVED_IDS} special ids")

    @property
    def first_sentinel_id(self) -> int:
        return self.vocab_size - self.num_sentinels

    def sentinel_id(self, index: int) -> int:
        """Id of `<extra_id_{index}>`: the last id for index 0, counting down."""
        if not 0 <= index < self.num_sentinels:
            raise ValueError(f"sentinel index {index} outside [0, {self.num_sentinels})")
        return self.vocab_size - 1 - index

    @property
    def mask_id(self) -> int:
        """The single mask token of the BERT/MASS objectives (T5 uses `<extra_id_0>`)."""
        return self.sentinel_id(0)


# SentencePiece's word-start mark: the text " <extra_id_0>" normalizes to "▁<extra_id_0>".
WORD_START = "\u2581"


def sentinel_text(index: int) -> str:
    return f"<extra_id_{index}>"


def sentinel_piece(index: int) -> str:
    return WORD_START + sentinel_text(index)


def add_sentinels(model_proto: bytes, num_sentinels: int = NUM_SENTINELS) -> bytes:
    """Appends `<extra_id_{n-1}>` ... `<extra_id_0>` as user-defined pieces to a model proto."""
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(model_proto)
    existing = {piece.piece for piece in model.pieces}
    for index in reversed(range(num_sentinels)):
        if sentinel_piece(index) in existing:
            raise ValueError(f"model already contains {sentinel_piece(index)}")
        piece = model.pieces.add()
        piece.piece = sentinel_piece(index)
        piece.score = 0.0
        piece.type = sentencepiece_model_pb2.ModelProto.SentencePiece.USER_DEFINED
    return model.SerializeToString()


class Vocabulary:
    """A trained SentencePiece model (`PREFIX.model`) with the sentinels appended."""

    def __init__(self, model_path: str | pathlib.Path, num_sentinels: int = NUM_SENTINELS):
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise FileNotFoundError(f"SentencePiece model not found: {path}")
        base = spm.SentencePieceProcessor(model_proto=path.read_bytes())
        if (base.pad_id(), base.eos_id(), base.unk_id(), base.bos_id()) != (PAD_ID, EOS_ID, UNK_ID, -1):
            raise ValueError(
                f"{path} has pad/eos/unk/bos ids {base.pad_id()}/{base.eos_id()}/{base.unk_id()}/"
                f"{base.bos_id()}; expected {PAD_ID}/{EOS_ID}/{UNK_ID}/-1 (train with train_vocabulary)")
        self.path = path
        self.num_pieces = base.get_piece_size()
        self.model_proto = add_sentinels(path.read_bytes(), num_sentinels)
        self.token_ids = TokenIds(self.num_pieces + num_sentinels, num_sentinels)
        self._processor = spm.SentencePieceProcessor(model_proto=self.model_proto)
        # The tokenizer's resource belongs to the context it is built in: one per outermost
        # context (eager, or each graph such as an Estimator's), never one inside a tf.data map.
        self._eager_tokenizer = None
        self._graph_tokenizers = weakref.WeakKeyDictionary()

    @property
    def _tf_tokenizer(self) -> tensorflow_text.SentencepieceTokenizer:
        with tf.init_scope():
            if tf.executing_eagerly():
                if self._eager_tokenizer is None:
                    self._eager_tokenizer = self._new_tf_tokenizer()
                return self._eager_tokenizer
            graph = tf.compat.v1.get_default_graph()
            if graph not in self._graph_tokenizers:
                self._graph_tokenizers[graph] = self._new_tf_tokenizer()
            return self._graph_tokenizers[graph]

    def _new_tf_tokenizer(self) -> tensorflow_text.SentencepieceTokenizer:
        return tensorflow_text.SentencepieceTokenizer(model=self.model_proto, out_type=tf.int32)

    @property
    def vocab_size(self) -> int:
        return self.token_ids.vocab_size

    def encode(self, text: str) -> list[int]:
        return self._processor.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        """Decodes up to the first EOS; padding is skipped, ids past the vocabulary are UNK."""
        ids = [int(i) for i in ids]
        if EOS_ID in ids:
            ids = ids[:ids.index(EOS_ID)]
        return self._processor.decode([i if i < self.vocab_size else UNK_ID for i in ids if i != PAD_ID])

    def tf_encode(self, text: tf.Tensor) -> tf.Tensor | tf.RaggedTensor:
        """Graph op: a string scalar gives an int32 vector; a string vector a RaggedTensor."""
        return self._tf_tokenizer.tokenize(text)

    def tf_decode(self, ids: tf.Tensor) -> tf.Tensor:
        """Graph op: int32 ids [..., length] to strings, up to the first EOS, padding skipped,
        ids past the vocabulary decoded as UNK."""
        ids = tf.convert_to_tensor(ids, tf.int32)
        ids = tf.where(ids < self.vocab_size, ids, UNK_ID)
        before_eos = tf.math.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=-1, exclusive=True) == 0
        keep = tf.logical_and(before_eos, tf.not_equal(ids, PAD_ID))
        if ids.shape.rank == 1:
            return self._tf_tokenizer.detokenize(tf.boolean_mask(ids, keep))
        return self._tf_tokenizer.detokenize(tf.ragged.boolean_mask(ids, keep))


@dataclasses.dataclass(frozen=True)
class VocabularySettings:
    """Everything that determines a trained vocabulary; saved as PREFIX.json beside the model."""

    size: int = 32000
    sample_size: int = 1_000_000  # text lines fed to SentencePiece, split by the weights
    weights: Mapping[str, float] = dataclasses.field(
        default_factory=lambda: {"en": 10.0, "de": 1.0, "fr": 1.0, "ro": 1.0})
    model_type: str = "unigram"
    character_coverage: float = 0.9999
    normalization_rule_name: str = "nmt_nfkc"
    # Characters without a piece become the pieces of their UTF-8 bytes instead of unk (mT5).
    byte_fallback: bool = False
    # A source with fewer lines than its share: repeat its lines (in order) up to the share, so
    # the mixture keeps its weights; otherwise it gives what it has and a warning says so.
    repeat_short_sources: bool = False


class MixtureShortfallWarning(UserWarning):
    """A source gave fewer lines than its weight asks for: the mixture is not the one requested,
    or (every share as asked) the sample is smaller than `sample_size`."""


def lines_per_source(settings: VocabularySettings) -> dict[str, int]:
    """Splits `sample_size` lines between sources in proportion to their weights."""
    total = sum(settings.weights.values())
    if total <= 0 or any(w < 0 for w in settings.weights.values()):
        raise ValueError(f"weights must be non-negative with a positive sum: {dict(settings.weights)}")
    return {name: round(settings.sample_size * w / total) for name, w in settings.weights.items()}


def text_lines(texts: Iterable[str]) -> Iterator[str]:
    """Non-empty lines of documents: SentencePiece works on lines, and C4 pages are many lines."""
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if line:
                yield line


def mixture_sample(sources: Mapping[str, Iterable[str]], settings: VocabularySettings
                   ) -> tuple[list[str], dict[str, int], dict[str, int]]:
    """The first lines of each source in the weighted proportions: (sample, distinct lines each
    source gave, lines each contributes to the sample).

    Taking the first lines (not a random draw) keeps the sample reproducible and streaming; the
    sources themselves are shuffled shards. A source shorter than its share gives what it has,
    with a MixtureShortfallWarning that states the mixture obtained, or, with
    `repeat_short_sources`, its lines again and again up to its share.
    """
    missing = set(settings.weights) - set(sources)
    if missing:
        raise ValueError(f"weights given for sources without text: {sorted(missing)}")
    wanted = lines_per_source(settings)
    sample: list[str] = []
    taken: dict[str, int] = {}
    used: dict[str, int] = {}
    for name in sorted(settings.weights):
        lines = list(itertools.islice(text_lines(sources[name]), wanted[name]))
        taken[name] = len(lines)
        if lines and settings.repeat_short_sources:
            lines = list(itertools.islice(itertools.cycle(lines), wanted[name]))
        used[name] = len(lines)
        sample.extend(lines)
    if not sample:
        raise ValueError("the sources gave no text to train the vocabulary on")
    short = sorted(name for name in wanted if used[name] < wanted[name])
    share = {name: used[name] / len(sample) for name in wanted}
    wanted_share = {name: wanted[name] / sum(wanted.values()) for name in wanted}
    # Shares shown to 0.1%: a shortfall that leaves them as asked (one source, or every source
    # short alike) only makes the sample smaller.
    skewed = any(abs(share[name] - wanted_share[name]) >= 0.0005 for name in wanted)
    if short and skewed:
        details = "; ".join(
            f"{name} gave {used[name]:,} of its {wanted[name]:,} lines ({share[name]:.1%} "
            f"of the sample instead of {wanted_share[name]:.1%})" for name in short)
        warnings.warn(f"the vocabulary's mixture falls short of its weights: {details}. Give those "
                      f"sources more text, or repeat their lines up to their share "
                      f"(--repeat_short_sources).", MixtureShortfallWarning, stacklevel=2)
    elif short:
        details = "; ".join(f"{name} gave {used[name]:,} of its {wanted[name]:,} lines"
                            for name in short)
        warnings.warn(f"the vocabulary's sample has {len(sample):,} lines instead of "
                      f"{settings.sample_size:,} ({details}); the mixture keeps its weights. Give "
                      f"more text, or a smaller --sample_size.", MixtureShortfallWarning, stacklevel=2)
    return sample, taken, used


def train_vocabulary(sources: Mapping[str, Iterable[str]], settings: VocabularySettings,
                     output_prefix: str | pathlib.Path,
                     corpus: Mapping[str, object] | None = None) -> Vocabulary:
    """Trains SentencePiece on the weighted mixture; writes PREFIX.model, .vocab and .json.

    `corpus` says where the sources' text came from (JSON values), recorded as the record's
    `corpus`: the settings alone do not name the text."""
    prefix = pathlib.Path(output_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    sample, taken, used = mixture_sample(sources, settings)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sample),
        model_prefix=str(prefix),
        vocab_size=settings.size,
        model_type=settings.model_type,
        character_coverage=settings.character_coverage,
        normalization_rule_name=settings.normalization_rule_name,
        byte_fallback=settings.byte_fallback,
        pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
        # One thread, no input shuffling and the whole sample used (no random subsampling):
        # the same sample gives the same model.
        num_threads=1,
        shuffle_input_sentence=False,
        input_sentence_size=len(sample),
        minloglevel=2,
    )
    record = dataclasses.asdict(settings) | {
        "weights": dict(settings.weights),
        "lines_taken": taken,
        "lines_in_sample": used,
        "num_sentinels": NUM_SENTINELS,
        "special_ids": {"pad": PAD_ID, "eos": EOS_ID, "unk": UNK_ID, "bos": -1},
    }
    if corpus is not None:
        record["corpus"] = dict(corpus)
    pathlib.Path(f"{prefix}.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return Vocabulary(f"{prefix}.model")
