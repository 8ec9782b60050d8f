"""langdetect's 7 trials for a batch of texts, run side by side in numpy, with the library's
floating-point operations in its order."""
import sys
from typing import List, Union

import numpy as np
from langdetect.detector import Detector

from pipelines.language.draws import DrawStream, gauss_pair

_TRIALS = 7
_ITERATIONS_PER_CHECK = 5  # langdetect normalizes and tests convergence every 5th iteration.
# langdetect normalizes and tests convergence every 5th iteration.
# A step runs up to this many blocks when fewer than _ROWS_PER_STEP rows share it.
_MAX_BLOCKS_PER_STEP = 8
_ROWS_PER_STEP = 32
# The draws each block multiplies in, from the row's next choice: a trial's first block takes
# one draw (and multiplies by 1.0 four times), later blocks 5.
_LATER_BLOCK_DRAWS = np.arange(_MAX_BLOCKS_PER_STEP * _ITERATIONS_PER_CHECK).reshape(
    _MAX_BLOCKS_PER_STEP, _ITERATIONS_PER_CHECK)
_FIRST_BLOCK_DRAWS = np.maximum(_LATER_BLOCK_DRAWS - (_ITERATIONS_PER_CHECK - 1), 0)
# Stream words scanned for a batch's choices at first: enough for most texts' 7 trials (an
# English page takes about 350 choices); the scan doubles, for the texts under way, when one
# needs more.
_INITIAL_WORDS = 1024
_Rows = Union[np.ndarray, slice]  # Rows of a _Trials: indices, or all of them.


def _sequential_row_sums(matrix: np.ndarray) -> np.ndarray:
    """Python's `sum` of each row, as langdetect normalizes. Up to 3.11 it adds in order, as
    numpy's cumulative sum does (numpy's `sum` adds pairwise: other last bits); from 3.12 on it
    compensates, so each row is summed by Python itself there."""
    if sys.version_info < (3, 12):
        return np.cumsum(matrix, axis=1)[:, -1]
    return np.array([sum(row) for row in matrix.tolist()])


class Trials:
    """The trials of a batch of texts, run side by side: one row of language probabilities per
    text under way (in its current trial), all rows advanced by a block of iterations (or a few,
    when few rows are left) per numpy step; a row starts its text's next trial in place.

    A row's choices are read from `_positions` and `_draws` (the stream positions of the words
    its text accepts, and the table rows they choose, all rows' one after the other), found for
    every row at once over the first `_length` words of the stream, and again over twice as
    many when a row runs out of them.
    """

    def __init__(self, table: np.ndarray, stream: DrawStream, rows_of_texts: List[np.ndarray]):
        self._table = table
        self._stream = stream
        self._rows_of_texts = rows_of_texts
        languages = self._table.shape[1]
        self.totals = np.zeros((len(rows_of_texts), languages))
        # One entry per row:
        self._text = np.array([text for text, rows in enumerate(rows_of_texts) if len(rows)],
                              dtype=np.intp)
        count = len(self._text)
        self._slot = np.arange(count)  # The row's line in _positions and _draws.
        self._trial = np.zeros(count, dtype=np.intp)
        self._prob = np.full((count, languages), 1.0 / languages)
        self._weight = np.empty(count)
        self._spare_normal = np.empty(count)  # random.gauss's second normal, for odd trials.
        self._iteration = np.zeros(count, dtype=np.intp)  # The trial's next iteration.
        self._next_choice = np.zeros(count, dtype=np.intp)  # Index into the row's choices.
        self._length = 0
        self._scan_choices(_INITIAL_WORDS)
        self._start_trials(np.arange(count))

    def run(self) -> np.ndarray:
        """The sums of prob / 7 over each text's 7 trials (langdetect's langprob)."""
        while len(self._text):
            self._step()
        return self.totals

    def _scan_choices(self, length: int) -> None:
        """Every row's accepted words among the stream's first `length`: CPython's choice takes
        word >> (32 - k) and retries while it is >= the text's count of n-grams. A row's choices
        are `_available[slot]` entries of the flat `_positions` and `_draws` from
        `_first_choice[slot]` on."""
        self._stream.grow(length + 4)  # And the 4 words of a Gaussian after the last.
        words = self._stream.words[:length]
        rows_of_rows = [self._rows_of_texts[text] for text in self._text.tolist()]
        counts = np.array([len(rows) for rows in rows_of_rows], dtype=np.uint32)
        shifts = np.array([32 - len(rows).bit_length() for rows in rows_of_rows], dtype=np.uint32)
        candidates = words[None, :] >> shifts[:, None]
        row_of, self._positions = np.nonzero(candidates < counts[:, None])
        self._available = np.bincount(row_of, minlength=len(counts))
        self._first_choice = np.cumsum(self._available) - self._available
        starts = np.cumsum(counts, dtype=np.intp) - counts
        all_rows = np.concatenate(rows_of_rows) if rows_of_rows else np.empty(0, np.int32)
        self._draws = all_rows[starts[row_of] + candidates[row_of, self._positions]]
        self._slot = np.arange(len(counts))
        self._length = length

    def _ensure_choices(self, rows: _Rows, choices: int, words: int = 0) -> None:
        """Scans further until `rows` have `choices` more choices and the stream position after
        their last choice read plus `words` lies within the scan."""
        while True:
            enough = self._next_choice[rows] + choices <= self._available[self._slot[rows]]
            if words:
                enough &= self._read_position(rows) + words <= self._length
            if enough.all():
                return
            self._scan_choices(2 * self._length)

    def _choice_index(self, rows: _Rows) -> np.ndarray:
        """Where the rows' next choices lie in `_positions` and `_draws`."""
        return self._first_choice[self._slot[rows]] + self._next_choice[rows]

    def _read_position(self, rows: _Rows) -> np.ndarray:
        """The stream position after the rows' last choice (0 before their first)."""
        read = self._next_choice[rows] > 0
        last = self._positions[np.where(read, self._choice_index(rows) - 1, 0)]
        return np.where(read, last + 1, 0)

    def _start_trials(self, rows: np.ndarray) -> None:
        """random.gauss for each row's new trial (even trials read 4 words and keep the second
        normal, odd ones use it), and the uniform probabilities it starts from."""
        self._prob[rows] = 1.0 / self._prob.shape[1]
        self._iteration[rows] = 0
        normals = self._spare_normal[rows]
        drawing = np.flatnonzero(self._trial[rows] % 2 == 0)
        if len(drawing):
            fresh = rows[drawing]
            self._ensure_choices(fresh, 4, words=4)
            positions = self._read_position(fresh)
            words = self._stream.words[positions[:, None] + np.arange(4)].tolist()
            pairs = [gauss_pair(four) for four in words]
            normals[drawing] = [first for first, _ in pairs]
            self._spare_normal[fresh] = [second for _, second in pairs]
            # Choices resume after the 4 words: skip the accepted ones among them.
            later = self._positions[self._choice_index(fresh)[:, None] + np.arange(4)]
            self._next_choice[fresh] += (later < (positions + 4)[:, None]).sum(axis=1)
        alpha = Detector.ALPHA_DEFAULT + normals * Detector.ALPHA_WIDTH
        self._weight[rows] = alpha / Detector.BASE_FREQ

    def _step(self) -> None:
        """Every row through its next blocks of iterations (iteration 0 alone, then 5 at a time),
        each block ending with a normalization and the convergence test, until a block where a
        row is done. With few rows under way, the draws of several blocks are looked up at once
        (the same products; a step's cost is mostly numpy's per-call overhead then)."""
        every_row = slice(None)
        blocks = min(_MAX_BLOCKS_PER_STEP, max(1, _ROWS_PER_STEP // len(self._text)))
        self._ensure_choices(every_row, blocks * _ITERATIONS_PER_CHECK)
        firsts = self._iteration == 0
        offsets = np.where(firsts[:, None, None], _FIRST_BLOCK_DRAWS[:blocks],
                           _LATER_BLOCK_DRAWS[:blocks])
        draws = self._draws[self._choice_index(every_row)[:, None, None] + offsets]
        factors = np.take(self._table, draws, axis=0)
        factors_of_rows = factors.reshape(len(factors), -1)  # A view: each row's in one run.
        factors_of_rows += self._weight[:, None]  # weight + probability, as langdetect adds.
        if firsts.any():
            factors[firsts, 0, 1:] = 1.0  # x * 1.0 == x: a first block multiplies one draw in.
        # The iteration the first block ends with (and tests convergence at); 5 more per block.
        last_iterations = np.where(firsts, 0, self._iteration + _ITERATIONS_PER_CHECK - 1)
        limit_block = -(-(Detector.ITERATION_LIMIT - int(last_iterations.max()))
                        // _ITERATIONS_PER_CHECK)  # The first block where a row can reach it.
        prob = self._prob
        for block in range(blocks):
            for draw in range(_ITERATIONS_PER_CHECK):
                prob *= factors[:, block, draw]
            prob /= _sequential_row_sums(prob)[:, None]
            # A row's maximum passes the threshold if any of its values does (one at most can).
            done = np.nonzero(prob > Detector.CONV_THRESHOLD)[0]
            if block >= limit_block:
                done = np.flatnonzero(
                    (last_iterations + block * _ITERATIONS_PER_CHECK >= Detector.ITERATION_LIMIT)
                    | (prob.max(axis=1) > Detector.CONV_THRESHOLD))
            if len(done):
                break
        self._next_choice += (block + 1) * _ITERATIONS_PER_CHECK - np.where(
            firsts, _ITERATIONS_PER_CHECK - 1, 0)
        self._iteration = last_iterations + block * _ITERATIONS_PER_CHECK + 1
        if not len(done):
            return
        self.totals[self._text[done]] += prob[done] / _TRIALS
        self._trial[done] += 1
        finished = self._trial[done] == _TRIALS
        self._start_trials(done[~finished])
        if finished.any():
            going = np.ones(len(self._text), dtype=bool)
            going[done[finished]] = False
            for name in ("_text", "_slot", "_trial", "_prob", "_weight", "_spare_normal",
                         "_iteration", "_next_choice"):
                setattr(self, name, getattr(self, name)[going])
