"""A run's output folder is a Hugging Face dataset (pipelines/writers/dataset_card.py): `datasets`
loads it offline, as JSON lines and as Parquet (`--format parquet`,
pipelines/writers/parquet_shards.py), with the shards' records; a Parquet run is its JSON-lines
run record for record, and writes the same bytes again in stages; the card names exactly the
files present."""
import datetime
import fnmatch
import gzip
import io
import json
import pathlib

import pyarrow.parquet as pq
import pytest
import yaml

from pipelines import c4, counters
from pipelines.config import variant
from pipelines.page import Page
from pipelines.writers import dataset_card, output, parquet_shards
from tests.support.outputs import assert_same_output
from tests.support.variant_runs import variant_args
from tfds_c4 import published

FORMATS = (output.JSONL, output.PARQUET)


@pytest.fixture(scope="module")
def runs(one_job):
    """One-job runs on the shared samples by (variant, format): their output folders (the
    session's references, tests/conftest.py)."""
    def of(name, shard_format, *extra):
        return one_job(name, extra=("--format", shard_format, *extra))
    return of


@pytest.fixture(scope="module")
def load_dataset(tmp_path_factory):
    """datasets.load_dataset with nothing from the network or ~/.cache: offline, its caches in
    a temporary folder."""
    home = tmp_path_factory.mktemp("hf_home")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"HF_HOME": home, "HF_DATASETS_CACHE": home / "datasets",
                            "HF_MODULES_CACHE": home / "modules", "HF_DATASETS_OFFLINE": "1",
                            "HF_HUB_OFFLINE": "1"}.items():
            patch.setenv(name, str(value))
        import datasets
        patch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
        patch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", home / "datasets")
        patch.setattr(datasets.config, "HF_MODULES_CACHE", home / "modules")

        def load(folder, *args, **kwargs):
            return datasets.load_dataset(str(folder), *args, cache_dir=str(home / "datasets"),
                                         **kwargs)
        yield load


def shard_records(path: pathlib.Path) -> list:
    """A shard's records, read without the pipeline's code."""
    if path.name.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]


def split_records(folder: pathlib.Path, split: str, shard_format: str) -> list:
    return [record for path in sorted(folder.glob(output.shard_glob(split, shard_format)))
            for record in shard_records(path)]


def as_loaded(record: dict) -> dict:
    """A record as `datasets` gives it: the card types `timestamp` as a UTC time."""
    return {**record, "timestamp": datetime.datetime.fromisoformat(record["timestamp"])}


def output_files(folder: pathlib.Path) -> list:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def front_matter(folder: pathlib.Path) -> dict:
    text = (folder / dataset_card.CARD_FILE).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


@pytest.mark.parametrize("shard_format", FORMATS)
def test_load_dataset_reads_a_runs_folder_with_its_records(runs, load_dataset, shard_format):
    """The one config, `default`, loads with no name: train and validation, row for row the
    shards' records in the shards' order, typed as the card says."""
    folder = runs("en", shard_format)
    files = output_files(folder)
    loaded = load_dataset(folder)
    assert output_files(folder) == files  # Its caches are elsewhere.
    assert sorted(loaded) == ["train", "validation"]
    for split in ("train", "validation"):
        expected = split_records(folder, split, shard_format)
        assert expected and loaded[split].to_list() == [as_loaded(each) for each in expected]
    features = loaded["train"].features
    assert (features["content-length"].dtype, features["language_probability"].dtype,
            features["text"].dtype) == ("int64", "float64", "string")


@pytest.mark.parametrize("shard_format", FORMATS)
def test_load_dataset_reads_each_language_of_mc4_as_a_config(runs, load_dataset, shard_format):
    """mC4: a config per language folder, named as the folder (`no` too, which bare YAML would
    read as false); a split with no page (one empty file) is not in its config."""
    folder = runs("multilingual", shard_format)
    validation = load_dataset(folder, "en", split="validation")
    assert validation.to_list() == [as_loaded(each) for each in
                                    split_records(folder / "en", "validation", shard_format)]
    norwegian = load_dataset(folder, "no")
    assert list(norwegian) == ["train"]  # Its validation split holds no page on the samples.
    assert norwegian["train"].to_list() == [
        as_loaded(each) for each in split_records(folder / "no", "train", shard_format)]


def test_a_parquet_run_is_its_json_lines_run_record_for_record(runs):
    jsonl, parquet = runs("multilingual", output.JSONL), runs("multilingual", output.PARQUET)
    shards = [name for name in output_files(jsonl) if name.endswith(".jsonl.gz")]
    assert shards and [name for name in output_files(parquet) if name.endswith(".parquet")] == [
        name[:-len(".jsonl.gz")] + ".parquet" for name in shards]
    for name in shards:
        assert shard_records(parquet / (name[:-len(".jsonl.gz")] + ".parquet")) == \
            shard_records(jsonl / name)
    assert (parquet / "stats.json").read_bytes() == (jsonl / "stats.json").read_bytes()
    configs = [json.loads((folder / "run_config.json").read_text()) for folder in (jsonl, parquet)]
    assert [each.pop("format") for each in configs] == ["jsonl", "parquet"]
    assert configs[0] == configs[1]


def test_a_staged_parquet_run_writes_the_one_job_runs_bytes(runs, shared_data, tmp_path):
    c4.main(variant_args(shared_data, "multilingual") + [
        "--output", str(tmp_path), "--format", "parquet", "--staged", "--workers", "2",
        "--buckets", "3"])
    assert_same_output(tmp_path, runs("multilingual", output.PARQUET))


def test_a_parquet_run_in_stages_writes_the_one_job_runs_bytes_and_refuses_another_format(
        runs, shared_data, tmp_path):
    args = variant_args(shared_data, "en") + ["--output", str(tmp_path), "--staged",
                                              "--read_files", "2"]
    c4.main(args + ["--format", "parquet"])
    assert_same_output(tmp_path, runs("en", output.PARQUET))
    with pytest.raises(SystemExit, match="another configuration.*format"):
        c4.main(args)


@pytest.mark.parametrize("name", ["en", "multilingual"])
def test_the_card_names_exactly_the_files_present(runs, name):
    """Every shard with pages is in one config's split by the card's globs; the card's table
    counts every shard, the empty splits' files too, which it names."""
    folder = runs(name, output.PARQUET)
    shards = [path for path in output_files(folder) if path.endswith(".parquet")]
    card = front_matter(folder)
    named = []
    for config in card["configs"]:
        for data in config["data_files"]:
            matched = fnmatch.filter(shards, data["path"])
            assert matched, data
            named += matched
    assert len(named) == len(set(named))
    stats = json.loads((folder / "stats.json").read_text())["stages"]["write"]
    empty = {path for path in shards if not stats[counters.written(
        path.rpartition("/")[0], path.rpartition("/")[2].split("-")[0])]}
    assert sorted(named) == sorted(set(shards) - empty)
    assert all(section["config_name"] == config["config_name"]
               for section, config in zip(card["dataset_info"], card["configs"]))
    text = (folder / dataset_card.CARD_FILE).read_text(encoding="utf-8")
    counted = sum(int(line.split("`: ")[1].split(" |")[0])
                  for line in text.splitlines() if line.startswith("| ") and "`: " in line)
    assert counted == len(shards)
    if name == "multilingual":
        assert empty and "the configs leave out" in text
    else:
        assert [config["config_name"] for config in card["configs"]] == ["default"]


def test_the_card_is_made_of_the_listing_and_counters_alone():
    counters = {"read": {"files.read": 2, "pages.passed": 5},
                "write": {"pages.written:train:no": 3, "pages.written:validation:no": 0,
                          "pages.written:train:de": 0, "pages.written:validation:de": 0}}
    shards = ["de/train-00000-of-00001.parquet", "de/validation-00000-of-00001.parquet",
              "no/train-00000-of-00002.parquet", "no/train-00001-of-00002.parquet",
              "no/validation-00000-of-00001.parquet"]
    card = dataset_card.dataset_card(variant("multilingual"), output.PARQUET, shards, counters)
    assert card == dataset_card.dataset_card(variant("multilingual"), output.PARQUET,
                                             list(reversed(shards)), counters)
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["configs"] == [{"config_name": "no", "data_files": [
        {"split": "train", "path": "no/train-*-of-00002.parquet"}]}]
    assert meta["license"] == "odc-by"
    assert "| no | train | `no/train-*-of-00002.parquet`: 2 | 3 |" in card
    assert "de train, de validation, no validation" in card
    with pytest.raises(ValueError, match="not the name of a parquet shard"):
        dataset_card.dataset_card(variant("en"), output.PARQUET, ["train.jsonl.gz"], counters)


def _pages(count: int) -> list:
    return [Page(url=f"https://example.com/{index}", normalized_url=f"example.com/{index:04d}",
                 timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                 content_length=100 + index, text=f"Page {index}. Ünïcode text.\nA second line.",
                 language="en", language_probability=0.5 + index / 10_000)
            for index in range(count)]


def test_a_parquet_shard_is_the_same_bytes_whatever_the_order_budget_or_time():
    """Written again, from pages in another order, spilled to sorted runs or not, a shard is the
    same bytes: its JSON-lines shard's records in their order, in row groups cut by count."""
    pages = _pages(2 * parquet_shards.ROWS_PER_ROW_GROUP + 5)

    def written(pages, **budget):
        sink = io.BytesIO()
        output.write_shard(pages, sink, shard_format=output.PARQUET, **budget)
        return sink.getvalue()

    first = written(pages)
    assert written(list(reversed(pages)), sort_budget_bytes=20_000) == first
    assert written(pages) == first
    stored = pq.ParquetFile(io.BytesIO(first))
    assert [stored.metadata.row_group(index).num_rows
            for index in range(stored.metadata.num_row_groups)] == [1000, 1000, 5]
    assert stored.schema_arrow == parquet_shards.record_schema()
    lines = gzip.decompress(output.encode_shard(pages)).splitlines()
    assert stored.read().to_pylist() == [json.loads(line) for line in lines]
    empty = pq.ParquetFile(io.BytesIO(written([])))
    assert empty.metadata.num_rows == 0 and empty.schema_arrow == parquet_shards.record_schema()


def test_the_tfds_builder_reads_a_parquet_runs_shards(runs):
    """tfds_c4 publishes a finished run in the format it wrote (run_config.json's `format`)."""
    folder = runs("en", output.PARQUET)
    run_config, _ = published.finished_run(str(folder), variant("en"))
    shards = published.shard_files(str(folder), "validation", None,
                                   published.shard_format(run_config))
    assert [pathlib.Path(path).name for path in shards] == ["validation-00000-of-00001.parquet"]
    assert list(published.records_of(shards[0])) == shard_records(pathlib.Path(shards[0]))
    assert published.shard_format({}) == output.JSONL  # A run from before --format.


@pytest.mark.parametrize("given", ["out", "out/", "./out"])
def test_the_listing_names_the_shards_relative_to_the_output_folder(tmp_path, monkeypatch,
                                                                    given):
    monkeypatch.chdir(tmp_path)
    for name in ["train-00000-of-00001.parquet", "de/validation-00000-of-00001.parquet",
                 "train-00000-of-00001.jsonl.gz", "parts/write/train-00000-of-00001.parquet",
                 "stats.json"]:
        (tmp_path / "out" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / name).write_bytes(b"")
    assert dataset_card.shard_listing(given, ("train", "validation"), output.PARQUET) == [
        "de/validation-00000-of-00001.parquet", "train-00000-of-00001.parquet"]
