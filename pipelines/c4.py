"""Builds a C4 variant from Common Crawl WET files with Apache Beam.

    python -m pipelines.c4 --variant en --input PATH_OR_GLOB_OR_MANIFEST... --output DIR

Any option not listed in --help is passed to Beam (--runner, --direct_num_workers, ...).
"""
import argparse
import concurrent.futures
import dataclasses
import functools
import logging
import os
import sys
import time
from typing import Collection, Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (DirectOptions, GoogleCloudOptions,
                                                  PipelineOptions, StandardOptions)
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner

from pipelines import (common_crawl, files, funnel, inputs, lists, parts, provenance, stages,
                       stats)
from pipelines.cleaning import CLEANING_SETTINGS
from pipelines.config import MC4, RULE_SETS, VARIANTS, VOCABULARY_LANGUAGES, VariantConfig, variant
from pipelines.output import WriteShards, in_output_dir
from pipelines.page import Page
from pipelines.urls import DEFAULT_VALIDATION_FRACTION, split_of
from pipelines.wording import counted
from text.punkt import PunktDataMissing
from text.splitters import SPLITTER_NAMES


@dataclasses.dataclass(frozen=True)
class EmbeddedMemory:
    """Peak memory of a run on the embedded DirectRunner: a fixed part plus a part proportional
    to the gzipped WET input, since that runner holds every group of the job in memory."""
    fixed_bytes: int
    bytes_per_input_byte: float


# Measured by bench/bench_scale.py --synthetic 1 2 (full-size synthetic WET files of 40,000 pages,
# 65.8 MB gzipped; peaks of the whole process tree; 2026-12-03, after the phases of issue 29):
# in_memory 1,005 MB for one file, 1,780 MB for two; multi_processing with two workers 2,098 and
# 3,250 MB. The slopes (775 and 1,152 MB per file) are per gzipped byte below, the rest fixed.
EMBEDDED_MEMORY = {
    "in_memory": EmbeddedMemory(fixed_bytes=230_000_000, bytes_per_input_byte=11.8),
    "multi_processing": EmbeddedMemory(fixed_bytes=946_000_000, bytes_per_input_byte=17.5),
}
# One process, as in_memory (not measured apart).
EMBEDDED_MEMORY["multi_threading"] = EMBEDDED_MEMORY["in_memory"]
# The share of this machine's memory a run may plan to use (the system, the page cache).
MEMORY_HEADROOM = 0.8
# The runner names (None: no --runner) that run a job on the DirectRunner, in this process.
EMBEDDED_RUNNERS = (None, "DirectRunner", "direct", "SwitchingDirectRunner")


@dataclasses.dataclass(frozen=True)
class FileOption:
    """An option naming files a run reads, and the variable of `make run` that passes it."""
    flag: str
    make_variable: str
    what: str  # As "reads no ..." and "needs ..." name it.
    example: str  # A local copy, as the messages show it (a glob quoted for the shell).
    # Whether leaving it unset (None) reads the pinned lists (load_resources), so that no value
    # is no missing value.
    unset_reads_pins: bool = False


INPUT_OPTION = FileOption("--input", "INPUT", "WET files", "'path/*.warc.wet.gz'")
# The lists a variant may read, by the names VariantConfig.lists gives them (argparse's dests).
LIST_OPTIONS = {
    "badwords": FileOption("--badwords", "BADWORDS", "bad-words list", "path/en"),
    "badwords_dir": FileOption("--badwords_dir", "BADWORDS_DIR",
                               "bad-words lists per language", "path/badwords",
                               unset_reads_pins=True),
    "realnews_domains": FileOption("--realnews_domains", "REALNEWS_DOMAINS",
                                   "RealNews domains",
                                   "path/domain_to_allowed_subdomains.json"),
    "webtext_urls": FileOption("--webtext_urls", "WEBTEXT_URLS", "OpenWebText URL lists",
                               "'path/*.gz'"),
}


def offline_hint(config: VariantConfig) -> str:
    """What to pass instead of what a run downloads by default (the Common Crawl manifest, the
    pinned lists): the WET input and every list this variant reads, as flags and as `make run`
    variables."""
    options = [INPUT_OPTION, *(LIST_OPTIONS[name] for name in config.lists)]
    flags = " ".join(f"{option.flag} {option.example}" for option in options)
    variables = " ".join(f"{option.make_variable}={option.example}" for option in options)
    return (f"Offline, pass local copies: {flags} (with make: make run VARIANT={config.name} "
            f"{variables})")


def unread_lists_note(config: VariantConfig, given: Collection[str]) -> Optional[str]:
    """One line naming the list options given (set to other than their default) that this
    variant does not read, or None. The run ignores them, and its output is what it would be
    without them; a note rather than an error, so that one command line can serve every
    variant (a script's loop, `make run` with BADWORDS set)."""
    unread = [LIST_OPTIONS[name] for name in LIST_OPTIONS
              if name in given and name not in config.lists]
    if not unread:
        return None
    return (f"note: variant {config.name} reads no " + " and no ".join(
        option.what for option in unread) + ": ignoring " + ", ".join(
        option.flag for option in unread))


def missing_lists_error(config: VariantConfig, empty: Collection[str]) -> Optional[str]:
    """What this variant needs of the list options that have no value (a list with no default),
    or None."""
    missing = [LIST_OPTIONS[name] for name in config.lists if name in empty]
    if not missing:
        return None
    return f"variant {config.name} needs " + "; ".join(
        f"{option.what}: {option.flag} {option.example} (with make: "
        f"{option.make_variable}={option.example})" for option in missing)


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def embedded_peak_bytes(wet_bytes: int, running_mode: str) -> int:
    memory = EMBEDDED_MEMORY[running_mode]
    return int(memory.fixed_bytes + memory.bytes_per_input_byte * wet_bytes)


def memory_warning(wet_bytes: int, machine_bytes: int, running_mode: str) -> Optional[str]:
    """What to tell a user whose input the embedded runner cannot hold in this machine's
    memory, or None when it can."""
    peak = embedded_peak_bytes(wet_bytes, running_mode)
    if peak <= MEMORY_HEADROOM * machine_bytes:
        return None
    return (f"{wet_bytes / 1e9:,.1f} GB of WET input needs about {peak / 1e9:,.0f} GB of memory "
            f"on the embedded DirectRunner ({running_mode}), which holds every group of the job "
            f"in memory; this machine has {machine_bytes / 1e9:,.0f} GB. Beyond it, run the job "
            "on Dataflow (python -m deploy.dataflow, see deploy/README.md) or another Beam "
            "runner (--runner ...), or read fewer files (--max_files).")


def runs_embedded(options: PipelineOptions) -> bool:
    """Whether the Beam options run the job on the DirectRunner, in this process."""
    return options.view_as(StandardOptions).runner in EMBEDDED_RUNNERS


def embedded_runner() -> SwitchingDirectRunner:
    """The DirectRunner without its first try of the Prism runner (Beam 2.77's DirectRunner
    downloads Prism from GitHub, and falls back to its own engine after a failure or a wait). In
    Beam 2.77 the interactive flag does one thing: it rules Prism out (direct_runner.py,
    SwitchingDirectRunner.run_pipeline); the DirectRunner then picks its FnApiRunner."""
    runner = SwitchingDirectRunner()
    runner.is_interactive()
    return runner


def embedded_running_mode(beam_args: Sequence[str]) -> Optional[str]:
    """The DirectRunner's running mode the Beam options ask for, or None for another runner."""
    options = PipelineOptions(beam_args)
    if not runs_embedded(options):
        return None
    return options.view_as(DirectOptions).direct_running_mode


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(
        prog="python -m pipelines.c4", description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    options.add_argument("--variant", default="en", choices=sorted(VARIANTS),
                         help="which C4 variant to build: " + "; ".join(
                             f"{name}: {config.description}" for name, config in VARIANTS.items()))
    options.add_argument("--rules", default=None, choices=RULE_SETS,
                         help="paper: this project's reading of the T5 paper (span dedup, ...); "
                              "released: what the public code that made the released C4 "
                              "(TFDS c4.py) does, page for page (en, en.noclean, en.noblocklist, "
                              "realnewslike, webtextlike; en.linededup is en under these rules). "
                              f"Default: paper, but {MC4} (mC4) and en.linededup, which have "
                              "the released rules only")
    options.add_argument("--splitter", default="ours", choices=SPLITTER_NAMES,
                         help="sentence splitter: ours (rules, no data needed) or punkt (NLTK "
                              "Punkt, the released C4's, from punkt_tab data)")
    options.add_argument("--punkt_data", default=None,
                         help="folder of the punkt_tab model (its english/ folder or an NLTK "
                              "data folder); default: NLTK_DATA and NLTK's data folders")
    options.add_argument("--input", nargs="+", default=None,
                         help="WET files (.warc.wet.gz or .wet), globs, or Common Crawl manifests "
                              "(wet.paths.gz); local, gs://, s3:// or https://. Default: the "
                              f"manifest of {common_crawl.C4_DUMP} (the released C4's dump) "
                              "under --cc_base_url; for webtextlike the manifests of the 12 "
                              "dumps of the paper and the public builder, "
                              f"{common_crawl.WEBTEXTLIKE_DUMPS[0]} (August 2018) to "
                              f"{common_crawl.WEBTEXTLIKE_DUMPS[-1]} (July 2019); for {MC4} "
                              f"the {len(common_crawl.MC4_DUMPS)} dumps of mC4, "
                              f"{common_crawl.MC4_DUMPS[0]} to {common_crawl.MC4_DUMPS[-1]}. "
                              "Manifests are read again on the workers: the job holds no "
                              "list of their files")
    options.add_argument("--max_files", type=int, default=None,
                         help="take only the first N WET files of the inputs (all if unset)")
    options.add_argument("--output", required=True, help="output folder (local or gs://)")
    options.add_argument("--badwords", default=lists.LDNOOBW_EN.url,
                         help="bad-words list, one term per line (path or URL; the default URL "
                              "is checked against its pinned sha256)")
    options.add_argument("--badwords_dir", default=None,
                         help=f"{MC4} only: the folder (or URL prefix) of the LDNOOBW bad-words "
                              "lists, one file per language named as in that repository (ar, "
                              "cs, ..., fr-CA-u-sd-caqc, ..., zh); default: the pinned URLs "
                              "(each checked against its sha256) at the commits the public C4 "
                              "code pins")
    options.add_argument("--realnews_domains", default=lists.REALNEWS_DOMAINS.url,
                         help="RealNews JSON of domain -> allowed subdomains (path or URL; the "
                              "default URL is checked against its pinned sha256); "
                              "realnewslike only")
    options.add_argument("--webtext_urls", nargs="+", default=[],
                         help="OpenWebText URL lists (paths or globs; plain, .gz, .xz; one URL or "
                              "one Reddit submission JSON per line); webtextlike only")
    options.add_argument("--cleaning", default="public_c4", choices=sorted(CLEANING_SETTINGS),
                         help="cleaning thresholds: public_c4 = 5 words per line and 3 sentences "
                              "per page; paper_text = 3 words per line and 5 sentences per page")
    options.add_argument("--train_shards", type=int, default=8,
                         help="at most this many output files for train (of each language for "
                              f"{VOCABULARY_LANGUAGES} and {MC4}): pages go to this many buckets "
                              "by URL hash and each bucket that holds pages is a file (a split "
                              "with no page: one empty file)")
    options.add_argument("--validation_shards", type=int, default=1,
                         help="at most this many output files for validation (as "
                              "--train_shards)")
    options.add_argument("--pages_per_shard", type=int, default=None,
                         help="count each split's pages (of each language) first and give it "
                              "as many files as this many pages a file takes, at most "
                              "--train_shards / --validation_shards (mC4 on Dataflow: e.g. "
                              "--train_shards 100000 --pages_per_shard 300000). Default: the "
                              "most files, for every split")
    options.add_argument("--validation_fraction", type=float, default=DEFAULT_VALIDATION_FRACTION,
                         help="share of pages (by URL hash) in the validation split")
    options.add_argument("--in_parts", action=argparse.BooleanOptionalAction, default=None,
                         help="run in parts that a rerun of the same command resumes: the "
                              "reading of the WET files per group of --group_files files, each "
                              f"group's pages kept under OUTPUT/{parts.PARTS_FOLDER}/ with a "
                              "marker, then the global stages over them (pipelines/parts.py). "
                              "Default: in parts when the inputs are several Common Crawl "
                              "manifests (several dumps)")
    options.add_argument("--group_files", type=int, default=1000,
                         help="WET files per group of a run in parts")
    options.add_argument("--groups_per_job", type=int, default=1,
                         help="groups per Beam job of a run in parts (on Dataflow, a job's "
                              "start costs minutes: deploy.dataflow sets more)")
    options.add_argument("--restart", action="store_true",
                         help="delete the parts of a run of another configuration in OUTPUT "
                              "and start afresh (without it, such parts are refused)")
    options.add_argument("--break_lock", action="store_true",
                         help="remove the lock a dead run left in an object store's OUTPUT (a "
                              "local folder's lock goes with its process)")
    options.add_argument("--dry_run", "--dry-run", action="store_true",
                         help="print what the run would do (for a run in parts: the groups "
                              "done, redone and left, and its jobs) and stop")
    options.add_argument("--cc_base_url", default=common_crawl.BASE_URL,
                         help="prefix of the relative paths in a manifest (e.g. s3://commoncrawl/ "
                              "or a gs:// mirror)")
    return options


def configure(args: argparse.Namespace) -> VariantConfig:
    config = variant(args.variant, args.rules, args.splitter)
    if config.cleaning is not None and config.rule_set.cleaning_is_chosen:
        config = dataclasses.replace(config, cleaning=CLEANING_SETTINGS[args.cleaning])
    elif args.cleaning != "public_c4" and not config.rule_set.cleaning_is_chosen:
        raise ValueError(f"--cleaning applies to the paper rules only; the {config.rules} rules "
                         f"have the public C4 thresholds")
    return config


def variant_pages(pipeline: beam.Pipeline, config: VariantConfig, resources: stages.Resources,
                  plan: inputs.InputPlan) -> beam.PCollection:
    """The pages a variant keeps, before the split: the graph this CLI and tfds_c4 share."""
    return (pipeline
            | "ReadWet" >> stages.ReadWetFiles(plan, stages.max_record_bytes(config))
            | "C4" >> stages.C4Pages(config, resources, dedup_buckets=max(1, plan.files)))


def _page_language(page: Page) -> str:
    return page.language


def _page_split(page: Page, validation_fraction: float) -> str:
    return split_of(page.url, validation_fraction)


def build_pipeline(pipeline: beam.Pipeline, config: VariantConfig, resources: stages.Resources,
                   plan: inputs.InputPlan, output_dir: str, max_shards: Dict[str, int],
                   validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
                   pages_per_shard: Optional[int] = None) -> None:
    """The job in one: the variant's pages written to their splits."""
    write_pages(variant_pages(pipeline, config, resources, plan), config, output_dir, max_shards,
                validation_fraction, pages_per_shard)


def write_pages(pages: beam.PCollection, config: VariantConfig, output_dir: str,
                max_shards: Dict[str, int], validation_fraction: float,
                pages_per_shard: Optional[int]) -> None:
    """The pages written to their splits, in a folder per language where the variant writes
    languages apart (every one of de-fr-ro's; each of mC4's that has a page)."""
    if config.language_folders is None:
        folder_of, folders = in_output_dir, ("",)
    else:
        folder_of, folders = _page_language, config.language_folders
    pages | "Write" >> WriteShards(output_dir, max_shards,
                                   functools.partial(_page_split,
                                                     validation_fraction=validation_fraction),
                                   folder_of, folders, pages_per_shard)


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

    def run_config(self) -> dict:
        """run_config.json's record of this run."""
        return provenance.run_config(self.config, self.plan, self.validation_fraction,
                                     self.max_shards, self.resources.list_sha256,
                                     self.pages_per_shard)

    def pipeline(self, part: Optional[str] = None) -> beam.Pipeline:
        """A new pipeline on the chosen runner; a job name given is suffixed with `part`."""
        options = PipelineOptions(self.beam_args)
        cloud = options.view_as(GoogleCloudOptions)
        if part and cloud.job_name:
            cloud.job_name = f"{cloud.job_name}-{part}"
        return beam.Pipeline(runner=embedded_runner() if runs_embedded(options) else None,
                             options=options)


class NothingRead(Exception):
    """A run that could read no input file: the message names them; `counters` are the run's."""

    def __init__(self, message: str, counters: stats.Stats):
        super().__init__(message)
        self.counters = counters


# The unreadable files a message names; the rest are counted (all are in stats.json).
_NAMED_FILES = 10


def nothing_read_error(counters: stats.Stats) -> Optional[str]:
    """Why a run could read none of its input files (each skipped whole, or unreadable from its
    first byte; or a manifest the workers could not read), naming them; None when a file was
    read. A run of only the files the public C4 code skips (known corrupt) is not refused."""
    read = counters.get("read", {})
    unreadable, damaged_read = [], 0
    for problem in stats.file_problems(counters):
        if problem.get("skipped"):
            unreadable.append(problem["file"])
        elif problem.get("unreadable_from_byte") == 0:
            # Opened as a WET file (counted in files.read), yet no byte of it could be read.
            unreadable.append(problem["file"])
            damaged_read += 1
    manifests = read.get("manifests.skipped:unreadable", 0)
    if read.get("files.read", 0) > damaged_read or not (unreadable or manifests):
        return None
    named = ", ".join(unreadable[:_NAMED_FILES])
    if len(unreadable) > _NAMED_FILES:
        named += f" and {counted(len(unreadable) - _NAMED_FILES, 'more file')}"
    what = [f"{counted(len(unreadable), 'input file')} ({named})"] if unreadable else []
    if manifests:
        what.append(counted(manifests, "manifest") + " the workers could not read")
    return (f"no input could be read: {' and '.join(what)}; see the warnings above, and "
            f"file_problems in {stats.STATS_FILE}. No dataset was written: fix or replace the "
            "files, then rerun")


def _remove_shards(job: Job) -> None:
    """Deletes the split files a job wrote (empty, for a run that read nothing)."""
    folders = [""] + list(job.config.language_folders or ())
    patterns = [FileSystems.join(job.output_dir, folder, f"{split}-*-of-*.jsonl.gz")
                if folder else FileSystems.join(job.output_dir, f"{split}-*-of-*.jsonl.gz")
                for folder in folders for split in job.max_shards]
    found = [metadata.path for match in FileSystems.match(patterns)
             for metadata in match.metadata_list]
    if found:
        FileSystems.delete(found)


def run_one_job(job: Job) -> stats.Stats:
    """The job in one; NothingRead (its split files deleted) when it could read no input."""
    pipeline = job.pipeline()
    build_pipeline(pipeline, job.config, job.resources, job.plan, job.output_dir, job.max_shards,
                   job.validation_fraction, job.pages_per_shard)
    result = pipeline.run()
    result.wait_until_finish()
    counters = stats.collect_counters(result)
    error = nothing_read_error(counters)
    if error:
        _remove_shards(job)
        raise NothingRead(error, counters)
    return counters


# The global stage's CPU time over that of all the groups (bench/bench_parts.py: 2.8 and 3.7 in
# two runs), for the time left that a job in parts prints.
GLOBAL_STAGE_OVER_GROUPS = 3.3
# Threads that check the groups' markers at launch: two reads a group (its marker, its folder's
# listing), thousands of groups on an object store.
MARKER_READERS = 16


@dataclasses.dataclass(frozen=True)
class PartsPlan:
    groups: List[parts.Group]
    config_sha256: str
    done: Dict[int, parts.Marker]  # Group index -> its valid marker.
    todo: List[parts.Group]
    redo: List[Tuple[parts.Group, str]]  # The groups with something written, and why redone.
    groups_per_job: int

    def describe(self) -> str:
        """The plan in words: the groups done, to compute (of which those redone, each with
        why), and the jobs."""
        jobs = -(-len(self.todo) // self.groups_per_job)
        files = sum(len(group.files) for group in self.todo)
        redone = f", {len(self.redo):,} of them redone" if self.redo else ""
        lines = [f"in parts: {counted(len(self.groups), 'group')} of up to "
                 f"{counted(len(self.groups[0].files) if self.groups else 0, 'WET file')}; "
                 f"{len(self.done):,} done (reused), {len(self.todo):,} to compute{redone} "
                 f"({counted(files, 'file')}) in {counted(jobs, 'job')} of up to "
                 f"{counted(self.groups_per_job, 'group')}, then one global job (URL dedup to "
                 "the shards)"]
        lines += [f"  redo {group.name}: {why}" for group, why in self.redo]
        return "\n".join(lines)


def plan_parts(job: Job, group_files: int, groups_per_job: int, restart: bool,
               dry_run: bool = False) -> PartsPlan:
    """Which groups a job in parts reuses and which it computes; refuses (parts.PartsError)
    the parts of another configuration unless `restart` (which deletes them, but in a
    `dry_run`, which writes nothing)."""
    groups = parts.plan_groups(job.plan.files, group_files)
    record = job.run_config()
    config_sha = parts.config_sha256(record, group_files)
    parts.check_parts_config(job.output_dir, config_sha,
                             {"run_config": record, "group_files": group_files}, restart,
                             write=not dry_run)
    done, todo, redo = {}, [], []
    with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as readers:
        checked = list(readers.map(
            lambda group: parts.marker_problem(job.output_dir, group, config_sha), groups))
    with_files = parts.groups_with_files(job.output_dir)
    for group, (marker, problem) in zip(groups, checked):
        if marker is not None:
            done[group.index] = marker
            continue
        todo.append(group)
        if problem == parts.NOT_DONE and group.name in with_files:
            problem = parts.STOPPED_WHILE_WRITTEN
        if problem != parts.NOT_DONE:
            redo.append((group, problem))
    return PartsPlan(groups, config_sha, done, todo, redo, groups_per_job)


def _check_group_read(group: parts.Group, counters: stats.Stats, output_dir: str) -> None:
    """A group whose workers could not read a manifest that the launcher read (a passing
    failure, most likely) gets no marker, so that a rerun reads it again; a group that skipped
    unreadable WET files (most likely corrupt: a rerun would skip them again) gets its marker,
    with a warning saying how to redo it."""
    read = counters.get("read", {})
    if read.get("manifests.skipped:unreadable"):
        raise parts.PartsError(f"{group.name} could not read a manifest that the launcher read "
                               "(see the log): rerun the same command to redo the group")
    skipped = read.get("files.skipped:unreadable", 0) + read.get("files.skipped:not_wet", 0)
    if skipped:
        logging.getLogger("c4").warning(
            "%s skipped %s (counted in stats.json); if they can be read "
            "now, delete %s and rerun to redo the group", group.name,
            counted(skipped, "unreadable WET file"),
            parts.group_dir(output_dir, group))


def run_in_parts(job: Job, plan: PartsPlan) -> stats.Stats:
    """The groups left, a job per `groups_per_job` of them (each group's marker written when
    its job has ended), then the global job over every group's pages. NothingRead, before the
    global job and with every group cleared, when the groups could read no input."""
    log = logging.getLogger("c4")
    for group, why in plan.redo:
        log.warning("redoing %s: %s", group.name, why)
    progress = parts.Progress(job.output_dir, job.config.name, len(plan.groups),
                              [plan.done[index] for index in sorted(plan.done)],
                              GLOBAL_STAGE_OVER_GROUPS)
    steps = stages.read_steps(job.config)
    for first in range(0, len(plan.todo), plan.groups_per_job):
        batch = plan.todo[first:first + plan.groups_per_job]
        for group in batch:
            parts.clear_group(job.output_dir, group)
        progress.start_groups(len(batch))
        started = time.monotonic()
        pipeline = job.pipeline(f"{batch[0].name}-to-{batch[-1].index:05d}")
        for group in batch:
            _ = pipeline | group.name >> parts.WriteGroup(
                job.plan, group, job.output_dir, stages.max_record_bytes(job.config), steps)
        result = pipeline.run()
        result.wait_until_finish()
        seconds = time.monotonic() - started
        markers = []
        for group in batch:
            counters = stats.collect_counters(result, group.name)
            _check_group_read(group, counters, job.output_dir)
            markers.append(parts.write_marker(job.output_dir, group, plan.config_sha256,
                                              counters, seconds / len(batch)))
        progress.groups_done(markers, seconds)
    error = nothing_read_error(progress.counters)
    if error:
        # Nothing is worth keeping, and a rerun after the files are fixed must read them again.
        for group in plan.groups:
            parts.clear_group(job.output_dir, group)
        raise NothingRead(error, progress.counters)
    progress.start_global()
    pipeline = job.pipeline("global")
    pages = (pipeline
             | "ReadGroups" >> parts.ReadGroups([parts.marker_path(job.output_dir, group)
                                                 for group in plan.groups])
             | "C4" >> stages.C4Pages(job.config, job.resources,
                                      dedup_buckets=max(1, job.plan.files), pages_read=True))
    write_pages(pages, job.config, job.output_dir, job.max_shards, job.validation_fraction,
                job.pages_per_shard)
    result = pipeline.run()
    result.wait_until_finish()
    counters = stats.merged(progress.counters, stats.collect_counters(result))
    progress.finish()
    return counters


def main(argv: Optional[Sequence[str]] = None) -> stats.Stats:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("c4").setLevel(logging.INFO)
    command_line = parser()
    args, beam_args = command_line.parse_known_args(argv)
    try:
        config = configure(args)
    except ValueError as error:
        sys.exit(f"error: {error}")
    note = unread_lists_note(config, {name for name in LIST_OPTIONS
                                      if getattr(args, name) != command_line.get_default(name)})
    if note:
        logging.getLogger("c4").warning(note)
    try:
        missing = missing_lists_error(config, {name for name in LIST_OPTIONS
                                               if not getattr(args, name)
                                               and not LIST_OPTIONS[name].unset_reads_pins})
        if missing:
            raise ValueError(missing)
        if args.max_files is not None and args.max_files < 1:
            raise ValueError("--max_files must be >= 1")
        split_of("", args.validation_fraction)  # Rejects a fraction outside [0, 1] early.
        max_shards = {"train": args.train_shards, "validation": args.validation_shards}
        if min(max_shards.values()) < 1:
            raise ValueError("--train_shards and --validation_shards must be >= 1")
        if args.pages_per_shard is not None and args.pages_per_shard < 1:
            raise ValueError("--pages_per_shard must be >= 1")
        if min(args.group_files, args.groups_per_job) < 1:
            raise ValueError("--group_files and --groups_per_job must be >= 1")
        sources = args.input or [common_crawl.manifest_url(dump, args.cc_base_url)
                                 for dump in config.default_dumps]
        plan = inputs.plan_inputs(sources, args.max_files, args.cc_base_url)
        if not plan.files:
            raise files.InputError(f"the inputs {sources} name no WET file")
        resources = stages.load_resources(config, args.badwords, args.realnews_domains,
                                          args.webtext_urls, args.punkt_data, args.badwords_dir)
    except files.FetchError as error:
        sys.exit(f"error: {error}. {offline_hint(config)}")
    except (ValueError, files.InputError, PunktDataMissing) as error:
        sys.exit(f"error: {error}")
    running_mode = embedded_running_mode(beam_args)
    warning = running_mode and memory_warning(plan.estimated_bytes(), machine_memory_bytes(),
                                              running_mode)
    job = Job(config, resources, plan, args.output, max_shards, args.validation_fraction,
              args.pages_per_shard, tuple(beam_args))
    in_parts = (args.in_parts if args.in_parts is not None
                else sum(source.manifest is not None for source in plan.sources) > 1)
    try:
        if args.dry_run:
            print(f"{config.name}: {counted(plan.files, 'WET file')} into {args.output}")
            print(plan_parts(job, args.group_files, args.groups_per_job, args.restart,
                             dry_run=True).describe() if in_parts else "one job")
            return {}
        with parts.OutputLock(args.output, args.break_lock):
            parts_plan = (plan_parts(job, args.group_files, args.groups_per_job, args.restart)
                          if in_parts else None)
            if warning:
                logging.getLogger("c4").warning("warning: %s", warning)
            logging.getLogger("c4").info("building %s from %s", config.name,
                                         counted(plan.files, "WET file"))
            counters = run_in_parts(job, parts_plan) if parts_plan else run_one_job(job)
            _write_reports(job, counters)
    except parts.PartsError as error:
        sys.exit(f"error: {error}")
    except NothingRead as error:
        stats.write_stats(error.counters, config.name, args.output, error=str(error))
        sys.exit(f"error: {error}")
    except KeyboardInterrupt:
        sys.exit("interrupted: rerun the same command to resume, the groups done are kept"
                 if in_parts else "interrupted")
    print(stats.format_table(counters))
    print(split_report(counters, args.validation_fraction))
    problems = file_problems_report(counters)
    if problems:
        print(problems)
    print(f"statistics written to {FileSystems.join(args.output, stats.STATS_FILE)}, with "
          f"{provenance.RUN_CONFIG_FILE} and {funnel.FUNNEL_FILE} beside it")
    return counters


def split_report(counters: stats.Stats, validation_fraction: float) -> str:
    """The pages written to each split, and, where validation holds far more than the fraction
    (more than twice its share, and more than a few pages), the reason it can."""
    written = counters.get("write", {})
    train, validation = (sum(value for name, value in written.items()
                             if name == f"pages.written:{split}"
                             or name.startswith(f"pages.written:{split}:"))
                         for split in ("train", "validation"))
    line = (f"split: {counted(train, 'page')} in train, {validation:,} in validation (by URL "
            f"hash, validation_fraction {validation_fraction:g})")
    if validation > max(3, 2 * validation_fraction * (train + validation)):
        line += (f"; validation holds far more than {validation_fraction:.1%} here: at "
                 f"{DEFAULT_VALIDATION_FRACTION:g} and above it holds every URL of the released "
                 "C4's validation split, so pages from it (the samples' "
                 "c4-en-2019-18-roundtrip) are all validation")
    return line


def file_problems_report(counters: stats.Stats) -> str:
    """The input files with a problem, a line each (the first _NAMED_FILES), for the end of a
    run ("" if none): the warnings that named them may be far above, or in an earlier run's log (a group
    of a job in parts that was reused)."""
    problems = stats.file_problems(counters)
    if not problems:
        return ""
    lines = [f"{counted(len(problems), 'input file')} with a problem (file_problems in "
             f"{stats.STATS_FILE}):"]
    lines += [f"  {problem['file']}: {problem['problem']}" for problem in problems[:_NAMED_FILES]]
    if len(problems) > _NAMED_FILES:
        lines.append(f"  and {counted(len(problems) - _NAMED_FILES, 'more file')}")
    return "\n".join(lines)


def _write_reports(job: Job, counters: stats.Stats) -> None:
    """stats.json (of the whole run, and of each language written apart), run_config.json and
    the funnel."""
    config = job.config
    stats.write_stats(counters, config.name, job.output_dir)
    for language in stats.languages_of(counters):
        stats.write_stats(stats.of_language(counters, language), config.name,
                          FileSystems.join(job.output_dir, language), language)
    provenance.write_run_config(job.run_config(), job.output_dir)
    funnel.write_funnel(counters, f"C4 {config.name} ({config.rules} rules): "
                        f"{counted(job.plan.files, 'WET file')}", job.output_dir)


if __name__ == "__main__":
    main()
