"""The lists a variant reads (bad words, RealNews domains, OpenWebText URL lists, a
decontamination index), loaded once before any work, with the sha256 of each for
run_config.json.
"""
import collections
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from pipelines.config import VariantConfig
from pipelines.filters import badwords, domains, mc4
from pipelines.readers import files, lists
from text import contamination
from text.sentences import split_sentences
from text.splitters import Splitter, load_splitter

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
        lower_case = config.rule_set.lower_case_badwords
        terms = {"en": tuple(badwords.parse_badwords(content, badwords_path,
                                                     lower_case=lower_case))}
    realnews = None
    if config.domain_filter == "realnews":
        if not realnews_domains_path:
            raise ValueError(f"variant {config.name} needs the RealNews domains "
                             "(--realnews_domains)")
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
