"""The named variants of C4 (the paper's Section 3.4) under two rule sets, as typed configurations.

Rule sets (pipelines/filters/rules.py, each an object that carries its functions; a config names one
and `VariantConfig.rule_set` gives it):
- `paper` (the default): this project's reading of the paper (span dedup, whole-page `{` and
  "lorem ipsum", `”` as an end mark, our URL normalization, ...).
- `released`: what the public code that made the released C4 does (tensorflow_datasets/text/c4.py
  and c4_utils.py), page for page, for en, en.noclean, en.noblocklist, realnewslike and
  webtextlike: its WET text, URL normalization, cleaning and line dedup
  (pipelines/filters/released.py,
  dedup.py `lines` mode).
`multilingual` (mC4, pipelines/filters/mc4.py) and `en.linededup` have the released rules only.
The split is the released C4's under both (pipelines/filters/urls.py `split_of`).
"""
import dataclasses
from typing import Dict, Optional, Tuple

from pipelines.filters import mc4, rules as rule_sets
from pipelines.filters.cleaning import PUBLIC_C4_CLEANING, CleaningConfig
from pipelines.filters.dedup import PAPER_SPAN_DEDUP, RELEASED_LINE_DEDUP, DedupConfig
from pipelines.filters.language import LanguageConfig
from pipelines.readers import common_crawl
from text.splitters import SPLITTER_NAMES

RULE_SETS = tuple(rule_sets.RULE_SETS)
DEFAULT_RULES = rule_sets.PAPER.name
# A variant name kept from before rule sets: `en` under the released rules.
RELEASED_EN_ALIAS = "en.linededup"
MC4 = "multilingual"
# The paper rules' German, French and Romanian pages, the vocabulary's training mixture (named
# `multilingual` before mC4 took that name, TFDS's).
VOCABULARY_LANGUAGES = "de-fr-ro"


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    name: str
    description: str
    rules: str = DEFAULT_RULES
    cleaning: Optional[CleaningConfig] = PUBLIC_C4_CLEANING  # None: no heuristic filtering.
    dedup: Optional[DedupConfig] = PAPER_SPAN_DEDUP  # None: no text dedup.
    language: LanguageConfig = LanguageConfig()
    filter_badwords: bool = True
    # The LDNOOBW files of a bad-words list per language (mC4), read from --badwords_dir; empty:
    # one English list (--badwords).
    badwords_files: Tuple[str, ...] = ()
    # The share of pages with a bad word that are dropped (mC4: 0.999, the rest kept by URL hash).
    badwords_filter_fraction: float = 1.0
    paragraph_filter: bool = False  # mC4's: at least 3 lines, the 3 longest of 200 characters.
    domain_filter: Optional[str] = None  # None, "realnews" or "webtext".
    max_page_chars: int = 190_000
    splitter: str = "ours"  # Sentence splitter (text/splitters.py): "ours" or "punkt".
    # The Common Crawl dumps read when no input is given.
    default_dumps: Tuple[str, ...] = (common_crawl.C4_DUMP,)

    def __post_init__(self):
        if self.domain_filter not in (None, "realnews", "webtext"):
            raise ValueError(f"unknown domain filter {self.domain_filter!r}")
        only_dedup = self.rule_set.only_dedup
        if self.splitter not in SPLITTER_NAMES:
            raise ValueError(f"unknown sentence splitter {self.splitter!r}; choose one of "
                             f"{SPLITTER_NAMES}")
        if only_dedup is not None and self.dedup not in (None, only_dedup):
            raise ValueError(f"the {self.rules} rules have one text dedup, {only_dedup.mode!r} "
                             f"with their settings (rules.{self.rules.upper()}.only_dedup)")
        if not 0 < self.badwords_filter_fraction <= 1:
            raise ValueError("the bad-words filter fraction must be in (0, 1], not "
                             f"{self.badwords_filter_fraction}")

    @property
    def rule_set(self) -> rule_sets.RuleSet:
        """The rule set `rules` names, with its functions."""
        return rule_sets.rule_set(self.rules)

    @property
    def lists(self) -> Tuple[str, ...]:
        """The external lists the variant reads, by the name of the option that gives each
        (pipelines.c4's --badwords, --realnews_domains, --webtext_urls; tfds_c4's keywords)."""
        reads = (("badwords", self.filter_badwords and not self.badwords_files),
                 ("badwords_dir", self.filter_badwords and bool(self.badwords_files)),
                 ("realnews_domains", self.domain_filter == "realnews"),
                 ("webtext_urls", self.domain_filter == "webtext"))
        return tuple(name for name, read in reads if read)

    @property
    def min_sentences_after_dedup(self) -> int:
        """Sentences a page needs after dedup: the cleaning's minimum, or none without cleaning
        (mC4's `remove_duplicate_text(pages, min_num_sentences=0)`)."""
        return self.cleaning.min_sentences_per_page if self.cleaning else 0

    @property
    def language_folders(self) -> Optional[Tuple[str, ...]]:
        """None: one language, written in the output folder itself. Otherwise the output has a
        folder per language, and these are the ones written even without a page: each of
        de-fr-ro's; none of mC4's, whose 108 get a folder only where they have pages."""
        if self.language.detector == "cld3":
            return ()
        return self.language.languages if len(self.language.languages) > 1 else None


_EN = VariantConfig(
    name="en",
    description="C4 as the T5 paper describes it: cleaning heuristics, dedup of every repeated "
                "three-sentence span (repeated lines under the released rules), langdetect "
                "English (p >= 0.99), bad-words filter.")

VARIANTS: Dict[str, VariantConfig] = {
    config.name: config for config in (
        _EN,
        VariantConfig(
            name="en.noclean",
            description="English pages (langdetect p >= 0.99) with no heuristic filtering, no "
                        "text dedup and no bad-words filter (URL dedup and the page-length limit "
                        "still apply).",
            cleaning=None, dedup=None, filter_badwords=False),
        dataclasses.replace(
            _EN, name=RELEASED_EN_ALIAS,
            description="`en` under the released rules (--rules released): the released C4 "
                        "(TFDS c4/en), page for page."),
        dataclasses.replace(
            _EN, name="realnewslike",
            description="`en` restricted to the RealNews domains (and allowed subdomains).",
            domain_filter="realnews"),
        dataclasses.replace(
            _EN, name="webtextlike",
            description="`en` restricted to pages whose normalized URL is in the OpenWebText "
                        "URL lists (Reddit links with at least 3 karma).",
            domain_filter="webtext", default_dumps=common_crawl.WEBTEXTLIKE_DUMPS),
        dataclasses.replace(
            _EN, name="en.noblocklist",
            description="`en` without the bad-words filter (the released C4's "
                        "en.noblocklist, AllenAI's variant).",
            filter_badwords=False),
        dataclasses.replace(
            _EN, name=VOCABULARY_LANGUAGES,
            description="German, French and Romanian pages (langdetect p >= 0.99) for the "
                        "vocabulary's training mixture; the same cleaning and dedup, no bad-words "
                        "filter (the list is English). Written to one folder per language. "
                        "Paper rules only.",
            language=LanguageConfig(languages=("de", "fr", "ro")), filter_badwords=False),
        VariantConfig(
            name=MC4,
            description="mC4, the multilingual C4 of the public C4 code (TFDS c4/multilingual "
                        "3.1.0): 107 CLD3 languages and und from 86 dumps; the paragraph "
                        "filter, line dedup, per-language bad words (999 in 1,000 of their pages "
                        "dropped), a train and validation split per language, one folder per "
                        "language. Released rules only.",
            rules="released", cleaning=None, dedup=RELEASED_LINE_DEDUP, paragraph_filter=True,
            language=LanguageConfig(languages=mc4.LANGUAGES, min_probability=mc4.MIN_PROBABILITY,
                                    detector="cld3"),
            badwords_files=mc4.BADWORDS_FILES,
            badwords_filter_fraction=mc4.BADWORDS_FILTER_FRACTION,
            default_dumps=common_crawl.MC4_DUMPS),
    )
}
# The variants published as TFDS configs (tfds_c4) and pre-trained on (deploy.tpu): all but
# de-fr-ro, the vocabulary's training mixture, which model/ reads from the pipeline's output.
TFDS_VARIANTS = tuple(name for name in VARIANTS if name != VOCABULARY_LANGUAGES)
# The TFDS configs with one train split, which T5 pre-trains on (deploy.tpu): all but mC4, whose
# splits are per language (a mixture of languages, as mT5's, reads them).
PRETRAINING_VARIANTS = tuple(name for name in TFDS_VARIANTS if name != MC4)
_RELEASED_VARIANTS = ("en", "en.noclean", "en.noblocklist", RELEASED_EN_ALIAS, "realnewslike",
                      "webtextlike", MC4)
# The variants that have the released rules only.
_RELEASED_ONLY = (RELEASED_EN_ALIAS, MC4)


def _under_released_rules(config: VariantConfig) -> VariantConfig:
    """`config` with the released C4's rules: its thresholds (5 words per line, 3 sentences per
    page) and line dedup wherever the variant cleans and dedups."""
    if config.rule_set is rule_sets.RELEASED:
        return config
    return dataclasses.replace(
        config, rules=rule_sets.RELEASED.name,
        cleaning=PUBLIC_C4_CLEANING if config.cleaning else None,
        dedup=RELEASED_LINE_DEDUP if config.dedup else None)


def variant(name: str, rules: Optional[str] = None, splitter: str = "ours") -> VariantConfig:
    """The configuration of variant `name` under rule set `rules` (None: the variant's own, the
    paper's but for `en.linededup` and `multilingual`, which have the released rules only),
    splitting sentences with `splitter`."""
    try:
        config = VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; choose one of {sorted(VARIANTS)}") from None
    if rules is not None:
        rule_sets.rule_set(rules)  # an unknown name fails here
    if name == MC4 and rules == rule_sets.PAPER.name:
        raise ValueError(
            f"variant {MC4} is mC4, the public C4 code's multilingual config, which has the "
            f"released rules only; the German, French and Romanian pages under the paper rules "
            f"(the vocabulary's mixture, named {MC4} before) are variant {VOCABULARY_LANGUAGES}")
    if name in _RELEASED_ONLY:
        rules = rule_sets.RELEASED.name
    if rules == rule_sets.RELEASED.name:
        if name not in _RELEASED_VARIANTS:
            raise ValueError(f"variant {name} has no released rule set; the released rules "
                             f"cover {', '.join(_RELEASED_VARIANTS)}")
        config = _under_released_rules(config)
    return dataclasses.replace(config, splitter=splitter)
