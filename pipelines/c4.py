"""Builds a C4 variant from Common Crawl WET files with Apache Beam.

    python -m pipelines.c4 --variant en --input PATH_OR_GLOB_OR_MANIFEST... --output DIR

Any option not listed in --help is passed to Beam (--runner, --direct_num_workers, ...). This
module is the command line only: the graph is pipelines/beam/graph.py, the runs in one job or in
stages pipelines/executors/, the local runner pipelines/beam/embedded.py.
"""
import argparse
import dataclasses
import logging
import os
import sys
import tempfile
from typing import Collection, List, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from pipelines import exclusion_sample
from pipelines.beam.embedded import embedded_running_mode, machine_memory_bytes, memory_warning
from pipelines.config import MC4, RULE_SETS, VARIANTS, VOCABULARY_LANGUAGES, VariantConfig, variant
from pipelines.counters import WRITE_STAGE, parse_written
from pipelines.executors import base
from pipelines.executors import layout, staged
from pipelines.executors.in_stages import describe_staged, run_staged, staged_run
from pipelines.executors.job import Job
from pipelines.executors.one_job import NAMED_FILES, NothingRead, run_one_job
from pipelines.filters.cleaning import CLEANING_SETTINGS
from pipelines.filters.urls import DEFAULT_VALIDATION_FRACTION, split_of
from pipelines.readers import common_crawl, files, inputs, lists
from pipelines.stats import funnel, provenance, stats
from pipelines.steps.resources import DECONTAMINATION_METHODS, Decontamination, load_resources
from pipelines.wording import counted
from pipelines.writers import dataset_card, exclusions, output
from text.punkt import PunktDataMissing
from text.splitters import SPLITTER_NAMES


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
    options.add_argument("--format", default=output.JSONL, choices=sorted(output.SHARD_SUFFIXES),
                         help="the shards' format: jsonl (gzipped JSON lines, "
                              "SPLIT-NNNNN-of-NNNNN.jsonl.gz) or parquet (the same records in "
                              "the same shards and order, SPLIT-NNNNN-of-NNNNN.parquet); either "
                              f"way the output folder's {dataset_card.CARD_FILE} makes it a "
                              "Hugging Face dataset (pipelines/writers/dataset_card.py)")
    options.add_argument("--decontaminate", default=None, metavar="INDEX",
                         help="drop the pages that hold an example of the tasks of INDEX (a "
                              "file `python -m model.tasks.contamination ... --index INDEX` "
                              "writes): a stage after the bad words, with its counters")
    options.add_argument("--decontamination_method", default="ngram13",
                         choices=DECONTAMINATION_METHODS,
                         help="how --decontaminate finds an example in a page: a shared 13-gram "
                              "of normalised words (GPT-3's), or the whole normalised example "
                              "(Dodge et al.'s exact match), in characters for scripts without "
                              "spaces; the examples too short for it (under 13 words; under 8 "
                              "for exact) are left out, counted per task before the run "
                              "(default: %(default)s)")
    options.add_argument("--exclusions", default=None, metavar="DIR",
                         help="write what the filters dropped to DIR, with each stage and reason "
                              "(the pages dropped, the lines and spans removed), and the pages "
                              "kept without their text, for the pages of a sample by URL hash "
                              "(pipelines/writers/exclusions.py); the output does not change")
    options.add_argument("--exclusion_fraction", type=float,
                         default=exclusion_sample.DEFAULT_FRACTION,
                         help="the share of URLs whose pages --exclusions records "
                              "(default: %(default)s; 1 records every page)")
    options.add_argument("--read_files", type=int, default=None,
                         help="WET files per read task of a staged run (default: one, or as "
                              f"many as keep the read tasks at {layout.MAX_READ_TASKS:,})")
    options.add_argument("--staged", action=argparse.BooleanOptionalAction, default=None,
                         help="run in stages of tasks that a rerun of the same command resumes: "
                              "every shuffle kept as files of key buckets under "
                              f"OUTPUT/{base.PARTS_FOLDER}/, so that memory is bounded by a "
                              "bucket, not by the input (pipelines/executors/staged.py); on the "
                              "local runner the tasks run on --workers processes, on another "
                              "runner each stage is a Beam job over its unfinished tasks "
                              "(--executor). Default: staged when the input is more than a "
                              "one-job run on the local runner holds in this machine's memory, "
                              "or several Common Crawl manifests (several dumps)")
    options.add_argument("--workers", type=int, default=os.cpu_count(),
                         help="processes that run a staged run's tasks side by side on this "
                              "machine (default: its cores)")
    options.add_argument("--buckets", type=int, default=None,
                         help="URL buckets (and span-key buckets) of a staged run; default: one "
                              f"per {layout.BUCKET_INPUT_BYTES / 1e6:,.0f} MB of gzipped input, "
                              f"at most {layout.MAX_BUCKETS:,}")
    options.add_argument("--task_bytes", type=int, default=layout.BUCKET_INPUT_BYTES,
                         help="a staged run's URL and finish tasks take a bucket whose input "
                              "files (compressed records) are bigger than this in parts of about "
                              "this size, spread over local temporary files: their memory "
                              "follows this, not the bucket (default "
                              f"{layout.BUCKET_INPUT_BYTES / 1e6:,.0f} MB; a span-key task holds "
                              "its bucket's keys whole)")
    options.add_argument("--executor", default=None, choices=sorted(base.EXECUTORS),
                         help="what runs a staged run's tasks: local (--workers processes on this "
                              "machine) or beam (each stage a Beam job on the runner's workers). "
                              "Default: local on the local runner, beam on another (Dataflow)")
    # Retired, parsed for one release: RETIRED_OPTIONS says what replaced each.
    options.add_argument("--in_parts", action=argparse.BooleanOptionalAction, default=None,
                         help="retired: runs in parts are gone; a run in pieces runs in stages "
                              "(--staged)")
    options.add_argument("--group_files", type=int, default=None,
                         help="retired: now --read_files")
    options.add_argument("--groups_per_job", type=int, default=None,
                         help="retired with runs in parts: a stage is one Beam job")
    options.add_argument("--stages_as_beam_jobs", action="store_true", default=None,
                         help="retired: now --executor beam")
    options.add_argument("--restart", action="store_true",
                         help="delete the dataset and the parts of a run of another "
                              "configuration (or of a former run in parts) in OUTPUT and start "
                              "afresh (without it, they are refused)")
    options.add_argument("--break_lock", action="store_true",
                         help="remove the lock a dead run left in an object store's OUTPUT (a "
                              "local folder's lock goes with its process)")
    options.add_argument("--dry_run", "--dry-run", action="store_true",
                         help="print what the run would do (for a staged run: each stage's "
                              "tasks, those done, and what a failure costs) and stop")
    options.add_argument("--cc_base_url", default=common_crawl.BASE_URL,
                         help="prefix of the relative paths in a manifest (e.g. s3://commoncrawl/ "
                              "or a gs:// mirror)")
    return options


# The options of runs in parts (retired: a run in pieces runs in stages) and a former spelling,
# parsed for one release: as written -> (what replaced it, whether it asks for a staged run).
RETIRED_OPTIONS = {
    "--in_parts": ("--staged", True),
    "--no-in_parts": ("nothing: runs in parts are gone", False),
    "--group_files": ("--read_files", True),
    "--groups_per_job": ("nothing: a stage is one Beam job", True),
    "--stages_as_beam_jobs": ("--executor beam", True),
}


def retired_options(args: argparse.Namespace) -> List[str]:
    """The retired options given, as written (RETIRED_OPTIONS)."""
    given = [] if args.in_parts is None else ["--in_parts" if args.in_parts else "--no-in_parts"]
    return given + [f"--{name}" for name in ("group_files", "groups_per_job",
                                               "stages_as_beam_jobs")
                    if getattr(args, name) is not None]


def retired_notice(given: Sequence[str], in_stages: bool) -> str:
    """One line naming the retired options given, what replaced each, and how the run goes."""
    named = ", ".join(f"{flag} (now {RETIRED_OPTIONS[flag][0]})" for flag in given)
    return (f"note: retired with runs in parts: {named}; running "
            + ("in stages" if in_stages else "in one job"))


# The options naming local files or folders a run reads or writes beside its output, which
# run_config.json records: made absolute, so that the record holds from any folder (pipelines.report
# OUT run elsewhere finds the exclusions), as a model run records its paths.
PATH_OPTIONS = ("input", "badwords", "badwords_dir", "realnews_domains", "webtext_urls",
                "punkt_data", "decontaminate", "exclusions")


def absolute_if_local(path: Optional[str]) -> Optional[str]:
    """A local path (or glob) made absolute; a URL (gs://, https://) or None as it is."""
    if path is None or "://" in path:
        return path
    return os.path.abspath(path)


def with_absolute_paths(args: argparse.Namespace) -> argparse.Namespace:
    """The options, those of PATH_OPTIONS made absolute where local."""
    changed = {}
    for name in PATH_OPTIONS:
        value = getattr(args, name)
        changed[name] = ([absolute_if_local(each) for each in value] if isinstance(value, list)
                         else absolute_if_local(value))
    return argparse.Namespace(**{**vars(args), **changed})


def unwritable_folder(flag: str, folder: str) -> Optional[str]:
    """Why a run could not write into the local `folder` given as `flag`, or None: found by
    writing a file into it (or into its nearest folder that exists: nothing is left behind), not
    by the permission bits, which a root user passes by. A URL (gs://) is not probed: its
    runner's credentials decide."""
    if "://" in folder:
        return None
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"{flag} {folder} is a file, not a folder: give a folder"
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    try:
        if not os.path.isdir(existing):
            raise NotADirectoryError(f"{existing} is a file")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return (f"{flag} {folder} cannot be written ({error.strerror or error}): give a folder "
                "this user can write to")
    return None


def configure(args: argparse.Namespace) -> VariantConfig:
    config = variant(args.variant, args.rules, args.splitter)
    if config.cleaning is not None and config.rule_set.cleaning_is_chosen:
        config = dataclasses.replace(config, cleaning=CLEANING_SETTINGS[args.cleaning])
    elif args.cleaning != "public_c4" and not config.rule_set.cleaning_is_chosen:
        raise ValueError(f"--cleaning applies to the paper rules only; the {config.rules} rules "
                         f"have the public C4 thresholds")
    return config


def main(argv: Optional[Sequence[str]] = None) -> stats.Stats:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("c4").setLevel(logging.INFO)
    command_line = parser()
    args, beam_args = command_line.parse_known_args(argv)
    args = with_absolute_paths(args)
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
        if min(args.read_files or 1, args.group_files or 1, args.workers) < 1:
            raise ValueError("--read_files and --workers must be >= 1")
        if not args.exclusions and (args.exclusion_fraction
                                    != command_line.get_default("exclusion_fraction")):
            raise ValueError("--exclusion_fraction says how much --exclusions DIR records: give "
                             "both")
        excluded = (exclusion_sample.ExclusionConfig(args.exclusions, args.exclusion_fraction)
                    if args.exclusions else None)
        if not args.dry_run:
            unwritable = (unwritable_folder("--output", args.output)
                          or (args.exclusions and unwritable_folder("--exclusions",
                                                                    args.exclusions)))
            if unwritable:
                raise ValueError(unwritable)
        sources = args.input or [common_crawl.manifest_url(dump, args.cc_base_url)
                                 for dump in config.default_dumps]
        plan = inputs.plan_inputs(sources, args.max_files, args.cc_base_url)
        if not plan.files:
            raise files.InputError(f"the inputs {sources} name no WET file")
        decontamination = (Decontamination(args.decontaminate, args.decontamination_method)
                           if args.decontaminate else None)
        resources = load_resources(config, args.badwords, args.realnews_domains,
                                   args.webtext_urls, args.punkt_data, args.badwords_dir,
                                   decontamination)
    except files.FetchError as error:
        sys.exit(f"error: {error}. {offline_hint(config)}")
    except (ValueError, files.InputError, PunktDataMissing) as error:
        sys.exit(f"error: {error}")
    running_mode = embedded_running_mode(beam_args)
    warning = running_mode and memory_warning(plan.estimated_bytes(), machine_memory_bytes(),
                                              running_mode)
    job = Job(config, resources, plan, args.output, max_shards, args.validation_fraction,
              args.pages_per_shard, tuple(beam_args), shard_format=args.format,
              excluded=excluded)
    given = retired_options(args)
    several_dumps = sum(source.manifest is not None for source in plan.sources) > 1
    in_stages = (args.staged if args.staged is not None else
                 bool(warning) or several_dumps or any(RETIRED_OPTIONS[flag][1] for flag in given))
    if given:
        logging.getLogger("c4").warning(retired_notice(given, in_stages))
    if in_stages:
        executor = args.executor or ("beam" if args.stages_as_beam_jobs or running_mode is None
                                     else "local")
        return _run_staged(job, args, executor, bool(warning))
    if args.dry_run:
        print(f"{config.name}: {counted(plan.files, 'WET file')} into {args.output}")
        print("one job")
        return {}
    try:
        with base.OutputLock(args.output, args.break_lock):
            base.prepare_output(job, args.restart)
            if warning:
                logging.getLogger("c4").warning("warning: %s", warning)
            logging.getLogger("c4").info("building %s from %s", config.name,
                                         counted(plan.files, "WET file"))
            counters = run_one_job(job)
            _write_reports(job, counters)
    except base.OutputError as error:
        sys.exit(f"error: {error}")
    except NothingRead as error:
        stats.write_stats(error.counters, config.name, args.output, error=str(error))
        sys.exit(f"error: {error}")
    except KeyboardInterrupt:
        sys.exit("interrupted")
    _print_report(counters, job)
    return counters


def _print_report(counters: stats.Stats, job: Job) -> None:
    print(stats.format_table(counters))
    print(split_report(counters, job.validation_fraction))
    problems = file_problems_report(counters)
    if problems:
        print(problems)
    print(f"statistics written to {FileSystems.join(job.output_dir, stats.STATS_FILE)}, with "
          f"{provenance.RUN_CONFIG_FILE}, {funnel.FUNNEL_FILE} and {dataset_card.CARD_FILE} (the "
          "dataset card) beside it")
    if job.excluded is not None:
        print(f"what the stages dropped, for {job.excluded.fraction:.0%} of the URLs, written to "
              f"{job.excluded.directory} (see {exclusions.SUMMARY_FILE}); its datasheet: "
              f"python -m pipelines.report {job.output_dir}")


def _run_staged(job: Job, args: argparse.Namespace, executor_name: str,
                too_big_for_one_job: bool) -> stats.Stats:
    """A staged run: its plan (--dry_run), or its stages to the end (by the executor registered
    as `executor_name`) and its reports."""
    log = logging.getLogger("c4")
    try:
        run = staged_run(job, layout.default_layout(job.plan.files, job.plan.estimated_bytes(),
                                                    args.read_files or args.group_files,
                                                    args.buckets, args.task_bytes))
        executor = None if args.dry_run else base.executor(executor_name, run, args.workers)
    except ValueError as error:
        sys.exit(f"error: {error}")
    if args.dry_run:
        print(f"{job.config.name}: {counted(job.plan.files, 'WET file')} into {args.output}")
        print(describe_staged(run))
        return {}
    try:
        with base.OutputLock(args.output, args.break_lock):
            base.prepare_output(job, args.restart,
                                base.staged_record(job, run.config_sha256, run.layout))
            if too_big_for_one_job and args.staged is None:
                log.warning("the input is more than a one-job run on the local runner holds in "
                            "this machine's memory: running in stages (--staged)")
            log.info("building %s from %s in stages, %s", job.config.name,
                     counted(job.plan.files, "WET file"),
                     f"on {counted(executor.workers, 'worker process', 'worker processes')}"
                     if executor.workers else "a job per stage on the runner's workers")
            counters = run_staged(job, run, executor)
            _write_reports(job, counters)
    except (base.OutputError, staged.StagedError) as error:
        sys.exit(f"error: {error}")
    except NothingRead as error:
        stats.write_stats(error.counters, job.config.name, args.output, error=str(error))
        sys.exit(f"error: {error}")
    except KeyboardInterrupt:
        sys.exit("interrupted: rerun the same command to resume, the tasks done are kept")
    _print_report(counters, job)
    return counters


def split_report(counters: stats.Stats, validation_fraction: float) -> str:
    """The pages written to each split, and, where validation holds far more than the fraction
    (more than twice its share, and more than a few pages), the reason it can."""
    per_split = {}
    for name, value in counters.get(WRITE_STAGE, {}).items():
        written = parse_written(name)
        if written:
            per_split[written[0]] = per_split.get(written[0], 0) + value
    train, validation = per_split.get("train", 0), per_split.get("validation", 0)
    line = (f"split: {counted(train, 'page')} in train, {validation:,} in validation (by URL "
            f"hash, validation_fraction {validation_fraction:g})")
    if validation > max(3, 2 * validation_fraction * (train + validation)):
        line += (f"; validation holds far more than {validation_fraction:.1%} here: at "
                 f"{DEFAULT_VALIDATION_FRACTION:g} and above it holds every URL of the released "
                 "C4's validation split, so pages from it (the samples' "
                 "c4-en-2019-18-roundtrip) are all validation")
    return line


def file_problems_report(counters: stats.Stats) -> str:
    """The input files with a problem, a line each (the first NAMED_FILES), for the end of a
    run ("" if none): the warnings that named them may be far above, or in an earlier run's log
    (a task of a staged run that was reused)."""
    problems = stats.file_problems(counters)
    if not problems:
        return ""
    lines = [f"{counted(len(problems), 'input file')} with a problem (file_problems in "
             f"{stats.STATS_FILE}):"]
    lines += [f"  {problem['file']}: {problem['problem']}" for problem in problems[:NAMED_FILES]]
    if len(problems) > NAMED_FILES:
        lines.append(f"  and {counted(len(problems) - NAMED_FILES, 'more file')}")
    return "\n".join(lines)


def _write_reports(job: Job, counters: stats.Stats) -> None:
    """run_config.json, the funnel, the dataset card and stats.json (of each language written
    apart, and of the whole run, each with its number of files per split). The shards are those
    in the folder: a run found none of another run there when it started
    (executors.base.prepare_output)."""
    config = job.config
    shards = dataset_card.shard_listing(job.output_dir, tuple(job.max_shards), job.shard_format)
    counts = dataset_card.shard_counts(shards, job.shard_format)
    provenance.write_run_config(job.run_config(), job.output_dir)
    funnel.write_funnel(counters, f"C4 {config.name} ({config.rules} rules): "
                        f"{counted(job.plan.files, 'WET file')}", job.output_dir)
    dataset_card.write_dataset_card(config, job.shard_format, shards, counters, job.output_dir)
    if job.excluded is not None:
        exclusions.write_summary(job.excluded.directory, job.excluded.fraction)
    for language in stats.languages_of(counters):
        stats.write_stats(stats.of_language(counters, language), config.name,
                          FileSystems.join(job.output_dir, language), language,
                          shards=stats.shards_in_folder(counts, language))
    # Last: a finished stats.json says that the rest is there.
    stats.write_stats(counters, config.name, job.output_dir, shards=counts)


if __name__ == "__main__":
    main()
