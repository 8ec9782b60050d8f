"""What a C4 run builds and where, checked and loaded: what every executor and every task of a
run reads (pipelines/executors/, pipelines/executors/staged.py). What a run finds in its output
folder
before it starts is pipelines/executors/base.py's."""
import dataclasses
from typing import Dict, Optional, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from pipelines import exclusion_sample
from pipelines.beam.embedded import embedded_runner, runs_embedded
from pipelines.config import VariantConfig
from pipelines.readers import inputs
from pipelines.stats import provenance
from pipelines.steps.resources import Resources
from pipelines.writers import output


@dataclasses.dataclass(frozen=True)
class Job:
    """What a run builds and where, checked and loaded: the pipelines of its stages read it."""
    config: VariantConfig
    resources: Resources
    plan: inputs.InputPlan
    output_dir: str
    max_shards: Dict[str, int]
    validation_fraction: float
    pages_per_shard: Optional[int]
    beam_args: Sequence[str]
    shard_format: str = output.JSONL  # The shards' format (output.SHARD_SUFFIXES).
    # Where the exclusions' sample goes (--exclusions), or None.
    excluded: Optional[exclusion_sample.ExclusionConfig] = None

    def run_config(self) -> dict:
        """run_config.json's record of this run."""
        record = provenance.run_config(self.config, self.plan, self.validation_fraction,
                                       self.max_shards, self.resources.list_sha256,
                                       self.pages_per_shard, self.shard_format)
        if self.excluded is not None:
            record["exclusions"] = dataclasses.asdict(self.excluded)
        if self.resources.decontamination is not None:
            record["decontamination"] = dataclasses.asdict(self.resources.decontamination)
        return record

    def pipeline(self, part: Optional[str] = None) -> beam.Pipeline:
        """A new pipeline on the chosen runner; a job name given is suffixed with `part`."""
        options = PipelineOptions(self.beam_args)
        cloud = options.view_as(GoogleCloudOptions)
        if part and cloud.job_name:
            cloud.job_name = f"{cloud.job_name}-{part}"
        return beam.Pipeline(runner=embedded_runner() if runs_embedded(options) else None,
                             options=options)
