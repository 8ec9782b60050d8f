"""The launchers' dry runs: commands built from arguments, bad arguments refused with a message."""
import ast
import importlib.metadata
import pathlib
import shlex
import shutil
import subprocess
import sys
import tarfile
from typing import Iterator

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from deploy import dataflow, requirements, tpu, worker_env
from pipelines import config as pipeline_config

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE_DATAFLOW_ARGS = ["--project", "my-project", "--region", "us-central1",
                      "--bucket", "gs://my-bucket"]


def option_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def dataflow_argv(*args: str) -> list[str]:
    job, _ = dataflow.parse_job([*BASE_DATAFLOW_ARGS, *args])
    return dataflow.pipeline_argv(job)


def refusal(capsys, parse, argv: list[str]) -> str:
    """The message a launcher prints when it refuses argv (argparse exits with status 2)."""
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


# --- Dataflow -----------------------------------------------------------------------------------

def test_dataflow_dry_run_prints_the_pipeline_command(capsys):
    dataflow.main([*BASE_DATAFLOW_ARGS, "--variant", "en", "--dump", "CC-MAIN-2019-18",
                   "--max_num_workers", "300", "--dry-run"])
    # The command is the first line; the plan follows it.
    printed = shlex.split(capsys.readouterr().out.splitlines()[0])
    assert printed[:3] == ["python", "-m", "pipelines.c4"]
    argv = printed[3:]
    assert option_values(argv, "--variant") == ["en"]
    assert option_values(argv, "--input") == [
        "https://data.commoncrawl.org/crawl-data/CC-MAIN-2019-18/wet.paths.gz"]
    assert option_values(argv, "--cc_base_url") == ["https://data.commoncrawl.org/"]
    assert option_values(argv, "--runner") == ["DataflowRunner"]
    assert option_values(argv, "--project") == ["my-project"]
    assert option_values(argv, "--region") == ["us-central1"]
    assert option_values(argv, "--job_name") == ["c4-en-2019-18"]
    assert option_values(argv, "--temp_location") == ["gs://my-bucket/tmp"]
    assert option_values(argv, "--staging_location") == ["gs://my-bucket/staging"]
    assert option_values(argv, "--output") == ["gs://my-bucket/c4/c4-en-2019-18"]
    assert option_values(argv, "--max_num_workers") == ["300"]
    assert option_values(argv, "--worker_machine_type") == ["n2-standard-4"]
    assert option_values(argv, "--experiments") == ["use_runner_v2", "shuffle_mode=service"]
    assert option_values(argv, "--setup_file") == [str(REPO_ROOT / "setup.py")]
    # setup.py installs the code; the workers' packages are the pipeline extra's pins.
    (requirements_file,) = option_values(argv, "--requirements_file")
    assert pathlib.Path(requirements_file).read_text().splitlines() == (
        requirements.extras_require()["pipeline"])
    assert "--no_save_main_session" in argv


def test_dataflow_options_follow_the_arguments():
    argv = dataflow_argv(
        "--variant", "en.noclean", "--dump", "CC-MAIN-2019-18", "--max_files", "10",
        "--machine_type", "n2-highmem-8", "--disk_size_gb", "100", "--no_shuffle_service",
        "--experiments", "enable_data_sampling", "--sdk_container_image", "gcr.io/p/c4:1",
        "--output", "gs://other-bucket/out", "--badwords", "gs://my-bucket/badwords/en",
        "--cc_base_url", "gs://cc-mirror/",
        "--", "--network", "my-vpc")
    assert option_values(argv, "--max_files") == ["10"]
    assert option_values(argv, "--job_name") == ["c4-en-noclean-2019-18-first10"]
    assert option_values(argv, "--worker_machine_type") == ["n2-highmem-8"]
    assert option_values(argv, "--disk_size_gb") == ["100"]
    assert option_values(argv, "--experiments") == [
        "use_runner_v2", "shuffle_mode=appliance", "enable_data_sampling"]
    assert option_values(argv, "--sdk_container_image") == ["gcr.io/p/c4:1"]
    assert option_values(argv, "--sdk_location") == ["container"]
    assert "--setup_file" not in argv and "--requirements_file" not in argv
    assert option_values(argv, "--output") == ["gs://other-bucket/out"]
    assert option_values(argv, "--badwords") == ["gs://my-bucket/badwords/en"]
    assert option_values(argv, "--input") == [
        "gs://cc-mirror/crawl-data/CC-MAIN-2019-18/wet.paths.gz"]
    assert option_values(argv, "--cc_base_url") == ["gs://cc-mirror"]
    assert argv[-2:] == ["--network", "my-vpc"]


def test_dataflow_argv_is_what_the_pipeline_and_beam_understand():
    from apache_beam.options.pipeline_options import (GoogleCloudOptions, PipelineOptions,
                                                      SetupOptions, WorkerOptions)
    from pipelines import c4
    argv = dataflow_argv("--variant", "webtextlike", "--dump_preset", "webtextlike-paper",
                         "--max_files", "3", "--webtext_urls", "gs://my-bucket/urls/*.gz")
    # The pipeline's own options first; everything it does not know goes to Beam.
    args, beam_args = c4.parser().parse_known_args(argv)
    assert args.variant == "webtextlike" and args.max_files == 3
    assert len(args.input) == 12 and args.webtext_urls == ["gs://my-bucket/urls/*.gz"]
    assert args.output == "gs://my-bucket/c4/" + dataflow.job_name(
        "webtextlike", dataflow.DUMP_PRESETS["webtextlike-paper"], 3)
    options = PipelineOptions(beam_args)
    cloud = options.view_as(GoogleCloudOptions)
    assert (cloud.project, cloud.region) == ("my-project", "us-central1")
    assert cloud.temp_location == "gs://my-bucket/tmp"
    assert options.view_as(WorkerOptions).machine_type == "n2-standard-4"
    assert options.view_as(WorkerOptions).max_num_workers == 500
    assert options.view_as(SetupOptions).save_main_session is False
    assert options.get_all_options()["runner"] == "DataflowRunner"


def test_webtextlike_preset_reads_the_papers_twelve_dumps():
    argv = dataflow_argv("--variant", "webtextlike", "--dump_preset", "webtextlike-paper",
                         "--webtext_urls", "gs://my-bucket/webtext/RS_2019-01.gz")
    inputs = option_values(argv, "--input")
    # --input takes several values: they run until the next option.
    start = argv.index("--input") + 1
    manifests = argv[start:start + 12]
    assert len(manifests) == 12 and inputs[0] == manifests[0]
    assert manifests[0].endswith("/CC-MAIN-2018-34/wet.paths.gz")
    assert manifests[-1].endswith("/CC-MAIN-2019-30/wet.paths.gz")
    assert option_values(argv, "--webtext_urls") == ["gs://my-bucket/webtext/RS_2019-01.gz"]


def test_the_mc4_preset_reads_its_86_dumps_and_the_lists_per_language(shared_data):
    """`--variant multilingual --dump_preset mc4`: the job reads the 86 manifests (listed on
    the workers: pipelines/readers/inputs.py) and the folder of lists per language, and its argv is
    what the pipeline understands."""
    from pipelines import c4
    from pipelines.readers import common_crawl
    argv = dataflow_argv("--variant", "multilingual", "--dump_preset", "mc4",
                         "--badwords_dir", str(shared_data / "badwords"))
    args, _ = c4.parser().parse_known_args(argv)
    assert args.variant == "multilingual" and args.badwords_dir == str(shared_data / "badwords")
    assert args.input == [common_crawl.manifest_url(dump) for dump in common_crawl.MC4_DUMPS]
    assert option_values(argv, "--job_name")[0].startswith(
        "c4-multilingual-2013-20-to-2022-27-86dumps-")


def test_the_dataflow_run_is_staged_and_the_dry_run_prints_each_stage_and_what_it_costs(capsys):
    """On Dataflow the pipeline runs in stages, a job per stage over its unfinished tasks; the
    dry run says each stage's tasks and what a failed job costs at most."""
    from pipelines import c4
    from pipelines.executors import layout
    from pipelines.readers import common_crawl
    args, _ = c4.parser().parse_known_args(dataflow_argv("--variant", "en", "--dump",
                                                         "CC-MAIN-2019-18"))
    assert args.staged and args.in_parts is None
    dataflow.main([*BASE_DATAFLOW_ARGS, "--variant", "en", "--dump", "CC-MAIN-2019-18",
                   "--dry-run"])
    plan = capsys.readouterr().out.splitlines()[1:]
    # A dump makes the buckets bigger, not more.
    buckets = layout.MAX_BUCKETS
    assert 56_000 * common_crawl.REMOTE_WET_FILE_BYTES > buckets * layout.BUCKET_INPUT_BYTES
    assert plan[0].startswith("plan: about 56,000 WET files (1 dump) in stages, kept under "
                              "gs://my-bucket/c4/c4-en-2019-18/parts/: read (1,000 tasks), "
                              f"url ({buckets:,} tasks), spans ({buckets:,} tasks)")
    assert "a Dataflow job per stage over its unfinished tasks" in plan[1]
    shares = layout.cpu_shares(pipeline_config.VARIANTS["en"])
    assert f"url {shares['url']:.0%}" in plan[2] and "rerun the same command" in plan[2]


def test_one_job_is_one_dataflow_job_and_its_dry_run_says_a_failure_costs_the_whole_run(
        capsys):
    from pipelines import c4
    args, _ = c4.parser().parse_known_args(dataflow_argv("--variant", "en", "--dump",
                                                         "CC-MAIN-2019-18", "--one_job"))
    assert args.staged is False and args.in_parts is None
    dataflow.main([*BASE_DATAFLOW_ARGS, "--variant", "en", "--dump", "CC-MAIN-2019-18",
                   "--one_job", "--dry-run"])
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1:] == [
        "plan: one job over about 56,000 WET files; a failure costs the whole run"]
    assert captured.err == ""


@pytest.mark.parametrize("given, notice, plan", [
    # The launcher's --no-staged ran in parts: it runs in stages now.
    (["--no-staged"], "--no-staged", "in stages"),
    (["--no-staged", "--group_files", "10", "--groups_per_job", "2"],
     "--no-staged, --group_files, --groups_per_job", "in stages"),
    (["--in_parts"], "--in_parts", "in stages"),
    # --no-staged --no-in_parts was its one job: it still is.
    (["--no-staged", "--no-in_parts"], "--no-staged, --no-in_parts", "one job"),
])
def test_the_retired_options_of_runs_in_parts_give_one_notice_and_run_in_stages_or_one_job(
        capsys, given, notice, plan):
    dataflow.main([*BASE_DATAFLOW_ARGS, "--variant", "multilingual", "--dump_preset", "mc4",
                   *given, "--dry-run"])
    captured = capsys.readouterr()
    assert captured.err == (f"note: retired with runs in parts: {notice} (a run in pieces runs "
                            "in stages; one Dataflow job is --one_job); running "
                            f"{plan}\n")
    command, first_line = captured.out.splitlines()[:2]
    if plan == "one job":
        assert first_line.startswith("plan: one job over about 4,816,000 WET files")
        assert " --no-staged " in command and "--staged" not in command.replace("--no-staged", "")
    else:
        assert first_line.startswith("plan: about 4,816,000 WET files (86 dumps) in stages")
        assert " --staged " in command
    assert "parts" not in command.replace("/parts/", "") and "group" not in command


def test_job_name_is_a_valid_dataflow_name_fixed_by_the_dump_set():
    dumps = dataflow.DUMP_PRESETS["webtextlike-paper"]
    name = dataflow.job_name("en.linededup", dumps, None)
    assert name == dataflow.job_name("en.linededup", tuple(reversed(dumps)), None)
    assert name != dataflow.job_name("en.linededup", dumps[:-1] + ("CC-MAIN-2019-35",), None)
    assert name.startswith("c4-en-linededup-2018-34-to-2019-30-12dumps-")
    import re
    assert re.fullmatch(r"[a-z]([-a-z0-9]{0,1022}[a-z0-9])?", name)


@pytest.mark.parametrize("bad_args, message", [
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--bucket", "s3://bucket"],
     "not a Cloud Storage path"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--bucket", "gs://Bad_Bucket"],
     "not a Cloud Storage path"),
    (["--variant", "c5", "--dump", "CC-MAIN-2019-18"], "invalid choice: 'c5'"),
    (["--variant", "en", "--dump", "2019-18"], "expected CC-MAIN-YYYY-WW"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-54"], "expected CC-MAIN-YYYY-WW"),
    (["--variant", "en"], "give the Common Crawl dumps to read"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--dump_preset", "c4-paper"], "not both"),
    (["--variant", "webtextlike", "--dump", "CC-MAIN-2019-18"],
     "webtextlike needs --webtext_urls"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--webtext_urls", "gs://my-bucket/u"],
     "--webtext_urls only applies to --variant webtextlike"),
    (["--variant", "webtextlike", "--dump", "CC-MAIN-2019-18",
      "--webtext_urls", "/home/me/RS_2019-01.gz"], "cloud workers cannot read"),
    (["--variant", "realnewslike", "--dump", "CC-MAIN-2019-18",
      "--realnews_domains", "/no/such/domains.json"], "no such file"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18",
      "--realnews_domains", "gs://my-bucket/domains.json"],
     "--realnews_domains only applies to --variant realnewslike"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--badwords_dir", "gs://my-bucket/bw"],
     "--badwords_dir only applies to --variant multilingual"),
    (["--variant", "multilingual", "--dump_preset", "mc4",
      "--badwords", "gs://my-bucket/badwords/en"], "give --badwords_dir, not --badwords"),
    (["--variant", "multilingual", "--dump_preset", "mc4", "--badwords_dir", "/no/such"],
     "no such folder"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--max_num_workers", "0"],
     "must be at least 1"),
    (["--variant", "en", "--dump", "CC-MAIN-2019-18", "--cc_base_url", "ftp://cc/"],
     "expected https://, s3:// or gs://"),
])
def test_dataflow_refuses_bad_arguments_with_a_message(capsys, bad_args, message):
    assert message in refusal(capsys, dataflow.parse_job, [*BASE_DATAFLOW_ARGS, *bad_args])


@pytest.mark.parametrize("variant", list(pipeline_config.VARIANTS))
def test_dataflow_takes_the_lists_its_variant_reads_as_the_pipeline_says(capsys, variant):
    """Which list options a Dataflow job takes follows the pipeline's own VariantConfig.lists:
    each of webtext_urls, realnews_domains and badwords_dir is accepted by the variants that read
    it and refused, naming them, by the others."""
    reads = pipeline_config.VARIANTS[variant].lists
    values = {"webtext_urls": "gs://my-bucket/u", "realnews_domains": "gs://my-bucket/domains.json",
              "badwords_dir": "gs://my-bucket/bw"}
    needed = ["--webtext_urls", values["webtext_urls"]] if "webtext_urls" in reads else []
    for option, value in values.items():
        argv = [*BASE_DATAFLOW_ARGS, "--variant", variant, "--dump", "CC-MAIN-2019-18", *needed]
        if f"--{option}" not in argv:
            argv += [f"--{option}", value]
        if option in reads:
            job, _ = dataflow.parse_job(argv)
            assert getattr(job, option) in (value, (value,))
        else:
            message = refusal(capsys, dataflow.parse_job, argv)
            readers = [name for name, config in pipeline_config.VARIANTS.items()
                       if option in config.lists]
            assert f"--{option} only applies to --variant {' or '.join(readers)}" in message


def test_dataflow_needs_a_bucket_or_every_location(capsys):
    argv = ["--project", "my-project", "--region", "us-central1", "--variant", "en",
            "--dump", "CC-MAIN-2019-18", "--temp_location", "gs://my-bucket/tmp"]
    assert "missing: --staging_location, --output" in refusal(capsys, dataflow.parse_job, argv)
    job, _ = dataflow.parse_job([*argv, "--staging_location", "gs://my-bucket/stage",
                                 "--output", "gs://my-bucket/out"])
    assert (job.temp_location, job.staging_location, job.output) == (
        "gs://my-bucket/tmp", "gs://my-bucket/stage", "gs://my-bucket/out")


# --- Worker environment -------------------------------------------------------------------------

def test_pinned_requirements_leave_out_test_only_packages():
    pins = requirements.pinned_requirements()
    assert "apache-beam==2.77.0" in pins and "tensorflow==2.15.1" in pins
    assert all(requirements.requirement_name(pin) != "pytest" for pin in pins)


HEAVY = {"tensorflow", "torch", "transformers"}


def test_each_extra_is_pinned_and_the_pipeline_extra_brings_no_tensorflow_torch_or_transformers():
    pins = requirements.pinned_requirements()
    extras = requirements.extras_require()
    assert set(extras) == {"pipeline", "tfds", "model", "audit", "export"}
    for extra, listed in extras.items():
        assert set(listed) <= set(pins), extra
        assert set(requirements.pins_of(requirements.BASE)) <= set(listed), extra
    # Every pin serves some install: the largest extra is the whole list.
    assert sorted(extras["export"]) == sorted(pins)
    pipeline = {requirements.requirement_name(pin) for pin in extras["pipeline"]}
    assert {"apache-beam", "warcio", "langdetect", "tldextract", "numpy", "nltk"} <= pipeline
    assert not pipeline & HEAVY
    # Nor through what those packages need, as installed here.
    brought = worker_env.dependency_closure(extras["pipeline"])
    assert "apache-beam" in brought and not {name for name in brought
                                             if name.startswith(tuple(HEAVY))}
    assert {"tensorflow", "tensorflow-datasets"} <= set(
        worker_env.dependency_closure(extras["tfds"]))


# The Pythons setup.py allows that an install meets: the TPU images' 3.10, this project's 3.11
# (the dev venv, Dataflow's workers), and later ones.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# Releases that need Python >= 3.11 (their Requires-Python), pinned here for 3.11 on.
NEED_PYTHON_3_11 = {"pandas==3.0.6", "scipy==1.17.1", "scikit-learn==1.9.1"}


def pins_for_python(pins: list[str], python: str) -> list[str]:
    """The pins whose marker holds for `python` (as pip on such a machine reads them), as
    `name==version`."""
    environment = {"python_version": python, "python_full_version": f"{python}.0"}
    applying = []
    for pin in pins:
        requirement = Requirement(pin)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            applying.append(f"{requirement.name}{requirement.specifier}")
    return applying


def test_every_python_gets_one_pin_of_each_package_and_python_3_10_none_that_needs_3_11():
    pins = requirements.pinned_requirements()
    marked = [pin for pin in pins if ";" in pin]
    assert {pin.split(";")[0] for pin in marked} >= NEED_PYTHON_3_11
    for pin in marked:
        Marker(pin.split(";", 1)[1])  # A marker pip can read.
    names = {requirements.requirement_name(pin) for pin in pins}
    for python in PYTHONS:
        applying = pins_for_python(pins, python)
        assert sorted(requirements.requirement_name(pin) for pin in applying) == sorted(names)
    assert not NEED_PYTHON_3_11 & set(pins_for_python(pins, "3.10"))
    assert NEED_PYTHON_3_11 <= set(pins_for_python(pins, "3.11"))


def test_the_dev_environment_holds_exactly_the_pins_for_its_python():
    """`make install` (pip install -r requirements.txt) on this project's Python 3.11."""
    assert sys.version_info[:2] == (3, 11)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for pin in pins_for_python(requirements.pinned_requirements(exclude=()), here):
        requirement = Requirement(pin)
        # contains: torch's CPU wheel is 2.13.0+cpu, which ==2.13.0 matches as pip does.
        assert requirement.specifier.contains(importlib.metadata.version(requirement.name)), pin


def test_an_unpinned_package_in_an_extra_is_refused():
    with pytest.raises(KeyError, match="not pinned in requirements.txt: tensorflw"):
        requirements.pins_of(["tensorflow", "tensorflw"])


def _module_file(name: str) -> pathlib.Path:
    path = REPO_ROOT.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imported_names(module: str) -> Iterator[str]:
    """Every module an import statement of `module` names, at any depth of its code (a DoFn
    imports inside process(): that runs on the worker too), relative imports resolved."""
    path = _module_file(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def third_party_imports(entry: str, left_out: frozenset = frozenset()) -> set[str]:
    """Top-level names of the packages outside the project and the standard library that the
    project's modules reachable from `entry` import."""
    seen, pending, outside = set(left_out), [entry], set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imported_names(module):
            top = name.split(".")[0]
            if top in requirements.PACKAGES:
                if _module_file(name).is_file():
                    pending.append(name)
            elif top not in sys.stdlib_module_names:
                outside.add(top)
    return outside


CONVERSION_MODULES = frozenset({
    "model.convert.checkpoints", "model.families.t5.hf", "model.families.t5.mesh_tf",
    "model.families.gpt1.hf", "model.families.gpt1.openai", "model.families.bert.hf",
    "model.families.bert.google", "model.families.segabert.pytorch"})


@pytest.mark.parametrize("extra, entry, left_out", [
    ("pipeline", "pipelines.c4", frozenset()),
    ("tfds", "tfds_c4", frozenset()),
    # Checkpoint conversion (model.train's --mode export, python -m model import|export)
    # imports torch and transformers in the functions that convert: that is the export extra's.
    # (model.convert, the former name, imports nothing: it starts the new one in a process.)
    ("model", "model.train", CONVERSION_MODULES),
    ("export", "model.train", frozenset()),
    ("export", "model.convert_command", frozenset()),
])
def test_each_extra_installs_every_package_its_code_imports(extra, entry, left_out):
    """What a worker would fail on at import or in a DoFn, found without running it."""
    from packaging.utils import canonicalize_name
    installed = set(worker_env.dependency_closure(requirements.extras_require()[extra]))
    distributions = importlib.metadata.packages_distributions()
    imported = third_party_imports(entry, left_out)
    assert "numpy" in imported
    missing = {name: distributions.get(name) for name in imported
               if not {canonicalize_name(d) for d in distributions.get(name, [name])} & installed}
    assert not missing, f"the {extra} extra lacks the distributions of {missing}"


def _canonical(pins: list[str]) -> list[str]:
    """Pins as packaging writes them (`name==version; marker`), sorted."""
    return sorted(str(Requirement(pin)) for pin in pins)


def _requires_by_extra(egg_info: pathlib.Path) -> dict[str, list[str]]:
    """requires.txt of an egg-info: install_requires under "", each extra under its name, a
    pin of a `[extra:marker]` section with its marker (_canonical)."""
    sections, current, marker = {"": []}, "", ""
    for line in (egg_info / "requires.txt").read_text().splitlines():
        if line.startswith("["):
            current, _, marker = line.strip("[]").partition(":")
            sections.setdefault(current, [])
        elif line:
            sections[current].append(f"{line}; {marker}" if marker else line)
    return {extra: _canonical(pins) for extra, pins in sections.items()}


def _egg_info(source: pathlib.Path, egg_base: pathlib.Path) -> pathlib.Path:
    egg_base.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(egg_base)],
                   cwd=source, check=True, capture_output=True)
    (egg_info,) = egg_base.glob("*.egg-info")
    return egg_info


def expected_requires() -> dict[str, list[str]]:
    return {extra: _canonical(pins) for extra, pins in
            {"": requirements.pins_of(requirements.BASE), **requirements.extras_require()}.items()}


def test_sdist_for_dataflow_workers_carries_code_and_pins(tmp_path):
    """Dataflow runs `setup.py sdist` here and pip-installs the tarball on each worker."""
    # --egg-base keeps the build metadata out of the checkout.
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path),
                    "sdist", "--dist-dir", str(tmp_path), "--formats", "gztar"],
                   cwd=REPO_ROOT, check=True, capture_output=True)
    (tarball,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(tarball) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (source,) = (tmp_path / "unpacked").iterdir()
    for package in requirements.PACKAGES:
        assert (source / package / "__init__.py").is_file()
    assert (source / "model" / "gin" / "pretrain.gin").is_file()
    # What a worker does with it: run setup.py from the unpacked sdist, away from this checkout.
    assert _requires_by_extra(_egg_info(source, tmp_path / "worker")) == expected_requires()


def replay_copy_steps(dockerfile: str, context: pathlib.Path) -> None:
    """Builds in `context` what the Dockerfile's COPY steps put in its WORKDIR."""
    for line in dockerfile.splitlines():
        if not line.startswith("COPY "):
            continue
        *sources, destination = line.split()[1:]
        for source in sources:
            source_path = REPO_ROOT / source
            assert source_path.exists(), f"Dockerfile copies missing {source}"
            target = context / destination / (source_path.name if destination.endswith("/")
                                               else "")
            if source_path.is_dir():
                shutil.copytree(source_path, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source_path, target)


def test_worker_image_installs_and_runs_the_job_with_only_the_pipeline_extra(shared_data,
                                                                              tmp_path):
    """Rebuild the Dockerfile's COPY steps in a folder, install the project from it into an
    environment that holds only the `pipeline` extra (as the image's pip does), and run the job
    there on a sample WET file."""
    context = tmp_path / "image"
    replay_copy_steps((REPO_ROOT / "deploy" / "Dockerfile").read_text(), context)
    # The image holds every package setup.py installs from the checkout.
    image_egg_info = _egg_info(context, tmp_path / "image-egg")
    checkout_egg_info = _egg_info(REPO_ROOT, tmp_path / "checkout-egg")
    assert ((image_egg_info / "top_level.txt").read_text().split()
            == (checkout_egg_info / "top_level.txt").read_text().split())
    assert _requires_by_extra(image_egg_info) == expected_requires()
    # The image's dependency layer installs the extra `python -m deploy.requirements` lists.
    listed = subprocess.run([sys.executable, "-m", "deploy.requirements", "pipeline"],
                            cwd=context, check=True, capture_output=True, text=True).stdout
    assert listed.splitlines() == requirements.extras_require()["pipeline"]

    env = worker_env.create(tmp_path / "worker", "pipeline")
    worker_env.install_project(env, context)
    sample = shared_data / "wet" / "realistic" / "CC-MAIN-2019-30-part-0.warc.wet.gz"
    output = tmp_path / "out"
    # From an empty folder: only what the environment installs is importable.
    finished = subprocess.run(
        [str(env.python), "-m", "pipelines.c4", "--variant", "en", "--input", str(sample),
         "--badwords", str(shared_data / "badwords" / "en"), "--output", str(output)],
        cwd=tmp_path / "worker", env=env.environ(), capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert sorted(output.glob("train-*.jsonl.gz")) and (output / "stats.json").is_file()
    # The environment is lean: TensorFlow is not there, and the code came from the image.
    probe = subprocess.run(
        [str(env.python), "-c", "import importlib.util as u, pipelines; "
         "print(u.find_spec('tensorflow') is None, pipelines.__file__)"],
        cwd=tmp_path / "worker", env=env.environ(), capture_output=True, text=True, check=True)
    absent, location = probe.stdout.split()
    assert absent == "True" and location.startswith(str(env.root))


# --- TPU ----------------------------------------------------------------------------------------

BASE_TPU_ARGS = ["--project", "my-project", "--zone", "europe-west4-a", "--tpu_name", "t5-run",
                 "--bucket", "gs://my-bucket", "--vocabulary", "gs://my-bucket/vocab/spm.model"]


def tpu_commands(*args: str) -> list[list[str]]:
    run, stages, _ = tpu.parse_run([*BASE_TPU_ARGS, *args])
    return tpu.commands(run, stages)


def remote_script(command: list[str]) -> str:
    (script,) = [arg[len("--command="):] for arg in command if arg.startswith("--command=")]
    return script


def test_tpu_dry_run_prints_create_install_and_train(capsys):
    tpu.main([*BASE_TPU_ARGS, "--accelerator_type", "v3-8", "--size", "small",
              "--variant", "en", "--dry-run"])
    printed = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    create, archive, copy, install, train = printed
    assert create[:6] == ["gcloud", "compute", "tpus", "tpu-vm", "create", "t5-run"]
    assert "--accelerator-type=v3-8" in create
    assert "--version=tpu-vm-tf-2.15.1-se" in create
    assert {"--project=my-project", "--zone=europe-west4-a"} <= set(create)
    assert archive[:2] == ["git", "archive"]
    assert copy[4] == "scp" and "--worker=all" in copy
    assert install[4] == "ssh" and "--worker=all" in install
    assert "tensorflow-text==2.15.0" in remote_script(install)
    # The model extra: training's packages, not the Hugging Face export's.
    assert "mesh-tensorflow==0.1.21" in remote_script(install)
    assert "torch==" not in remote_script(install) and "transformers==" not in remote_script(install)
    assert train[4] == "ssh" and "--worker=0" in train
    assert ("gcloud storage cp gs://my-bucket/vocab/spm.model vocabulary.model && "
            in remote_script(train))
    trainer = shlex.split(remote_script(train).split("nohup ", 1)[1].split(" > ", 1)[0])
    assert trainer[:4] == ["python3", "-m", "model", "pretrain"]
    assert option_values(trainer, "--model_dir") == ["gs://my-bucket/models/small-en"]
    assert option_values(trainer, "--gin_file") == ["sizes/small.gin",
                                                    "architectures/encoder_decoder.gin", "tpu.gin"]
    assert option_values(trainer, "--gin_param") == [
        'DataConfig.source="tfds:t5_c4/en@gs://my-bucket/tensorflow_datasets"',
        'DataConfig.vocabulary="vocabulary.model"',
        'MeshConfig.mesh_shape="model:1,batch:8"',
        'TrainConfig.tpu="local"',
        "TrainConfig.train_steps=524288",
    ]


def test_the_tpu_dry_run_imports_no_tensorflow():
    """A dry run only prints commands: it reads gin files and the families' launch facts, never
    TensorFlow or Mesh TensorFlow (seconds, and it runs where neither is installed)."""
    wrapper = ("import sys; from deploy.tpu import main; main(sys.argv[1:]); "
               "print(' '.join(sorted(sys.modules)))")
    probe = subprocess.run(
        [sys.executable, "-c", wrapper, *BASE_TPU_ARGS, "--accelerator_type", "v3-8",
         "--size", "small", "--dry-run"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    *commands, modules = probe.stdout.splitlines()
    assert commands[0].startswith("gcloud compute tpus tpu-vm create")
    assert not {"tensorflow", "mesh_tensorflow"} & set(modules.split())


def shell_commands(script: str) -> list[list[str]]:
    """The words of each command of a `;`-separated script, as the remote shell reads them."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    commands, words = [], []
    for token in lexer:
        if token == ";":
            commands.append(words)
            words = []
        else:
            words.append(token)
    return [*commands, words]


def pip_installs(script: str) -> list[list[str]]:
    """The arguments of each `python3 -m pip install --quiet` of a script."""
    pip = ["python3", "-m", "pip", "install", "--quiet"]
    return [words[len(pip):] for words in shell_commands(script) if words[:len(pip)] == pip]


def test_install_keeps_the_tpu_images_tensorflow_and_checks_it():
    script = tpu.install_script(requirements.pinned_requirements())
    first_pip, no_deps_pip = pip_installs(script)
    assert " tensorflow==" not in script and "pytest" not in script
    assert "mesh-tensorflow==0.1.21" in first_pip and not any(
        word.startswith("tensorflow-text") for word in first_pip)
    assert no_deps_pip == ["--no-deps", "tensorflow-text==2.15.0", "."]
    assert "grep -Fqx 2.15.1" in script
    assert "'" not in script  # it travels inside a single-quoted ssh --command


def test_the_tpu_install_line_gives_python_3_10_only_releases_it_can_install(capsys):
    """The TPU images run Python 3.10: the host's pip reads each pin's marker, so the printed
    line carries the model extra's pins with their markers, one shell word each."""
    tpu.main([*BASE_TPU_ARGS, "--accelerator_type", "v3-8", "--size", "small",
              "--variant", "en", "--dry-run", "--stages", "install"])
    *_, install = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    (pins, _) = pip_installs(remote_script(install))
    model = requirements.extras_require()["model"]
    assert pins == [pin for pin in model
                    if requirements.requirement_name(pin) not in {"tensorflow", "tensorflow-text"}]
    assert any(";" in pin for pin in pins)
    on_tpu = pins_for_python(pins, "3.10")
    assert {"pandas==2.3.3", "scipy==1.15.3", "scikit-learn==1.7.2"} <= set(on_tpu)
    assert not NEED_PYTHON_3_11 & set(on_tpu)
    assert NEED_PYTHON_3_11 <= set(pins_for_python(pins, "3.11"))


def test_pod_slice_uses_the_pod_image_and_the_slice_name():
    create, train = tpu_commands("--accelerator_type", "v3-256", "--size", "large",
                                 "--variant", "realnewslike", "--model_dir", "gs://my-bucket/m",
                                 "--stages", "create,train")
    assert "--version=tpu-vm-tf-2.15.1-pod-se" in create
    script = remote_script(train)
    assert "TPU_LOAD_LIBRARY=0" in script
    assert r'TrainConfig.tpu=\"t5-run\"' in script and "--model_dir gs://my-bucket/m" in script
    assert r'MeshConfig.mesh_shape=\"model:8,batch:32\"' in script


def test_the_launcher_plans_each_family_as_model_tpu_launch_says(monkeypatch):
    """deploy/tpu keeps no family list of its own: each entry of model/tpu_launch.py (sizes,
    pre-training files, vocabulary, parallelism) is a family the launcher plans, under its
    package's name, and a package of the registry (the one lookup by package, as
    model.convert's) whose families build the architectures the entry names."""
    from model import families
    from model import tpu_launch
    from model.tpu_launch import TPULaunch
    built_by_package = {}
    for family in families.REGISTRY.families:
        built_by_package.setdefault(families.package_of(family), set()).update(
            family.architectures)
    assert set(tpu.launched_families()) == set(tpu_launch.TPU_LAUNCHES)
    assert set(tpu_launch.TPU_LAUNCHES) <= set(built_by_package)
    for package, launch in tpu_launch.TPU_LAUNCHES.items():
        assert set(launch.architectures) <= built_by_package[package]
    assert tpu.DEFAULT_FAMILY == "t5" and tpu.ARCHITECTURE_FAMILIES == {
        "gpt1": "gpt1", "bert": "bert", "segabert": "segabert"}

    monkeypatch.setitem(tpu_launch.TPU_LAUNCHES, "toy", TPULaunch(
        "bert", ("bert/pretrain_128.gin",), 30_000, architectures=("toy",)))
    toy = tpu.launched_families()["toy"]
    assert (toy.launch.architectures, toy.launch.vocab_size, toy.launch.pretrain_gin) == (
        ("toy",), 30_000, ("bert/pretrain_128.gin",))
    assert "base" in toy.sizes() and toy.batch_sequences() == 256


@pytest.mark.parametrize("accelerator, family, size", [
    (accelerator, family, size)
    for accelerator in ("v2-8", "v3-8", "v3-32", "v3-256", "v4-64", "v4-512")
    for family in tpu.FAMILIES for size in tpu.FAMILIES[family].sizes()])
def test_mesh_plan_covers_every_device_and_splits_the_papers_batch(accelerator, family, size):
    slice_ = tpu.accelerator_type(accelerator)
    chosen = tpu.named_size(family, size)
    # The family's batch: T5's 128, GPT-1's 64, BERT's and SegaBERT's 256 sequences.
    sequences = {"t5": 128, "gpt1": 64, "bert": 256, "segabert": 256}[family]
    # The vocabulary the layout splits over `model`: T5's padded SentencePiece, GPT-1's BPE,
    # BERT's WordPiece.
    vocab_size = {"t5": 32_128, "gpt1": 40_478, "bert": 30_522, "segabert": 30_522}[family]
    assert tpu.FAMILIES[family].launch.vocab_size == vocab_size
    needed = slice_.devices // sequences
    if needed > 1 and vocab_size % needed:
        # The batch forces more model parallelism than the vocabulary divides.
        with pytest.raises(ValueError, match=f"{vocab_size:,} vocabulary ids"):
            tpu.mesh_plan(slice_, chosen)
        return
    plan = tpu.mesh_plan(slice_, chosen)
    assert plan.model_parallelism * plan.data_parallelism == slice_.devices
    assert plan.data_parallelism * plan.sequences_per_replica == sequences
    assert chosen.num_heads % plan.model_parallelism == 0
    assert vocab_size % plan.model_parallelism == 0
    assert plan.mesh_shape == f"model:{plan.model_parallelism},batch:{plan.data_parallelism}"


def test_mesh_plan_uses_model_parallelism_once_devices_outnumber_sequences():
    small, gpt1 = tpu.named_size("t5", "small"), tpu.named_size("gpt1", "base")
    assert tpu.mesh_plan(tpu.accelerator_type("v3-8"), small).mesh_shape == "model:1,batch:8"
    # v4 counts TensorCores; a chip (two cores) is one device, so v4-64 has 32 devices.
    assert tpu.mesh_plan(tpu.accelerator_type("v4-64"), small).mesh_shape == "model:1,batch:32"
    assert tpu.mesh_plan(tpu.accelerator_type("v3-256"), small).mesh_shape == (
        "model:2,batch:128")
    # GPT-1's 64 sequences: 128 devices need model parallelism 2.
    assert tpu.mesh_plan(tpu.accelerator_type("v3-128"), gpt1).mesh_shape == "model:2,batch:64"


def test_mesh_plan_refuses_model_parallelism_the_vocabulary_does_not_divide():
    """GPT-1's 64 sequences on 256 devices need model parallelism 4; its 40,478 ids (2 x 20,239)
    split over 2 at most, so the launcher names the largest slice that works (128 devices)."""
    gpt1 = tpu.named_size("gpt1", "base")
    for accelerator in ("v3-256", "v4-512"):
        with pytest.raises(ValueError, match=r"model parallelism 4.*not divisible: 40,478 "
                                             r"vocabulary ids.*at most 128 devices"):
            tpu.mesh_plan(tpu.accelerator_type(accelerator), gpt1)
    assert tpu.mesh_plan(tpu.accelerator_type("v3-128"), gpt1).model_parallelism == 2


def test_delete_stage_alone_only_deletes():
    (delete,) = tpu_commands("--accelerator_type", "v3-8", "--size", "small",
                             "--stages", "delete")
    assert delete[4:6] == ["delete", "t5-run"] and "--quiet" in delete


@pytest.mark.parametrize("bad_args, message", [
    (["--accelerator_type", "v5p-8", "--size", "small"], "not a TPU type this launcher supports"),
    (["--accelerator_type", "v3-12", "--size", "small"], "power of two from 8 to 2048"),
    (["--accelerator_type", "v3-8", "--size", "xl"], "t5 has no size 'xl'"),
    (["--accelerator_type", "v3-8", "--family", "gpt1", "--size", "large"],
     "gpt1 has no size 'large': choose one of tiny, base"),
    (["--accelerator_type", "v3-8", "--family", "gpt1", "--size", "model/gin/bert/base.gin"],
     "is a bert size, not gpt1"),
    (["--accelerator_type", "v3-8", "--size", "model/gin/gpt1/finetune.gin"],
     "binds no ModelConfig sizes"),
    (["--accelerator_type", "v3-8", "--size", "/etc/missing.gin"], "not found"),
    (["--accelerator_type", "v3-8", "--size", "small", "--variant", "multilingual"],
     "invalid choice: 'multilingual'"),
    (["--accelerator_type", "v3-2048", "--size", "base"], "cannot be laid out on v3-2048"),
    (["--accelerator_type", "v3-256", "--family", "gpt1", "--size", "base"],
     "not divisible: 40,478 vocabulary ids"),
    (["--accelerator_type", "v3-8", "--size", "small", "--stages", "create,launch"],
     "unknown stage(s) launch"),
    (["--accelerator_type", "v3-8", "--size", "small", "--model_dir", "/local/dir"],
     "not a Cloud Storage path"),
    (["--accelerator_type", "v3-8", "--size", "small", "--model_dir", "gs://my-bucket/a$b"],
     "use only letters, digits"),
])
def test_tpu_refuses_bad_arguments_with_a_message(capsys, bad_args, message):
    assert message in refusal(capsys, tpu.parse_run, [*BASE_TPU_ARGS, *bad_args])


def test_tpu_needs_a_bucket_or_both_directories(capsys):
    argv = ["--project", "my-project", "--zone", "europe-west4-a", "--tpu_name", "t5-run",
            "--accelerator_type", "v3-8", "--size", "small", "--model_dir", "gs://my-bucket/m",
            "--vocabulary", "gs://my-bucket/spm.model"]
    assert "both --model_dir and --tfds_data_dir" in refusal(capsys, tpu.parse_run, argv)


def test_training_command_configures_the_real_trainer():
    """The gin files and bindings the TPU host receives parse into the trainer's configs."""
    import gin
    from model.trainer import runs
    from model.trainer.mesh import DEFAULT_LAYOUT, MeshConfig
    from model.trainer.model_config import ModelConfig
    from model.trainer.model_fn import PrecisionConfig
    (command,) = tpu_commands("--accelerator_type", "v3-32", "--size", "base",
                              "--train_steps", "1000", "--stages", "train")
    words = shlex.split(remote_script(command).split("nohup ", 1)[1].split(" > ", 1)[0])
    try:
        runs.parse_gin(option_values(words, "--gin_file"), option_values(words, "--gin_param"))
        mesh, training, data = MeshConfig(), runs.TrainConfig(), runs.DataConfig()
        precision = PrecisionConfig()
    finally:
        gin.clear_config()
    # The layout is the trainer's one default (model/trainer/mesh.py): the launcher keeps no copy of
    # it.
    assert mesh.mesh_shape == "model:2,batch:16" and mesh.layout == DEFAULT_LAYOUT
    assert not [p for p in option_values(words, "--gin_param") if p.startswith("MeshConfig.layout")]
    # T5's precision on TPUs, from model/gin/tpu.gin.
    assert (precision.activation_dtype, precision.master_dtype) == ("bfloat16", "bfloat16")
    assert (training.use_tpu, training.tpu, training.train_steps) == (True, "t5-run", 1000)
    # The launcher's plan and the trainer read the same size and batch from model/gin.
    assert ModelConfig().num_heads == tpu.named_size("t5", "base").num_heads == 12
    assert training.tokens_per_batch // data.inputs_length == \
        tpu.FAMILIES["t5"].batch_sequences() == 128
    assert data.source == "tfds:t5_c4/en@gs://my-bucket/tensorflow_datasets"
    assert data.vocabulary == "vocabulary.model"


def test_readme_mesh_table_is_what_the_launcher_computes():
    readme = (REPO_ROOT / "deploy" / "README.md").read_text()
    [header] = [line for line in readme.splitlines() if line.startswith("| TPU | devices | hosts |")]
    sizes = [cell.strip() for cell in header.strip("|").split("|")[3:]]
    assert set(sizes) <= set(tpu.FAMILIES["t5"].sizes()) and "base" in sizes
    rows = [line.strip("|").split("|") for line in readme.splitlines()
            if line.startswith("| v") and "`model:" in line]
    assert len(rows) >= 5
    for accelerator, devices, hosts, *cells in rows:
        slice_ = tpu.accelerator_type(accelerator.strip())
        assert (int(devices), int(hosts)) == (slice_.devices, slice_.hosts)
        for size, cell in zip(sizes, cells):
            try:
                plan = tpu.mesh_plan(slice_, tpu.named_size("t5", size))
                expected = f"`{plan.mesh_shape}` ({plan.sequences_per_replica})"
            except ValueError:
                expected = "n/a"
            assert cell.strip() == expected, (accelerator, size)


def trainer_words(*args: str) -> list[str]:
    (command,) = tpu_commands(*args, "--stages", "train")
    return shlex.split(remote_script(command).split("nohup ", 1)[1].split(" > ", 1)[0])


@pytest.mark.parametrize("family, size, heads, layers", [
    ("gpt1", "base", 12, 12), ("bert", "base", 12, 12), ("bert", "large", 16, 24),
    ("segabert", "base", 12, 12)])
def test_each_familys_training_command_configures_the_real_trainer(family, size, heads, layers):
    """GPT-1, BERT and SegaBERT: the size, batch and steps the TPU host's trainer gets are the
    family's gin files' (read as the trainer reads them: pretrain.gin first, --mode pretrain's)."""
    import gin
    import model.families  # noqa: F401  (registers the families' gin configurables)
    from model.trainer import runs, schedules
    from model.trainer.model_config import ModelConfig
    from model.trainer.model_fn import OptimizationConfig
    words = trainer_words("--accelerator_type", "v3-32", "--family", family, "--size", size,
                          "--train_steps", "1000", "--vocabulary", "gs://my-bucket/vocab.txt")
    assert option_values(words, "--model_dir") == [f"gs://my-bucket/models/{family}-{size}-en"]
    gin_files = option_values(words, "--gin_file")
    assert gin_files[0] == f"{family}/{size}.gin" and gin_files[-1] == "tpu.gin"
    try:
        runs.parse_gin(["pretrain.gin", *gin_files], option_values(words, "--gin_param"))
        model, training, data = ModelConfig(), runs.TrainConfig(), runs.DataConfig()
        optimization = OptimizationConfig()
        schedule = gin.query_parameter("OptimizationConfig.learning_rate_schedule")
        # No gin file ends the schedule: the trainer gives it the run's steps.
        with pytest.raises(ValueError):
            gin.query_parameter(f"{schedule.selector}.total_steps")
    finally:
        gin.clear_config()
    assert (model.architecture, model.num_heads, model.num_layers) == (family, heads, layers)
    chosen = tpu.named_size(family, size)
    assert model.num_heads == chosen.num_heads
    sequences = training.tokens_per_batch // max(data.inputs_length, data.targets_length)
    assert sequences == tpu.FAMILIES[family].batch_sequences() == \
        {"gpt1": 64, "bert": 256, "segabert": 256}[family]
    plan = tpu.mesh_plan(tpu.accelerator_type("v3-32"), chosen)
    assert f'MeshConfig.mesh_shape="{plan.mesh_shape}"' in option_values(words, "--gin_param")
    assert training.train_steps == 1000 and training.use_tpu
    # A WordPiece vocab .txt keeps its extension on the TPU host.
    assert data.vocabulary == "vocabulary.txt"
    # The decays follow --train_steps; BERT's phase 1 trains 90% of its schedule.
    span = schedules.span(0, training.train_steps, optimization.schedule_part)
    assert span.total_steps == {"gpt1": 1000, "bert": 1111, "segabert": 1000}[family]


def test_default_steps_are_the_familys_and_a_size_file_names_its_family():
    by_name = trainer_words("--accelerator_type", "v3-8", "--family", "gpt1", "--size", "base")
    by_file = trainer_words("--accelerator_type", "v3-8", "--size", "model/gin/gpt1/base.gin")
    assert by_name == by_file
    assert "TrainConfig.train_steps=524288" in option_values(by_name, "--gin_param")
    segabert = trainer_words("--accelerator_type", "v3-8", "--family", "segabert", "--size", "base")
    assert "TrainConfig.train_steps=500000" in option_values(segabert, "--gin_param")
    bert = trainer_words("--accelerator_type", "v3-8", "--family", "bert", "--size", "large")
    assert "TrainConfig.train_steps=900000" in option_values(bert, "--gin_param")  # phase 1
    assert option_values(bert, "--gin_file") == ["bert/large.gin", "bert/pretrain_128.gin",
                                                 "tpu.gin"]
