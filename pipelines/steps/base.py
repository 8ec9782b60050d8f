"""The step machinery: a step declares its stage and the reasons it may drop for once (class
attributes), and counts what it keeps and drops through Counts, which also records the drops of
the pages in the exclusions' sample. Plain data in and out: the executors (the Beam graph,
pipelines/beam/graph.py; the staged tasks, pipelines/executors/staged.py) route a step's outputs.
"""
import collections
from typing import (Callable, ClassVar, Dict, FrozenSet, Iterable, NamedTuple, Optional,
                    Sequence, Tuple)

from pipelines import counters, exclusion_sample
from pipelines.page import Page


class Counts:
    """Counter increments summed while a worker runs steps and reported at once (Beam:
    once a bundle; a staged task: in its marker): one increment of a Beam counter costs
    microseconds, and a page passes a dozen."""

    def __init__(self, sample: Optional[exclusion_sample.Sample] = None):
        self._values: Dict[Tuple[str, str], int] = collections.Counter()
        # Where a step's drops are recorded (--exclusions), or None.
        self.sample = sample

    def add(self, stage: str, name: str, value: int = 1) -> None:
        self._values[stage, name] += value

    def records_drops_of(self, normalized_url: str) -> bool:
        """Whether what the steps drop of a URL's pages is recorded: the URL is in the
        exclusions' sample."""
        return self.sample is not None and self.sample.has(normalized_url)

    def drop(self, stage: str, reason: str, page: Page, level: str = "page", count: int = 1,
             texts: Optional[Callable[[], Sequence[str]]] = None) -> None:
        """Counts `count` things a step drops (`<level>s.dropped:<reason>`): `page`, or parts of
        it; where the page is in the exclusions' sample, records them (the parts are `texts()`,
        made only then)."""
        self.add(stage, counters.dropped(level, reason), count)
        if self.records_drops_of(page.normalized_url):
            self.sample.drop(page, stage, reason, level, None if texts is None else texts())

    def take(self) -> Dict[Tuple[str, str], int]:
        """The increments summed since the last take, {(stage, name): value}; none kept."""
        values, self._values = dict(self._values), collections.Counter()
        return values

    def as_stats(self) -> Dict[str, Dict[str, int]]:
        """The increments so far as {stage: {counter: value}}."""
        by_stage: Dict[str, Dict[str, int]] = {}
        for (stage, name), value in self._values.items():
            by_stage.setdefault(stage, {})[name] = value
        return by_stage


class Drop(NamedTuple):
    """A reason a step may drop for, and what it drops for it (counters.LEVELS)."""
    reason: str
    level: str = "page"
    # Where the step counts the reason apart per something (a language, a task), what: its
    # counters are `<reason>:<that>` (`badword:de`, `example_of:squad`).
    per: Optional[str] = None


class Routed(NamedTuple):
    """An output a step sends elsewhere than to the next step: to `to`, an input of a later
    shuffle (the Beam graph makes it a tagged output; a staged task writes it to that shuffle's
    files)."""
    to: str
    value: object


class Step:
    """One stage's work on one element between two shuffles: the elements it passes on (none,
    the element, a changed copy, or several), what it keeps and drops counted in `counts`.

    A step declares `stage` (the namespace of its counters; None for a step that counts
    nothing) and `drops` (every reason it may drop for); `count` and `drop` count under the
    stage, and a reason not declared is refused."""
    stage: ClassVar[Optional[str]] = None
    drops: ClassVar[Tuple[Drop, ...]] = ()
    _declared: ClassVar[FrozenSet[Tuple[str, str]]] = frozenset()
    _declared_per: ClassVar[FrozenSet[Tuple[str, str]]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._declared = frozenset((drop.level, drop.reason) for drop in cls.drops)
        cls._declared_per = frozenset((drop.level, drop.reason) for drop in cls.drops
                                      if drop.per)

    def setup(self) -> None:
        """Loads what the step needs (a detector, an automaton), once per worker."""

    def start(self) -> None:
        """Starts a bundle: a step that holds elements drops what a failed bundle left."""

    def __call__(self, element, counts: Counts) -> Iterable:
        raise NotImplementedError

    def finish(self, counts: Counts) -> Iterable:
        """What the step still holds at the end of a bundle; called on a phase's last step."""
        return ()

    def count(self, counts: Counts, name: str = counters.PASSED, value: int = 1) -> None:
        """Counts under the step's stage: by default, a page it passes on."""
        counts.add(self.stage, name, value)

    def drop(self, counts: Counts, reason: str, page: Page, level: str = "page",
             count: int = 1, texts: Optional[Callable[[], Sequence[str]]] = None) -> None:
        """Counts.drop under the step's stage, for a declared reason."""
        self._check_declared(level, reason)
        counts.drop(self.stage, reason, page, level, count, texts)

    def drop_unrecorded(self, counts: Counts, reason: str, count: int,
                        level: str = "page") -> None:
        """Counts drops none of which is in the exclusions' sample (or whose sampled ones are
        recorded by `drop`, one by one)."""
        self._check_declared(level, reason)
        counts.add(self.stage, counters.dropped(level, reason), count)

    def _check_declared(self, level: str, reason: str) -> None:
        if ((level, reason) not in self._declared
                and (level, reason.split(":", 1)[0]) not in self._declared_per):
            raise ValueError(f"{type(self).__name__} drops {level}s for {reason!r}, which its "
                             "`drops` does not declare: add it there")


def run_steps(steps: Sequence[Step], element, counts: Counts) -> list:
    """What `steps`, one after the other, make of one element."""
    elements = [element]
    for step in steps:
        elements = [passed for each in elements for passed in step(each, counts)]
        if not elements:
            break
    return elements


def setup_all(steps: Sequence[Step]) -> None:
    """Sets up and starts each of `steps` (a worker that runs them outside Beam)."""
    for step in steps:
        step.setup()
        step.start()
