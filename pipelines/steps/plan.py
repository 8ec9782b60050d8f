"""The plan: which steps run in which phase, between which shuffles, for a variant. The one-job
Beam graph (pipelines/beam/graph.py) and the staged tasks (pipelines/executors/tasks.py) are both
built from it; the stage order of the counters follows from it.

    READ       each page read, before URL dedup's shuffle (by normalized URL)
    URL_DEDUP  the newest page of each URL, (URL, url_dedup.NewestOfUrl), after it
    URL        its pages (with the OpenWebText join, (URL, pages, listed) from the join), up to
               the span dedup's shuffle, whose keys SpanRecords sends
    FINISH     after the span dedup's join (ApplyRemovals takes a page key's messages), or
               right after URL where the variant has no span dedup: what is written

A new filter is a step (its rule module) and one line here.
"""
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Type

from pipelines import counters
from pipelines.config import VariantConfig
from pipelines.filters.dedup import DedupConfig
from pipelines.steps.base import Drop, Step
from pipelines.steps.filter_steps import (Badwords, Clean, Cld3Language, Decontaminate,
                                          DetectLanguage, ParagraphFilter, RealNewsDomains,
                                          RecordKept, ReleasedText, WithinLength)
from pipelines.steps.resources import Resources
from pipelines.steps.span_dedup import ApplyRemovals, SpanRecords
from pipelines.steps.url_dedup import CountUrlDuplicates
from pipelines.steps.webtext_join import KeepListedPages

READ, URL_DEDUP, URL, FINISH = "read", "url_dedup", "url", "finish"
PHASES = (READ, URL_DEDUP, URL, FINISH)


class Setting(NamedTuple):
    """What a plan line makes its step from."""
    config: VariantConfig
    resources: Resources
    span_buckets: int  # The buckets of span keys the span dedup's shuffle has.


class PlanLine(NamedTuple):
    phase: str
    # The step classes `make` may give: their declarations give the stage order.
    kinds: Tuple[Type[Step], ...]
    # The line's step for a variant, or None where the variant does not run it.
    make: Callable[[Setting], Optional[Step]]


def _language(setting: Setting) -> Step:
    language = setting.config.language
    return Cld3Language(language) if language.detector == "cld3" else DetectLanguage(language)


def _badwords(setting: Setting) -> Optional[Step]:
    config = setting.config
    return (Badwords(setting.resources.badwords, config.badwords_filter_fraction,
                     count_languages=config.language_folders is not None)
            if config.filter_badwords else None)


PLAN: Tuple[PlanLine, ...] = (
    PlanLine(READ, (ReleasedText,),
             lambda s: ReleasedText() if s.config.rule_set.reads_released_text else None),
    PlanLine(READ, (WithinLength,), lambda s: WithinLength(s.config.max_page_chars)),
    PlanLine(URL_DEDUP, (CountUrlDuplicates,), lambda s: CountUrlDuplicates()),
    PlanLine(URL, (KeepListedPages,),
             lambda s: KeepListedPages() if s.config.domain_filter == "webtext" else None),
    # (The released code filters RealNews domains before URL dedup; the filter depends on the
    # normalized URL alone, which is also the dedup key, so the order gives the same pages.)
    PlanLine(URL, (RealNewsDomains,),
             lambda s: (RealNewsDomains(s.resources.realnews_domains, s.config.rule_set)
                        if s.config.domain_filter == "realnews" else None)),
    PlanLine(URL, (ParagraphFilter,),
             lambda s: ParagraphFilter() if s.config.paragraph_filter else None),
    PlanLine(URL, (Clean,),
             lambda s: (Clean(s.config.cleaning, s.config.rule_set, s.resources.splitter)
                        if s.config.cleaning else None)),
    PlanLine(URL, (SpanRecords,),
             lambda s: (SpanRecords(s.config.dedup, s.resources.splitter, s.span_buckets)
                        if s.config.dedup else None)),
    PlanLine(FINISH, (ApplyRemovals,),
             lambda s: (ApplyRemovals(s.config.dedup, s.config.min_sentences_after_dedup,
                                      s.resources.splitter) if s.config.dedup else None)),
    PlanLine(FINISH, (Cld3Language, DetectLanguage), _language),
    PlanLine(FINISH, (Badwords,), _badwords),
    PlanLine(FINISH, (Decontaminate,),
             lambda s: (Decontaminate(s.resources.decontamination)
                        if s.resources.decontamination is not None else None)),
    # The kept pages recorded for the exclusions, last: what a datasheet compares the drops with.
    PlanLine(FINISH, (RecordKept,), lambda s: RecordKept()),
)


class Phases(NamedTuple):
    """A variant's steps, phase by phase (PHASES), and the shuffles between them."""
    read: Tuple[Step, ...]
    url_dedup: Tuple[Step, ...]
    url: Tuple[Step, ...]
    finish: Tuple[Step, ...]
    # Whether the pages of a URL join the OpenWebText URL lists between url_dedup and url.
    joins_url_lists: bool
    # The span dedup between url and finish, or None.
    span_dedup: Optional[DedupConfig]


def phases(config: VariantConfig, resources: Resources, span_buckets: int = 1) -> Phases:
    """The steps `config` runs in each phase, made from PLAN."""
    setting = Setting(config, resources, span_buckets)
    made: Dict[str, List[Step]] = {phase: [] for phase in PHASES}
    for line in PLAN:
        step = line.make(setting)
        if step is not None:
            made[line.phase].append(step)
    return Phases(*(tuple(made[phase]) for phase in PHASES),
                  joins_url_lists=config.domain_filter == "webtext", span_dedup=config.dedup)


def stage_order() -> Tuple[str, ...]:
    """The stages of the counters in pipeline order: the reader's, each step's as PLAN runs
    them, the writer's."""
    declared = [kind.stage for line in PLAN for kind in line.kinds if kind.stage is not None]
    return (counters.READ_STAGE, *dict.fromkeys(declared), counters.WRITE_STAGE)


def declared_drops() -> List[Tuple[str, Drop]]:
    """(stage, Drop) of every reason a step of PLAN may drop for, in stage order."""
    drops = [(kind.stage, drop) for line in PLAN for kind in line.kinds for drop in kind.drops]
    return list(dict.fromkeys(drops))
