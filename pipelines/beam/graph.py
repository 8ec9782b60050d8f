"""The Beam graph of a C4 variant: WET files read, the variant's stages, the pages written to
their splits. The command line (pipelines/c4.py), its one-job executor (pipelines/executors/)
and the TFDS builder (tfds_c4/) build it.
"""
import functools
from typing import Dict, Optional, Sequence

import apache_beam as beam

from pipelines import exclusion_sample
from pipelines.beam.phases import SampleOutputs, apply_phase
from pipelines.beam.span_dedup import SpanDedup
from pipelines.beam.url_dedup import DedupUrls
from pipelines.beam.webtext_join import JoinWebTextUrls
from pipelines.beam.wet_input import ReadWetFiles, max_record_bytes
from pipelines.config import VariantConfig
from pipelines.filters.urls import DEFAULT_VALIDATION_FRACTION, split_of
from pipelines.page import Page
from pipelines.readers import inputs
from pipelines.steps import plan
from pipelines.steps.resources import Resources
from pipelines.steps.url_dedup import KeyByUrl
from pipelines.steps.webtext_join import UnpackJoin
from pipelines.writers import exclusions
from pipelines.writers.output import JSONL, WriteShards, in_output_dir


class C4Pages(beam.PTransform):
    """Raw WET pages -> the pages of a C4 variant: the plan's phases (pipelines/steps/plan.py), each
    as one DoFn (phases.PhaseFn), between the shuffles: URL dedup, the OpenWebText join
    (webtextlike), the span dedup. `sample`: where the exclusion records of the phases go
    (--exclusions), or None."""

    def __init__(self, config: VariantConfig, resources: Resources, dedup_buckets: int = 1,
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._phases = plan.phases(config, resources, dedup_buckets)
        self._config = config
        self._resources = resources
        self._sample = sample

    def expand(self, pages):
        phases, sample = self._phases, self._sample
        newest = pages | "UrlDedup" >> DedupUrls(self._config.rule_set,
                                                 [*phases.read, KeyByUrl()], sample)
        steps = list(phases.url_dedup)
        if phases.joins_url_lists:
            newest = newest | "WebTextDomains" >> JoinWebTextUrls(self._config, self._resources,
                                                                  steps, sample)
            steps = [UnpackJoin()]
        steps += phases.url
        if phases.span_dedup:
            return newest | "Dedup" >> SpanDedup(phases.span_dedup.mode, steps, phases.finish,
                                                 sample)
        return apply_phase(newest, "Filter", steps + list(phases.finish), sample).main


def variant_pages(pipeline: beam.Pipeline, config: VariantConfig, resources: Resources,
                  input_plan: inputs.InputPlan, sample: Optional[SampleOutputs] = None
                  ) -> beam.PCollection:
    """The pages a variant keeps, before the split: the graph this CLI and tfds_c4 share."""
    return (pipeline
            | "ReadWet" >> ReadWetFiles(input_plan, max_record_bytes(config))
            | "C4" >> C4Pages(config, resources, dedup_buckets=max(1, input_plan.files),
                              sample=sample))


def _page_language(page: Page) -> str:
    return page.language


def _page_split(page: Page, validation_fraction: float) -> str:
    return split_of(page.url, validation_fraction)


def build_pipeline(pipeline: beam.Pipeline, config: VariantConfig, resources: Resources,
                   input_plan: inputs.InputPlan, output_dir: str, max_shards: Dict[str, int],
                   validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
                   pages_per_shard: Optional[int] = None, shard_format: str = JSONL,
                   excluded: Optional[exclusion_sample.ExclusionConfig] = None) -> None:
    """The job in one: the variant's pages written to their splits (and with `excluded`, the
    exclusions' sample to its folder)."""
    sample = None if excluded is None else SampleOutputs(excluded.fraction)
    write_pages(variant_pages(pipeline, config, resources, input_plan, sample), config,
                output_dir, max_shards, validation_fraction, pages_per_shard, shard_format)
    if sample is not None:
        write_exclusions(sample.records, excluded.directory, max_shards)


def write_exclusions(records: Sequence[beam.PCollection], directory: str,
                     output_max_shards: Dict[str, int]) -> None:
    """The exclusion records (exclusion_sample.Excluded) to their files in `directory` (as many as
    exclusions.max_shards says at most), sharded and ordered as the pages are."""
    (tuple(records)
     | "AllExcluded" >> beam.Flatten()
     | "WriteExcluded" >> WriteShards(
         directory, exclusions.max_shards(output_max_shards),
         exclusions.split_of, entry_of=exclusions.sort_entry,
         counter_namespace=exclusions.COUNTER_NAMESPACE))


def write_pages(pages: beam.PCollection, config: VariantConfig, output_dir: str,
                max_shards: Dict[str, int], validation_fraction: float,
                pages_per_shard: Optional[int], shard_format: str = JSONL) -> None:
    """The pages written to their splits, in a folder per language where the variant writes
    languages apart (every one of de-fr-ro's; each of mC4's that has a page), as files of
    `shard_format` (output.SHARD_SUFFIXES)."""
    if config.language_folders is None:
        folder_of, folders = in_output_dir, ("",)
    else:
        folder_of, folders = _page_language, config.language_folders
    pages | "Write" >> WriteShards(output_dir, max_shards,
                                   functools.partial(_page_split,
                                                     validation_fraction=validation_fraction),
                                   folder_of, folders, pages_per_shard,
                                   shard_format=shard_format)
