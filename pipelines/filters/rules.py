"""The two rule sets (`--rules`), each an object that carries its own functions, chosen once by
name (`VariantConfig.rule_set`) instead of a comparison of the name wherever the rules differ.

- `paper` (the default): this project's reading of the T5 paper.
- `released`: what the public code that made the released C4 does (tensorflow_datasets'
  c4.py and c4_utils.py), page for page.
"""
import dataclasses
from typing import Callable, Dict, Optional

import tldextract

from pipelines.filters import cleaning, domains, released, urls
from pipelines.filters.dedup import RELEASED_LINE_DEDUP, DedupConfig
from pipelines.page import Page


def _realnews_by_url(page: Page, allowed: Dict[str, domains.AllowedSubdomains],
                     extractor: tldextract.TLDExtract) -> bool:
    return domains.is_realnews_url(page.url, allowed, extractor)


def _realnews_by_released_key(page: Page, allowed: Dict[str, domains.AllowedSubdomains],
                              extractor: tldextract.TLDExtract) -> bool:
    return released.is_realnews_url(page.normalized_url, allowed, extractor)


@dataclasses.dataclass(frozen=True)
class RuleSet:
    """Where the two rule sets differ, as the functions and settings each one uses."""

    name: str
    # The WET record read as the released C4 read it (released.wet_pages) before anything else.
    reads_released_text: bool
    # The URL key of URL dedup and the domain filters.
    normalize_url: Callable[[str], str]
    # Of two pages with one URL key, the one URL dedup keeps.
    keep_of_two: Callable[[Page, Page], Page]
    is_realnews: Callable[[Page, Dict[str, domains.AllowedSubdomains], tldextract.TLDExtract], bool]
    clean_page: Callable[..., cleaning.CleaningResult]
    # Bad-words terms lower-cased as the list is read (the paper's reading), or matched as written.
    lower_case_badwords: bool
    # The only text dedup the rule set has (None: any, or none).
    only_dedup: Optional[DedupConfig]
    # Whether --cleaning chooses the thresholds (the released rules have the public C4's).
    cleaning_is_chosen: bool


PAPER = RuleSet("paper", reads_released_text=False, normalize_url=urls.normalize_url,
                keep_of_two=urls.newest_page, is_realnews=_realnews_by_url,
                clean_page=cleaning.clean_page, lower_case_badwords=True, only_dedup=None,
                cleaning_is_chosen=True)
RELEASED = RuleSet("released", reads_released_text=True, normalize_url=urls.released_normalize_url,
                   keep_of_two=urls.first_seen_newest_page, is_realnews=_realnews_by_released_key,
                   clean_page=released.clean_page, lower_case_badwords=False,
                   only_dedup=RELEASED_LINE_DEDUP, cleaning_is_chosen=False)
RULE_SETS: Dict[str, RuleSet] = {rules.name: rules for rules in (PAPER, RELEASED)}


def rule_set(name: str) -> RuleSet:
    try:
        return RULE_SETS[name]
    except KeyError:
        raise ValueError(f"unknown rule set {name!r}; choose one of {tuple(RULE_SETS)}") from None
