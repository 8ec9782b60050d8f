"""The pure stages as Beam steps, each counting what it keeps and drops; the steps between two
shuffles run as one DoFn (PhaseFn), their counters summed and reported once a bundle.

Counters live in one namespace per stage (`c4.read`, `c4.length`, ...) with one vocabulary:
`pages.passed`, `pages.dropped:<reason>`, `lines.dropped:<reason>`.
"""
import collections
import dataclasses
import logging
import operator
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from pipelines import (badwords, cleaning, dedup, domains, exclusions, files, inputs, language,
                       lists, mc4, released, stats, wet)
from pipelines.config import VariantConfig
from pipelines.rules import RuleSet
from pipelines.language import cld3
from pipelines.page import Page
from pipelines.wording import counted
from text import contamination
from text.sentences import split_sentences
from text.splitters import Splitter, load_splitter

_PROGRESS_EVERY = 1000
_LOG = logging.getLogger("c4")


def _count(stage: str, name: str, value: int = 1):
    Metrics.counter(f"c4.{stage}", name).inc(value)


class Counts:
    """Counter increments summed in a DoFn and reported once a bundle: one increment of a Beam
    counter costs microseconds, and a page passes a dozen."""

    def __init__(self, sample: Optional[exclusions.Sample] = None):
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
        self.add(stage, exclusions.counter_of(level, reason), count)
        if self.records_drops_of(page.normalized_url):
            self.sample.drop(page, stage, reason, level, None if texts is None else texts())

    def report(self) -> None:
        for (stage, name), value in sorted(self._values.items()):
            _count(stage, name, value)
        self._values.clear()

    def as_stats(self) -> stats.Stats:
        """The counts as a run's counters (a task run without Beam keeps them in its marker)."""
        counters: stats.Stats = {}
        for (stage, name), value in self._values.items():
            counters.setdefault(stage, {})[name] = value
        return stats.merged(counters)


class Step:
    """One stage's work on one element between two shuffles: the elements it passes on (none,
    the element, a changed copy, or several), what it keeps and drops counted in `counts`."""

    def setup(self) -> None:
        """Loads what the step needs (a detector, an automaton), once per DoFn instance."""

    def start(self) -> None:
        """Starts a bundle: a step that holds elements drops what a failed bundle left."""

    def __call__(self, element, counts: Counts) -> Iterable:
        raise NotImplementedError

    def finish(self, counts: Counts) -> Iterable:
        """What the step still holds at the end of a bundle; called on a phase's last step."""
        return ()


def run_steps(steps: Sequence[Step], element, counts: Counts) -> list:
    """What `steps`, one after the other, make of one element."""
    elements = [element]
    for step in steps:
        elements = [passed for each in elements for passed in step(each, counts)]
        if not elements:
            break
    return elements


# The tag of the exclusion records (exclusions.Excluded) a phase gives beside its elements.
EXCLUDED_TAG = "excluded"


class PhaseFn(beam.DoFn):
    """The steps between two shuffles as one DoFn: Beam's per-element cost (a transform hop, its
    counters) is paid once per element of the phase, not once per stage. Only the last step
    may hold elements across a bundle (its `finish`) or send tagged outputs. With a
    `sample_fraction`, the steps' drops in the exclusions' sample leave as EXCLUDED_TAG."""

    def __init__(self, steps: Sequence[Step], sample_fraction: Optional[float] = None):
        self._steps = tuple(steps)
        self._sample_fraction = sample_fraction
        self._counts = Counts()

    def setup(self):
        for step in self._steps:
            step.setup()

    def start_bundle(self):
        self._counts = Counts(None if self._sample_fraction is None
                              else exclusions.Sample(self._sample_fraction))
        for step in self._steps:
            step.start()

    def process(self, element):
        outputs = run_steps(self._steps, element, self._counts)
        return outputs + self._excluded()

    def _excluded(self) -> list:
        if self._counts.sample is None:
            return []
        return [beam.pvalue.TaggedOutput(EXCLUDED_TAG, record)
                for record in self._counts.sample.take()]

    def finish_bundle(self):
        # What a buffer holds leaves in the global window: the C4 pipeline is a batch job over
        # the whole dataset, in the global window.
        for output in [*self._steps[-1].finish(self._counts), *self._excluded()]:
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag,
                                               GlobalWindows.windowed_value(output.value))
            else:
                yield GlobalWindows.windowed_value(output)
        self._counts.report()


@dataclasses.dataclass
class SampleOutputs:
    """A graph's exclusions' sample (--exclusions): its fraction, and the records its phases
    give, to be written at once (graph.write_exclusions)."""
    fraction: float
    records: List[beam.PCollection] = dataclasses.field(default_factory=list)


def apply_phase(pcoll: beam.PCollection, label: str, steps: Sequence[Step],
                sample: Optional[SampleOutputs], *tags: str, output_type=None):
    """`steps` as one PhaseFn over `pcoll`: its outputs by tag (the main one is "main"), its
    exclusion records added to `sample`."""
    phase = beam.ParDo(PhaseFn(steps, sample and sample.fraction))
    if output_type is not None:
        phase = phase.with_output_types(output_type)
    outputs = pcoll | label >> phase.with_outputs(EXCLUDED_TAG, *tags, main="main")
    if sample is not None:
        sample.records.append(outputs[EXCLUDED_TAG])
    return outputs


class PageCoder(beam.coders.Coder):
    """A page as the tuple of its fields, which Beam's own coder writes natively; without it, a
    page through a shuffle is pickled, several times slower."""
    _FIELDS = operator.attrgetter(*(field.name for field in dataclasses.fields(Page)))
    _TUPLE = beam.coders.FastPrimitivesCoder().get_impl()

    def encode(self, page: Page) -> bytes:
        return self._TUPLE.encode(self._FIELDS(page))

    def decode(self, encoded: bytes) -> Page:
        return Page(*self._TUPLE.decode(encoded))

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self):
        return Page


beam.coders.registry.register_coder(Page, PageCoder)
_PAGE_CODER = PageCoder()


# How the decontamination finds an example in a page: text.contamination's two methods.
DECONTAMINATION_METHODS = contamination.Matches._fields


@dataclasses.dataclass(frozen=True)
class Decontamination:
    """The decontamination stage's setting: a saved text.contamination index (of the tasks whose
    examples must not be in the corpus) and the method that finds them in a page."""
    index_path: str
    method: str = "ngram13"

    def __post_init__(self):
        if self.method not in DECONTAMINATION_METHODS:
            raise ValueError(f"unknown decontamination method {self.method!r}; choose one of "
                             f"{DECONTAMINATION_METHODS}")


# Why each method leaves an example out (text/contamination.py).
_TOO_SHORT = {
    "exact": f"an example under {contamination.MIN_EXACT_WORDS} words, or under "
             f"{contamination.MIN_EXACT_CHARACTERS} characters in a script without spaces, "
             f"matches pages by chance; GPT-3 used no n-gram under "
             f"{contamination.MIN_EXACT_WORDS} words",
    "ngram13": f"an example under {contamination.NGRAM_WORDS} words, and under "
               f"{contamination.NGRAM_CHARACTERS} characters in a script without spaces, has "
               f"no n-gram"}


def left_out_notice(index: contamination.ContaminationIndex, method: str) -> str:
    """Per task of the index, how many of its examples `method` leaves out as too short."""
    examples: Dict[str, int] = collections.Counter(key.task for key in index.keys)
    short: Dict[str, int] = collections.Counter(
        key.task for key, too_short in zip(index.keys, index.too_short[method]) if too_short)
    per_task = "; ".join(f"{task}: {short[task]} of {examples[task]}" for task in sorted(examples))
    return (f"decontamination by {method}: left out as too short to match, per task: {per_task} "
            f"({_TOO_SHORT[method]})")


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
    # --decontaminate: the benchmark examples whose pages are dropped, and by which method.
    decontamination: Optional[Decontamination] = None


def load_resources(config: VariantConfig, badwords_path: Optional[str] = None,
                   realnews_domains_path: Optional[str] = None,
                   webtext_url_patterns: Sequence[str] = (),
                   punkt_data: Optional[str] = None,
                   badwords_dir: Optional[str] = None,
                   decontamination: Optional[Decontamination] = None) -> Resources:
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
                                                     lower_case=config.rule_set.lower_case_badwords))}
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
    if decontamination is not None:
        # Read before any work: a file that is no index is refused, and what the method cannot
        # find is said.
        index = contamination.ContaminationIndex.load(decontamination.index_path)
        print(left_out_notice(index, decontamination.method))
        digests[decontamination.index_path] = lists.file_sha256(decontamination.index_path)
    return Resources(terms, realnews, tuple(url_files), load_splitter(config.splitter, punkt_data),
                     digests, decontamination)


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


def read_wet_pages(file_index: int, path: str, max_record_bytes: int, counts: Counts):
    """The Pages of one WET file, each with its input position; what is skipped (records, or the
    whole file when it cannot be read) is counted, and the file's pages too. A file with a
    problem (skipped whole, corrupt records, an unreadable tail) is named in a warning and in
    the run's `file_problems` (stats.file_problem_counter)."""
    pages = 0
    damage = wet.FileDamage()
    try:
        for item in wet.read_wet(lambda: files.open_raw(path), max_record_bytes):
            if isinstance(item, wet.Skipped):
                counts.add("read", f"records.skipped:{item.reason}")
                if item.reason == "corrupt_record":
                    damage.add(item, pages)
                continue
            item = dataclasses.replace(item, input_position=(file_index, pages))
            pages += 1
            if pages % _PROGRESS_EVERY == 0:
                _LOG.info("%s: %d pages read", path, pages)
            yield item
    except files.InputError as error:
        reason = "not_wet" if isinstance(error, wet.NotWetFile) else "unreadable"
        _LOG.warning("skipping input file %s: %s", path, error)
        counts.add("read", f"files.skipped:{reason}")
        counts.add(stats.FILE_PROBLEMS, stats.file_problem_counter(
            path, f"skipped whole ({reason}): {error}", pages_read=0, skipped=reason))
    else:
        counts.add("read", "files.read")
        if damage:
            _LOG.warning("input file %s is damaged: %s (%s read)", path, damage.describe(),
                         counted(pages, "page"))
            counts.add(stats.FILE_PROBLEMS, stats.file_problem_counter(
                path, damage.describe(), pages_read=pages,
                corrupt_records=damage.corrupt_records, corrupt_bytes=damage.corrupt_bytes,
                unreadable_from_byte=damage.unreadable_from,
                unreadable_bytes=(None if damage.unreadable_from is None
                                  or damage.file_bytes is None
                                  else damage.file_bytes - damage.unreadable_from)))
        else:
            _LOG.info("%s: done, %s", path, counted(pages, "page"))
    finally:
        if pages:
            counts.add("read", "pages.passed", pages)


class _ReadWetFileFn(beam.DoFn):

    def __init__(self, max_record_bytes: int):
        self._max_record_bytes = max_record_bytes

    def process(self, indexed_path):
        counts = Counts()
        try:
            yield from read_wet_pages(*indexed_path, self._max_record_bytes, counts)
        finally:
            counts.report()


def max_record_bytes(config: VariantConfig) -> int:
    """The largest WET record read: a page over the length limit is dropped anyway, and a
    character is at most 4 bytes of UTF-8."""
    return 4 * config.max_page_chars


def listed_files(source: inputs.WetSource, wanted: range, counts: Counts):
    """(index in the input list, path) of a source's files in `wanted`, but those the public
    C4 code skips as corrupt (counted)."""
    try:
        for indexed_path in source.indexed_paths():
            if indexed_path[0] >= wanted.stop:
                break
            if indexed_path[0] not in wanted:
                continue
            if inputs.is_known_corrupt(indexed_path[1]):
                counts.add("read", "files.skipped:known_corrupt")
                continue
            yield indexed_path
    except files.InputError as error:
        _LOG.warning("skipping manifest %s: %s", source.manifest, error)
        counts.add("read", "manifests.skipped:unreadable")


def _counted_per_element(function):
    """`function(element, *args, counts)` as a generator over its element that reports its
    counts to Beam when it is done (for beam.FlatMap)."""
    def counted_function(element, *args):
        counts = Counts()
        try:
            yield from function(element, *args, counts)
        finally:
            counts.report()
    return counted_function


class ListWetFiles(beam.PTransform):
    """An input plan (pipelines/inputs.py) -> (index in the input list, path) of its files, or
    of those in `wanted`, spread over the workers. The workers list each manifest's files, so
    the job holds the plan, not the paths."""

    def __init__(self, plan: inputs.InputPlan, wanted: Optional[range] = None):
        super().__init__()
        self._wanted = range(plan.files) if wanted is None else wanted
        self._sources = [source for source in plan.sources
                         if source.first_index < self._wanted.stop
                         and self._wanted.start < source.first_index + source.count]

    def expand(self, pipeline):
        return (pipeline
                | "ListSources" >> beam.Create(self._sources)
                | "ListFiles" >> beam.FlatMap(_counted_per_element(listed_files), self._wanted)
                | "SpreadFiles" >> beam.Reshuffle())


class ReadWetFiles(beam.PTransform):
    """An input plan -> the Pages of its files' conversion records."""

    def __init__(self, plan: inputs.InputPlan, max_record_bytes: int):
        super().__init__()
        self._plan = plan
        self._max_record_bytes = max_record_bytes

    def expand(self, pipeline):
        return (pipeline
                | "ListWetFiles" >> ListWetFiles(self._plan)
                | "ReadRecords" >> beam.ParDo(_ReadWetFileFn(self._max_record_bytes)))


class ReleasedText(Step):
    """The page(s) the released C4 read from a WET record (released.wet_pages)."""

    def __call__(self, page: Page, counts: Counts):
        pages = list(released.wet_pages(page))
        if not pages:
            counts.drop("released_text", "no_content", page)
            return pages
        counts.add("released_text", "pages.passed", len(pages))
        if len(pages) > 1:
            counts.add("released_text", "pages.added:page_delimiter_in_text", len(pages) - 1)
        return pages


class WithinLength(Step):

    def __init__(self, max_chars: int):
        self._max_chars = max_chars

    def __call__(self, page: Page, counts: Counts):
        if len(page.text) > self._max_chars:
            counts.drop("length", "too_long", page)
            return ()
        counts.add("length", "pages.passed")
        return (page,)


class KeyByUrl(Step):
    """(normalized URL, page): the key of URL dedup."""

    def __call__(self, page: Page, counts: Counts):
        return ((page.normalized_url, page),)


# What URL dedup keeps of a normalized URL: its newest page, how many pages had the URL, and the
# pages it dropped where the URL is in the exclusions' sample (none elsewhere).
NewestOfUrl = Tuple[Optional[Page], int, Tuple[Page, ...]]
NO_PAGE: NewestOfUrl = (None, 0, ())


def with_page(newest: NewestOfUrl, page: Page, choose,
              sample_fraction: Optional[float]) -> NewestOfUrl:
    """`newest` with one more page of its URL; `choose` picks one of two pages."""
    best, count, losers = newest
    if best is None:
        return page, count + 1, losers
    kept = choose(best, page)
    if sample_fraction is not None and exclusions.in_sample(page.normalized_url, sample_fraction):
        losers += (page if kept is best else best,)
    return kept, count + 1, losers


def merged_newest(newests: Iterable[NewestOfUrl], choose,
                  sample_fraction: Optional[float]) -> NewestOfUrl:
    total = NO_PAGE
    for page, count, losers in newests:
        if page is not None:
            best, total_count, total_losers = with_page(total, page, choose, sample_fraction)
            total = best, total_count - 1 + count, total_losers + losers
    return total


class _NewestPageFn(beam.CombineFn):
    """Keeps the newest page of a normalized URL (NewestOfUrl).

    `choose` picks one of two pages: urls.newest_page (paper rules) or
    urls.first_seen_newest_page (released rules)."""

    def __init__(self, choose, sample_fraction: Optional[float] = None):
        self._choose = choose
        self._sample_fraction = sample_fraction

    def create_accumulator(self):
        return NO_PAGE

    def add_input(self, accumulator, page):
        return with_page(accumulator, page, self._choose, self._sample_fraction)

    def merge_accumulators(self, accumulators):
        return merged_newest(accumulators, self._choose, self._sample_fraction)

    def extract_output(self, accumulator):
        return accumulator

    def get_accumulator_coder(self):
        return beam.coders.TupleCoder([beam.coders.NullableCoder(PageCoder()),
                                       beam.coders.VarIntCoder(),
                                       beam.coders.TupleSequenceCoder(PageCoder())])


class DedupUrls(beam.PTransform):
    """Pages -> (normalized URL, NewestOfUrl), after the per-page `before` steps in the same DoFn
    (which end in KeyByUrl)."""

    def __init__(self, rules: RuleSet, before: Sequence[Step],
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._choose = rules.keep_of_two
        self._before = tuple(before)
        self._sample = sample

    def expand(self, pages):
        keyed = apply_phase(pages, "KeyByUrl", self._before, self._sample,
                            output_type=Tuple[str, Page]).main
        return keyed | "KeepNewest" >> beam.CombinePerKey(
            _NewestPageFn(self._choose, self._sample and self._sample.fraction))


class CountUrlDuplicates(Step):

    def __call__(self, keyed, counts: Counts):
        _, (page, count, losers) = keyed
        counts.add("url_dedup", "pages.passed")
        if count > 1:
            counts.add("url_dedup", "pages.dropped:older_duplicate", count - 1 - len(losers))
        # In an order of their own: the runner's merges give them in any.
        for loser in sorted(losers, key=dataclasses.astuple):
            counts.drop("url_dedup", "older_duplicate", loser)
        return (page,)


class RealNewsDomains(Step):

    def __init__(self, allowed: Dict[str, domains.AllowedSubdomains], rules: RuleSet):
        self._allowed = allowed
        self._is_realnews = rules.is_realnews
        self._extractor = None

    def setup(self):
        self._extractor = domains.offline_domain_extractor()

    def __call__(self, page: Page, counts: Counts):
        if self._is_realnews(page, self._allowed, self._extractor):
            counts.add("domains", "pages.passed")
            return (page,)
        counts.drop("domains", "not_realnews_domain", page)
        return ()


def webtext_urls_of_file(path: str, rules: RuleSet, counts: Counts):
    """(normalized URL, None) of each URL of an OpenWebText list file."""
    try:
        text = files.read_all(path).decode("utf-8", errors="replace")
    except files.InputError as error:
        _LOG.error("skipping URL list: %s", error)
        counts.add("domains", "url_lists.skipped:unreadable")
        return
    counts.add("domains", "url_lists.read")
    skipped = 0
    for line in text.splitlines():
        url = domains.webtext_url_of_line(line, rules.normalize_url)
        if url is None:
            skipped += bool(line.strip())
            continue
        yield url, None
    if skipped:
        counts.add("domains", "url_lines.skipped", skipped)


class _EncodedPage(Step):
    """(key, page as PageCoder bytes): a page sent to a join with messages of another type
    (Beam's coder for the union of two types would pickle it)."""

    def __call__(self, keyed, counts: Counts):
        key, page = keyed
        return ((key, _PAGE_CODER.encode(page)),)


class KeepListedPages(Step):
    """The pages of a URL in the OpenWebText lists, from JoinWebTextUrls's groups."""

    def __call__(self, joined, counts: Counts):
        _, grouped = joined
        pages = grouped["pages"]
        if not pages:
            return ()
        if not grouped["listed"]:
            url, _ = joined
            if counts.records_drops_of(url):  # Decoded only to be recorded.
                for page in pages:
                    counts.drop("domains", "not_in_webtext_urls", _PAGE_CODER.decode(page))
            else:
                counts.add("domains", exclusions.counter_of("page", "not_in_webtext_urls"),
                           len(pages))
            return ()
        counts.add("domains", "pages.passed", len(pages))
        return [_PAGE_CODER.decode(page) for page in pages]


class JoinWebTextUrls(beam.PTransform):
    """(URL, (newest page, count)) -> (URL, {"pages": [encoded page], "listed": [...]}), joined
    with the OpenWebText URL lists; KeepListedPages reads the groups. The `before` steps
    (which take DedupUrls's output and give pages) run in the DoFn that keys the pages."""

    def __init__(self, config: VariantConfig, resources: Resources, before: Sequence[Step],
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._config = config
        self._resources = resources
        self._before = tuple(before)
        self._sample = sample

    def expand(self, newest):
        listed = (newest.pipeline
                  | "ListUrlFiles" >> beam.Create(list(self._resources.webtext_url_files))
                  | "ReadUrlLists" >> beam.FlatMap(_counted_per_element(webtext_urls_of_file),
                                                  self._config.rule_set))
        keyed = apply_phase(newest, "KeyPagesByUrl", [*self._before, KeyByUrl(), _EncodedPage()],
                            self._sample).main
        return {"pages": keyed, "listed": listed} | "JoinUrlLists" >> beam.CoGroupByKey()


class ParagraphFilter(Step):

    def __call__(self, page: Page, counts: Counts):
        reason = mc4.paragraph_drop_reason(page.text)
        if reason:
            counts.drop("paragraphs", reason, page)
            return ()
        counts.add("paragraphs", "pages.passed")
        return (page,)


class Clean(Step):

    def __init__(self, config: cleaning.CleaningConfig, rules: RuleSet, split: Splitter):
        self._config = config
        self._clean_page = rules.clean_page
        self._split = split

    def __call__(self, page: Page, counts: Counts):
        result = self._clean_page(page.text, self._config, self._split,
                                  keep_removed=counts.records_drops_of(page.normalized_url))
        removed = result.removed_lines()
        for reason, count in sorted(result.lines_dropped.items()):
            counts.drop("clean", reason, page, "line", count, lambda reason=reason: removed[reason])
        counts.add("clean", "lines.passed", result.lines_kept)
        if result.text is None:
            counts.drop("clean", result.page_drop_reason, page)
            return ()
        counts.add("clean", "pages.passed")
        return (dataclasses.replace(page, text=result.text),)


def _page_key(page: Page, config: dedup.DedupConfig) -> bytes:
    return dedup.page_key(page.url, page.normalized_url, config.mode)


# What goes to the dedup join, keyed by page key: (PAGE_MESSAGE, the page as PageCoder bytes) or
# (LOST_KEY_MESSAGE, a key the page does not keep).
PAGE_MESSAGE, LOST_KEY_MESSAGE = 0, 1
# The key a page is sent when it repeats one of its own keys: check me at the join.
_REPEATS_IN_PAGE = b""
# Records a worker buffers before it resolves them and sends the winners on: 16 MB of span records.
_RECORDS_PER_FLUSH = 1 << 20


class SpanRecords(Step):
    """Pages -> the dedup join's messages (main output): each page, and each key a page loses in
    its worker's buffer (dedup.resolve_records) or repeats; the buffer's winners go out as one
    block per bucket (`winners`). A buffer mixes the pages of a bundle."""

    def __init__(self, config: dedup.DedupConfig, split: Splitter, buckets: int):
        self._config = config
        self._split = split
        self._buckets = buckets
        self._flush_bytes = _RECORDS_PER_FLUSH * sum(dedup.record_widths(config.mode))
        self._records = bytearray()

    def start(self):
        self._records = bytearray()

    def __call__(self, page: Page, counts: Counts):
        key_of_page = _page_key(page, self._config)
        keys, repeats = dedup.distinct_span_keys(
            dedup.units_of(page.text, self._config.mode, self._split), self._config)
        self._records += dedup.page_records(keys, key_of_page)
        outputs = [(key_of_page, (PAGE_MESSAGE, _PAGE_CODER.encode(page)))]
        if repeats:
            outputs.append((key_of_page, (LOST_KEY_MESSAGE, _REPEATS_IN_PAGE)))
        if len(self._records) >= self._flush_bytes:
            outputs.extend(self._flush())
        return outputs

    def finish(self, counts: Counts):
        return self._flush()

    def _flush(self):
        records, self._records = bytes(self._records), bytearray()
        winners, losers = dedup.resolve_records(records, self._config.mode)
        outputs = _lost_key_messages(losers)
        outputs.extend(beam.pvalue.TaggedOutput("winners", block)
                       for block in dedup.bucket_blocks(winners, self._config.mode,
                                                        self._buckets))
        return outputs


def _lost_key_messages(losers: Iterable[Tuple[bytes, bytes]]) -> list:
    """The dedup join's message to each (page key, key) of `losers`: the key it does not keep."""
    return [(key_of_page, (LOST_KEY_MESSAGE, key)) for key_of_page, key in losers]


def _losers_of_bucket(bucket_and_blocks, mode: str):
    """The messages to each page that has a key of the bucket and does not keep it."""
    _, blocks = bucket_and_blocks
    _, losers = dedup.resolve_records(b"".join(blocks), mode)
    return _lost_key_messages(losers)


class ApplyRemovals(Step):
    """A page key's messages from the dedup join -> its page with the spans it lost removed,
    unless too little is left."""

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter):
        self._config = config
        self._min_sentences = min_sentences
        self._split = split

    def __call__(self, joined, counts: Counts):
        _, messages = joined
        pages, lost = [], set()
        for kind, payload in messages:
            if kind == PAGE_MESSAGE:
                pages.append(_PAGE_CODER.decode(payload))
            else:
                lost.add(payload)
        return [kept for page in pages for kept in self._removed_from(page, lost, counts)]

    def _removed_from(self, page: Page, lost: Set[bytes], counts: Counts):
        if not dedup.needs_check(self._config, bool(lost), self._min_sentences):
            # Most pages lose nothing, and passed the sentence minimum when they were cleaned.
            counts.add("dedup", "pages.passed")
            return (page,)
        text = page.text
        if lost:  # Without a lost key, the page lost nothing: only its sentences are checked.
            units = dedup.units_of(page.text, self._config.mode, self._split)
            removed = dedup.removed_starts(units, self._config, lost - {_REPEATS_IN_PAGE})
            if removed:
                counts.drop("dedup", "duplicate", page, "span", len(removed),
                            lambda: dedup.window_texts(units, self._config, removed))
            text = dedup.remove_units(page.text, units, self._config, removed)
        reason = dedup.drop_reason_after_dedup(text, self._config, self._split,
                                               self._min_sentences)
        if reason:
            counts.drop("dedup", reason, page)
            return ()
        counts.add("dedup", "pages.passed:shortened" if text != page.text else "pages.passed")
        return (dataclasses.replace(page, text=text),)


class DedupText(beam.PTransform):
    """Keeps one occurrence of every repeated span (or line) across the whole dataset.

    Only keys cross the shuffle (dedup.py): each worker resolves the (key, page key) records of
    its pages and sends their winners, packed per bucket of keys, to be resolved by bucket;
    (page key, key) goes back to each page that loses a key; then the pages join what they lost
    by page key. A bucket holds about 1/`buckets` of the dataset's keys: pipelines.c4 uses one
    bucket per input file, so a bucket's memory stays that of about one file's keys.

    `before`: per-page steps run in the DoFn that sends the keys (they give pages); `after`:
    steps run on the deduplicated pages in the DoFn that removes the spans. `sample`: where
    the phases' exclusion records go.
    """

    def __init__(self, config: dedup.DedupConfig, min_sentences: int, split: Splitter,
                 buckets: int = 1, before: Sequence[Step] = (), after: Sequence[Step] = (),
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        if buckets < 1:
            raise ValueError("the number of dedup buckets must be >= 1")
        self._config = config
        self._min_sentences = min_sentences
        self._split = split
        self._buckets = buckets
        self._before = tuple(before)
        self._after = tuple(after)
        self._sample = sample

    def expand(self, pages):
        sent = apply_phase(pages, "SendKeys",
                           [*self._before, SpanRecords(self._config, self._split, self._buckets)],
                           self._sample, "winners")
        losses = (sent.winners
                  | "GroupBuckets" >> beam.GroupByKey()
                  | "PickLosers" >> beam.FlatMap(_losers_of_bucket, self._config.mode))
        joined = ((sent.main, losses)
                  | "AllMessages" >> beam.Flatten()
                  | "JoinByPage" >> beam.GroupByKey())
        return apply_phase(joined, "RemoveSpans",
                           [ApplyRemovals(self._config, self._min_sentences, self._split),
                            *self._after], self._sample).main


class DetectLanguage(Step):

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._detector = None

    def setup(self):
        self._detector = language.LanguageDetector()

    def __call__(self, page: Page, counts: Counts):
        detected = self._detector.detect(page.text)
        reason = language.language_drop_reason(detected, self._config)
        if reason:
            counts.drop("language", reason, page)
            return ()
        counts.add("language", f"pages.passed:{detected[0]}")
        return (dataclasses.replace(page, language=detected[0],
                                    language_probability=detected[1]),)


class Cld3Language(Step):
    """mC4's language stage: CLD3 as the public code builds it, `und` where it is unsure, the
    page dropped where it is sure of a language mC4 does not have (mc4.cld3_label). Counters:
    `pages.passed:<language>`, `und.<why>`, `pages.dropped:other_language`."""

    def __init__(self, config: language.LanguageConfig):
        self._config = config
        self._identifier = None

    def setup(self):
        self._identifier = cld3.Cld3Identifier()

    def __call__(self, page: Page, counts: Counts):
        answer = self._identifier.find_language(page.text)
        if answer is None:
            counts.add("language", "und.unreadable")
            detected, reason, probability = mc4.UNKNOWN_LANGUAGE, None, 0.0
        else:
            detected, reason = mc4.cld3_label(*answer, self._config.languages,
                                              self._config.min_probability)
            probability = answer.probability
        if detected is None:
            counts.drop("language", reason, page)
            return ()
        if reason:
            counts.add("language", f"und.{reason}")
        counts.add("language", f"pages.passed:{detected}")
        return (dataclasses.replace(page, language=detected, language_probability=probability),)


class Badwords(Step):
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

    def _counter(self, name: str, page: Page) -> str:
        return f"{name}:{page.language}" if self._count_languages else name

    def __call__(self, page: Page, counts: Counts):
        matcher = self._matchers.get(mc4.page_language(page.language))
        if matcher is None or not badwords.contains_badword(page.text, matcher):
            counts.add("badwords", self._counter("pages.passed", page))
            return (page,)
        if (self._filter_fraction < 1
                and mc4.keeps_page_with_badword(page.normalized_url, self._filter_fraction)):
            counts.add("badwords", self._counter("pages.passed:kept_with_badword", page))
            return (page,)
        counts.drop("badwords", self._counter("badword", page), page)
        return ()


def read_steps(config: VariantConfig) -> List[Step]:
    """The per-page steps before URL dedup's key, which depend on nothing but the page: the
    released text, the length limit."""
    steps: List[Step] = [ReleasedText()] if config.rule_set.reads_released_text else []
    return steps + [WithinLength(config.max_page_chars)]


class C4Pages(beam.PTransform):
    """Raw WET pages -> the pages of a C4 variant, through the stages in the public C4 order.

    The stages between two shuffles run as one DoFn (PhaseFn): before URL dedup; from it to the
    span dedup's join (the domains, paragraphs, cleaning, the keys sent); from that join to the
    end (the spans removed, language, bad words).

    `pages_read`: the pages have been through `read_steps` already (a job in parts runs them
    per group of input files, pipelines/parts.py). `sample`: where the exclusion records of
    the phases go (--exclusions), or None.

    (The released code filters RealNews domains before URL dedup; the filter depends on the
    normalized URL alone, which is also the dedup key, so the order gives the same pages.)"""

    def __init__(self, config: VariantConfig, resources: Resources, dedup_buckets: int = 1,
                 pages_read: bool = False, sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._config = config
        self._resources = resources
        self._dedup_buckets = dedup_buckets
        self._pages_read = pages_read
        self._sample = sample

    def expand(self, pages):
        config, resources, sample = self._config, self._resources, self._sample
        steps = [] if self._pages_read else read_steps(config)
        steps.append(KeyByUrl())
        pages = pages | "UrlDedup" >> DedupUrls(config.rule_set, steps, sample)
        steps = [CountUrlDuplicates()]
        if config.domain_filter == "webtext":
            pages = pages | "WebTextDomains" >> JoinWebTextUrls(config, resources, steps, sample)
            steps = [KeepListedPages()]
        steps += filter_steps(config, resources)
        if config.dedup:
            return pages | "Dedup" >> DedupText(
                config.dedup, config.min_sentences_after_dedup, resources.splitter,
                self._dedup_buckets, before=steps, after=last_steps(config, resources),
                sample=sample)
        return apply_phase(pages, "Filter", steps + last_steps(config, resources), sample).main


def filter_steps(config: VariantConfig, resources: Resources) -> List[Step]:
    """The per-page steps between URL dedup (and the OpenWebText join) and the span dedup: the
    RealNews domains, the paragraphs, the cleaning."""
    steps: List[Step] = []
    if config.domain_filter == "realnews":
        steps.append(RealNewsDomains(resources.realnews_domains, config.rule_set))
    if config.paragraph_filter:
        steps.append(ParagraphFilter())
    if config.cleaning:
        steps.append(Clean(config.cleaning, config.rule_set, resources.splitter))
    return steps


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

    def __init__(self, setting: Decontamination):
        self._setting = setting
        self._index = None

    def setup(self):
        self._index = contamination.ContaminationIndex.load(self._setting.index_path)

    def __call__(self, page: Page, counts: Counts):
        found = getattr(self._index.matches(page.text), self._setting.method)
        if found:
            counts.drop("decontamination", f"example_of:{min(key.task for key in found)}", page)
            return ()
        counts.add("decontamination", "pages.passed")
        return (page,)


def last_steps(config: VariantConfig, resources: Resources) -> List[Step]:
    """The per-page steps after the span dedup: language, bad words, the decontamination (and
    the kept pages recorded for the exclusions)."""
    steps: List[Step] = [Cld3Language(config.language) if config.language.detector == "cld3"
                         else DetectLanguage(config.language)]
    if config.filter_badwords:
        steps.append(Badwords(resources.badwords, config.badwords_filter_fraction,
                              count_languages=config.language_folders is not None))
    if resources.decontamination is not None:
        steps.append(Decontaminate(resources.decontamination))
    return steps + [RecordKept()]
