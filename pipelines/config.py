"""The named variants of C4 (the paper's Section 3.4): one typed configuration each."""
import dataclasses
from typing import Dict, Optional

from pipelines.cleaning import PUBLIC_C4_CLEANING, CleaningConfig
from pipelines.dedup import PAPER_SPAN_DEDUP, PUBLIC_C4_LINE_DEDUP, DedupConfig
from pipelines.language import LanguageConfig


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    name: str
    description: str
    cleaning: Optional[CleaningConfig] = PUBLIC_C4_CLEANING  # None: no heuristic filtering.
    dedup: Optional[DedupConfig] = PAPER_SPAN_DEDUP  # None: no text dedup.
    language: LanguageConfig = LanguageConfig()
    filter_badwords: bool = True
    domain_filter: Optional[str] = None  # None, "realnews" or "webtext".
    max_page_chars: int = 190_000

    def __post_init__(self):
        if self.domain_filter not in (None, "realnews", "webtext"):
            raise ValueError(f"unknown domain filter {self.domain_filter!r}")

    @property
    def min_sentences_after_dedup(self) -> int:
        return self.cleaning.min_sentences_per_page if self.cleaning else 1


_EN = VariantConfig(
    name="en",
    description="C4 as the T5 paper describes it: cleaning heuristics, dedup of every repeated "
                "three-sentence span, langdetect English (p >= 0.99), bad-words filter.")

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
            _EN, name="en.linededup",
            description="`en` with the line-level dedup of the public TFDS C4 code instead of "
                        "the paper's span dedup, to reproduce the released C4.",
            dedup=PUBLIC_C4_LINE_DEDUP),
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
                        "filter (the list is English). Written to one folder per language.",
            language=LanguageConfig(languages=("de", "fr", "ro")), filter_badwords=False),
    )
}


def variant(name: str) -> VariantConfig:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; choose one of {sorted(VARIANTS)}") from None
