"""Every variant end to end on the real WET samples, with the DirectRunner."""
import collections
import dataclasses
import glob
import gzip
import hashlib
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import urllib.error
import urllib.request
import xml.etree.ElementTree as ElementTree

import pytest

from pipelines import c4
from pipelines.config import VARIANTS, variant
from pipelines.filters.domains import (offline_domain_extractor, is_realnews_url,
                                       parse_realnews_domains)
from pipelines.filters.language import LanguageConfig, LanguageDetector
from pipelines.filters.urls import normalize_url, split_of
from pipelines.readers import inputs
from pipelines.steps.resources import load_resources
from text.sentences import split_sentences

ROUNDTRIP = "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz"


def run_variant(shared_data, output: pathlib.Path, variant: str, inputs=None, extra=()):
    inputs = inputs or [str(shared_data / "wet/*/*")]
    argv = ["--variant", variant, "--input", *inputs, "--output", str(output),
            "--badwords", str(shared_data / "badwords/en"),
            "--realnews_domains", str(shared_data / "realnews/domain_to_allowed_subdomains.json"),
            "--train_shards", "3", "--validation_fraction", "0.05", *extra]
    return c4.main(argv)


def read_split(directory: pathlib.Path, split: str):
    records = []
    for path in sorted(directory.glob(f"{split}-*-of-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            records.extend(json.loads(line) for line in lines)
    return records


def read_all_splits(directory):
    return {split: read_split(directory, split) for split in ("train", "validation")}


@pytest.fixture(scope="module")
def en_run(shared_data, tmp_path_factory):
    output = tmp_path_factory.mktemp("en")
    stats = run_variant(shared_data, output, "en")
    return stats, read_all_splits(output), output


def test_en_output_files_and_fields(en_run):
    _, splits, output = en_run
    names = sorted(path.name for path in output.iterdir())
    assert names == ["README.md", "funnel.svg", "run_config.json", "stats.json",
                     "train-00000-of-00003.jsonl.gz", "train-00001-of-00003.jsonl.gz",
                     "train-00002-of-00003.jsonl.gz", "validation-00000-of-00001.jsonl.gz"]
    record = splits["train"][0]
    assert list(record) == ["text", "url", "timestamp", "content-type", "content-length",
                            "language", "language_probability"]
    assert record["language"] == "en"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["timestamp"])


def test_en_counters_add_up(en_run):
    stats, splits, output = en_run
    assert json.loads((output / "stats.json").read_text())["stages"] == stats
    read = stats["read"]["pages.passed"]
    assert stats["read"]["files.read"] == 5
    assert stats["read"]["records.skipped:empty_page"] == 15
    clean = stats["clean"]
    dropped = sum(v for k, v in clean.items() if k.startswith("pages.dropped"))
    assert clean["pages.passed"] + dropped == stats["url_dedup"]["pages.passed"] == read
    assert {"pages.dropped:curly_bracket", "pages.dropped:too_few_sentences",
            "lines.dropped:no_terminal_punctuation"} <= set(clean)
    language_in = stats["dedup"]["pages.passed"] + stats["dedup"].get("pages.passed:shortened", 0)
    language_dropped = sum(v for k, v in stats["language"].items() if "dropped" in k)
    assert stats["language"]["pages.passed:en"] + language_dropped == language_in
    written = stats["write"]["pages.written:train"] + stats["write"]["pages.written:validation"]
    assert written == stats["badwords"]["pages.passed"] == sum(map(len, splits.values()))


def test_en_run_config_and_funnel_say_what_was_run(en_run, shared_data):
    stats, _, output = en_run
    run_config = json.loads((output / "run_config.json").read_text())
    assert run_config["config"] == json.loads(json.dumps(dataclasses.asdict(variant("en"))))
    assert run_config["validation_fraction"] == 0.05
    paths = sorted(glob.glob(str(shared_data / "wet/*/*")))
    assert run_config["inputs"]["files"] == len(paths) == 5
    assert run_config["inputs"]["sha256"] == hashlib.sha256(
        "".join(path + "\n" for path in paths).encode()).hexdigest()
    badwords_path = str(shared_data / "badwords/en")
    assert run_config["lists_sha256"] == {
        badwords_path: hashlib.sha256(pathlib.Path(badwords_path).read_bytes()).hexdigest()}
    svg = ElementTree.parse(output / "funnel.svg").getroot()
    bars = {group.get("data-stage"): int(group.get("data-kept"))
            for group in svg.iter("{http://www.w3.org/2000/svg}g")}
    assert bars["read"] == stats["read"]["pages.passed"]
    assert bars["badwords"] == stats["badwords"]["pages.passed"]
    assert list(bars) == [stage for stage in stats if stage in bars]


def test_en_records_the_language_probability_of_each_page(en_run):
    _, splits, _ = en_run
    detector = LanguageDetector()
    for record in splits["train"][:20]:
        assert detector.detect(record["text"]) == ("en", record["language_probability"])
        assert record["language_probability"] >= LanguageConfig().min_probability


def test_en_keeps_the_real_c4_pages(en_run, shared_data):
    """Pages that already passed the public C4's filters nearly all pass ours again."""
    _, splits, _ = en_run
    kept_urls = {record["url"] for records in splits.values() for record in records}
    roundtrip_urls = set()
    with gzip.open(shared_data / ROUNDTRIP, "rb") as wet_file:
        for line in wet_file:
            if line.startswith(b"WARC-Target-URI:"):
                roundtrip_urls.add(line.split(b":", 1)[1].strip().decode())
    assert len(roundtrip_urls) == 800
    assert len(roundtrip_urls & kept_urls) >= 790


def test_en_pages_obey_every_rule(en_run):
    _, splits, _ = en_run
    for record in splits["train"] + splits["validation"]:
        text = record["text"]
        assert "{" not in text and "lorem ipsum" not in text.lower()
        assert "javascript" not in text.lower()
        lines = text.split("\n")
        assert all(line.rstrip().endswith((".", "!", "?", '"', "\u201d")) for line in lines)
        assert all(len(line.split()) >= 5 for line in lines)
        assert sum(len(split_sentences(line)) for line in lines) >= 3


def three_sentence_spans(text: str):
    """Every run of three consecutive sentences of a page, compared as text (case and runs of
    white space aside): counted here without the pipeline's window, key or span length, so a
    change to any of them shows."""
    sentences = [" ".join(sentence.lower().split())
                 for line in text.split("\n") for sentence in split_sentences(line)]
    return [tuple(sentences[start:start + 3]) for start in range(len(sentences) - 2)]


def test_en_has_no_repeated_three_sentence_span(en_run):
    _, splits, _ = en_run
    seen = collections.Counter()
    for record in splits["train"] + splits["validation"]:
        seen.update(three_sentence_spans(record["text"]))
    assert len(seen) > 1000
    assert [span for span, count in seen.items() if count > 1] == []


def test_en_splits_are_disjoint_and_the_released_split(en_run, shared_data):
    _, splits, _ = en_run
    train = {normalize_url(r["url"]) for r in splits["train"]}
    validation = {normalize_url(r["url"]) for r in splits["validation"]}
    assert not train & validation
    assert len(train) == len(splits["train"]) and len(validation) == len(splits["validation"])
    for split, records in splits.items():
        assert all(split_of(record["url"], 0.05) == split for record in records)
    # The roundtrip pages are released C4 validation pages: all of them stay in validation.
    with gzip.open(shared_data / ROUNDTRIP, "rb") as wet_file:
        roundtrip = {line.split(b":", 1)[1].strip().decode() for line in wet_file
                     if line.startswith(b"WARC-Target-URI:")}
    validation_urls = {record["url"] for record in splits["validation"]}
    assert len(roundtrip & validation_urls) >= 790 and not roundtrip & {r["url"] for r in splits["train"]}


def test_noclean_keeps_raw_text_of_english_pages(shared_data, tmp_path, en_run):
    stats = run_variant(shared_data, tmp_path, "en.noclean", [str(shared_data / ROUNDTRIP)])
    assert "clean" not in stats and "dedup" not in stats and "badwords" not in stats
    records = read_split(tmp_path, "train") + read_split(tmp_path, "validation")
    assert len(records) == stats["language"]["pages.passed:en"] == 800
    assert all(record["content-length"] == len(record["text"].encode()) for record in records)
    assert not read_split(tmp_path, "train")  # Released C4 validation pages, all of them.


def test_linededup_leaves_no_repeated_line(shared_data, tmp_path):
    stats = run_variant(shared_data, tmp_path, "en.linededup")
    lines = collections.Counter(
        line.strip().lower() for split in read_all_splits(tmp_path).values()
        for record in split for line in record["text"].split("\n"))
    assert max(lines.values()) == 1
    assert stats["dedup"]["spans.dropped:duplicate"] > 0


def shard_pages(directory: pathlib.Path, split: str) -> dict:
    """Each shard file of a split -> its number of pages."""
    counts = {}
    for path in sorted(directory.glob(f"{split}-*-of-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            counts[path.name] = sum(1 for _ in lines)
    return counts


def test_realnewslike_keeps_only_news_domains(shared_data, tmp_path):
    stats = run_variant(shared_data, tmp_path, "realnewslike", extra=["--train_shards", "8",
                                                                     "--validation_shards", "8"])
    path = shared_data / "realnews/domain_to_allowed_subdomains.json"
    allowed = parse_realnews_domains(path.read_bytes(), str(path))
    extractor = offline_domain_extractor()
    records = read_split(tmp_path, "train") + read_split(tmp_path, "validation")
    assert records and all(is_realnews_url(r["url"], allowed, extractor) for r in records)
    assert stats["domains"]["pages.dropped:not_realnews_domain"] > 10 * len(records)
    # The samples' RealNews pages are released C4 validation pages: none may be in train.
    assert not read_split(tmp_path, "train")
    # A few pages fill fewer files than the 8 asked for, and no file is empty beside them; the
    # empty train split is one empty file.
    assert shard_pages(tmp_path, "train") == {"train-00000-of-00001.jsonl.gz": 0}
    validation = shard_pages(tmp_path, "validation")
    assert len(validation) <= min(8, len(records)) and 0 not in validation.values()
    assert sum(validation.values()) == len(records)


def test_webtextlike_joins_url_lists(shared_data, tmp_path, en_run):
    _, en_splits, _ = en_run
    wanted = sorted(record["url"] for record in en_splits["train"])[:25]
    # The lists name URLs in other spellings (scheme, www., trailing slash), as Reddit links do.
    url_list = tmp_path / "urls.txt"
    url_list.write_text("\n".join(url.replace("https://", "http://www.", 1) + "/"
                                  for url in wanted) + "\n{broken json\n")
    output = tmp_path / "out"
    stats = run_variant(shared_data, output, "webtextlike", extra=[
        "--webtext_urls", str(url_list),
        str(shared_data / "openwebtext_urls/lsb-webtext/RS_v2_2005-06.urk.json-00.gz")])
    kept = {r["url"] for r in read_split(output, "train") + read_split(output, "validation")}
    assert kept and kept <= set(wanted)
    assert stats["domains"]["url_lists.read"] == 2
    assert stats["domains"]["url_lines.skipped"] == 1


def test_de_fr_ro_writes_a_folder_per_language(shared_data, tmp_path):
    stats = run_variant(shared_data, tmp_path, "de-fr-ro")
    for language in ("de", "fr", "ro"):
        records = read_split(tmp_path / language, "train") + read_split(tmp_path / language, "validation")
        assert len(records) == stats["language"].get(f"pages.passed:{language}", 0)
    assert stats["language"]["pages.passed:fr"] > 0


def test_corrupt_and_missing_inputs(shared_data, tmp_path, caplog):
    source = (shared_data / "wet/realistic/CC-MAIN-2019-30-part-1.warc.wet.gz").read_bytes()
    corrupt = bytearray(source)
    middle = len(corrupt) // 2
    corrupt[middle:middle + 64] = bytes(64)
    (tmp_path / "in").mkdir()
    (tmp_path / "in/corrupt.warc.wet.gz").write_bytes(bytes(corrupt))
    (tmp_path / "in/truncated.warc.wet.gz").write_bytes(source[:len(source) // 3])
    shutil.copy(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz", tmp_path / "in")
    (tmp_path / "in/text.warc.wet.gz").write_bytes(b"this is not a gzip file" * 100)
    stats = run_variant(shared_data, tmp_path / "out", "en.noclean", [str(tmp_path / "in/*")])
    read = stats["read"]
    assert read["files.read"] == 3
    assert read["files.skipped:not_wet"] == 1
    assert "records.skipped:not_conversion" not in read
    assert any("text.warc.wet.gz" in record.getMessage() and record.levelname == "WARNING"
               for record in caplog.records)
    assert read["records.skipped:corrupt_record"] == 2
    # Of 250 records, the corrupt copy loses one (5 are empty pages), the truncated one the rest.
    assert 244 + 1 <= read["pages.passed"] <= 244 + 1 + 90


@pytest.mark.parametrize("argv, message", [
    (["--input", "/nonexistent/*.wet.gz"], "no file matches"),
    (["--badwords", "/nonexistent/badwords.txt"], "cannot open /nonexistent/badwords.txt"),
    (["--variant", "webtextlike"], "needs OpenWebText URL lists: --webtext_urls 'path/*.gz' "
                                   "(with make: WEBTEXT_URLS='path/*.gz')"),
    (["--train_shards", "0"], "must be >= 1"),
    (["--validation_fraction", "2"], "validation fraction must be in [0, 1]"),
])
def test_user_errors_are_clear(shared_data, tmp_path, argv, message):
    base = ["--input", str(shared_data / ROUNDTRIP), "--output", str(tmp_path),
            "--badwords", str(shared_data / "badwords/en")]
    with pytest.raises(SystemExit) as exit_info:
        c4.main(base + argv)
    assert message in str(exit_info.value)


def test_offline_default_inputs_name_what_the_variant_needs_as_flags_and_make_variables(
        shared_data, tmp_path, monkeypatch):
    """No network: the default manifest, then each default list, cannot be fetched; the message
    names the local copies this variant needs, as flags and as `make run` variables, and no
    other list."""
    def offline(url, timeout):
        raise urllib.error.URLError("no network")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    webtext = ["--webtext_urls", str(shared_data / "openwebtext_urls/lsb-webtext/*.gz")]
    for name in VARIANTS:
        config = variant(name)
        lists = [option for key, option in c4.LIST_OPTIONS.items() if key in config.lists]
        others = [option for option in c4.LIST_OPTIONS.values() if option not in lists]
        with pytest.raises(SystemExit) as exit_info:
            c4.main(["--variant", name, "--output", str(tmp_path),
                     *(webtext if name == "webtextlike" else [])])
        message = str(exit_info.value)
        assert message.startswith("error: cannot fetch https://data.commoncrawl.org/"), message
        assert f"make run VARIANT={name} INPUT=" in message
        for option in lists:
            assert f"{option.flag} {option.example}" in message
            assert f"{option.make_variable}={option.example}" in message
        for option in others:
            assert f"{option.flag} " not in message and f" {option.make_variable}=" not in message
    # With local WET files, the first default list is what cannot be fetched.
    with pytest.raises(SystemExit) as exit_info:
        c4.main(["--variant", "realnewslike", "--input", str(shared_data / ROUNDTRIP),
                 "--badwords", str(shared_data / "badwords/en"), "--output", str(tmp_path)])
    assert "cannot fetch https://raw.githubusercontent.com/rowanz/grover/" in str(exit_info.value)
    assert "REALNEWS_DOMAINS=" in str(exit_info.value)


def test_make_run_passes_each_variable_as_its_flag_only_when_set():
    repo = pathlib.Path(__file__).resolve().parents[2]

    def make_run(*assignments):
        printed = subprocess.run(["make", "-n", "run", *assignments], cwd=repo, check=True,
                                 capture_output=True, text=True).stdout
        (line,) = [line for line in printed.splitlines() if "-m pipelines.c4" in line]
        return shlex.split(line)

    options = [c4.INPUT_OPTION, *c4.LIST_OPTIONS.values()]
    assert not {option.flag for option in options} & set(make_run("VARIANT=realnewslike"))
    for option in options:
        words = make_run(f"{option.make_variable}=local/copy")
        assert words[words.index(option.flag) + 1] == "local/copy"


def test_a_list_the_variant_does_not_read_is_named_in_a_note_and_ignored(shared_data, tmp_path,
                                                                          caplog):
    sample = str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz")
    badwords = str(shared_data / "badwords/en")
    realnews = str(shared_data / "realnews/domain_to_allowed_subdomains.json")
    c4.main(["--variant", "en.noclean", "--input", sample, "--output", str(tmp_path / "noclean"),
             "--badwords", badwords, "--realnews_domains", realnews])
    notes = [record.getMessage() for record in caplog.records if "note:" in record.getMessage()]
    assert notes == ["note: variant en.noclean reads no bad-words list and no RealNews domains: "
                     "ignoring --badwords, --realnews_domains"]
    run_config = json.loads((tmp_path / "noclean" / "run_config.json").read_text())
    assert run_config["lists_sha256"] == {}
    caplog.clear()
    c4.main(["--variant", "en", "--input", sample, "--output", str(tmp_path / "en"),
             "--badwords", badwords])
    assert not [record for record in caplog.records if "note:" in record.getMessage()]


def test_the_lists_a_variant_names_are_the_ones_it_loads(shared_data):
    for name in VARIANTS:
        config = variant(name)
        resources = load_resources(
            config, str(shared_data / "badwords/en"),
            str(shared_data / "realnews/domain_to_allowed_subdomains.json"),
            [str(shared_data / "openwebtext_urls/lsb-webtext/*.gz")],
            badwords_dir=str(shared_data / "badwords"))
        loaded = {"badwords": bool(resources.badwords) and not config.badwords_files,
                  "badwords_dir": bool(resources.badwords) and bool(config.badwords_files),
                  "realnews_domains": resources.realnews_domains is not None,
                  "webtext_urls": bool(resources.webtext_url_files)}
        assert {key for key, read in loaded.items() if read} == set(config.lists), name
        note = c4.unread_lists_note(config, set(c4.LIST_OPTIONS))
        unread = [option.flag for key, option in c4.LIST_OPTIONS.items()
                  if key not in config.lists]
        assert (note is None) == (not unread)
        assert note is None or note.endswith("ignoring " + ", ".join(unread))


def _wet_file(path: pathlib.Path, records):
    """A WET file of (url, date, text) conversion records, one gzip member each."""
    with path.open("wb") as out:
        for url, date, text in records:
            body = text.encode()
            head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {url}\r\n"
                    f"WARC-Date: {date}\r\nContent-Type: text/plain\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n")
            out.write(gzip.compress(head.encode() + body + b"\r\n\r\n", mtime=0))


def test_url_dedup_keeps_the_newest_copy_across_files(shared_data, tmp_path, en_run):
    _, splits, _ = en_run
    texts = [record["text"] for record in splits["train"][:3]]
    (tmp_path / "in").mkdir()
    _wet_file(tmp_path / "in/a.warc.wet.gz", [
        ("http://www.example.com/story/", "2019-04-18T10:00:00Z", texts[0]),
        ("https://example.org/other", "2019-04-18T10:00:00Z", texts[2])])
    _wet_file(tmp_path / "in/b.warc.wet.gz", [
        ("https://example.com/story", "2019-04-25T10:00:00Z", texts[1]),
        ("https://example.com/story?utm_source=feed", "2019-04-20T10:00:00Z", texts[2])])
    stats = run_variant(shared_data, tmp_path / "out", "en.noclean", [str(tmp_path / "in/*")])
    records = read_split(tmp_path / "out", "train") + read_split(tmp_path / "out", "validation")
    assert stats["url_dedup"] == {"pages.passed": 2, "pages.dropped:older_duplicate": 2}
    story = [r for r in records if normalize_url(r["url"]) == "example.com/story"]
    assert [(r["url"], r["text"]) for r in story] == [("https://example.com/story", texts[1])]


def test_empty_manifest_is_an_error(shared_data, tmp_path):
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress(b""))
    with pytest.raises(SystemExit) as exit_info:
        c4.main(["--input", str(manifest), "--output", str(tmp_path / "out"),
                 "--badwords", str(shared_data / "badwords/en")])
    assert "name no WET file" in str(exit_info.value)


def test_manifest_paths_are_prefixed_and_limited(tmp_path):
    manifest = tmp_path / "wet.paths.gz"
    manifest.write_bytes(gzip.compress(
        b"crawl-data/CC-MAIN-2019-18/segments/1/wet/a.warc.wet.gz\n"
        b"crawl-data/CC-MAIN-2019-18/segments/1/wet/b.warc.wet.gz\n"))
    def listed(plan):
        return [path for source in plan.sources for _, path in source.indexed_paths()]

    assert listed(inputs.plan_inputs([str(manifest)], None, "gs://mirror/")) == [
        "gs://mirror/crawl-data/CC-MAIN-2019-18/segments/1/wet/a.warc.wet.gz",
        "gs://mirror/crawl-data/CC-MAIN-2019-18/segments/1/wet/b.warc.wet.gz"]
    assert listed(inputs.plan_inputs([str(manifest)], 1, "https://data.commoncrawl.org/")) == [
        "https://data.commoncrawl.org/crawl-data/CC-MAIN-2019-18/segments/1/wet/a.warc.wet.gz"]


def test_the_command_line_says_what_it_does_and_nothing_of_beams(shared_data, tmp_path):
    """`python -m pipelines.c4` on stderr: its own progress only (Beam's import note, "apitools
    not found", on almost every command before, stays off); the table and the paths on stdout."""
    import subprocess
    import sys
    repo = pathlib.Path(__file__).resolve().parents[2]
    sample = shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"
    finished = subprocess.run(
        [sys.executable, "-m", "pipelines.c4", "--variant", "en", "--input", str(sample),
         "--badwords", str(shared_data / "badwords/en"), "--output", str(tmp_path)],
        cwd=repo, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert finished.stderr.splitlines() == ["INFO:c4:building en from 1 WET file",
                                            f"INFO:c4:{sample}: done, 1 page"]
    assert "statistics written to" in finished.stdout


def test_the_embedded_job_never_tries_the_prism_runner(shared_data, tmp_path, monkeypatch):
    """Beam's DirectRunner first tries its Prism runner, which it downloads from GitHub; a job
    on the embedded runner goes to Beam's own engine straight away (pipelines/beam/embedded.py)."""
    from apache_beam.runners.portability import prism_runner
    tried = []
    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline",
                        lambda self, *args, **kwargs: tried.append(True) or 1 / 0)
    c4.main(["--variant", "en", "--input",
             str(shared_data / "wet/whirlwind-python/whirlwind.warc.wet.gz"),
             "--badwords", str(shared_data / "badwords/en"), "--output", str(tmp_path)])
    assert tried == []
    assert (tmp_path / "stats.json").is_file()
