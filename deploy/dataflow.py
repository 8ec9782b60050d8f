"""Build a C4 variant on Google Cloud Dataflow.

    python -m deploy.dataflow --variant en --project my-project --region us-central1 \
        --bucket gs://my-bucket --dump CC-MAIN-2019-18 --dry-run

builds the exact `python -m pipelines.c4 ...` command with the Dataflow options, prints it with
--dry-run, and otherwise runs it in this process (`pipelines.c4.main`), which submits the job.
Extra Beam options go after a literal `--` and are passed through unchanged.
"""
import argparse
import dataclasses
import hashlib
import re
import shlex
import sys
from typing import Optional, Sequence

from deploy import REPO_ROOT, arguments, requirements
from pipelines.config import VARIANTS as VARIANT_CONFIGS
from pipelines.executors import layout
from pipelines.readers import common_crawl
from pipelines.wording import counted

VARIANTS = tuple(VARIANT_CONFIGS)

# The paper's WebText-like corpus read the 12 monthly dumps from August 2018 to July 2019; mC4
# (the public code's 3.1.0) the 86 dumps of 2013 to 2022.
DUMP_PRESETS = {
    "c4-paper": (common_crawl.C4_DUMP,),
    "webtextlike-paper": common_crawl.WEBTEXTLIKE_DUMPS,
    "mc4": common_crawl.MC4_DUMPS,
}
# WET files in a dump, for the dry run's plan (CC-MAIN-2019-18 lists 56,000).
FILES_PER_DUMP = 56_000
# The launcher's options of runs in parts (retired: a run in pieces runs in stages), parsed for
# one release, each given named in a notice.
RETIRED_OPTIONS = ("--no-staged", "--in_parts", "--no-in_parts", "--group_files",
                   "--groups_per_job")
DUMP_NAME = re.compile(r"^CC-MAIN-(20[1-9][0-9])-(0[1-9]|[1-4][0-9]|5[0-3])$")

# Where Common Crawl manifests and WET files are read from. HTTPS needs no credentials;
# s3://commoncrawl/ needs AWS credentials on every worker; a gs:// mirror in the job's region
# is fastest and cheapest.
DEFAULT_CC_BASE_URL = common_crawl.BASE_URL
# How the job's functions travel to the workers: every function the pipeline ships is
# importable from its package there, so __main__ is not pickled (it would only drag the
# launcher's globals along); cloudpickle pickles what is not importable by value.
# deploy/rehearse.py runs its rehearsals with the same options.
PICKLING_OPTIONS = ("--no_save_main_session", "--pickle_library=cloudpickle")
# What the workers install besides the code when no image is given: setup.py installs the code
# (and numpy), the `pipeline` extra's pins come as Beam's --requirements_file, written here by
# the launcher (build/ is not in git) and staged by Beam with the wheels it lists.
WORKER_EXTRA = "pipeline"
WORKER_REQUIREMENTS = REPO_ROOT / "build" / f"worker-requirements-{WORKER_EXTRA}.txt"


@dataclasses.dataclass(frozen=True)
class DataflowJob:
    """Everything that defines one Dataflow run of the C4 pipeline."""
    variant: str
    dumps: tuple[str, ...]
    project: str
    region: str
    temp_location: str
    staging_location: str
    output: str
    machine_type: str
    max_num_workers: int
    disk_size_gb: int
    shuffle_service: bool
    experiments: tuple[str, ...] = ()
    sdk_container_image: Optional[str] = None
    service_account_email: Optional[str] = None
    max_files: Optional[int] = None
    cc_base_url: str = DEFAULT_CC_BASE_URL
    badwords: Optional[str] = None
    badwords_dir: Optional[str] = None
    realnews_domains: Optional[str] = None
    webtext_urls: tuple[str, ...] = ()
    # A staged run (pipelines/executors/staged.py): a Dataflow job per stage over its unfinished
    # tasks; a rerun of the same command resumes. `buckets`: its URL buckets (None: from the input).
    # `one_job`: one Dataflow job over the whole input instead, which no rerun resumes.
    one_job: bool = False
    buckets: Optional[int] = None
    extra_beam_args: tuple[str, ...] = ()


def dump_name(value: str) -> str:
    if not DUMP_NAME.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a Common Crawl dump name: expected CC-MAIN-YYYY-WW "
            "(year and ISO week), e.g. CC-MAIN-2019-18")
    return value


def job_name(variant: str, dumps: Sequence[str], max_files: Optional[int]) -> str:
    """A Dataflow job name fixed by what the job computes.

    Dataflow refuses a second running job with the same name, so the same build cannot be
    submitted twice by mistake. Several dumps are named by their range plus a hash of the full
    list, since two different lists can share first, last and count.
    """
    years_weeks = [dump[len("CC-MAIN-"):] for dump in sorted(dumps)]
    if len(years_weeks) == 1:
        dump_tag = years_weeks[0]
    else:
        digest = hashlib.sha256(",".join(years_weeks).encode()).hexdigest()[:8]
        dump_tag = f"{years_weeks[0]}-to-{years_weeks[-1]}-{len(years_weeks)}dumps-{digest}"
    name = f"c4-{variant.replace('.', '-')}-{dump_tag}"
    return name if max_files is None else f"{name}-first{max_files}"


def pipeline_argv(job: DataflowJob) -> list[str]:
    """The argv of `python -m pipelines.c4` for this job, Dataflow options included."""
    argv = ["--variant", job.variant, "--input"]
    argv += [common_crawl.manifest_url(dump, job.cc_base_url) for dump in job.dumps]
    # The manifests list paths relative to the crawl's root: read the WET files from there too.
    argv += ["--cc_base_url", job.cc_base_url]
    if job.max_files is not None:
        argv += ["--max_files", str(job.max_files)]
    argv += ["--output", job.output]
    if job.badwords:
        argv += ["--badwords", job.badwords]
    if job.badwords_dir:
        argv += ["--badwords_dir", job.badwords_dir]
    if job.realnews_domains:
        argv += ["--realnews_domains", job.realnews_domains]
    if job.webtext_urls:
        argv += ["--webtext_urls", *job.webtext_urls]
    if job.one_job:
        argv += ["--no-staged"]
    else:
        argv += ["--staged"]
        if job.buckets is not None:
            argv += ["--buckets", str(job.buckets)]

    argv += [
        "--runner", "DataflowRunner",
        "--project", job.project,
        "--region", job.region,
        "--job_name", job_name(job.variant, job.dumps, job.max_files),
        "--temp_location", job.temp_location,
        "--staging_location", job.staging_location,
        "--worker_machine_type", job.machine_type,
        "--max_num_workers", str(job.max_num_workers),
        "--autoscaling_algorithm", "THROUGHPUT_BASED",
        "--disk_size_gb", str(job.disk_size_gb),
        *PICKLING_OPTIONS,
        "--labels", f"c4_variant={job.variant.replace('.', '-')}",
    ]
    shuffle_mode = "service" if job.shuffle_service else "appliance"
    for experiment in ("use_runner_v2", f"shuffle_mode={shuffle_mode}", *job.experiments):
        argv += ["--experiments", experiment]
    if job.sdk_container_image:
        # The image already holds the project and its pinned dependencies: stage nothing.
        argv += ["--sdk_container_image", job.sdk_container_image, "--sdk_location", "container"]
    else:
        argv += ["--setup_file", str(REPO_ROOT / "setup.py"),
                 "--requirements_file", str(WORKER_REQUIREMENTS)]
    if job.service_account_email:
        argv += ["--service_account_email", job.service_account_email]
    return argv + list(job.extra_beam_args)


def write_worker_requirements() -> None:
    WORKER_REQUIREMENTS.parent.mkdir(parents=True, exist_ok=True)
    WORKER_REQUIREMENTS.write_text(
        "".join(pin + "\n" for pin in requirements.extras_require()[WORKER_EXTRA]))


def plan_lines(job: DataflowJob) -> list[str]:
    """What the run does, job by job, and what a failure costs, for the dry run: the files of
    a dump are counted at about FILES_PER_DUMP (the pipeline counts them exactly at launch, and
    `python -m pipelines.c4 ... --dry_run` prints its exact plan, with the tasks done)."""
    files = job.max_files or FILES_PER_DUMP * len(job.dumps)
    if job.one_job:
        return [f"plan: one job over about {counted(files, 'WET file')}; a failure costs the "
                "whole run"]
    return _staged_plan_lines(job, files)


def _staged_plan_lines(job: DataflowJob, files: int) -> list[str]:
    config = VARIANT_CONFIGS[job.variant]
    input_bytes = files * common_crawl.REMOTE_WET_FILE_BYTES
    cut = layout.default_layout(files, input_bytes, None, job.buckets)
    counts = layout.task_counts(config, cut, files, len(job.webtext_urls))
    shares = layout.cpu_shares(config)
    name = job_name(job.variant, job.dumps, job.max_files)
    stages = ", ".join(f"{stage} ({'a task per shard' if count is None else counted(count, 'task')})"
                       for stage, count in counts.items())
    costs = ", ".join(f"{stage} {share:.0%}" for stage, share in shares.items())
    return [
        f"plan: about {counted(files, 'WET file')} ({counted(len(job.dumps), 'dump')}) in "
        f"stages, kept under {job.output}/parts/: {stages};",
        f"  a Dataflow job per stage over its unfinished tasks (named {name}-STAGE), one after "
        "another, each task's marker written when it ends;",
        f"  a failed job costs at most its stage's unfinished tasks ({costs} of the run's CPU); "
        "rerun the same command to resume (the tasks done are skipped)",
    ]


def shell_command(argv: Sequence[str]) -> str:
    return shlex.join(["python", "-m", "pipelines.c4", *argv])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.dataflow",
        description="Build a C4 variant on Dataflow. Beam options after `--` pass through.",
        allow_abbrev=False)
    parser.add_argument("--variant", required=True, choices=VARIANTS)
    parser.add_argument("--project", required=True, type=arguments.project_id)
    parser.add_argument("--region", required=True, type=arguments.region)
    parser.add_argument("--bucket", type=arguments.gcs_path,
                        help="gs://BUCKET: temp, staging and output go under it unless given")
    parser.add_argument("--temp_location", type=arguments.gcs_path)
    parser.add_argument("--staging_location", type=arguments.gcs_path)
    parser.add_argument("--output", type=arguments.gcs_path)
    parser.add_argument("--dump", action="append", type=dump_name, default=[],
                        help="Common Crawl dump, e.g. CC-MAIN-2019-18 (repeatable)")
    parser.add_argument("--dump_preset", choices=sorted(DUMP_PRESETS))
    parser.add_argument("--cc_base_url", default=DEFAULT_CC_BASE_URL,
                        help="https://data.commoncrawl.org/, s3://commoncrawl/ or a gs:// mirror")
    parser.add_argument("--max_files", type=arguments.positive_int,
                        help="read only the first N WET files in all, in dump order (trial runs)")
    parser.add_argument("--machine_type", default="n2-standard-4", type=arguments.machine_type)
    parser.add_argument("--max_num_workers", default=500, type=arguments.positive_int)
    parser.add_argument("--disk_size_gb", default=50, type=arguments.positive_int)
    parser.add_argument("--no_shuffle_service", action="store_true",
                        help="shuffle on the worker disks instead of the Dataflow Shuffle service")
    parser.add_argument("--experiments", action="append", default=[])
    parser.add_argument("--sdk_container_image",
                        help="custom worker image built from deploy/Dockerfile (recommended)")
    parser.add_argument("--service_account_email")
    # The launcher reads these two before submitting (the pipeline's defaults are pinned URLs);
    # the workers read the WebText URL lists themselves, so those must be on gs:// or https://.
    parser.add_argument("--badwords", type=arguments.launcher_readable_path)
    parser.add_argument("--badwords_dir", type=arguments.launcher_readable_folder,
                        help="multilingual: the folder of the LDNOOBW lists per language "
                             "(default: the pinned URLs)")
    parser.add_argument("--realnews_domains", type=arguments.launcher_readable_path)
    parser.add_argument("--webtext_urls", nargs="+", type=arguments.remote_path, default=[])
    parser.add_argument("--buckets", type=arguments.positive_int,
                        help="URL buckets of the staged run (default: from the input's size)")
    parser.add_argument("--one_job", action="store_true",
                        help="one Dataflow job over the whole input instead of a job per stage: "
                             "no rerun resumes it, a failure costs the whole run (trial runs)")
    # Retired with runs in parts (RETIRED_OPTIONS): the run is staged unless --one_job.
    parser.add_argument("--staged", action=argparse.BooleanOptionalAction, default=None,
                        help="the default; --no-staged (which ran in parts) is retired")
    parser.add_argument("--in_parts", action=argparse.BooleanOptionalAction, default=None,
                        help="retired with runs in parts")
    parser.add_argument("--group_files", type=arguments.positive_int,
                        help="retired with runs in parts")
    parser.add_argument("--groups_per_job", type=arguments.positive_int,
                        help="retired with runs in parts")
    parser.add_argument("--dry-run", "--dry_run", dest="dry_run", action="store_true",
                        help="print the command and the plan instead of submitting the job")
    return parser


def _locations(parser: argparse.ArgumentParser, args: argparse.Namespace, name: str):
    """temp, staging and output paths: given ones win, the rest derive from --bucket."""
    missing = [flag for flag in ("temp_location", "staging_location", "output")
               if getattr(args, flag) is None]
    if missing and args.bucket is None:
        parser.error("give --bucket gs://BUCKET, or all of --temp_location, --staging_location "
                     f"and --output (missing: {', '.join('--' + flag for flag in missing)})")
    return (args.temp_location or f"{args.bucket}/tmp",
            args.staging_location or f"{args.bucket}/staging",
            args.output or f"{args.bucket}/c4/{name}")


def _dumps(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, ...]:
    if bool(args.dump) == bool(args.dump_preset):
        parser.error("give the Common Crawl dumps to read: one or more --dump CC-MAIN-YYYY-WW, "
                     f"or --dump_preset ({', '.join(sorted(DUMP_PRESETS))}), not both")
    # Sorted and without repeats, so the flag order changes neither the input nor the job name.
    return tuple(sorted(set(args.dump or DUMP_PRESETS[args.dump_preset])))


# The list options that are an error where the variant does not read them (pipelines.c4 notes
# and ignores an unread --badwords, which most variants read, so that one command serves them).
_ONLY_WHERE_READ = ("webtext_urls", "realnews_domains", "badwords_dir")


def _check_variant_resources(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The lists given against those the variant reads (the pipeline's VariantConfig.lists)."""
    reads = VARIANT_CONFIGS[args.variant].lists
    if "webtext_urls" in reads and not args.webtext_urls:
        parser.error(f"--variant {args.variant} needs --webtext_urls gs://... (the OpenWebText "
                     "URL lists, copied to Cloud Storage)")
    for option in _ONLY_WHERE_READ:
        if getattr(args, option) and option not in reads:
            readers = [name for name, config in VARIANT_CONFIGS.items() if option in config.lists]
            parser.error(f"--{option} only applies to --variant {' or '.join(readers)}, "
                         f"not {args.variant}")
    if args.badwords and "badwords_dir" in reads:
        parser.error(f"--variant {args.variant} reads a list per language: give --badwords_dir, "
                     "not --badwords")


def _cc_base_url(parser: argparse.ArgumentParser, value: str) -> str:
    if value.startswith(("https://", "s3://")):
        return value
    if value.startswith("gs://"):
        return arguments.gcs_path(value)
    parser.error(f"--cc_base_url {value!r}: expected https://, s3:// or gs://")


def retired_given(args: argparse.Namespace) -> list[str]:
    """The retired options given, as written (RETIRED_OPTIONS' order)."""
    written = {"--no-staged": args.staged is False, "--in_parts": args.in_parts is True,
               "--no-in_parts": args.in_parts is False,
               "--group_files": args.group_files is not None,
               "--groups_per_job": args.groups_per_job is not None}
    return [flag for flag in RETIRED_OPTIONS if written[flag]]


def retired_notice(given: Sequence[str], one_job: bool) -> str:
    """One line naming the retired options given and how the run goes."""
    return (f"note: retired with runs in parts: {', '.join(given)} (a run in pieces runs in "
            "stages; one Dataflow job is --one_job); running "
            + ("one job" if one_job else "in stages"))


def parse_job(argv: Sequence[str]) -> tuple[DataflowJob, bool]:
    """The job an argv describes, and whether it is a dry run. Bad input exits with a message."""
    argv = list(argv)
    extra_beam_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own_argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = _parser()
    args = parser.parse_args(own_argv)
    dumps = _dumps(parser, args)
    _check_variant_resources(parser, args)
    temp, staging, output = _locations(parser, args, job_name(args.variant, dumps, args.max_files))
    # `--no-staged --no-in_parts` was the launcher's one job: it still is.
    one_job = args.one_job or (args.staged is False and args.in_parts is False)
    given = retired_given(args)
    if given:
        print(retired_notice(given, one_job), file=sys.stderr)
    job = DataflowJob(
        variant=args.variant, dumps=dumps, project=args.project, region=args.region,
        temp_location=temp, staging_location=staging, output=output,
        machine_type=args.machine_type, max_num_workers=args.max_num_workers,
        disk_size_gb=args.disk_size_gb, shuffle_service=not args.no_shuffle_service,
        experiments=tuple(args.experiments), sdk_container_image=args.sdk_container_image,
        service_account_email=args.service_account_email, max_files=args.max_files,
        cc_base_url=_cc_base_url(parser, args.cc_base_url),
        badwords=args.badwords, badwords_dir=args.badwords_dir,
        realnews_domains=args.realnews_domains,
        webtext_urls=tuple(args.webtext_urls), one_job=one_job, buckets=args.buckets,
        extra_beam_args=tuple(extra_beam_args))
    return job, args.dry_run


def main(argv: Optional[Sequence[str]] = None) -> None:
    job, dry_run = parse_job(sys.argv[1:] if argv is None else argv)
    argv = pipeline_argv(job)
    if not job.sdk_container_image:
        write_worker_requirements()
    if dry_run:
        print(shell_command(argv))
        print("\n".join(plan_lines(job)))
        return
    from pipelines import c4  # imported late: a dry run needs neither Beam nor the pipeline
    c4.main(argv)


if __name__ == "__main__":
    main()
