"""The named variants of C4 (the paper's Section 3.4) under two rule sets, as typed configurations.

Rule sets:
- `paper` (the default): this project's reading of the paper (span dedup, whole-page `{` and
  "lorem ipsum", `”` as an end mark, our URL normalization, ...).
- `released`: what the public code that made the released C4 does (tensorflow_datasets/text/c4.py
  and c4_utils.py), page for page, for en, en.noclean, realnewslike and webtextlike: its WET text,
  URL normalization, cleaning and line dedup (pipelines/released.py, dedup.py `lines` mode).
The split is the released C4's under both (pipelines/urls.py `split_of`).
"""
import dataclasses
from typing import Dict, Optional, Tuple

from pipelines.cleaning import PUBLIC_C4_CLEANING, CleaningConfig
from pipelines.dedup import PAPER_SPAN_DEDUP, RELEASED_LINE_DEDUP, DedupConfig
from pipelines.language import LanguageConfig
from text.splitters import SPLITTER_NAMES

RULE_SETS = ("paper", "released")
DEFAULT_RULES = "paper"
# A variant name kept from before rule sets: `en` under the released rules.
RELEASED_EN_ALIAS = "en.linededup"


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    name: str
    description: str
    rules: str = DEFAULT_RULES
    cleaning: Optional[CleaningConfig] = PUBLIC_C4_CLEANING  # None: no heuristic filtering.
    dedup: Optional[DedupConfig] = PAPER_SPAN_DEDUP  # None: no text dedup.
    language: LanguageConfig = LanguageConfig()
    filter_badwords: bool = True
    domain_filter: Optional[str] = None  # None, "realnews" or "webtext".
    max_page_chars: int = 190_000
    splitter: str = "ours"  # Sentence splitter (text/splitters.py): "ours" or "punkt".

    def __post_init__(self):
        if self.domain_filter not in (None, "realnews", "webtext"):
            raise ValueError(f"unknown domain filter {self.domain_filter!r}")
        if self.rules not in RULE_SETS:
            raise ValueError(f"unknown rule set {self.rules!r}; choose one of {RULE_SETS}")
        if self.splitter not in SPLITTER_NAMES:
            raise ValueError(f"unknown sentence splitter {self.splitter!r}; choose one of "
                             f"{SPLITTER_NAMES}")
        if self.rules == "released" and self.dedup not in (None, RELEASED_LINE_DEDUP):
            raise ValueError("the released rules dedup lines (dedup.RELEASED_LINE_DEDUP)")

    @property
    def lists(self) -> Tuple[str, ...]:
        """The external lists the variant reads, by the name of the option that gives each
        (pipelines.c4's --badwords, --realnews_domains, --webtext_urls; tfds_c4's keywords)."""
        reads = (("badwords", self.filter_badwords),
                 ("realnews_domains", self.domain_filter == "realnews"),
                 ("webtext_urls", self.domain_filter == "webtext"))
        return tuple(name for name, read in reads if read)

    @property
    def min_sentences_after_dedup(self) -> int:
        return self.cleaning.min_sentences_per_page if self.cleaning else 1


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
            domain_filter="webtext"),
        dataclasses.replace(
            _EN, name="multilingual",
            description="German, French and Romanian pages (langdetect p >= 0.99) for the "
                        "vocabulary's training mixture; the same cleaning and dedup, no bad-words "
                        "filter (the list is English). Written to one folder per language. "
                        "Paper rules only.",
            language=LanguageConfig(languages=("de", "fr", "ro")), filter_badwords=False),
    )
}
# The variants published as TFDS configs (tfds_c4) and pre-trained on (deploy.tpu): all but
# `multilingual`, the vocabulary's training mixture (de, fr, ro in one folder per language),
# which model/ reads from the pipeline's own output.
TFDS_VARIANTS = tuple(name for name in VARIANTS if name != "multilingual")
_RELEASED_VARIANTS = ("en", "en.noclean", RELEASED_EN_ALIAS, "realnewslike", "webtextlike")


def _under_released_rules(config: VariantConfig) -> VariantConfig:
    """`config` with the released C4's rules: its thresholds (5 words per line, 3 sentences per
    page) and line dedup wherever the variant cleans and dedups."""
    return dataclasses.replace(
        config, rules="released",
        cleaning=PUBLIC_C4_CLEANING if config.cleaning else None,
        dedup=RELEASED_LINE_DEDUP if config.dedup else None)


def variant(name: str, rules: str = DEFAULT_RULES, splitter: str = "ours") -> VariantConfig:
    """The configuration of variant `name` under rule set `rules` (`en.linededup` is always `en`
    under the released rules), splitting sentences with `splitter`."""
    try:
        config = VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; choose one of {sorted(VARIANTS)}") from None
    if rules not in RULE_SETS:
        raise ValueError(f"unknown rule set {rules!r}; choose one of {RULE_SETS}")
    if name == RELEASED_EN_ALIAS:
        rules = "released"
    if rules == "released":
        if name not in _RELEASED_VARIANTS:
            raise ValueError(f"variant {name} has no released rule set; the released rules "
                             f"cover {', '.join(_RELEASED_VARIANTS)}")
        config = _under_released_rules(config)
    return dataclasses.replace(config, splitter=splitter)
