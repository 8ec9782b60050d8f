"""`t5_c4`: the C4 variants of the T5 paper as a TFDS dataset, built by the pipeline in pipelines/.

The Beam graph is `pipelines.c4.variant_pages` (the same stages the standalone job runs), split
by `pipelines.urls.split_of`; TFDS writes the examples. The pipeline's counters (pages kept and
dropped per stage and reason) are stored in `info.metadata["statistics"]`.
"""
import dataclasses
from typing import Dict, Optional

import apache_beam as beam
import numpy as np
import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core import dataset_metadata
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import c4, common_crawl, files, lists, mc4, stages, stats
from pipelines.output import written_counter
from pipelines.config import MC4, TFDS_VARIANTS, VARIANTS, VariantConfig, variant
from pipelines.page import Page
from pipelines.urls import split_of
from tfds_c4 import inputs as inputs_lib
from tfds_c4.inputs import BuildOptions, MissingInputError
from text.punkt import PunktDataMissing

SPLITS = ("train", "validation")
STATISTICS_KEY = "statistics"
VALIDATION_FRACTION_KEY = "validation_fraction"
# How TFDS's Beam writer (4.9) reports a split with no examples.
_TFDS_EMPTY_SPLIT_MESSAGE = "The total number of generated examples is 0"

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


def with_pinned_runner(download_config: Optional[tfds.download.DownloadConfig]
                       ) -> tfds.download.DownloadConfig:
    """`download_config` with the runner a build takes when none is chosen, or the DirectRunner
    is: Beam's DirectRunner kept off its first try of the Prism runner (c4.embedded_runner), and
    options parsed from nothing rather than TFDS's default, which parses the `tfds build` command
    line and warns about each of its flags. A runner object, or options naming another runner,
    are kept as given."""
    config = download_config or tfds.download.DownloadConfig()
    options = config.beam_options or PipelineOptions([])
    if config.beam_runner is not None or not c4.runs_embedded(options):
        return config
    return dataclasses.replace(config, beam_runner=c4.embedded_runner(), beam_options=options)


def _description(config: VariantConfig) -> str:
    return config.description + _DIFFERENCES[config.name] + _COMMON


def _example_of(page: Page, split: str, language: Optional[str]):
    """(key, features) of a kept page; the normalized URL is unique after URL dedup."""
    Metrics.counter("c4.write", written_counter(language or "", split)).inc()
    return page.normalized_url, page.to_json_record()


def _in_split(page: Page, split: str, language: Optional[str], validation_fraction: float
              ) -> bool:
    return ((language is None or page.language == language)
            and split_of(page.url, validation_fraction) == split)


@beam.ptransform_fn
def _examples_of_split(pages, split: str, language: Optional[str], validation_fraction: float):
    return (pages
            | "OnlySplit" >> beam.Filter(_in_split, split, language, validation_fraction)
            | "ToExample" >> beam.Map(_example_of, split, language))


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
        """The pinned lists' sizes and checksums, from their one owner (pipelines/lists.py)."""
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
        resolved = inputs_lib.resolve(config, self._options, _existing_manual_dir(dl_manager),
                                      dl_manager.download)
        try:
            resources = stages.load_resources(config, resolved.badwords,
                                              resolved.realnews_domains, resolved.webtext_urls,
                                              self._options.punkt_data, resolved.badwords_dir)
        except (ValueError, files.InputError, PunktDataMissing) as error:
            raise MissingInputError(str(error)) from None
        pages = c4.variant_pages(pipeline, config, resources, resolved.wet_input)
        self.info.metadata[VALIDATION_FRACTION_KEY] = self._options.validation_fraction
        fraction = self._options.validation_fraction
        if config.language.detector != "cld3":
            return {split: pages | f"Examples_{split}" >> self._generate_examples(
                        split, None, fraction) for split in SPLITS}
        return {mc4.split_name(language, split):
                pages | f"Examples_{language}_{split}" >> self._generate_examples(
                    split, language, fraction)
                for language in self._options.languages or mc4.SPLIT_LANGUAGES
                for split in SPLITS}

    def _generate_examples(self, split: str, language: Optional[str],  # pylint: disable=arguments-differ
                           validation_fraction: float):
        return _examples_of_split(split, language, validation_fraction)  # pylint: disable=no-value-for-parameter

    def _download_and_prepare(self, dl_manager, download_config) -> None:
        try:
            super()._download_and_prepare(dl_manager, download_config)
        except Exception as error:  # Beam wraps the writer's ValueError in its own types.
            if _TFDS_EMPTY_SPLIT_MESSAGE not in str(error):
                raise
            raise EmptySplitError(
                "a split got no pages, and TFDS cannot write an empty split. Validation holds "
                f"{self._options.validation_fraction:.2%} of pages (by URL hash): build from more "
                "WET files (a full one keeps thousands of pages), or, for a sample, pass "
                "a larger validation_fraction (builder keyword); for multilingual, build only "
                "the languages the input has (builder keyword languages=de+fr+...). TFDS said: "
                f"{error}") from None

    def _process_pipeline_result(self, pipeline_result) -> None:
        """Stores the run's counters with the dataset (written to metadata.json)."""
        self.info.metadata[STATISTICS_KEY] = stats.collect_counters(pipeline_result)


def statistics(builder: tfds.core.DatasetBuilder) -> stats.Stats:
    """The pipeline counters a prepared `t5_c4` dataset was built with."""
    metadata = builder.info.metadata
    if metadata is None or STATISTICS_KEY not in metadata:
        raise ValueError(f"{builder.data_dir} holds no pipeline statistics: was it built by "
                         "t5_c4 >= 1.0.0?")
    return metadata[STATISTICS_KEY]
