"""Where a `t5_c4` build takes its inputs from, and the clear error when one is missing.

Each input comes from the first of:
1. an explicit path in `BuildOptions` (Python: `tfds.builder("t5_c4/en", wet_files=[...], ...)`);
2. the manual_dir (`tfds build --manual_dir DIR`, default `<data_dir>/downloads/manual`), laid
   out as `MANUAL_LAYOUT` says. A manual_dir that exists and holds files means "offline":
   nothing is downloaded, and an input missing there is an error;
3. online: the pinned URL through the TFDS download manager, checked against its pinned
   checksum (pipelines/readers/lists.py: bad words, RealNews domains), or the Common Crawl manifest
   of
   each dump in `cc_dumps` (by default the variant's dumps, pipelines/readers/common_crawl.py).
OpenWebText URL lists have no pinned public copy: webtextlike always needs them locally.
"""
import dataclasses
from typing import Callable, List, Optional, Sequence

from etils import epath

from pipelines.config import VariantConfig
from pipelines.filters import mc4
from pipelines.filters.urls import DEFAULT_VALIDATION_FRACTION
from pipelines.readers import common_crawl, files, lists
from pipelines.readers import inputs as wet_inputs

MANUAL_WET_DIR = "wet"
MANUAL_BADWORDS_DIR = "badwords"
MANUAL_BADWORDS = f"{MANUAL_BADWORDS_DIR}/en"
MANUAL_REALNEWS_DOMAINS = "realnews/domain_to_allowed_subdomains.json"
MANUAL_WEBTEXT_DIR = "openwebtext_urls"
MANUAL_LAYOUT = f"""\
  {MANUAL_WET_DIR}/       WET files (*.warc.wet.gz, *.wet) or Common Crawl manifests (wet.paths.gz),
                 searched recursively
  {MANUAL_BADWORDS}   the LDNOOBW English list ({lists.LDNOOBW_EN.url})
  {MANUAL_BADWORDS_DIR}/      multilingual: every LDNOOBW list mC4 reads, named as there (ar, ...,
  zh)
  {MANUAL_REALNEWS_DOMAINS}
                 realnewslike only ({lists.REALNEWS_DOMAINS.url})
  {MANUAL_WEBTEXT_DIR}/   webtextlike only: OpenWebText URL lists (plain, .gz, .xz), searched
  recursively
"""
_WET_SUFFIXES = (".wet", ".wet.gz") + wet_inputs.MANIFEST_SUFFIXES

# url -> local path of the downloaded, checksum-verified file (TFDS's `dl_manager.download`).
Downloader = Callable[[str], str]


class MissingInputError(Exception):
    """An input the build needs is absent; the message says which file and where to put it."""


@dataclasses.dataclass(frozen=True)
class BuildOptions:
    """Explicit inputs of one build (what is left unset comes from the manual_dir or the network)
    and its validation share."""
    wet_files: Sequence[str] = ()  # WET files, globs or manifests (local, gs://, https://).
    max_wet_files: Optional[int] = None  # Only the first N WET files (all if None).
    # Online, without wet_files: these dumps; if empty, the variant's (VariantConfig.default_dumps:
    # the 12 dumps of Aug 2018 - Jul 2019 for webtextlike, mC4's 86 for multilingual,
    # CC-MAIN-2019-18 for the others).
    cc_dumps: Sequence[str] = ()
    cc_base_url: str = common_crawl.BASE_URL  # Prefix of a manifest's relative paths.
    badwords: Optional[str] = None
    badwords_dir: Optional[str] = None  # multilingual: the folder of its LDNOOBW lists.
    # multilingual: the languages whose splits are built (codes, or one string "de+fr"); empty:
    # all of mC4's and und. TFDS cannot write an empty split: a sample has few languages.
    languages: Sequence[str] = ()
    realnews_domains: Optional[str] = None
    webtext_urls: Sequence[str] = ()  # Paths or globs.
    # The paper's 0.1% by default. Larger only for samples too small to give validation a page;
    # the value used is stored in info.metadata.
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION
    # "paper" or "released" (pipelines/config.py); None: the config's own (paper, but released
    # for en.linededup and multilingual).
    rules: Optional[str] = None
    splitter: str = "ours"  # Sentence splitter: "ours" or "punkt" (punkt_tab data, below).
    punkt_data: Optional[str] = None  # The punkt_tab model's folder; default: NLTK_DATA.
    # The output folder of a finished `python -m pipelines.c4` run of this config, published as
    # it is (tfds_c4/published.py): no input is read, nothing is computed again.
    run_output: Optional[str] = None

    def __post_init__(self):
        if isinstance(self.wet_files, str) or isinstance(self.webtext_urls, str):
            raise ValueError("wet_files and webtext_urls are lists of paths, not one string")
        if self.max_wet_files is not None and self.max_wet_files < 1:
            raise ValueError("max_wet_files must be >= 1")
        if isinstance(self.languages, str):
            object.__setattr__(self, "languages", tuple(filter(None, self.languages.split("+"))))
        unknown = sorted(set(self.languages) - set(mc4.SPLIT_LANGUAGES))
        if unknown:
            raise ValueError(f"languages {unknown} are not mC4's; choose among "
                             f"{' '.join(mc4.SPLIT_LANGUAGES)}")
        if self.run_output and (self.wet_files or self.cc_dumps or self.max_wet_files):
            raise ValueError("run_output publishes a finished run as it is: it takes no WET "
                             "input (wet_files, cc_dumps, max_wet_files)")
        if not 0 < self.validation_fraction < 1:
            raise ValueError("validation_fraction must be in (0, 1): TFDS cannot write an empty "
                             f"split, got {self.validation_fraction}")


@dataclasses.dataclass(frozen=True)
class ResolvedInputs:
    """Every input a variant needs, as paths or URLs the pipeline's readers open."""
    wet_input: wet_inputs.InputPlan
    badwords: Optional[str]
    badwords_dir: Optional[str]  # None for multilingual: its pinned URLs, read and checked.
    realnews_domains: Optional[str]
    webtext_urls: Sequence[str]


def _files_under(directory: epath.Path, suffixes: Optional[Sequence[str]] = None) -> List[str]:
    """Files in `directory` and its subfolders, sorted (epath refuses `**` globs, for GCS)."""
    if not directory.is_dir():
        return []
    found: List[str] = []
    for path in directory.iterdir():
        if path.is_dir():
            found.extend(_files_under(path, suffixes))
        elif suffixes is None or path.name.endswith(tuple(suffixes)):
            found.append(str(path))
    return sorted(found)


def _missing(what: str, manual_path: str, option: str, source: str) -> MissingInputError:
    return MissingInputError(
        f"{what} not found: put it at {manual_path} or pass the builder keyword {option}=..."
        f"{source}. Expected manual_dir layout:\n{MANUAL_LAYOUT}")


def _download(what: str, url: str, download: Downloader, manual_path: str,
              option: str) -> str:
    try:
        return str(download(url))
    except Exception as error:  # The download manager raises many types (network, checksum).
        raise MissingInputError(
            f"could not download {what} from {url} ({type(error).__name__}: {error}). Offline, "
            f"put it at {manual_path} and pass --manual_dir, or pass "
            f"the builder keyword {option}=PATH.") from None


def _one_file(what: str, explicit: Optional[str], manual_dir: Optional[epath.Path],
              relative: str, url: str, option: str, download: Optional[Downloader]) -> str:
    if explicit:
        return explicit
    manual_path = f"<manual_dir>/{relative}" if manual_dir is None else str(manual_dir / relative)
    if manual_dir is not None:
        if (manual_dir / relative).is_file():
            return manual_path
        raise _missing(what, manual_path, option, f" (its pinned source: {url})")
    return _download(what, url, download, manual_path, option)


def _wet_input(inputs: BuildOptions, manual_dir: Optional[epath.Path],
               config: VariantConfig) -> wet_inputs.InputPlan:
    if inputs.wet_files:
        patterns = list(inputs.wet_files)
    elif manual_dir is not None:
        patterns = _files_under(manual_dir / MANUAL_WET_DIR, _WET_SUFFIXES)
        if not patterns:
            raise _missing("WET files", str(manual_dir / MANUAL_WET_DIR), "wet_files", "")
    else:
        # Manifests are read directly rather than through the download manager: Common Crawl
        # publishes no checksums to pin, and the download manager's file names drop the
        # `.paths.gz` suffix by which the pipeline recognises a manifest.
        dumps = inputs.cc_dumps or config.default_dumps
        patterns = [common_crawl.manifest_url(dump, inputs.cc_base_url) for dump in dumps]
    try:
        plan = wet_inputs.plan_inputs(patterns, inputs.max_wet_files, inputs.cc_base_url)
    except files.InputError as error:
        raise MissingInputError(f"WET input unusable: {error}") from None
    if not plan.files:
        raise MissingInputError(f"no WET file listed in {patterns}")
    return plan


def _webtext_urls(inputs: BuildOptions, manual_dir: Optional[epath.Path]) -> List[str]:
    if inputs.webtext_urls:
        return list(inputs.webtext_urls)
    manual_path = ("<manual_dir>/" if manual_dir is None else str(manual_dir) + "/") + \
        MANUAL_WEBTEXT_DIR
    found = _files_under(manual_dir / MANUAL_WEBTEXT_DIR) if manual_dir is not None else []
    if not found:
        raise _missing("OpenWebText URL lists", manual_path, "webtext_urls",
                       " (they have no pinned download; see tfds_c4/README.md)")
    return found


def resolve(config: VariantConfig, inputs: BuildOptions, manual_dir: Optional[str],
            download: Downloader) -> ResolvedInputs:
    """The inputs `config` needs, or a MissingInputError; given a manual_dir, nothing downloads."""
    manual = epath.Path(manual_dir) if manual_dir else None
    fetch = None if manual is not None else download
    badwords = badwords_dir = realnews = None
    if config.filter_badwords and config.badwords_files:
        badwords_dir = _badwords_dir(config, inputs, manual)
    elif config.filter_badwords:
        badwords = _one_file("the bad-words list", inputs.badwords, manual, MANUAL_BADWORDS,
                             lists.LDNOOBW_EN.url, "badwords", fetch)
    if config.domain_filter == "realnews":
        realnews = _one_file("the RealNews domains", inputs.realnews_domains, manual,
                             MANUAL_REALNEWS_DOMAINS, lists.REALNEWS_DOMAINS.url,
                             "realnews_domains", fetch)
    webtext = _webtext_urls(inputs, manual) if config.domain_filter == "webtext" else []
    return ResolvedInputs(_wet_input(inputs, manual, config), badwords, badwords_dir, realnews,
                          tuple(webtext))


def _badwords_dir(config: VariantConfig, inputs: BuildOptions,
                  manual_dir: Optional[epath.Path]) -> Optional[str]:
    """The folder of mC4's lists: the keyword's, the manual_dir's (every list there, or an
    error naming the missing ones), or None online (the pipeline reads the pinned URLs)."""
    if inputs.badwords_dir:
        return inputs.badwords_dir
    if manual_dir is None:
        return None
    folder = manual_dir / MANUAL_BADWORDS_DIR
    missing = [name for name in config.badwords_files if not (folder / name).is_file()]
    if missing:
        raise _missing(f"the bad-words lists {', '.join(missing)}", str(folder), "badwords_dir",
                       f" (their pinned sources: {lists.LDNOOBW_MC4[missing[0]].url} ...)")
    return str(folder)

