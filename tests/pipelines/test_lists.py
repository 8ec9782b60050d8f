"""Pinned lists (checked when read from their URL, hashed otherwise) and the default dumps."""
import gzip
import hashlib

import pytest
from tensorflow_datasets.text import c4 as tfds_c4_reference

from pipelines import c4
from pipelines.config import variant
from pipelines.readers import common_crawl, files, lists
from tfds_c4 import inputs as tfds_inputs


def test_a_local_list_is_hashed_not_checked(shared_data, tmp_path):
    local = tmp_path / "badwords.txt"
    local.write_bytes(b"changed\nlist\n")
    content, digest = lists.read_list(str(local))
    assert content == b"changed\nlist\n"
    assert digest == hashlib.sha256(b"changed\nlist\n").hexdigest()


def test_a_compressed_list_is_hashed_as_stored(tmp_path):
    stored = gzip.compress(b"a\nb\n", mtime=0)
    (tmp_path / "list.gz").write_bytes(stored)
    assert lists.read_list(str(tmp_path / "list.gz")) == (
        b"a\nb\n", hashlib.sha256(stored).hexdigest())
    assert lists.file_sha256(str(tmp_path / "list.gz")) == hashlib.sha256(stored).hexdigest()


def _serve(monkeypatch, url, data):
    """files.read_stored answers `url` with `data` (the tests never use the network)."""
    real = files.read_stored
    monkeypatch.setattr(files, "read_stored", lambda path: data if path == url else real(path))


def test_a_pinned_url_must_have_the_pinned_bytes(shared_data, monkeypatch):
    pinned = lists.LDNOOBW_EN
    genuine = (shared_data / "badwords/en").read_bytes()  # The pinned commit's file.
    _serve(monkeypatch, pinned.url, genuine)
    assert lists.read_list(pinned.url) == (genuine, pinned.sha256)
    _serve(monkeypatch, pinned.url, genuine + b"one more\n")
    with pytest.raises(lists.ChecksumMismatch, match="pinned list has " + pinned.sha256):
        lists.read_list(pinned.url)


def test_the_cli_refuses_a_pinned_list_that_changed(shared_data, monkeypatch, tmp_path):
    _serve(monkeypatch, lists.LDNOOBW_EN.url, b"not the pinned list\n")
    with pytest.raises(SystemExit) as exit_info:
        c4.main(["--input", str(shared_data / "wet/realistic/CC-MAIN-2019-30-part-0.warc.wet.gz"),
                 "--output", str(tmp_path)])  # --badwords: the pinned URL by default.
    assert "sha256" in str(exit_info.value) and lists.LDNOOBW_EN.url in str(exit_info.value)


def test_webtextlike_reads_the_twelve_dumps_of_the_public_builder():
    assert sorted(common_crawl.WEBTEXTLIKE_DUMPS) == sorted(
        f"CC-MAIN-{version}" for version in tfds_c4_reference.OPENWEBTEXT_CC_VERSIONS)
    assert variant("en").default_dumps == (f"CC-MAIN-{tfds_c4_reference.DEFAULT_CC_VERSION}",)
    assert variant("webtextlike").default_dumps == common_crawl.WEBTEXTLIKE_DUMPS


def test_mc4_reads_the_86_dumps_of_the_public_builder_and_skips_its_corrupt_file():
    assert common_crawl.MC4_DUMPS == tuple(
        f"CC-MAIN-{version}" for version in tfds_c4_reference.ALL_CC_VERSIONS)
    assert len(common_crawl.MC4_DUMPS) == 86
    assert variant("multilingual").default_dumps == common_crawl.MC4_DUMPS
    assert common_crawl.KNOWN_CORRUPT_WET_FILES == tfds_c4_reference._KNOWN_CORRUPT_WET_FILES


def test_the_mc4_lists_are_pinned_at_the_public_builders_commits(shared_data):
    """Each of the 28 LDNOOBW files TFDS downloads for mC4 has the URL TFDS names and the pin
    of the copy in ../shared/data/badwords (taken at those commits)."""
    assert sorted(lists.LDNOOBW_MC4) == sorted(tfds_c4_reference._BADWORDS_LANGS)
    for name, pinned in lists.LDNOOBW_MC4.items():
        expected_url = (tfds_c4_reference._EN_BADWORDS_URL if name == "en"
                        else tfds_c4_reference._BADWORDS_URL.format(lang=name))
        assert pinned.url == expected_url
        stored = (shared_data / "badwords" / name).read_bytes()
        assert (len(stored), hashlib.sha256(stored).hexdigest()) == (pinned.size, pinned.sha256)
        assert lists.PINNED_LISTS[pinned.url] == pinned


def _empty_manifests(base, dumps):
    for dump in dumps:
        manifest = base / "crawl-data" / dump / "wet.paths.gz"
        manifest.parent.mkdir(parents=True)
        manifest.write_bytes(gzip.compress(b""))


def test_cli_default_input_of_webtextlike_is_the_twelve_dumps(tmp_path):
    _empty_manifests(tmp_path, common_crawl.WEBTEXTLIKE_DUMPS)
    with pytest.raises(SystemExit) as exit_info:
        c4.main(["--variant", "webtextlike", "--cc_base_url", str(tmp_path),
                 "--webtext_urls", str(tmp_path / "urls.txt"), "--output", str(tmp_path / "out")])
    for dump in common_crawl.WEBTEXTLIKE_DUMPS:
        assert f"{tmp_path}/crawl-data/{dump}/wet.paths.gz" in str(exit_info.value)
    assert "CC-MAIN-2018-34" in c4.parser().format_help()


def test_tfds_default_input_of_webtextlike_is_the_twelve_dumps(tmp_path):
    _empty_manifests(tmp_path, common_crawl.WEBTEXTLIKE_DUMPS)
    options = tfds_inputs.BuildOptions(cc_base_url=str(tmp_path), webtext_urls=["urls.txt"])
    with pytest.raises(tfds_inputs.MissingInputError) as error:
        tfds_inputs.resolve(variant("webtextlike"), options, None, download=lambda url: url)
    for dump in common_crawl.WEBTEXTLIKE_DUMPS:
        assert f"/crawl-data/{dump}/wet.paths.gz" in str(error.value)
