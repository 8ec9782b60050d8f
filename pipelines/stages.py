"""Thin Beam wrappers around the pure stages, each counting what it keeps and drops.

Counters live in one namespace per stage (`c4.read`, `c4.length`, ...) with one vocabulary:
`pages.passed`, `pages.dropped:<reason>`, `lines.dropped:<reason>`.
"""
import dataclasses
import logging
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from pipelines import (badwords, cleaning, dedup, domains, files, inputs, language, lists, mc4,
                       released, urls, wet)
from pipelines.config import VariantConfig
from pipelines.language import cld3
from pipelines.page import Page
from text.sentences import split_sentences
from text.splitters import Splitter, load_splitter

_PROGRESS_EVERY = 1000
_LOG = logging.getLogger("c4")


def _count(stage: str, name: str, value: int = 1):
    Metrics.counter(f"c4.{stage}", name).inc(value)


@dataclasses.dataclass(frozen=True)
class Resources:
    """The external lists a variant needs, loaded once when the graph is built."""
    # Language -> its bad words: "en" alone for C4, every language with a list for mC4.
    badwords: Dict[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    realnews_domains: Optional[Dict[str, domains.AllowedSubdomains]] = None
    webtext_url_files: Sequence[str] = ()
    splitter: Splitter = split_sentences  # The sentence splitter config.splitter names, loaded.
    # Path or URL of every list read -> sha256 of its stored bytes, for run_config.json.
    list_sha256: Dict[str, str] = dataclasses.field(default_factory=dict)


def load_resources(config: VariantConfig, badwords_path: Optional[str] = None,
                   realnews_domains_path: Optional[str] = None,
                   webtext_url_patterns: Sequence[str] = (),
                   punkt_data: Optional[str] = None,
                   badwords_dir: Optional[str] = None) -> Resources:
    """Reads what `config` needs; a ValueError, files.InputError or text.punkt.PunktDataMissing
    says what is missing or wrong. A list from a pinned URL must match its pin (lists.py).

    `badwords_dir`: where mC4's lists are, one file per name of config.badwords_files (a folder,
    or a URL prefix); None: the pinned LDNOOBW URLs."""
    digests: Dict[str, str] = {}
    terms: Dict[str, Tuple[str, ...]] = {}
    if config.filter_badwords and config.badwords_files:
        terms = _per_language_badwords(config, badwords_dir, digests)
    elif config.filter_badwords:
        if not badwords_path:
            raise ValueError(f"variant {config.name} needs a bad-words list (--badwords)")
        content, digests[badwords_path] = lists.read_list(badwords_path)
        terms = {"en": tuple(badwords.parse_badwords(content, badwords_path,
                                                     lower_case=config.rules == "paper"))}
    realnews = None
    if config.domain_filter == "realnews":
        if not realnews_domains_path:
            raise ValueError(f"variant {config.name} needs the RealNews domains (--realnews_domains)")
        content, digests[realnews_domains_path] = lists.read_list(realnews_domains_path)
        realnews = domains.parse_realnews_domains(content, realnews_domains_path)
    url_files: List[str] = []
    if config.domain_filter == "webtext":
        if not webtext_url_patterns:
            raise ValueError(f"variant {config.name} needs OpenWebText URL lists (--webtext_urls)")
        for pattern in webtext_url_patterns:
            url_files.extend(files.expand(pattern))
        digests.update((path, lists.file_sha256(path)) for path in url_files)
    return Resources(terms, realnews, tuple(url_files), load_splitter(config.splitter, punkt_data),
                     digests)


def _per_language_badwords(config: VariantConfig, badwords_dir: Optional[str],
                           digests: Dict[str, str]) -> Dict[str, Tuple[str, ...]]:
    """mC4's lists as the public code reads them: each file's terms as written, added to the
    language its name starts with, less that language's allowlist."""
    terms: Dict[str, set] = {}
    for name in config.badwords_files:
        path = (lists.LDNOOBW_MC4[name].url if badwords_dir is None
                else badwords_dir.rstrip("/") + "/" + name)
        try:
            content, digests[path] = lists.read_list(path)
        except (files.FetchError, lists.ChecksumMismatch):
            raise
        except files.InputError as error:
            raise files.InputError(f"the bad-words list of {name} for variant {config.name} "
                                   f"is missing or unreadable ({path}): {error}") from None
        language = mc4.badwords_language(name)
        terms.setdefault(language, set()).update(
            badwords.parse_badwords(content, path, lower_case=False))
    return {language: tuple(sorted(words - mc4.BADWORDS_ALLOWLIST.get(language, frozenset())))
            for language, words in sorted(terms.items())}


class _ReadWetFileFn(beam.DoFn):

    def __init__(self, max_record_bytes: int):
        self._max_record_bytes = max_record_bytes

    def process(self, indexed_path):
        file_index, path = indexed_path
        pages = 0
        try:
            for item in wet.read_wet(lambda: files.open_raw(path), self._max_record_bytes):
                if isinstance(item, wet.Skipped):
                    _count("read", f"records.skipped:{item.reason}")
                    continue
                item = dataclasses.replace(item, input_position=(file_index, pages))
                pages += 1
                _count("read", "pages.passed")
                if pages % _PROGRESS_EVERY == 0:
                    _LOG.info("%s: %d pages read", path, pages)
                yield item
        except files.InputError as error:
            reason = "not_wet" if isinstance(error, wet.NotWetFile) else "unreadable"
            _LOG.warning("skipping input file %s: %s", path, error)
            _count("read", f"files.skipped:{reason}")
            return
        _count("read", "files.read")
        _LOG.info("%s: done, %d pages", path, pages)


def _listed_files(source: inputs.WetSource):
    """(index in the input list, path) of a source's files, but those the public C4 code skips
    as corrupt (counted)."""
    try:
        for indexed_path in source.indexed_paths():
            if inputs.is_known_corrupt(indexed_path[1]):
                _count("read", "files.skipped:known_corrupt")
                continue
            yield indexed_path
    except files.InputError as error:
        _LOG.warning("skipping manifest %s: %s", source.manifest, error)
        _count("read", "manifests.skipped:unreadable")


class ReadWetFiles(beam.PTransform):
    """An input plan (pipelines/inputs.py) -> the Pages of its files' conversion records. The
    workers list each manifest's files, so the job holds the plan, not the paths."""

    def __init__(self, plan: inputs.InputPlan, max_record_bytes: int):
        super().__init__()
        self._plan = plan
        self._max_record_bytes = max_record_bytes

    def expand(self, pipeline):
        return (pipeline
                | "ListSources" >> beam.Create(list(self._plan.sources))
                | "ListFiles" >> beam.FlatMap(_listed_files)
                | "SpreadFiles" >> beam.Reshuffle()
                | "ReadRecords" >> beam.ParDo(_ReadWetFileFn(self._max_record_bytes)))


def _as_released_pages(page: Page):
    """The page(s) the released C4 read from a WET record (released.wet_pages)."""
    found = 0
    for found, released_page in enumerate(released.wet_pages(page), start=1):
        _count("released_text", "pages.passed")
        yield released_page
    if not found:
        _count("released_text", "pages.dropped:no_content")
    elif found > 1:
        _count("released_text", "pages.added:page_delimiter_in_text", found - 1)


def _within_length(page: Page, max_chars: int) -> bool:
    if len(page.text) > max_chars:
        _count("length", "pages.dropped:too_long")
        return False
    _count("length", "pages.passed")
    return True


def _passes_paragraph_filter(page: Page) -> bool:
    reason = mc4.paragraph_drop_reason(page.text)
    _count("paragraphs", f"pages.dropped:{reason}" if reason else "pages.passed")
    return reason is None


class _NewestPageFn(beam.CombineFn):
    """Keeps the newest page of a normalized URL, and how many pages had that URL.

    `choose` picks one of two pages: urls.newest_page (paper rules) or
    urls.first_seen_newest_page (released rules)."""

    def __init__(self, choose):
        self._choose = choose

    def create_accumulator(self):
        return None, 0

    def add_input(self, accumulator, page):
        best, count = accumulator
        return (page if best is None else self._choose(best, page)), count + 1

    def merge_accumulators(self, accumulators):
        best, total = None, 0
        for page, count in accumulators:
            if page is not None:
                best = page if best is None else self._choose(best, page)
            total += count
        return best, total

    def extract_output(self, accumulator):
        return accumulator


def _count_url_duplicates(keyed):
    _, (page, count) = keyed
    _count("url_dedup", "pages.passed")
    if count > 1:
        _count("url_dedup", "pages.dropped:older_duplicate", count - 1)
    return page


class DedupUrls(beam.PTransform):

    def __init__(self, rules: str):
        super().__init__()
        self._choose = urls.first_seen_newest_page if rules == "released" else urls.newest_page

    def expand(self, pages):
        return (pages
                | "KeyByUrl" >> beam.Map(lambda page: (page.normalized_url, page))
                | "KeepNewest" >> beam.CombinePerKey(_NewestPageFn(self._choose))
                | "CountDuplicates" >> beam.Map(_count_url_duplicates))


class _RealNewsFilterFn(beam.DoFn):

    def __init__(self, allowed: Dict[str, domains.AllowedSubdomains], rules: str):
        self._allowed = allowed
        self._rules = rules
        self._extractor = None

    def setup(self):
        self._extractor = domains.offline_domain_extractor()

    def _is_realnews(self, page: Page) -> bool:
        if self._rules == "released":
            return released.is_realnews_url(page.normalized_url, self._allowed, self._extractor)
        return domains.is_realnews_url(page.url, self._allowed, self._extractor)

    def process(self, page: Page):
        if self._is_realnews(page):
            _count("domains", "pages.passed")
            yield page
        else:
            _count("domains", "pages.dropped:not_realnews_domain")


def _webtext_urls_of_file(path: str, rules: str):
    try:
        text = files.read_all(path).decode("utf-8", errors="replace")
    except files.InputError as error:
        _LOG.error("skipping URL list: %s", error)
        _count("domains", "url_lists.skipped:unreadable")
        return
    _count("domains", "url_lists.read")
    for line in text.splitlines():
        url = domains.webtext_url_of_line(line, _normalizer_of(rules))
        if url is None:
            if line.strip():
                _count("domains", "url_lines.skipped")
            continue
        yield url, None


def _keep_listed_pages(joined):
    _, grouped = joined
    pages = list(grouped["pages"])
    if not pages:
        return
    if not grouped["listed"]:
        _count("domains", "pages.dropped:not_in_webtext_urls", len(pages))
        return
    for page in pages:
        _count("domains", "pages.passed")
        yield page


def _normalizer_of(rules: str):
    return urls.released_normalize_url if rules == "released" else urls.normalize_url


class FilterDomains(beam.PTransform):

    def __init__(self, config: VariantConfig, resources: Resources):
        super().__init__()
        self._config = config
        self._resources = resources

    def expand(self, pages):
        if self._config.domain_filter == "realnews":
            return pages | "RealNewsDomains" >> beam.ParDo(
                _RealNewsFilterFn(self._resources.realnews_domains, self._config.rules))
        listed = (pages.pipeline
                  | "ListUrlFiles" >> beam.Create(list(self._resources.webtext_url_files))
                  | "ReadUrlLists" >> beam.FlatMap(_webtext_urls_of_file, self._config.rules))
        keyed = pages | "KeyPagesByUrl" >> beam.Map(lambda page: (page.normalized_url, page))
        return ({"pages": keyed, "listed": listed}
                | "JoinUrlLists" >> beam.CoGroupByKey()
                | "KeepListed" >> beam.FlatMap(_keep_listed_pages))


class _CleanFn(beam.DoFn):

    def __init__(self, config: cleaning.CleaningConfig, rules: str, split: Splitter):
        self._config = config
        self._clean_page = released.clean_page if rules == "released" else cleaning.clean_page
        self._split = split

    def process(self, page: Page):
        result = self._clean_page(page.text, self._config, self._split)
        for reason, count in sorted(result.lines_dropped.items()):
            _count("clean", f"lines.dropped:{reason}", count)
        _count("clean", "lines.passed", result.lines_kept)
        if result.text is None:
            _count("clean", f"pages.dropped:{result.page_drop_reason}")
            return
        _count("clean", "pages.passed")
        yield dataclasses.replace(page, text=result.text)


def _page_key(page: Page, config: dedup.DedupConfig) -> bytes:
    return dedup.page_key(page.url, page.normalized_url, config.mode)


# The message a page sends itself when it repeats one of its own keys: check me at the join.
_REPEATS_IN_PAGE = b""
# Records a worker buffers before it resolves them and sends the winners on: 16 MB of span records.
_RECORDS_PER_FLUSH = 1 << 20


class _SpanRecordsFn(beam.DoFn):
    """Pages -> their (key, page key) records, resolved per worker buffer (dedup.resolve_records):
    the winners go out as one block per bucket (main output), the losers straight to the join
    (`removals`, with each page that repeats a key of its own).

    A buffer mixes the pages of a bundle and leaves in the global window: dedup is a batch
    stage over the whole dataset, which the C4 pipeline keeps in the global window."""

    def __init__(self, config: dedup.DedupConfig, split: Splitter, buckets: int):
        self._config = config
        self._split = split
        self._buckets = buckets
        self._flush_bytes = _RECORDS_PER_FLUSH * sum(dedup.record_widths(config.mode))
        self._records = bytearray()

    def start_bundle(self):
        self._records = bytearray()

    def process(self, page: Page):
        key_of_page = _page_key(page, self._config)
        keys, repeats = dedup.distinct_span_keys(
            dedup.units_of(page.text, self._config.mode, self._split), self._config)
        self._records += dedup.page_records(keys, key_of_page)
        if repeats:
            yield beam.pvalue.TaggedOutput("removals", (key_of_page, _REPEATS_IN_PAGE))
        if len(self._records) >= self._flush_bytes:
            yield from self._flush()

    def finish_bundle(self):
        for output in self._flush():
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag,
                                               GlobalWindows.windowed_value(output.value))
            else:
                yield GlobalWindows.windowed_value(output)

    def _flush(self):
        records, self._records = bytes(self._records), bytearray()
        winners, losers = dedup.resolve_records(records, self._config.mode)
        for loser in losers:
            yield beam.pvalue.TaggedOutput("removals", loser)
        yield from dedup.bucket_blocks(winners, self._config.mode, self._buckets)


def _losers_of_bucket(bucket_and_blocks, mode: str):
    """(page key, key) for each page that has a key of the bucket and does not keep it."""
    _, blocks = bucket_and_blocks
    _, losers = dedup.resolve_records(b"".join(blocks), mode)
    return losers


class _ApplyRemovalsFn(beam.DoFn):

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter):
        self._config = config
        self._min_sentences = min_sentences
        self._split = split

    def process(self, joined):
        _, grouped = joined
        messages = set(grouped["removals"])
        for page in grouped["pages"]:
            if not dedup.needs_check(self._config, bool(messages), self._min_sentences):
                # Most pages lose nothing, and passed the sentence minimum when they were cleaned.
                _count("dedup", "pages.passed")
                yield page
                continue
            text = page.text
            if messages:  # Without one, the page lost nothing: only its sentences are checked.
                units = dedup.units_of(page.text, self._config.mode, self._split)
                removed = dedup.removed_starts(units, self._config, messages - {_REPEATS_IN_PAGE})
                if removed:
                    _count("dedup", "spans.dropped:duplicate", len(removed))
                text = dedup.remove_units(page.text, units, self._config, removed)
            reason = dedup.drop_reason_after_dedup(text, self._config, self._split,
                                                   self._min_sentences)
            if reason:
                _count("dedup", f"pages.dropped:{reason}")
                continue
            _count("dedup", "pages.passed:shortened" if text != page.text else "pages.passed")
            yield dataclasses.replace(page, text=text)


class DedupText(beam.PTransform):
    """Keeps one occurrence of every repeated span (or line) across the whole dataset.

    Only keys cross the shuffle (dedup.py): each worker resolves the (key, page key) records of
    its pages and sends their winners, packed per bucket of keys, to be resolved by bucket;
    (page key, key) goes back to each page that loses a key; then the pages join what they lost
    by page key. A bucket holds about 1/`buckets` of the dataset's keys: pipelines.c4 uses one
    bucket per input file, so a bucket's memory stays that of about one file's keys.
    """

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter,
                 buckets: int = 1):
        super().__init__()
        if buckets < 1:
            raise ValueError("the number of dedup buckets must be >= 1")
        self._config = config
        self._min_sentences = min_sentences
        self._split = split
        self._buckets = buckets

    def expand(self, pages):
        mode = self._config.mode
        records = (pages
                   | "SendKeys" >> beam.ParDo(_SpanRecordsFn(self._config, self._split,
                                                             self._buckets))
                   .with_outputs("removals", main="winners"))
        losses = (records.winners
                  | "GroupBuckets" >> beam.GroupByKey()
                  | "PickLosers" >> beam.FlatMap(_losers_of_bucket, mode))
        removals = (losses, records.removals) | "AllRemovals" >> beam.Flatten()
        keyed_pages = pages | "KeyByPage" >> beam.Map(
            lambda page, config: (_page_key(page, config), page), self._config)
        return ({"pages": keyed_pages, "removals": removals}
                | "JoinRemovals" >> beam.CoGroupByKey()
                | "RemoveSpans" >> beam.ParDo(
                    _ApplyRemovalsFn(self._config, self._min_sentences, self._split)))


class _LanguageFn(beam.DoFn):

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._detector = None

    def setup(self):
        self._detector = language.LanguageDetector()

    def process(self, page: Page):
        detected = self._detector.detect(page.text)
        reason = language.language_drop_reason(detected, self._config)
        if reason:
            _count("language", f"pages.dropped:{reason}")
            return
        _count("language", f"pages.passed:{detected[0]}")
        yield dataclasses.replace(page, language=detected[0], language_probability=detected[1])


class _Cld3LanguageFn(beam.DoFn):
    """mC4's language stage: CLD3 as the public code builds it, `und` where it is unsure, the
    page dropped where it is sure of a language mC4 does not have (mc4.cld3_label). Counters:
    `pages.passed:<language>`, `und.<why>`, `pages.dropped:other_language`."""

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._identifier = None

    def setup(self):
        self._identifier = cld3.Cld3Identifier()

    def process(self, page: Page):
        answer = self._identifier.find_language(page.text)
        if answer is None:
            _count("language", "und.unreadable")
            detected, reason, probability = mc4.UNKNOWN_LANGUAGE, None, 0.0
        else:
            detected, reason = mc4.cld3_label(*answer, self._config.languages,
                                              self._config.min_probability)
            probability = answer.probability
        if detected is None:
            _count("language", f"pages.dropped:{reason}")
            return
        if reason:
            _count("language", f"und.{reason}")
        _count("language", f"pages.passed:{detected}")
        yield dataclasses.replace(page, language=detected, language_probability=probability)


class _BadwordsFn(beam.DoFn):
    """Drops a page with a bad word of its language's list; with a filter fraction under 1,
    the pages the URL hash picks stay (mc4.keeps_page_with_badword). Counters per language
    (`pages.dropped:badword:de`) where the variant writes languages apart, else totals."""

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

    def _count(self, name: str, page: Page):
        _count("badwords", f"{name}:{page.language}" if self._count_languages else name)

    def process(self, page: Page):
        matcher = self._matchers.get(mc4.page_language(page.language))
        if matcher is None or not badwords.contains_badword(page.text, matcher):
            self._count("pages.passed", page)
            yield page
        elif (self._filter_fraction < 1
              and mc4.keeps_page_with_badword(page.normalized_url, self._filter_fraction)):
            self._count("pages.passed:kept_with_badword", page)
            yield page
        else:
            self._count("pages.dropped:badword", page)


class C4Pages(beam.PTransform):
    """Raw WET pages -> the pages of a C4 variant, through the stages in the public C4 order.

    (The released code filters RealNews domains before URL dedup; the filter depends on the
    normalized URL alone, which is also the dedup key, so the order gives the same pages.)"""

    def __init__(self, config: VariantConfig, resources: Resources, dedup_buckets: int = 1):
        super().__init__()
        self._config = config
        self._resources = resources
        self._dedup_buckets = dedup_buckets

    def expand(self, pages):
        config = self._config
        if config.rules == "released":
            pages = pages | "ReleasedText" >> beam.FlatMap(_as_released_pages)
        pages = (pages
                 | "PageLength" >> beam.Filter(_within_length, config.max_page_chars)
                 | "UrlDedup" >> DedupUrls(config.rules))
        if config.domain_filter:
            pages = pages | "Domains" >> FilterDomains(config, self._resources)
        if config.paragraph_filter:
            pages = pages | "Paragraphs" >> beam.Filter(_passes_paragraph_filter)
        if config.cleaning:
            pages = pages | "Clean" >> beam.ParDo(
                _CleanFn(config.cleaning, config.rules, self._resources.splitter))
        if config.dedup:
            pages = pages | "Dedup" >> DedupText(config.dedup, config.min_sentences_after_dedup,
                                                 self._resources.splitter, self._dedup_buckets)
        detect = (_Cld3LanguageFn if config.language.detector == "cld3" else _LanguageFn)
        pages = pages | "Language" >> beam.ParDo(detect(config.language))
        if config.filter_badwords:
            pages = pages | "BadWords" >> beam.ParDo(_BadwordsFn(
                self._resources.badwords, config.badwords_filter_fraction,
                count_languages=config.language_folders is not None))
        return pages
