"""langdetect's profiles as one probability table, and the index that finds their n-grams.

The library loads its 55 profiles in os.listdir order, which varies between machines and changes
the last bits of its sums; here they are loaded in name order (`sorted_profiles_factory` is the
library's own factory over that order, for the tests' reference). `profile_table` builds the
same table in numpy, several times faster; `GramIndex` looks up many n-grams, as code points, at
once. The tables are built once per process and shared by its detectors (`shared_profiles`).
"""
import functools
import json
import pathlib
from typing import List, Sequence, Tuple

import numpy as np
from langdetect import detector_factory

# Rows of a _Trials: indices, or all of them.
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing.


def sorted_profiles_factory() -> detector_factory.DetectorFactory:
    """langdetect's factory over its bundled profiles, languages in name order.

    The library's load_profile numbers languages in os.listdir order, which varies between file
    systems; the order changes the floating-point sums, so it is fixed here.
    """
    factory = detector_factory.DetectorFactory()
    factory.load_json_profile([path.read_text(encoding="utf-8") for path in _profile_paths()])
    return factory


def _profile_paths() -> List[pathlib.Path]:
    directory = pathlib.Path(detector_factory.PROFILES_DIRECTORY)
    return sorted(path for path in directory.iterdir()
                  if path.is_file() and not path.name.startswith("."))


def profile_table() -> Tuple[List[str], List[str], np.ndarray]:
    """(languages, n-grams, probabilities[n-gram, language]): `sorted_profiles_factory()`'s
    langlist, word_lang_prob_map keys (in its order) and values, built in numpy from the same
    profiles (langdetect's add_profile: count / n_words[len - 1]), several times faster than
    through the factory's lists."""
    languages, grams, table, _ = _profiles()
    return list(languages), list(grams), table


def _profiles() -> Tuple[Tuple[str, ...], Tuple[str, ...], np.ndarray, "GramIndex"]:
    """profile_table()'s values and an index of its n-grams. An n-gram's row is its first
    appearance's, found by sorting the n-grams' numbers (`GramIndex`) rather than hashing
    strings."""
    languages: List[str] = []
    grams: List[str] = []
    columns = []
    for path in _profile_paths():
        profile = json.loads(path.read_text(encoding="utf-8"))
        languages.append(profile["name"])
        frequencies = profile["freq"]
        lengths = np.fromiter(map(len, frequencies), dtype=np.intp, count=len(frequencies))
        words_of_length = np.array([0.0, *profile["n_words"]])[np.minimum(lengths, 3)]
        counts = np.fromiter(frequencies.values(), dtype=np.float64, count=len(frequencies))
        columns.append(counts / words_of_length)
        grams.extend(frequencies)
    index = GramIndex(grams)
    distinct, firsts, inverse = np.unique(index.keys, return_index=True, return_inverse=True)
    order = np.argsort(firsts)  # The distinct n-grams in order of first appearance.
    row_of_distinct = np.empty(len(order), dtype=np.intp)
    row_of_distinct[order] = np.arange(len(order))
    index.add_rows(distinct[order])
    language_of = np.repeat(np.arange(len(languages)), [len(column) for column in columns])
    table = np.zeros((len(order), len(languages)))
    table[row_of_distinct[inverse.ravel()], language_of] = np.concatenate(columns)
    return tuple(languages), tuple(map(grams.__getitem__, firsts[order].tolist())), table, index


@functools.lru_cache(maxsize=None)
def shared_profiles() -> Tuple[Tuple[str, ...], Tuple[str, ...], np.ndarray, "GramIndex"]:
    """_profiles(), built once per process (several detectors, as Beam's DoFn instances in one
    worker, share them; nothing writes to them)."""
    languages, grams, table, index = _profiles()
    table.setflags(write=False)
    return languages, grams, table, index


def code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@functools.lru_cache(maxsize=None)
def _upper_case_bmp() -> np.ndarray:
    """str.isupper of every character of the Basic Multilingual Plane."""
    return np.frombuffer(bytes(map(str.isupper, map(chr, range(0x10000)))), dtype=np.bool_)


def is_upper(codes: np.ndarray) -> np.ndarray:
    upper = _upper_case_bmp()[codes & 0xFFFF]
    astral = np.flatnonzero(codes > 0xFFFF)
    if len(astral):
        upper[astral] = [chr(code).isupper() for code in codes[astral].tolist()]
    return upper


class GramIndex:
    """The table rows of n-grams given as code points, looked up many at a time.

    Each character of the profiles' n-grams gets a small number (its rank; all ones for the
    characters of no n-gram); an n-gram is the number made of its characters' ranks, a fixed
    number of bits each, the last character lowest (so that a shorter n-gram's high bits are 0,
    and n-grams of different lengths differ). 1-grams are looked up in an array, longer ones in an
    open-addressing hash table (linear probing, no wrap-around) holding key and row in one word.
    """

    def __init__(self, grams: Sequence[str]):
        """The numbers of `grams` (repeats allowed) as `keys`; `add_rows` indexes them."""
        lengths = np.fromiter(map(len, grams), dtype=np.intp, count=len(grams))
        if len(grams) and not ((lengths >= 1) & (lengths <= 3)).all():
            raise ValueError("langdetect's profiles hold n-grams of 1 to 3 characters")
        codes = code_points("".join(grams))
        alphabet = np.unique(codes)
        self._bits = (len(alphabet) + 1).bit_length()
        self._unknown = (1 << self._bits) - 1  # The rank of characters in no n-gram.
        self._rank = np.full(int(alphabet[-1]) + 1 if len(alphabet) else 1, self._unknown,
                             dtype=np.uint64)
        self._rank[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.uint64)
        ends = np.cumsum(lengths)
        self.keys = np.zeros(len(grams), dtype=np.uint64)
        for offset in range(3):  # The last, second last and third last characters.
            has = lengths > offset
            self.keys[has] |= self._rank[codes[ends[has] - 1 - offset]] << np.uint64(
                self._bits * offset)

    def add_rows(self, keys: np.ndarray) -> None:
        """Makes the distinct n-grams `keys` the table's rows 0, 1, ..."""
        rows = np.arange(len(keys))
        ones = keys < (1 << self._bits)
        self._row_of_rank = np.full(1 << self._bits, -1, dtype=np.int32)
        self._row_of_rank[keys[ones]] = rows[ones]
        self._row_bits = max(len(keys), 1).bit_length()
        if 3 * self._bits + self._row_bits > 64:
            raise ValueError("too many distinct characters or n-grams for 64-bit entries")
        self._hash_bits = (4 * int((~ones).sum())).bit_length()  # At most a quarter full.
        self._hash_shift = np.uint64(64 - self._hash_bits)
        self._entries = self._hash_table(keys[~ones], rows[~ones])

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        return ((keys * _HASH_MULTIPLIER) >> self._hash_shift).astype(np.intp)

    def _hash_table(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Linear probing, keys inserted in the order of their home slots: each key lands on the
        first free slot at or after its home, past the end if need be (the table grows)."""
        homes = self._slots(keys)
        order = np.argsort(homes, kind="stable")
        homes = homes[order]
        ranks = np.arange(len(homes))
        slots = ranks + np.maximum.accumulate(homes - ranks)
        # Every home slot exists; the last entry stays empty, so every probe ends there at most.
        size = max(1 << self._hash_bits, int(slots[-1]) + 1 if len(slots) else 0) + 1
        entries = np.zeros(size, dtype=np.uint64)
        entries[slots] = (keys[order] << np.uint64(self._row_bits)) | rows[order].astype(np.uint64)
        return entries

    def rows(self, codes: np.ndarray) -> np.ndarray:
        """For the n-grams ending at each position of `codes` but the first (a space): the table
        row of the 1-, 2- and 3-gram langdetect's buffer holds there, -1 for none."""
        ranks = np.zeros(len(codes), dtype=np.uint64)
        known = codes < len(self._rank)
        ranks[known] = self._rank[codes[known]]
        ranks[~known] = self._unknown
        found = np.full((len(codes) - 1, 3), -1, dtype=np.int32)
        found[:, 0] = self._row_of_rank[ranks[1:]]
        bits = np.uint64(self._bits)
        pairs = (ranks[:-1] << bits) | ranks[1:]
        found[:, 1] = self._lookup(pairs)
        found[1:, 2] = self._lookup((ranks[:-2] << (bits + bits)) | pairs[1:])
        return found

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        found = np.full(len(keys), -1, dtype=np.int32)
        pending = np.arange(len(keys))
        slots = self._slots(keys)
        row_bits = np.uint64(self._row_bits)
        row_mask = np.uint64((1 << self._row_bits) - 1)
        while len(pending):
            entries = self._entries[slots]
            hits = (entries >> row_bits) == keys
            found[pending[hits]] = entries[hits] & row_mask
            going = (entries != 0) & ~hits
            pending, slots, keys = pending[going], slots[going] + 1, keys[going]
        return found
