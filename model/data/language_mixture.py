"""mT5's pre-training input: one training stream per language, mixed at mT5's language rates.

    DataConfig.source = 'languages:out/mc4'        # the pipeline's mC4 output, a folder per language
    DataConfig.source = 'languages:tfds:t5_c4/multilingual@DATA_DIR'
    DataConfig.languages = ('de', 'fr')            # default: every language with text but und
    DataConfig.language_exponent = 0.3             # p(L) proportional to |L|^0.3

multilingual-t5's `mc4` mixture (multilingual_t5/tasks.py) has a task per language, the span
corruption of T5 over the language's train split, mixed by `rate_num_examples` with temperature
1/0.3 and no maximum (model/data/languages.py); seqio draws each next example from a member
picked at random by the rates, and the feature converter then packs the drawn examples. So here:
each member is a `PretrainingStream` over one language (its noise seeded by the run's seed and
the language), the examples are drawn from the members by the rates, and the drawn examples are
packed in windows as a single stream packs its own.

Determinism and resuming: draw i picks its member by a float64 uniform of the stateless seed
(seed, i) against the cumulative rates, so the members drawn are a function of the seed alone.
Each row carries the position of its packing window (`MixturePosition`): the draw of the
window's first example and, per member, the position of its last example drawn before it. A
resumed run starts each member after that example and the draws at the window's, rebuilds one
window and skips the rows already used.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import ClassVar, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from model.data import inputs, objectives
from model.data.languages import MT5_EXPONENT, LanguageText, language_rates, languages_of
from model.data.input_position import InputPosition
from model.data.vocabulary import Vocabulary

PREFIX = "languages:"
# A member's position: its last drawn example's (InputPosition's fields but the row), and whether
# it has had one drawn yet.
MEMBER_FIELDS = ("epoch", "shard", "document", "chunk", "example", "drawn")
MAX_DRAWS = 2 ** 62  # without end
CHOICE_BLOCK = 4096  # draws whose members one op picks


def mixture_root(source: str) -> Optional[str]:
    """The corpus root of a `languages:ROOT` source; None for another source."""
    return source[len(PREFIX):] if source.startswith(PREFIX) else None


def member_seed(seed: int, language: str) -> int:
    """The objective's seed of a language's stream: the run's seed and the language (below
    2^31, as objectives' base seeds must be below 2^32)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{language}".encode()).digest()[:4], "big") >> 1


@dataclasses.dataclass(frozen=True)
class MixturePosition:
    """Row `row` of the packing window whose first example is draw `draw`; `members`: per
    member (in the mixture's order, its languages sorted), the MEMBER_FIELDS of its last example
    drawn before it (all 0 for a member none was drawn from). No members: every one at its
    start."""

    draw: int = 0
    members: tuple[tuple[int, ...], ...] = ()
    row: int = 0

    def to_record(self) -> dict:
        return {"draw": self.draw, "row": self.row, "member_fields": list(MEMBER_FIELDS),
                "members": [list(member) for member in self.members]}

    @classmethod
    def from_record(cls, record: Mapping) -> "MixturePosition":
        if record.get("member_fields") != list(MEMBER_FIELDS):
            raise ValueError(f"not a language mixture's position: {dict(record)}")
        return cls(int(record["draw"]), tuple(tuple(int(v) for v in member) for member in record["members"]),
                   int(record["row"]))

    @classmethod
    def after_row(cls, row: Mapping[str, np.ndarray]) -> "MixturePosition":
        members = tuple(tuple(int(v) for v in member) for member in np.asarray(row["members"]))
        return cls(int(row["draw"]), members, int(row["row"]) + 1)


@dataclasses.dataclass(frozen=True)
class LanguageMixtureStream(inputs.StreamRecipe):
    """The training stream of a `languages:ROOT` source (see the module docstring)."""

    root: str
    languages: Sequence[str] = ()
    exponent: float = MT5_EXPONENT
    # Read from the root: each language's text, and its rate.
    texts: Mapping[str, LanguageText] = dataclasses.field(init=False, repr=False)
    rates: Mapping[str, float] = dataclasses.field(init=False)

    position_type: ClassVar[type] = MixturePosition

    def __post_init__(self) -> None:
        texts = languages_of(self.root, tuple(self.languages))
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "rates", language_rates(
            {name: text.num_examples for name, text in texts.items()}, self.exponent))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.texts))

    def member(self, language: str) -> inputs.PretrainingStream:
        text = self.texts[language]
        return inputs.PretrainingStream(text.source, split=text.train_split,
                                        **self.recipe(seed=member_seed(self.seed, language)))

    def __call__(self) -> tf.data.Dataset:
        """The model features of one pass over the first language: the mixture has no pass of
        its own (members start theirs again on their own) and its rows have these features (the
        trainer reads their lengths), for the cost of one member."""
        return self.member(self.names[0])()

    def identity(self) -> dict:
        first = self.member(self.names[0]).identity()
        shared = {key: value for key, value in first.items() if key not in ("source", "seed", "split")}
        return {**shared, "root": self.root, "seed": self.seed, "language_exponent": self.exponent,
                "rates": dict(sorted(self.rates.items()))}

    def choices(self, first_draw: int = 0) -> tf.data.Dataset:
        """The member index of every draw from `first_draw` on. Draws come in blocks of
        CHOICE_BLOCK, block b's float64 uniforms from the stateless seed (seed, b), each compared
        with the cumulative rates (exact comparisons: the same members on every machine)."""
        cumulative = np.cumsum([self.rates[name] for name in self.names])
        cumulative[-1] = 1.0

        def block_choices(block):
            uniforms = tf.random.stateless_uniform(
                [CHOICE_BLOCK], seed=tf.stack([tf.constant(self.seed, tf.int64), block]), dtype=tf.float64)
            return tf.cast(tf.searchsorted(tf.constant(cumulative), uniforms, side="right"), tf.int64)

        return (tf.data.Dataset.range(first_draw // CHOICE_BLOCK, MAX_DRAWS // CHOICE_BLOCK)
                .map(block_choices).unbatch().skip(first_draw % CHOICE_BLOCK))

    def drawn_examples(self, start: MixturePosition = MixturePosition()) -> tf.data.Dataset:
        """(example, position) pairs of the draws from `start.draw` on, each example with the
        mixture's position before it: its draw and every member's last drawn example
        ("members", [members, MEMBER_FIELDS]). The members give chunks; the objective is applied
        after the draw (one graph for all members), with the member's seed."""
        members = start.members or tuple((0,) * len(MEMBER_FIELDS) for _ in self.names)
        if len(members) != len(self.names):
            raise ValueError(f"a mixture position of {len(members)} members for a mixture of "
                             f"{len(self.names)}")
        # Each member's chunks carry its index, so the chosen chunk says whose it is.
        streams = [self.member(name).chunks(InputPosition(*last[:-1])).skip(last[-1]).map(
                       lambda tokens, position, index=index: (tf.constant(index, tf.int64), tokens, position))
                   for index, (name, last) in enumerate(zip(self.names, members))]
        chosen = tf.data.Dataset.choose_from_datasets(streams, self.choices(start.draw))

        def draw_step(state, element):
            draw, (member, tokens, position) = element
            drawn = tf.stack([position[field] for field in MEMBER_FIELDS[:-1]] + [tf.constant(1, tf.int64)])
            return (tf.tensor_scatter_nd_update(state, [[member]], [drawn]),
                    (member, tokens, position, {"draw": draw, "members": state}))

        seeds = tf.constant([member_seed(self.seed, name) for name in self.names], tf.int64)
        corrupt = objectives.corruption(self.objective, self.sequence_lengths, self.vocabulary.token_ids,
                                        self.seed, self.config)

        def example(member, tokens, position, mixture_position):
            return (corrupt(tokens, position["example"], position["epoch"], tf.gather(seeds, member)),
                    mixture_position)

        return (chosen.enumerate(start=start.draw)
                .scan(tf.constant(members, tf.int64), draw_step).map(example))

    def rows(self, start: MixturePosition = MixturePosition()) -> tf.data.Dataset:
        """(model features, position of the row) pairs from `start` on, without end."""
        windows = inputs.packed_windows(self.drawn_examples(start), self.converter, self.sequence_lengths,
                                        self.pack)
        return windows.unbatch().skip(start.row)

    def validation_text(self) -> tf.data.Dataset:
        """Each member's validation text, language after language."""
        texts = [inputs.text_dataset_from_source(self.texts[name].source, self.texts[name].validation_split)
                 for name in self.names]
        return functools.reduce(tf.data.Dataset.concatenate, texts)
