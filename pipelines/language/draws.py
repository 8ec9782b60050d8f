"""langdetect's random draws, made once: the words of Python's Mersenne Twister and the normals
`random.gauss` makes of them."""
import math
import random
from typing import List, Tuple

import numpy as np


def _uniform(first: int, second: int) -> float:
    """`random.random()` made of two 32-bit words of the stream."""
    return ((first >> 5) * 67108864.0 + (second >> 6)) * (1.0 / 9007199254740992.0)


def gauss_pair(words: List[int]) -> Tuple[float, float]:
    """The two normals `random.gauss` makes of 4 words (it returns the first, keeps the other)."""
    first, second, third, fourth = words
    angle = _uniform(first, second) * math.tau
    radius = math.sqrt(-2.0 * math.log(1.0 - _uniform(third, fourth)))
    return math.cos(angle) * radius, math.sin(angle) * radius


class DrawStream:
    """The 32-bit words of Python's Mersenne Twister seeded with `seed`: langdetect's draws.

    langdetect reseeds for every text, so every text reads the same words; only how `choice`
    reads them depends on the text (its number of n-grams). Holding the words lets a text take
    many choices in one numpy step instead of one `random.choice` call each. CPython makes
    `choice(seq)` from `getrandbits(k)` = word >> (32 - k), k = len(seq).bit_length(), drawn again
    while >= len(seq); `random()` from two words (`_uniform`); `gauss` from two `random()`s,
    keeping the second normal for the next call.
    """

    def __init__(self, seed: int, size: int = 4096):
        self._generator = random.Random(seed)
        self.words = np.empty(0, dtype=np.uint32)
        self.grow(size)

    def grow(self, size: int) -> None:
        """At least `size` words (getrandbits(32 n) is the next n words, the first lowest)."""
        missing = size - len(self.words)
        if missing > 0:
            more = self._generator.getrandbits(32 * missing).to_bytes(4 * missing, "little")
            self.words = np.concatenate([self.words, np.frombuffer(more, dtype="<u4")])
