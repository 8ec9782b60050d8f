"""`t5_c4`: the C4 variants of the T5 paper as a TFDS dataset, built by the pipeline in pipelines/.

The Beam graph is `pipelines.beam.graph.variant_pages` (the same stages the standalone job runs),
split by `pipelines.filters.urls.split_of`; TFDS writes the examples. With the builder keyword
`run_output`, a
finished run's output folder is published as it is instead (tfds_c4/published.py). The pipeline's
counters (pages kept and
dropped per stage and reason) are stored in `info.metadata["statistics"]`.
"""
import dataclasses
from typing import Dict, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core import dataset_metadata
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import counters
from pipelines.beam import embedded, graph
from pipelines.config import MC4, TFDS_VARIANTS, VARIANTS, VariantConfig, variant
from pipelines.filters import mc4
from pipelines.filters.urls import SPLIT_PLACES, split_at, split_of, split_place
from pipelines.page import Page
from pipelines.readers import common_crawl, files, lists
from pipelines.stats import stats
from pipelines.steps.resources import load_resources
from pipelines.wording import counted
from text.punkt import PunktDataMissing
from tfds_c4 import inputs as inputs_lib, published
from tfds_c4.inputs import BuildOptions, MissingInputError

SPLITS = ("train", "validation")
STATISTICS_KEY = "statistics"
VALIDATION_FRACTION_KEY = "validation_fraction"
# Where Beam's DirectRunner ends the message of an error raised in a step.
_BEAM_STEP_SUFFIX = " [while running"

_CITATION = """\
@article{2019t5,
  author = {Colin Raffel and Noam Shazeer and Adam Roberts and Katherine Lee and Sharan Narang
            and Michael Matena and Yanqi Zhou and Wei Li and Peter J. Liu},
  title = {Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer},
  journal = {arXiv e-prints},
  year = {2019},
  archivePrefix = {arXiv},
  eprint = {1910.10683},
}
"""

_DATASET_DESCRIPTION = (
    "The Colossal Clean Crawled Corpus (C4) and its variants as the T5 paper builds them from "
    "Common Crawl WET files, with this project's pipeline (pipelines/). "
    "info.metadata['statistics'] holds the pipeline's counters: pages kept and dropped per stage "
    "and reason; info.metadata['validation_fraction'] the share of URLs in validation.")

_COMMON = (
    " Input: the WET files of Common Crawl dump CC-MAIN-2019-18 by default (the dump of the "
    "released C4), or any WET files given. Validation is the released C4's: the pages whose "
    "URL, normalized as the public TFDS `c4` does, has an MD5 that is 0 modulo 1000 (0.1%), so "
    "released C4 validation pages are never in train. The builder keyword rules=released "
    "reproduces the public TFDS `c4` code page for page. Cleaning thresholds are those of the "
    "public C4 code (5 words per line, 3 sentences per page; the paper's text says 3 and 5). Bad words: the LDNOOBW English list "
    "at commit 25e679f, a hard filter (no page with a listed term is kept).")

# How each variant differs from the paper and from the public TFDS `c4` configs.
_DIFFERENCES = {
    "en": " Differs from the public TFDS `c4/en`, which removes repeated lines: this config "
          "removes repeated three-sentence spans, as the paper describes (use `en.linededup` "
          "for the released C4).",
    "en.noclean": " Like the public TFDS `c4/en.noclean`, except that the language filter is "
                  "langdetect at p >= 0.99 as for `en`.",
    "en.linededup": " The released C4 (public TFDS `c4/en` 3.x), page for page: line dedup "
                    "and every other rule of the public code.",
    "realnewslike": " Like the public TFDS `c4/realnewslike`: the RealNews domain list of "
                    "Grover at commit 38f7184, applied before cleaning; span dedup as in `en`.",
    "webtextlike": " Like the public TFDS `c4/webtextlike`: by default the 12 dumps "
                   f"{common_crawl.WEBTEXTLIKE_DUMPS[0]} to {common_crawl.WEBTEXTLIKE_DUMPS[-1]} "
                   "(August 2018 to July 2019); the OpenWebText URL lists must be "
                   "given locally (no pinned public copy); span dedup as in `en`.",
    "en.noblocklist": " Like AllenAI's released `en.noblocklist`: `en` (span dedup under the "
                      "paper rules, the released C4's line dedup under rules=released) with no "
                      "bad-words filter.",
    MC4: " The public TFDS `c4/multilingual` (mC4), page for page: splits `<language>` and "
         "`<language>-validation` for each of its 107 languages and `und` (the builder keyword "
         "languages=de+fr builds some of them); bad words from the LDNOOBW lists of 28 "
         "languages at commit 5faf2ba (English at 25e679f).",
}

_MANUAL_INSTRUCTIONS = f"""\
Offline, or to build from your own WET files, pass --manual_dir DIR (nothing is downloaded then)
with this layout:
{inputs_lib.MANUAL_LAYOUT}
From Python, `tfds.builder("t5_c4/en", wet_files=[...], badwords=..., ...)` (any field of
tfds_c4.BuildOptions) names the files directly.
"""


_OPTION_NAMES = tuple(field.name for field in dataclasses.fields(BuildOptions))


class EmptySplitError(Exception):
    """A build whose input is too small to give every split a page."""


@dataclasses.dataclass(frozen=True)
class SplitCounts:
    """The pages of one language (or of a config that has one) in each split, and the least and
    greatest of their places (urls.split_place): the validation fractions that would give both
    splits a page are those in (least, greatest]."""
    train: int = 0
    validation: int = 0
    least_place: Optional[int] = None
    greatest_place: Optional[int] = None

    @property
    def pages(self) -> int:
        return self.train + self.validation

    def add(self, place: int, validation_fraction: float) -> "SplitCounts":
        in_validation = split_at(place, validation_fraction) == "validation"
        return SplitCounts(
            self.train + (not in_validation), self.validation + in_validation,
            place if self.least_place is None else min(self.least_place, place),
            place if self.greatest_place is None else max(self.greatest_place, place))

    def merge(self, other: "SplitCounts") -> "SplitCounts":
        places = [place for place in (self.least_place, self.greatest_place, other.least_place,
                                      other.greatest_place) if place is not None]
        return SplitCounts(self.train + other.train, self.validation + other.validation,
                           min(places, default=None), max(places, default=None))


class _SplitCountsFn(beam.CombineFn):
    """Places of pages -> their SplitCounts."""

    def __init__(self, validation_fraction: float):
        self._validation_fraction = validation_fraction

    def create_accumulator(self):
        return SplitCounts()

    def add_input(self, accumulator, place):
        return accumulator.add(place, self._validation_fraction)

    def merge_accumulators(self, accumulators):
        total = SplitCounts()
        for accumulator in accumulators:
            total = total.merge(accumulator)
        return total

    def extract_output(self, accumulator):
        return accumulator


def fraction_between(least_place: int, greatest_place: int) -> Optional[float]:
    """A validation fraction, in few digits, that puts the page at `least_place` in validation
    and the one at `greatest_place` in train; None if no fraction can (one place)."""
    middle = (least_place + greatest_place) / 2 / SPLIT_PLACES
    for digits in range(1, 12):
        fraction = float(f"{middle:.{digits}g}")
        if (0 < fraction < 1 and split_at(least_place, fraction) == "validation"
                and split_at(greatest_place, fraction) == "train"):
            return fraction
    return None


def empty_split_error(counts: Dict[Optional[str], SplitCounts],
                      languages: Sequence[Optional[str]], validation_fraction: float,
                      dataset: str) -> Optional[str]:
    """Why TFDS cannot write this build's splits (one of them would be empty), with the pages of
    each split and what would give every split a page; None if every split has one.
    `languages`: mC4's languages built, or (None,) for a config of one language."""
    empty = [language for language in languages
             if not counts.get(language, SplitCounts()).train
             or not counts.get(language, SplitCounts()).validation]
    if not empty:
        return None
    described = []
    for language in empty:
        of = counts.get(language, SplitCounts())
        names = [mc4.split_name(language, split) if language else split
                 for split in SPLITS if not getattr(of, split)]
        described.append(f"{' and '.join(names)} {'are' if len(names) > 1 else 'is'} empty "
                         f"({counted(of.train, 'page')} in train, {of.validation:,} in "
                         "validation)")
    problem = (f"{'; '.join(described)}, and TFDS cannot write an empty split. A page's split "
               f"is by the hash of its URL: validation_fraction {validation_fraction:g} puts "
               "that share of URLs in validation (at the default 0.001, the released C4's "
               "validation URLs: a sample of released C4 validation pages, such as shared/data's "
               "c4-en-2019-18-roundtrip, is all validation).")
    if not sum(of.pages for of in counts.values()):
        return f"the build kept no page: {problem} Build from more WET files."
    without_pages = [language for language in empty
                     if not counts.get(language, SplitCounts()).pages]
    if without_pages:
        kept = sorted(language for language in counts if counts[language].pages)
        advice = (f"build only the languages the input has (builder keyword "
                  f"languages={'+'.join(kept)}), or from more WET files")
    else:
        filled = [counts[language] for language in languages]
        least = max(of.least_place for of in filled)
        greatest = min(of.greatest_place for of in filled)
        fraction = fraction_between(least, greatest) if least < greatest else None
        if fraction is None:
            advice = ("no validation_fraction gives every split a page of this input (one "
                      "page cannot fill two splits): build from more WET files")
        else:
            direction = "smaller" if fraction < validation_fraction else "larger"
            advice = (f"pass a {direction} validation_fraction: {fraction:g} gives every split "
                      f"a page of this input (`tfds build {dataset}/validation_fraction="
                      f"{fraction:g}`, or the builder keyword), or build from more WET files")
    return f"{problem} To build, {advice}."


def with_pinned_runner(download_config: Optional[tfds.download.DownloadConfig]
                       ) -> tfds.download.DownloadConfig:
    """`download_config` with the runner a build takes when none is chosen, or the DirectRunner
    is: Beam's DirectRunner kept off its first try of the Prism runner (embedded.embedded_runner),
    and options parsed from nothing rather than TFDS's default, which parses the `tfds build`
    command line and warns about each of its flags. A runner object, or options naming another
    runner, are kept as given."""
    config = download_config or tfds.download.DownloadConfig()
    options = config.beam_options or PipelineOptions([])
    if config.beam_runner is not None or not embedded.runs_embedded(options):
        return config
    return dataclasses.replace(config, beam_runner=embedded.embedded_runner(), beam_options=options)


def _description(config: VariantConfig) -> str:
    return config.description + _DIFFERENCES[config.name] + _COMMON


def _example_of(page: Page, split: str, language: Optional[str]):
    """(key, features) of a kept page; the normalized URL is unique after URL dedup."""
    Metrics.counter(counters.namespace(counters.WRITE_STAGE),
                    counters.written(language or "", split)).inc()
    return page.normalized_url, page.to_json_record()


def _keyed_record(record: dict, normalize_url) -> Tuple[str, dict]:
    """(key, features) of a published record: its URL key, unique after URL dedup."""
    return normalize_url(record["url"]), record


def _in_split(page: Page, split: str, language: Optional[str], validation_fraction: float,
              splits_checked: bool) -> bool:  # pylint: disable=unused-argument
    return ((language is None or page.language == language)
            and split_of(page.url, validation_fraction) == split)


@beam.ptransform_fn
def _examples_of_split(pages, split: str, language: Optional[str], validation_fraction: float,
                       splits_checked):
    # `splits_checked` (the check that no split is empty) is a side input so that the check
    # runs before any example reaches TFDS's writer, which fails an empty split without
    # saying why.
    return (pages
            | "OnlySplit" >> beam.Filter(_in_split, split, language, validation_fraction,
                                         beam.pvalue.AsSingleton(splits_checked))
            | "ToExample" >> beam.Map(_example_of, split, language))


def _language_and_place(page: Page, per_language: bool):
    return (page.language if per_language else None), split_place(page.url)


def _check_splits(counts: Dict[Optional[str], SplitCounts], languages: Sequence[Optional[str]],
                  validation_fraction: float, dataset: str) -> bool:
    error = empty_split_error(counts, languages, validation_fraction, dataset)
    if error:
        raise EmptySplitError(error)
    return True


def _existing_manual_dir(dl_manager: tfds.download.DownloadManager) -> Optional[str]:
    """The manual_dir if it exists and holds files, else None (then pinned inputs download).

    TFDS always sets one (default `<data_dir>/downloads/manual`) and raises AssertionError on
    reading it when it is missing or empty.
    """
    try:
        return str(dl_manager.manual_dir)
    except AssertionError:
        return None


class T5C4(tfds.core.GeneratorBasedBuilder):
    """C4 variants of the T5 paper, built from Common Crawl with the pipelines/ Beam job."""

    VERSION = tfds.core.Version("1.2.0")
    RELEASE_NOTES = {
        "1.2.0": "New configs multilingual (mC4, the public TFDS c4/multilingual page for page: "
                 "a split pair per language, builder keywords languages and badwords_dir) and "
                 "en.noblocklist (en without the bad-words filter). New feature language. "
                 "The rules keyword defaults to the config's own rule set.",
        "1.1.0": "Validation split changed to the released C4's (MD5 of the TFDS-normalized URL, "
                 "0 modulo 1000), so released C4 validation pages are never in train; builder "
                 "keywords rules=paper|released (released: the public TFDS c4 rules, page for "
                 "page), splitter=ours|punkt and punkt_data; en.linededup is now en under the "
                 "released rules. New feature language_probability (float32, langdetect's "
                 "probability of the page's language). webtextlike reads the 12 dumps "
                 "CC-MAIN-2018-34 to CC-MAIN-2019-30 by default.",
        "1.0.0": "First release: en, en.noclean, en.linededup, realnewslike, webtextlike from "
                 "the pipelines/ stages (span dedup for en), pipeline counters in "
                 "info.metadata['statistics'].",
    }
    BUILDER_CONFIGS = [
        tfds.core.BuilderConfig(name=name, description=_description(VARIANTS[name]))
        for name in TFDS_VARIANTS
    ]
    MANUAL_DOWNLOAD_INSTRUCTIONS = _MANUAL_INSTRUCTIONS

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls) -> epath.Path:
        """This file (TFDS derives the dataset's location from it).

        TFDS 4.9.10 derives it through `importlib_resources`, a package it does not depend on
        (ModuleNotFoundError on Python 3.11 for any builder in a package outside TFDS).
        """
        return epath.Path(__file__)

    @tfds.core.utils.classproperty
    @classmethod
    def url_infos(cls) -> Dict[str, tfds.core.download.checksums.UrlInfo]:
        """The pinned lists' sizes and checksums, from their one owner
        (pipelines/readers/lists.py)."""
        return {pinned.url: tfds.core.download.checksums.UrlInfo(
                    size=tfds.core.utils.Size(pinned.size), checksum=pinned.sha256, filename=pinned.url.split("/")[-1])
                for pinned in lists.PINNED_LISTS.values()}

    def __init__(self, **kwargs):
        """TFDS's arguments (data_dir, config, ...) and any field of BuildOptions by name.

        Flat keywords, so that the `tfds build` command line can pass them in the dataset name:
        `t5_c4/en/validation_fraction=0.05`. Loading a built dataset needs none of them.
        """
        self._options = BuildOptions(**{name: kwargs.pop(name) for name in _OPTION_NAMES
                                        if name in kwargs})
        # A published run's counters (run_output), which the dataset keeps as its statistics.
        self._published_statistics: Optional[stats.Stats] = None
        super().__init__(**kwargs)

    @classmethod
    def get_metadata(cls) -> dataset_metadata.DatasetMetadata:
        """No metadata files: TFDS would take tfds_c4/README.md, the package's documentation, as
        the dataset's description (dataset_metadata.load reads README.md beside the builder)
        and print it whole after every build; _info's short description stands instead."""
        return dataset_metadata.DatasetMetadata(description=None, citation=None, tags=[])

    def download_and_prepare(self, *, download_config=None, **kwargs) -> None:
        """As TFDS's, on the DirectRunner without its Prism try unless a runner is chosen
        (with_pinned_runner)."""
        super().download_and_prepare(download_config=with_pinned_runner(download_config), **kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict({
                "text": tfds.features.Text(),
                "url": tfds.features.Text(),
                "timestamp": tfds.features.Text(),
                "content-type": tfds.features.Text(),
                "content-length": np.int64,
                "language": tfds.features.Text(),
                # float32: a tf.train.Example holds no wider float.
                "language_probability": np.float32,
            }),
            description=_DATASET_DESCRIPTION,
            homepage="https://arxiv.org/abs/1910.10683",
            citation=_CITATION,
            metadata=tfds.core.MetadataDict(),
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager,
                          pipeline: beam.Pipeline) -> Dict[str, beam.PCollection]:
        config = variant(self.builder_config.name, self._options.rules, self._options.splitter)
        if self._options.run_output:
            return self._published_splits(config, pipeline)
        resolved = inputs_lib.resolve(config, self._options, _existing_manual_dir(dl_manager),
                                      dl_manager.download)
        try:
            resources = load_resources(config, resolved.badwords, resolved.realnews_domains,
                                       resolved.webtext_urls, self._options.punkt_data,
                                       resolved.badwords_dir)
        except (ValueError, files.InputError, PunktDataMissing) as error:
            raise MissingInputError(str(error)) from None
        pages = graph.variant_pages(pipeline, config, resources, resolved.wet_input)
        self.info.metadata[VALIDATION_FRACTION_KEY] = self._options.validation_fraction
        fraction = self._options.validation_fraction
        per_language = config.language.detector == "cld3"
        languages = (self._options.languages or mc4.SPLIT_LANGUAGES) if per_language else (None,)
        checked = (pages
                   | "SplitPlaces" >> beam.Map(_language_and_place, per_language)
                   | "CountSplits" >> beam.CombinePerKey(_SplitCountsFn(fraction))
                   | "AllCounts" >> beam.combiners.ToDict()
                   | "CheckSplits" >> beam.Map(_check_splits, languages, fraction,
                                               f"t5_c4/{config.name}"))
        if not per_language:
            return {split: pages | f"Examples_{split}" >> self._generate_examples(
                        split, None, fraction, checked) for split in SPLITS}
        return {mc4.split_name(language, split):
                pages | f"Examples_{language}_{split}" >> self._generate_examples(
                    split, language, fraction, checked)
                for language in languages for split in SPLITS}

    def _published_splits(self, config: VariantConfig,
                          pipeline: beam.Pipeline) -> Dict[str, beam.PCollection]:
        """The splits of a finished run's output folder, read as they are."""
        folder = self._options.run_output
        try:
            run_config, counters = published.finished_run(folder, config)
            shards = published.split_shards(folder, config, counters, self._options.languages,
                                            published.shard_format(run_config))
        except published.UnpublishableRun as error:
            raise MissingInputError(str(error)) from None
        self.info.metadata[VALIDATION_FRACTION_KEY] = run_config["validation_fraction"]
        self._published_statistics = counters
        splits = {}
        for (split, language), paths in shards.items():
            name = mc4.split_name(language, split) if language else split
            splits[name] = (pipeline
                            | f"Shards_{name}" >> beam.Create(paths)
                            | f"Read_{name}" >> beam.FlatMap(published.records_of)
                            | f"Examples_{name}" >> beam.Map(_keyed_record,
                                                             config.rule_set.normalize_url))
        return splits

    def _generate_examples(self, split: str, language: Optional[str],  # pylint: disable=arguments-differ
                           validation_fraction: float, splits_checked):
        return _examples_of_split(split, language, validation_fraction, splits_checked)  # pylint: disable=no-value-for-parameter

    def _download_and_prepare(self, dl_manager, download_config) -> None:
        try:
            super()._download_and_prepare(dl_manager, download_config)
        except EmptySplitError as error:  # Raised in a step: Beam adds the step's name.
            raise EmptySplitError(str(error).split(_BEAM_STEP_SUFFIX)[0]) from None

    def _process_pipeline_result(self, pipeline_result) -> None:
        """Stores the run's counters with the dataset (written to metadata.json): this build's,
        or the published run's."""
        self.info.metadata[STATISTICS_KEY] = (self._published_statistics
                                              or stats.collect_counters(pipeline_result))


def statistics(builder: tfds.core.DatasetBuilder) -> stats.Stats:
    """The pipeline counters a prepared `t5_c4` dataset was built with."""
    metadata = builder.info.metadata
    if metadata is None or STATISTICS_KEY not in metadata:
        raise ValueError(f"{builder.data_dir} holds no pipeline statistics: was it built by "
                         "t5_c4 >= 1.0.0?")
    return metadata[STATISTICS_KEY]
