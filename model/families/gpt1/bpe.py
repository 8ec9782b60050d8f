"""OpenAI GPT-1's own vocabulary: the 40,478 BPE pieces of finetune-transformer-lm's
`encoder_bpe_40000.json` (piece -> id) and the 40,000 merges of `vocab_40000.bpe`, with
`_start_`, `_delimiter_` and `_classify_` appended after the pieces as OpenAI's train.py
appends them (ids 40,478, 40,479, 40,480: 40,481 ids in all).

    vocabulary = BpeVocabulary("model/encoder_bpe_40000.json")  # vocab_40000.bpe beside it

`DataConfig.vocabulary` names the encoder file, with the merges file beside it under its
release name (`encoder_bpe_N.json` -> `vocab_N.bpe`) or transformers' (`vocab.json` ->
`merges.txt`, an OpenAIGPTTokenizer folder: the same two files renamed).

Text is tokenised as transformers' OpenAIGPTTokenizer does without ftfy and spaCy, the
tokenizer that transformers itself falls back to: BERT's basic tokenization (control characters
dropped, CJK characters spaced, NFC, split on white space, lower case, accents stripped, split
on punctuation), then each word's BPE, its last symbol marked `</w>`, by merging the adjacent
pair of lowest merge rank everywhere until no pair has a rank. OpenAI's own text_utils.py read
text with spaCy and ftfy instead (tests/model/test_gpt1_openai.py compares ours with the installed
OpenAIGPTTokenizer, which says which of the two it runs). A piece outside the encoder is id 0,
as OpenAI's text_utils.py encodes it (transformers' tokenizer gives None there). An export to
transformers carries an OpenAIGPTTokenizerFast of the same ids (gpt1/hf.py `tokenizer`:
tokenizer.json, with vocab.json and merges.txt).

GPT-1's special tokens are the last three ids of every GPT-1 vocabulary (model/families/gpt1/
inputs.py `special_tokens`), here in OpenAI's order. Pre-training streams are SentencePiece's
(`tf_encode`, id 0 padding, EOS 1): this vocabulary is for fine-tuning OpenAI's weights.
"""
from __future__ import annotations

import json
import math
import pathlib
import re
import unicodedata
from typing import Dict, Iterable, List, Sequence, Tuple

# OpenAI's train.py appends these to the encoder, in this order, after the BPE pieces.
SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")
END_OF_WORD = "</w>"
# The merges file beside an encoder file: the release's names, then transformers'.
MERGES_BESIDE = ((re.compile(r"encoder_bpe_(\d+)\.json"), r"vocab_\1.bpe"),
                 (re.compile(r"vocab\.json"), "merges.txt"))
# A piece the encoder lacks (OpenAI's text_utils.py: `self.encoder.get(t, 0)`).
UNKNOWN_PIECE_ID = 0
# Code points that BERT's basic tokenization treats as CJK ideographs (each one a word).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCTUATION = frozenset(chr(c) for c in [*range(33, 48), *range(58, 65), *range(91, 97),
                                                *range(123, 127)])


def is_encoder_file(path: str | pathlib.Path) -> bool:
    """Whether a vocabulary path names a BPE encoder (`encoder_bpe_40000.json` of OpenAI's
    release, `vocab.json` of transformers') rather than a SentencePiece model."""
    return pathlib.Path(path).suffix == ".json"


def merges_path(encoder_path: str | pathlib.Path) -> pathlib.Path:
    """The merges file that goes with an encoder file (see the module's docstring)."""
    path = pathlib.Path(encoder_path)
    for pattern, merges in MERGES_BESIDE:
        if pattern.fullmatch(path.name):
            return path.with_name(pattern.sub(merges, path.name))
    raise ValueError(f"{path}: a GPT-1 BPE vocabulary is an encoder file named "
                     f"encoder_bpe_N.json (OpenAI's release) or vocab.json (transformers')")


def read_encoder(path: pathlib.Path) -> List[str]:
    """The pieces of an encoder file ({piece: id}, ids 0..n-1), in id order."""
    try:
        encoder = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"BPE encoder file not found: {path}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a JSON encoder file: {error}") from None
    if not isinstance(encoder, dict) or sorted(encoder.values()) != list(range(len(encoder))):
        raise ValueError(f"{path}: an encoder file maps each piece to its id, the ids 0 to "
                         f"n - 1 once each")
    clash = sorted(set(SPECIAL_TOKENS) & set(encoder))
    if clash:
        raise ValueError(f"{path} already has {clash}, which GPT-1 appends after the pieces")
    pieces = [""] * len(encoder)
    for piece, index in encoder.items():
        pieces[index] = piece
    return pieces


def read_merges(path: pathlib.Path) -> Dict[Tuple[str, str], int]:
    """{(left, right): rank} of a merges file: a version line, then one merge a line, the
    first line ranking first (rank 0)."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise FileNotFoundError(f"BPE merges file not found: {path} (it goes beside the "
                                f"encoder file)") from None
    ranks: Dict[Tuple[str, str], int] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        pair = tuple(line.split())
        if len(pair) != 2:
            raise ValueError(f"{path} line {number}: a merge is two symbols, got {line!r}")
        ranks[pair] = len(ranks)  # a repeated merge takes its later rank, as dict(zip()) does
    return ranks


def _is_cjk(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in _CJK_RANGES)


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def _cleaned(text: str) -> str:
    """NUL, U+FFFD and control characters dropped, every other white space a space, CJK
    ideographs spaced apart."""
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char in " \t\n\r" or category == "Zs":
            out.append(" ")
        elif char in "\0\ufffd" or category.startswith("C"):
            continue
        else:
            out.append(f" {char} " if _is_cjk(char) else char)
    return "".join(out)


def _split_punctuation(word: str) -> Iterable[str]:
    """Each punctuation character on its own, the runs between them as they are."""
    run = ""
    for char in word:
        if _is_punctuation(char):
            if run:
                yield run
            run = ""
            yield char
        else:
            run += char
    if run:
        yield run


def words(text: str) -> List[str]:
    """BERT's basic tokenization, lower-cased, as transformers' OpenAIGPTTokenizer runs it
    without ftfy and spaCy: the words whose BPE pieces make the ids."""
    out = []
    for word in unicodedata.normalize("NFC", _cleaned(text)).split():
        bare = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                       if unicodedata.category(c) != "Mn")
        out.extend(_split_punctuation(bare))
    return out


def bpe(word: str, ranks: Dict[Tuple[str, str], int]) -> Tuple[str, ...]:
    """The pieces of one word: its characters, the last one marked as the word's end, merged
    pair by pair, always the adjacent pair of lowest rank, at every place it occurs (left to
    right, without overlap), until no adjacent pair has a rank."""
    symbols = list(word[:-1]) + [word[-1] + END_OF_WORD]
    while len(symbols) > 1:
        pair = min(zip(symbols, symbols[1:]), key=lambda p: ranks.get(p, math.inf))
        if pair not in ranks:
            break
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                merged.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return tuple(symbols)


class BpeVocabulary:
    """OpenAI's BPE pieces and merges plus GPT-1's three special tokens; the part of
    model/data/vocabulary.Vocabulary's interface that fine-tuning and export read
    (`vocab_size`, `encode`, `decode`, `path`)."""

    def __init__(self, encoder_path: str | pathlib.Path):
        self.path = pathlib.Path(encoder_path)
        self.merges_path = merges_path(self.path)
        self.pieces = read_encoder(self.path) + list(SPECIAL_TOKENS)
        self.encoder = {piece: index for index, piece in enumerate(self.pieces[:self.num_pieces])}
        self.ranks = read_merges(self.merges_path)
        self._cache: Dict[str, Tuple[str, ...]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    @property
    def num_pieces(self) -> int:
        """The encoder's pieces, without the special tokens."""
        return len(self.pieces) - len(SPECIAL_TOKENS)

    def tokenize(self, text: str) -> List[str]:
        out: List[str] = []
        for word in words(text):
            if word not in self._cache:
                self._cache[word] = bpe(word, self.ranks)
            out.extend(self._cache[word])
        return out

    def encode(self, text: str) -> List[int]:
        """The ids of the text's pieces (never a special token's: OpenAI adds those to the
        encoded ids, not to the text)."""
        return [self.encoder.get(piece, UNKNOWN_PIECE_ID) for piece in self.tokenize(text)]

    def decode(self, ids: Sequence[int]) -> str:
        """The pieces joined, each word's end a space (special tokens by their names)."""
        ids = [int(i) for i in ids]
        outside = [i for i in ids if not 0 <= i < self.vocab_size]
        if outside:
            raise ValueError(f"ids {outside[:5]} outside the {self.vocab_size} of {self.path}")
        text = "".join(self.pieces[i] for i in ids)
        return text.replace(END_OF_WORD, " ").strip()


__all__ = ["BpeVocabulary", "END_OF_WORD", "SPECIAL_TOKENS", "UNKNOWN_PIECE_ID", "bpe",
           "merges_path", "read_encoder", "read_merges", "words"]
