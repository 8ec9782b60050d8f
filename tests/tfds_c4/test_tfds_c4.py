"""The t5_c4 TFDS builder: every config built from real WET samples with the DirectRunner, loaded
back with tfds.load, and compared with the standalone pipeline (`pipelines.c4.main`) on the same
input."""
import gzip
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow_datasets as tfds
from apache_beam.options.pipeline_options import PipelineOptions

import tfds_c4
from model.data import inputs, languages
from pipelines import c4
from pipelines.config import PRETRAINING_VARIANTS
from pipelines.filters import mc4
from pipelines.filters.domains import offline_domain_extractor
from pipelines.filters.urls import normalize_url
from tfds_c4.t5_c4 import TFDS_VARIANTS

REPO = pathlib.Path(__file__).resolve().parents[2]
# langdetect reads ~100 pages/s here: one realistic WET file (250 pages) plus the two small real
# ones keep each build to seconds.
SAMPLE_WET = ("wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz",
              "wet/whirlwind-python/whirlwind.warc.wet.gz",
              "wet/eugeneware-warc/CC-MAIN-20140820021334-00006-ip-10-180-136-8.ec2.internal.warc.wet")
# The domain filters run before langdetect, so these two read every sample at little cost (and
# need to: part-0 alone holds no RealNews page in validation).
ALL_WET_CONFIGS = ("realnewslike", "webtextlike")
# At the paper's 0.1%, no English page of these samples falls in validation; 5% gives it a few.
VALIDATION_FRACTION = 0.05
SPLITS = ("train", "validation")


def _link(target: pathlib.Path, link: pathlib.Path):
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _urls_of(wet_path: pathlib.Path) -> list:
    with gzip.open(wet_path, "rb") as wet_file:
        return [line.split(b":", 1)[1].strip().decode() for line in wet_file
                if line.startswith(b"WARC-Target-URI:")]


def _webtext_list(wet_path: pathlib.Path) -> str:
    """The URLs of one sample WET file, spelled as Reddit links often are (http://www., /)."""
    return "\n".join("http://www." + normalize_url(url) + "/" for url in _urls_of(wet_path)) + "\n"


def wet_inputs(config: str, shared_data: pathlib.Path, manual: pathlib.Path):
    """(builder keywords, standalone --input) of a config: all samples, or the manual_dir's."""
    if config in ALL_WET_CONFIGS:
        pattern = str(shared_data / "wet" / "*" / "*")
        return {"wet_files": [pattern]}, pattern
    return {}, str(manual / "wet" / "*")


@pytest.fixture(scope="module")
def manual_dir(shared_data, tmp_path_factory) -> pathlib.Path:
    """A manual_dir in the documented layout, holding the samples (symlinks, no copies)."""
    directory = tmp_path_factory.mktemp("manual")
    for relative in SAMPLE_WET:
        _link(shared_data / relative, directory / "wet" / pathlib.Path(relative).name)
    for name in mc4.BADWORDS_FILES:  # en for the English configs, all for multilingual.
        _link(shared_data / "badwords" / name, directory / "badwords" / name)
    # The samples' RealNews pages are all released C4 validation pages, so they never reach
    # train: the list also names the domains of every fifth CC-MAIN-2019-30 sample page.
    realnews = json.loads((shared_data / "realnews/domain_to_allowed_subdomains.json").read_text())
    extractor = offline_domain_extractor()
    for url in _urls_of(shared_data / SAMPLE_WET[0])[::5]:
        parts = extractor(url)
        realnews[f"{parts.domain}.{parts.suffix}"] = True
    (directory / "realnews").mkdir()
    (directory / "realnews/domain_to_allowed_subdomains.json").write_text(json.dumps(realnews))
    url_list = directory / "openwebtext_urls/sample.txt"
    url_list.parent.mkdir()
    url_list.write_text(_webtext_list(shared_data / SAMPLE_WET[0]))
    return directory


def _download_config(manual: pathlib.Path) -> tfds.download.DownloadConfig:
    return tfds.download.DownloadConfig(
        manual_dir=str(manual), beam_options=PipelineOptions(["--runner=DirectRunner"]))


def build(config: str, data_dir: pathlib.Path, manual: pathlib.Path, **options):
    builder = tfds.builder(f"t5_c4/{config}", data_dir=str(data_dir), **options)
    builder.download_and_prepare(download_config=_download_config(manual))
    return builder


def loaded_pages(config: str, data_dir: pathlib.Path):
    """{split: [record]} read back through tfds.load."""
    splits = tfds.load(f"t5_c4/{config}", data_dir=str(data_dir), split=list(SPLITS))
    return {split: [{name: value.decode() if isinstance(value, bytes) else value.item()
                     for name, value in example.items()}
                    for example in tfds.as_numpy(dataset)]
            for split, dataset in zip(SPLITS, splits)}


def standalone(config: str, wet_input: str, manual: pathlib.Path, output: pathlib.Path):
    """The standalone pipeline's counters and {split: [record]} on the same inputs."""
    argv = ["--variant", config, "--input", wet_input, "--output", str(output),
            "--badwords", str(manual / "badwords/en"),
            "--realnews_domains", str(manual / "realnews/domain_to_allowed_subdomains.json"),
            "--webtext_urls", str(manual / "openwebtext_urls" / "*"),
            "--validation_fraction", str(VALIDATION_FRACTION)]
    counters = c4.main(argv)
    records = {}
    for split in SPLITS:
        records[split] = []
        for path in sorted(output.glob(f"{split}-*.jsonl.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                records[split].extend(json.loads(line) for line in lines)
    return counters, records


def _url_and_text(records):
    return sorted((record["url"], record["text"]) for record in records)


@pytest.fixture(scope="module")
def builds(manual_dir, shared_data, tmp_path_factory):
    """Each config built once through the Python API, with the standalone run beside it."""
    cache = {}

    def get(config: str):
        if config not in cache:
            data_dir = tmp_path_factory.mktemp(f"tfds_{config}")
            options, wet_input = wet_inputs(config, shared_data, manual_dir)
            builder = build(config, data_dir, manual_dir, validation_fraction=VALIDATION_FRACTION,
                            **options)
            expected = standalone(config, wet_input, manual_dir,
                                  tmp_path_factory.mktemp(f"std_{config}"))
            cache[config] = builder, data_dir, expected
        return cache[config]

    return get


def test_configs_are_the_consumer_variants():
    assert TFDS_VARIANTS == ("en", "en.noclean", "en.linededup", "realnewslike", "webtextlike",
                             "en.noblocklist", "multilingual")
    builder_configs = {config.name: config for config in tfds_c4.T5C4.BUILDER_CONFIGS}
    assert list(builder_configs) == list(TFDS_VARIANTS)
    assert "span" in builder_configs["en"].description
    assert "line" in builder_configs["en.linededup"].description


@pytest.mark.parametrize("config", PRETRAINING_VARIANTS)
def test_build_matches_the_standalone_pipeline(builds, config):
    builder, data_dir, (expected_counters, expected_records) = builds(config)
    loaded = loaded_pages(config, data_dir)
    for split in SPLITS:
        assert loaded[split], f"{config}/{split} is empty"
        assert _url_and_text(loaded[split]) == _url_and_text(expected_records[split])
    # The same run, so the same counters for every stage and reason, and they agree with TFDS.
    statistics = tfds_c4.statistics(builder)
    assert statistics == expected_counters
    for split in SPLITS:
        assert builder.info.splits[split].num_examples == statistics["write"][f"pages.written:{split}"]
    train = {normalize_url(record["url"]) for record in loaded["train"]}
    validation = {normalize_url(record["url"]) for record in loaded["validation"]}
    assert not train & validation
    assert len(train) == len(loaded["train"])


def test_multilingual_splits_per_language_match_the_standalone_pipeline(manual_dir, shared_data,
                                                                      tmp_path):
    """t5_c4/multilingual (mC4) on every sample: `tfds.load(..., split="en")` and `"und"` read
    what the standalone job writes to en/ and und/; the languages keyword names the splits."""
    wet_files = [str(shared_data / "wet" / "*" / "*")]
    builder = build("multilingual", tmp_path / "tfds", manual_dir, wet_files=wet_files,
                    languages="en+und", validation_fraction=VALIDATION_FRACTION)
    assert sorted(builder.info.splits) == ["en", "en-validation", "und", "und-validation"]
    output = tmp_path / "standalone"
    c4.main(["--variant", "multilingual", "--input", *wet_files, "--output", str(output),
             "--badwords_dir", str(manual_dir / "badwords"),
             "--validation_fraction", str(VALIDATION_FRACTION)])
    for language in ("en", "und"):
        for split in SPLITS:
            name = mc4.split_name(language, split)
            loaded = [{key: value.decode() for key, value in example.items()
                       if key in ("url", "text", "language")}
                      for example in tfds.as_numpy(tfds.load("t5_c4/multilingual", split=name,
                                                             data_dir=str(tmp_path / "tfds")))]
            expected = [json.loads(line) for path in sorted((output / language).glob(
                f"{split}-*.jsonl.gz")) for line in gzip.open(path, "rt", encoding="utf-8")]
            assert loaded, name
            assert sorted((r["url"], r["text"], r["language"]) for r in loaded) == sorted(
                (r["url"], r["text"], language) for r in expected), name
    # The mT5 vocabulary and pre-training read the same languages from the TFDS build as from
    # the pipeline's folders (model/data/languages.py).
    corpus = languages.languages_of(f"tfds:t5_c4/multilingual@{tmp_path / 'tfds'}", include_und=True)
    assert {name: text.num_examples for name, text in corpus.items()} == {
        name: text.num_examples for name, text in languages.languages_of(str(output), ("en", "und")).items()}
    und_validation = inputs.text_dataset_from_source(corpus["und"].source, corpus["und"].validation_split)
    assert sorted(text.decode() for text in und_validation.as_numpy_iterator()) == sorted(
        json.loads(line)["text"] for path in (output / "und").glob("validation-*.jsonl.gz")
        for line in gzip.open(path, "rt", encoding="utf-8"))
    with pytest.raises(ValueError, match="not mC4's"):
        tfds.builder("t5_c4/multilingual", data_dir=str(tmp_path), languages="en+xx")


def test_loaded_examples_have_every_feature(builds):
    _, data_dir, (_, expected_records) = builds("en.noclean")
    loaded = loaded_pages("en.noclean", data_dir)
    by_url = {record["url"]: record for record in expected_records["train"]}
    for record in loaded["train"]:
        expected = dict(by_url[record["url"]])  # text, url, timestamp, content-type, -length,
        # and the language probability, which TFDS stores as float32.
        expected["language_probability"] = float(np.float32(expected["language_probability"]))
        assert record == expected
    assert all(record["content-length"] == len(record["text"].encode()) for record in
               loaded["train"])


def test_statistics_and_fraction_survive_reloading(builds):
    _, data_dir, (expected_counters, _) = builds("en")
    reloaded = tfds.builder("t5_c4/en", data_dir=str(data_dir))
    assert tfds_c4.statistics(reloaded) == expected_counters
    assert reloaded.info.metadata["validation_fraction"] == VALIDATION_FRACTION
    dropped = expected_counters["clean"]
    assert dropped["pages.dropped:too_few_sentences"] > 0


def test_realnewslike_and_webtextlike_drop_by_domain(builds):
    for config, reason in (("realnewslike", "pages.dropped:not_realnews_domain"),
                           ("webtextlike", "pages.dropped:not_in_webtext_urls")):
        builder, _, _ = builds(config)
        assert tfds_c4.statistics(builder)["domains"][reason] > 0


def _shard_bytes(data_dir: pathlib.Path, config: str):
    version_dir = data_dir / "t5_c4" / config / str(tfds_c4.T5C4.VERSION)
    return {path.name: path.read_bytes() for path in sorted(version_dir.glob("*.tfrecord*"))}


def test_tfds_build_command_line_writes_the_same_bytes_quietly(builds, manual_dir, tmp_path):
    """`tfds build` with our package, the manual_dir and Beam options, as tfds_c4/README.md says.
    It says little (319 lines before): no try of Beam's Prism runner (a download from GitHub),
    no type-hint notes, no README as the description, no complaint about `tfds build`'s own flags
    read as Beam options; what is left is TensorFlow's start-up (before our package is imported),
    TFDS's progress and its print of the DatasetInfo (about 45 lines). A script that loads the
    dataset ends without TensorFlow's teardown TypeError and without Beam's apitools note."""
    _, python_dir, _ = builds("en")
    command = [str(pathlib.Path(sys.executable).parent / "tfds"), "build",
               "--imports", "tfds_c4", f"t5_c4/en/validation_fraction={VALIDATION_FRACTION}",
               "--data_dir", str(tmp_path), "--manual_dir", str(manual_dir),
               "--beam_pipeline_options", "runner=DirectRunner"]
    # As documented: after `make install`, from the project root, with no PYTHONPATH.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    finished = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    cli_shards = _shard_bytes(tmp_path, "en")
    assert cli_shards and cli_shards == _shard_bytes(python_dir, "en")
    printed = finished.stdout + finished.stderr
    for noise in ("prism", "Converting string literal type hint", "Unparseable argument",
                  "tfds_c4/t5_c4.py` defines"):
        assert noise.lower() not in printed.lower(), noise
    assert len(printed.splitlines()) < 80, printed
    load = ("import tensorflow_datasets as tfds, tfds_c4\n"
            f"pages = tfds.load('t5_c4/en', data_dir={str(tmp_path)!r}, split='validation')\n"
            "print(len(list(tfds.as_numpy(pages))))\n")
    loaded = subprocess.run([sys.executable, "-c", load], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert int(loaded.stdout) > 0
    assert "Exception ignored" not in loaded.stderr and "apitools" not in loaded.stderr, \
        loaded.stderr


def test_the_direct_runner_is_pinned_without_its_prism_try_unless_a_runner_is_chosen():
    """Beam 2.77's DirectRunner (direct_runner.py, SwitchingDirectRunner.run_pipeline) first tries
    the Prism runner, downloading it; the builder's runner is the DirectRunner without that try
    when no runner, or the DirectRunner by name, is asked for, with options parsed from nothing."""
    from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
    from tfds_c4.t5_c4 import with_pinned_runner
    for given in (None, tfds.download.DownloadConfig(),
                  _download_config(pathlib.Path("/manual"))):
        pinned = with_pinned_runner(given)
        assert isinstance(pinned.beam_runner, SwitchingDirectRunner)
        assert pinned.beam_runner._is_interactive  # what keeps it off Prism
        assert pinned.beam_options.get_all_options()["runner"] in (None, "DirectRunner")
    assert str(with_pinned_runner(_download_config(pathlib.Path("/manual"))).manual_dir) == "/manual"
    dataflow = tfds.download.DownloadConfig(beam_options=PipelineOptions(["--runner=DataflowRunner"]))
    assert with_pinned_runner(dataflow) is dataflow
    chosen = tfds.download.DownloadConfig(beam_runner=SwitchingDirectRunner())
    assert with_pinned_runner(chosen) is chosen


def test_missing_input_offline_names_the_file_and_where_to_put_it(manual_dir, tmp_path):
    partial = tmp_path / "manual"
    _link(manual_dir / "wet", partial / "wet")
    with pytest.raises(tfds_c4.MissingInputError) as error:
        build("en", tmp_path / "data", partial)
    assert f"bad-words list not found: put it at {partial}/badwords/en" in str(error.value)
    with pytest.raises(tfds_c4.MissingInputError, match="OpenWebText URL lists not found"):
        build("webtextlike", tmp_path / "data", partial, badwords=str(manual_dir / "badwords/en"))
    with pytest.raises(tfds_c4.MissingInputError, match="no file matches .*nowhere"):
        build("en.noclean", tmp_path / "data", partial, wet_files=[str(tmp_path / "nowhere")])


def test_input_without_a_page_in_a_split_says_so(manual_dir, shared_data, tmp_path):
    spanish_only = [str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz")]
    with pytest.raises(tfds_c4.EmptySplitError) as error:
        build("en.noclean", tmp_path, manual_dir, wet_files=spanish_only)
    assert str(error.value).startswith("the build kept no page: train and validation are empty "
                                       "(0 pages in train, 0 in validation)")
    assert "while running" not in str(error.value)


def test_an_empty_train_split_is_named_with_a_fraction_that_fills_both(manual_dir, shared_data,
                                                                       tmp_path, caplog):
    """realnewslike on the released C4 validation pages of the samples: every page kept is in
    validation at the default fraction; the error says train is empty, and the fraction it
    suggests builds. Beam does not log the error's worker traceback first (13 lines of noise
    before the same message)."""
    roundtrip = [str(shared_data / "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz")]
    realnews = str(shared_data / "realnews/domain_to_allowed_subdomains.json")
    with pytest.raises(tfds_c4.EmptySplitError) as error:
        build("realnewslike", tmp_path / "default", manual_dir, wet_files=roundtrip,
              realnews_domains=realnews)
    message = str(error.value)
    assert not [record for record in caplog.records if record.exc_info
                and record.exc_info[0] is tfds_c4.EmptySplitError]
    found = re.match(r"train is empty \(0 pages in train, (\d+) in validation\), and TFDS "
                     r"cannot write an empty split\.", message)
    assert found and int(found[1]) > 1, message
    suggested = re.search(r"pass a smaller validation_fraction: ([0-9.e-]+) gives every split a "
                          r"page of this input \(`tfds build t5_c4/realnewslike/"
                          r"validation_fraction=\1`", message)
    assert suggested, message
    builder = build("realnewslike", tmp_path / "suggested", manual_dir, wet_files=roundtrip,
                    realnews_domains=realnews, validation_fraction=float(suggested[1]))
    examples = {split: builder.info.splits[split].num_examples for split in SPLITS}
    assert min(examples.values()) > 0 and sum(examples.values()) == int(found[1])


def test_the_empty_split_error_gives_advice_that_can_work():
    """A larger fraction for an empty validation, the languages the input has for mC4, and no
    fraction where one page cannot fill two splits."""
    place = tfds_c4.t5_c4.SplitCounts().add
    few = place(500_000_000, 0.001).add(700_000_000, 0.001)  # Both in train at 0.1%.
    message = tfds_c4.t5_c4.empty_split_error({None: few}, (None,), 0.001, "t5_c4/en")
    assert message.startswith("validation is empty (2 pages in train, 0 in validation)")
    assert "pass a larger validation_fraction: 0.6 gives every split a page" in message
    at_suggested = place(500_000_000, 0.6).add(700_000_000, 0.6)
    assert tfds_c4.t5_c4.empty_split_error({None: at_suggested}, (None,), 0.6, "t5_c4/en") is None
    one = place(5, 0.001)
    assert "no validation_fraction gives every split a page" in tfds_c4.t5_c4.empty_split_error(
        {None: one}, (None,), 0.001, "t5_c4/en")
    message = tfds_c4.t5_c4.empty_split_error({"en": at_suggested, "und": few}, ("en", "de"), 0.6,
                                             "t5_c4/multilingual")
    assert message.startswith("de and de-validation are empty (0 pages in train, 0 in validation)")
    assert "builder keyword languages=en+und" in message


def test_bad_options_are_rejected_early(tmp_path):
    with pytest.raises(ValueError, match="validation_fraction"):
        tfds.builder("t5_c4/en", data_dir=str(tmp_path), validation_fraction=0)
    with pytest.raises(ValueError, match="lists of paths"):
        tfds.builder("t5_c4/en", data_dir=str(tmp_path), wet_files="one.wet.gz")


def test_a_finished_runs_folder_is_published_as_it_is(builds, manual_dir, shared_data, tmp_path):
    """builder keyword run_output: the standalone run's folder becomes the dataset without
    reading a WET file again; tfds.load gives the run's records, the dataset keeps its counters
    and validation fraction, and equals the dataset built from the WET files. mC4's language
    folders become its splits (here of a staged run). An unfinished run, a failed one, another
    rule set or an empty folder is refused, saying why."""
    builder, data_dir, (counters, records) = builds("en")
    output = tmp_path / "run"
    assert standalone("en", str(manual_dir / "wet" / "*"), manual_dir, output)[0] == counters
    publish_dir = tmp_path / "published"
    published = build("en", publish_dir, tmp_path / "no_manual_dir", run_output=str(output))
    loaded = loaded_pages("en", publish_dir)
    direct = loaded_pages("en", data_dir)
    for split in SPLITS:
        assert loaded[split] and _url_and_text(loaded[split]) == _url_and_text(records[split])
        assert sorted(map(json.dumps, loaded[split])) == sorted(map(json.dumps, direct[split]))
    assert tfds_c4.statistics(published) == counters == tfds_c4.statistics(builder)
    assert published.info.metadata["validation_fraction"] == VALIDATION_FRACTION

    # A staged run's folder (its tasks' files kept under parts/) publishes as one job's does.
    mc4_output = tmp_path / "mc4_run"
    c4.main(["--variant", "multilingual", "--input", str(shared_data / "wet" / "*" / "*"),
             "--output", str(mc4_output), "--badwords_dir", str(manual_dir / "badwords"),
             "--validation_fraction", str(VALIDATION_FRACTION), "--staged", "--buckets", "2",
             "--workers", "1"])
    assert (mc4_output / "parts" / "write").is_dir()
    mc4_built = build("multilingual", tmp_path / "mc4_published", tmp_path / "no_manual_dir",
                      run_output=str(mc4_output), languages="en+und")
    assert sorted(mc4_built.info.splits) == ["en", "en-validation", "und", "und-validation"]
    und = [example["url"].decode() for example in tfds.as_numpy(tfds.load(
        "t5_c4/multilingual", split="und-validation", data_dir=str(tmp_path / "mc4_published")))]
    assert sorted(und) == sorted(json.loads(line)["url"] for path in (mc4_output / "und").glob(
        "validation-*.jsonl.gz") for line in gzip.open(path, "rt", encoding="utf-8"))

    def refusal(folder, **options):
        with pytest.raises(tfds_c4.MissingInputError) as error:
            build("en", tmp_path / "refused", tmp_path / "no_manual_dir", run_output=str(folder),
                  **options)
        return str(error.value)

    assert ("is en under the paper rules; this build is en under the released rules (builder "
            "keyword rules=paper for the same rules)") in refusal(output, rules="released")
    with pytest.raises(tfds_c4.MissingInputError, match=r"is multilingual under the released "
                       r"rules; this build is en under the paper rules \(build "
                       r"t5_c4/multilingual to publish it\)"):
        build("en", tmp_path / "refused", tmp_path / "no_manual_dir", run_output=str(mc4_output))
    assert "holds no finished run" in refusal(tmp_path / "no_manual_dir")
    stats_file = output / "stats.json"
    finished = json.loads(stats_file.read_text())
    stats_file.write_text(json.dumps({**finished, "progress": {"groups_done": 1}}))
    assert "has not finished" in refusal(output)
    stats_file.write_text(json.dumps({**finished, "error": "no input could be read"}))
    assert "failed: no input could be read" in refusal(output)
