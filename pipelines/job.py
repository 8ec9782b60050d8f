"""What a C4 run builds and where, checked and loaded: what every executor and every task of a
run reads (pipelines/executors.py, pipelines/staged.py); and what it finds in its output folder
before it starts: a finished run of another configuration is refused, and a run that starts
afresh first removes the dataset an earlier run left (so that no old shard stays beside the new
ones, and no old stats.json calls a half-written folder finished)."""
import dataclasses
import json
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from pipelines import (dataset_card, exclusions, funnel, inputs, output, parts, provenance,
                       records, stages, stats)
from pipelines.config import VariantConfig
from pipelines.embedded import embedded_runner, runs_embedded


@dataclasses.dataclass(frozen=True)
class Job:
    """What a run builds and where, checked and loaded: the pipelines of its parts read it."""
    config: VariantConfig
    resources: stages.Resources
    plan: inputs.InputPlan
    output_dir: str
    max_shards: Dict[str, int]
    validation_fraction: float
    pages_per_shard: Optional[int]
    beam_args: Sequence[str]
    shard_format: str = output.JSONL  # The shards' format (output.SHARD_SUFFIXES).
    # Where the exclusions' sample goes (--exclusions), or None.
    excluded: Optional[exclusions.ExclusionConfig] = None

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


def earlier_run_config(output_dir: str) -> Optional[dict]:
    """The run_config.json a finished run left in `output_dir`, or None."""
    path = FileSystems.join(output_dir, provenance.RUN_CONFIG_FILE)
    if not FileSystems.exists(path):
        return None
    try:
        return json.loads(records.read_all(path))
    except ValueError:
        return None  # Not a finished run's record: nothing to compare with.


def other_configuration(job: Job) -> Optional[str]:
    """Why `job` may not write into a folder that holds a finished run of another
    configuration (naming the fields that differ), or None."""
    earlier = earlier_run_config(job.output_dir)
    if earlier is None:
        return None
    current = json.loads(json.dumps(job.run_config(), default=provenance.json_default))
    differing = parts.differing_fields(earlier, current)
    if not differing:
        return None
    return (f"{job.output_dir} holds a finished run of another configuration (differing: "
            f"{', '.join(differing)}): rerun with that run's options, give another --output, "
            "or pass --restart to delete its dataset and start afresh")


def _earlier_files(job: Job) -> List[str]:
    """What an earlier run left in the output folder: its shards (of any format) there and in
    its language folders, its reports, and the stats.json of each language folder."""
    shards = [path for shard_format in output.SHARD_SUFFIXES
              for path in dataset_card.shard_listing(job.output_dir, tuple(job.max_shards),
                                                     shard_format)]
    languages = sorted({path.rpartition("/")[0] for path in shards} - {""})
    reports = [stats.STATS_FILE, provenance.RUN_CONFIG_FILE, funnel.FUNNEL_FILE,
               dataset_card.CARD_FILE]
    reports += [f"{language}/{stats.STATS_FILE}" for language in languages]
    return [FileSystems.join(job.output_dir, path) for path in shards + reports
            if FileSystems.exists(FileSystems.join(job.output_dir, path))]


def start_afresh(job: Job) -> None:
    """Removes what an earlier run left in the output folder (its shards and reports), and
    writes a stats.json that says this run has started: killed before its end, the folder is an
    unfinished run, never the earlier one."""
    earlier = _earlier_files(job)
    if earlier:
        FileSystems.delete(earlier)
    stats.write_stats({}, job.config.name, job.output_dir, progress={"phase": "started"})


def prepare_output(job: Job, restart: bool, resumes: bool) -> None:
    """Refuses (parts.PartsError) a folder that holds a finished run of another configuration,
    unless `restart`; starts afresh, unless the run `resumes` its parts (a run in parts or in
    stages whose parts are kept, and not `restart`)."""
    if not restart:
        problem = other_configuration(job)
        if problem:
            raise parts.PartsError(problem)
    if restart or not resumes:
        start_afresh(job)


def has_parts(output_dir: str) -> bool:
    """Whether `output_dir` holds the parts of a run in parts or in stages (that it resumes)."""
    return FileSystems.exists(FileSystems.join(parts.parts_dir(output_dir),
                                               parts.PARTS_CONFIG_FILE))
