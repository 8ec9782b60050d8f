"""BERT's WordPiece vocabulary: trained on our C4 with tensorflow-text's learner, used with
tensorflow-text's FastBertTokenizer (uncased, as BERT-Base-Uncased: lower case, accents
stripped, split on white space and punctuation, then WordPiece; tests/model/test_bert.py checks it
against transformers' BertTokenizer on real pages). Its command line is `python -m model
wordpiece` (model/wordpiece.py).

`train_vocabulary` writes PATH (one piece per line, BERT's vocab.txt format: the id of a piece
is its line number) and PATH.json (the settings and how many texts were read). The learner puts
the reserved tokens first: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4 (`LEARNED_IDS`). Every
BERT vocabulary is read by its own reserved tokens' ids (`WordPieceVocabulary.special`):
Google's vocab.txt files have [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103. [PAD] must
be 0 (rows are zero padded). A vocabulary is read uncased (lower case, accents stripped:
BertTokenizer's do_lower_case) unless one of its pieces has an upper-case letter (Google's cased
vocabularies, ours learned with --cased): an uncased vocabulary has no piece that a cased text
could match. Learning: `tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset`
(BasicTokenizer splitting on white space and punctuation, lower case, accents stripped, then
WordPiece learning from word counts); its `vocab_size` is a target: a smaller result is padded
with BERT's `[unusedN]` pieces up to the size asked (so a model-parallel mesh can split it), a
larger one is kept.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import pathlib
from typing import Iterable, List, Optional, Sequence, Tuple

import tensorflow as tf

RESERVED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = RESERVED_TOKENS
# The id of [PAD] in every BERT vocabulary: features are zero padded, and attention skips 0.
PAD_ID = 0
# What BertTokenizer's _clean_text drops (RE2): control and format characters (Cc, Cf) but
# tab, newline and carriage return (white space), and U+FFFD.
CONTROL_CHARACTERS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\x{fffd}]"


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    """The ids of a vocabulary's reserved tokens (RESERVED_TOKENS, in that order)."""

    pad: int
    unk: int
    cls: int
    sep: int
    mask: int

    @property
    def reserved(self) -> Tuple[int, ...]:
        """All five, ascending."""
        return tuple(sorted(dataclasses.astuple(self)))


# The ids our learner gives the reserved tokens (first, in order).
LEARNED_IDS = SpecialIds(*range(len(RESERVED_TOKENS)))
# Texts handed to the learner per batch (it counts words in a tf.data pass).
LEARN_BATCH = 1000


@dataclasses.dataclass(frozen=True)
class WordPieceSettings:
    # BERT's uncased vocabulary has 30,522 pieces.
    size: int = 30522
    sample_size: int = 1_000_000
    lower_case: bool = True


def learn_vocabulary(texts: Iterable[str], settings: WordPieceSettings = WordPieceSettings()
                     ) -> List[str]:
    """The pieces learned from `texts`, reserved tokens first."""
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

    texts = list(texts)
    if not texts:
        raise ValueError("no text to learn a WordPiece vocabulary from")
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string)).batch(LEARN_BATCH)
    pieces = bert_vocab_from_dataset.bert_vocab_from_dataset(
        dataset, vocab_size=settings.size, reserved_tokens=list(RESERVED_TOKENS),
        bert_tokenizer_params={"lower_case": settings.lower_case})
    if tuple(pieces[:len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
        raise RuntimeError(f"the learner did not put {RESERVED_TOKENS} first: {pieces[:5]}")
    # The learner's size is a target; padding to it with BERT's [unusedN] pieces (text never
    # tokenises to them: "[" is punctuation) keeps the size a model-parallel mesh divides.
    return list(pieces) + [f"[unused{i}]" for i in range(settings.size - len(pieces))]


def train_vocabulary(texts: Iterable[str], path: str,
                     settings: WordPieceSettings = WordPieceSettings()) -> "WordPieceVocabulary":
    """Learns pieces from the first `settings.sample_size` texts; writes PATH and PATH.json."""
    sample = list(itertools.islice(texts, settings.sample_size))
    pieces = learn_vocabulary(sample, settings)
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(piece + "\n" for piece in pieces), encoding="utf-8")
    pathlib.Path(f"{path}.json").write_text(json.dumps(
        {"settings": dataclasses.asdict(settings), "texts": len(sample), "pieces": len(pieces)},
        indent=1) + "\n")
    return WordPieceVocabulary(path, settings.lower_case)


def uncased(texts: tf.Tensor) -> tf.Tensor:
    """BertTokenizer's do_lower_case: lower case, then NFD, then no combining marks (Mn)."""
    import tensorflow_text as tf_text

    lowered = tf.strings.lower(texts, encoding="utf-8")
    return tf.strings.regex_replace(tf_text.normalize_utf8(lowered, "NFD"), r"\p{Mn}", "")


def cased(pieces: Sequence[str]) -> bool:
    """Whether a piece other than a bracketed token ([CLS], [unused0]) has an upper-case
    letter."""
    return any(piece != piece.lower() for piece in pieces
               if not (piece.startswith("[") and piece.endswith("]")))


class WordPieceVocabulary:
    """A vocab.txt with tensorflow-text's FastBertTokenizer (several times its BertTokenizer):
    text -> piece ids, in Python and in tf.data. `lower_case` None: uncased unless the
    vocabulary is `cased`."""

    def __init__(self, path: str, lower_case: Optional[bool] = None):
        self.path = str(path)
        self.pieces = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
        self.ids = {piece: i for i, piece in enumerate(self.pieces)}
        missing = [token for token in RESERVED_TOKENS if token not in self.ids]
        if missing:
            raise ValueError(f"{path}: a BERT vocabulary holds {list(RESERVED_TOKENS)}; "
                             f"{missing} not found")
        self.special = SpecialIds(*(self.ids[token] for token in RESERVED_TOKENS))
        if self.special.pad != PAD_ID:
            raise ValueError(f"{path}: [PAD] is id {self.special.pad}; BERT's rows are padded "
                             f"with {PAD_ID}, so [PAD] must be id {PAD_ID}")
        self.lower_case = not cased(self.pieces) if lower_case is None else lower_case
        self._tokenizers: dict = {}

    def _tokenizer(self):
        """The FastBertTokenizer of the current context (its model is a constant of one graph,
        or of eager execution, and an estimator's input function builds its own graph)."""
        import tensorflow_text as tf_text

        key = "eager" if tf.executing_eagerly() else id(tf.compat.v1.get_default_graph())
        if key not in self._tokenizers:
            # Lower case and accents are stripped by `uncased` (FastBertTokenizer's own
            # lower_case_nfd_strip_accents also applies compatibility mappings: "…" -> "...").
            self._tokenizers[key] = tf_text.FastBertTokenizer(
                vocab=self.pieces, token_out_type=tf.int32, unknown_token=UNK,
                lower_case_nfd_strip_accents=False)
        return self._tokenizers[key]

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    @property
    def sha256(self) -> str:
        return hashlib.sha256("\n".join(self.pieces).encode("utf-8")).hexdigest()

    def tf_encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """[n] strings -> [n, (pieces)] int32 ids (words' pieces concatenated)."""
        texts = tf.strings.regex_replace(texts, CONTROL_CHARACTERS, "")
        if self.lower_case:
            texts = uncased(texts)
        return self._tokenizer().tokenize(texts)

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        if not texts:
            return []
        return self.tf_encode(tf.constant(list(texts), tf.string)).to_list()

    def encode(self, text: str) -> List[int]:
        return self.encode_batch([text])[0]

    def tokens(self, ids: Iterable[int]) -> List[str]:
        return [self.pieces[i] if 0 <= i < len(self.pieces) else UNK for i in ids]

    def decode(self, ids: Iterable[int]) -> str:
        """Pieces joined into words ("##" continues a word); reserved tokens as written."""
        words: List[str] = []
        for piece in self.tokens(ids):
            if piece.startswith("##") and words:
                words[-1] += piece[2:]
            else:
                words.append(piece)
        return " ".join(words)


@functools.lru_cache(maxsize=None)
def special_ids(path: str) -> SpecialIds:
    """The reserved tokens' ids of the vocabulary file `path` (read once)."""
    return WordPieceVocabulary(path).special
