"""The filters as steps: each declares its stage and the reasons it may drop for (the rules
themselves are pure functions in their modules: released.py, cleaning.py, domains.py, mc4.py,
language/, badwords.py, text/contamination.py), and counts what it keeps and drops.
"""
import dataclasses
from typing import Dict, Sequence

from pipelines import counters
from pipelines.filters import badwords, cleaning, domains, language, mc4, released
from pipelines.filters.language import cld3
from pipelines.filters.rules import RuleSet
from pipelines.page import Page
from pipelines.steps.base import Counts, Drop, Step
from pipelines.steps.resources import Decontamination
from text import contamination
from text.splitters import Splitter

# The reasons a cleaning (cleaning.py's or released.py's) drops lines and pages for.
_CLEANING_DROPS = (
    *(Drop(reason, "line") for reason in ("ellipsis", "no_terminal_punctuation",
                                          "too_few_words", "word_too_long", "javascript",
                                          "policy")),
    *(Drop(reason) for reason in ("lorem_ipsum", "curly_bracket", "too_few_sentences")))


class ReleasedText(Step):
    """The page(s) the released C4 read from a WET record (released.wet_pages)."""
    stage = "released_text"
    drops = (Drop("no_content"),)

    def __call__(self, page: Page, counts: Counts):
        pages = list(released.wet_pages(page))
        if not pages:
            self.drop(counts, "no_content", page)
            return pages
        self.count(counts, value=len(pages))
        if len(pages) > 1:
            self.count(counts, "pages.added:page_delimiter_in_text", len(pages) - 1)
        return pages


class WithinLength(Step):
    stage = "length"
    drops = (Drop("too_long"),)

    def __init__(self, max_chars: int):
        self._max_chars = max_chars

    def __call__(self, page: Page, counts: Counts):
        if len(page.text) > self._max_chars:
            self.drop(counts, "too_long", page)
            return ()
        self.count(counts)
        return (page,)


class RealNewsDomains(Step):
    stage = "domains"
    drops = (Drop("not_realnews_domain"),)

    def __init__(self, allowed: Dict[str, domains.AllowedSubdomains], rules: RuleSet):
        self._allowed = allowed
        self._is_realnews = rules.is_realnews
        self._extractor = None

    def setup(self):
        self._extractor = domains.offline_domain_extractor()

    def __call__(self, page: Page, counts: Counts):
        if self._is_realnews(page, self._allowed, self._extractor):
            self.count(counts)
            return (page,)
        self.drop(counts, "not_realnews_domain", page)
        return ()


class ParagraphFilter(Step):
    stage = "paragraphs"
    drops = (Drop("too_few_paragraphs"), Drop("short_paragraphs"))

    def __call__(self, page: Page, counts: Counts):
        reason = mc4.paragraph_drop_reason(page.text)
        if reason:
            self.drop(counts, reason, page)
            return ()
        self.count(counts)
        return (page,)


class Clean(Step):
    stage = "clean"
    drops = _CLEANING_DROPS

    def __init__(self, config: cleaning.CleaningConfig, rules: RuleSet, split: Splitter):
        self._config = config
        self._clean_page = rules.clean_page
        self._split = split

    def __call__(self, page: Page, counts: Counts):
        result = self._clean_page(page.text, self._config, self._split,
                                  keep_removed=counts.records_drops_of(page.normalized_url))
        removed = result.removed_lines()
        for reason, count in sorted(result.lines_dropped.items()):
            self.drop(counts, reason, page, "line", count, lambda reason=reason: removed[reason])
        self.count(counts, "lines.passed", result.lines_kept)
        if result.text is None:
            self.drop(counts, result.page_drop_reason, page)
            return ()
        self.count(counts)
        return (dataclasses.replace(page, text=result.text),)


class DetectLanguage(Step):
    stage = "language"
    drops = (Drop("undetectable"), Drop("other_language"), Drop("low_probability"))

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._detector = None

    def setup(self):
        self._detector = language.LanguageDetector()

    def __call__(self, page: Page, counts: Counts):
        detected = self._detector.detect(page.text)
        reason = language.language_drop_reason(detected, self._config)
        if reason:
            self.drop(counts, reason, page)
            return ()
        self.count(counts, counters.passed(detected[0]))
        return (dataclasses.replace(page, language=detected[0],
                                    language_probability=detected[1]),)


class Cld3Language(Step):
    """mC4's language stage: CLD3 as the public code builds it, `und` where it is unsure, the
    page dropped where it is sure of a language mC4 does not have (mc4.cld3_label). Counters:
    `pages.passed:<language>`, `und.<why>`, `pages.dropped:other_language`."""
    stage = "language"
    drops = (Drop("other_language"),)

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._identifier = None

    def setup(self):
        self._identifier = cld3.Cld3Identifier()

    def __call__(self, page: Page, counts: Counts):
        answer = self._identifier.find_language(page.text)
        if answer is None:
            self.count(counts, "und.unreadable")
            detected, reason, probability = mc4.UNKNOWN_LANGUAGE, None, 0.0
        else:
            detected, reason = mc4.cld3_label(*answer, self._config.languages,
                                              self._config.min_probability)
            probability = answer.probability
        if detected is None:
            self.drop(counts, reason, page)
            return ()
        if reason:
            self.count(counts, f"und.{reason}")
        self.count(counts, counters.passed(detected))
        return (dataclasses.replace(page, language=detected, language_probability=probability),)


class Badwords(Step):
    """Drops a page with a bad word of its language's list; with a filter fraction under 1,
    the pages the URL hash picks stay (mc4.keeps_page_with_badword). Counters per language
    (`pages.dropped:badword:de`) where the variant writes languages apart, else totals."""
    stage = "badwords"
    drops = (Drop("badword", per="language"),)

    def __init__(self, terms: Dict[str, Sequence[str]], filter_fraction: float,
                 count_languages: bool):
        self._terms = {language: list(words) for language, words in terms.items()}
        self._filter_fraction = filter_fraction
        self._count_languages = count_languages
        self._matchers = None

    def setup(self):
        self._matchers = {
            language: badwords.compile_badwords(
                words, word_boundaries=language not in mc4.UNSPACED_LANGUAGES)
            for language, words in self._terms.items()}

    def _counter(self, name: str, page: Page) -> str:
        return f"{name}:{page.language}" if self._count_languages else name

    def __call__(self, page: Page, counts: Counts):
        matcher = self._matchers.get(mc4.page_language(page.language))
        if matcher is None or not badwords.contains_badword(page.text, matcher):
            self.count(counts, self._counter(counters.PASSED, page))
            return (page,)
        if (self._filter_fraction < 1
                and mc4.keeps_page_with_badword(page.normalized_url, self._filter_fraction)):
            self.count(counts, self._counter(counters.passed("kept_with_badword"), page))
            return (page,)
        self.drop(counts, self._counter("badword", page), page)
        return ()


class RecordKept(Step):
    """The pages the run keeps, recorded where they are in the exclusions' sample: what a
    datasheet compares the dropped pages with."""

    def __call__(self, page: Page, counts: Counts):
        if counts.sample is not None:
            counts.sample.keep(page)
        return (page,)


class Decontaminate(Step):
    """Drops a page that holds an example of the index's tasks (`pages.dropped:example_of:
    <task>`, the first task by name where it holds several)."""
    stage = "decontamination"
    drops = (Drop("example_of", per="task"),)

    def __init__(self, setting: Decontamination):
        self._setting = setting
        self._index = None

    def setup(self):
        self._index = contamination.ContaminationIndex.load(self._setting.index_path)

    def __call__(self, page: Page, counts: Counts):
        found = getattr(self._index.matches(page.text), self._setting.method)
        if found:
            self.drop(counts, f"example_of:{min(key.task for key in found)}", page)
            return ()
        self.count(counts)
        return (page,)
