"""The public TFDS code that made the released C4, chained offline as its c4.py wires it.

tensorflow_datasets/text/c4_utils.py (4.9.10) run in plain Python, page by page, for the
configs en, en.noclean, realnewslike and webtextlike (`tfds_c4`: the oracle of
tests/pipelines/test_released_c4.py and the baseline of bench/bench_vs_tfds.py), and for
`multilingual`,
mC4 (`tfds_mc4`: the oracle of tests/pipelines/test_mc4_oracle.py and the baseline of
bench/bench_mc4.py;
`tfds_mc4_beam` runs c4.py's own Beam graph of that config instead, to check the chain against
it). Only TFDS and the standard library are imported (and Beam, TFDS's, by `tfds_mc4_beam`), so
a process that runs it pays TFDS's start-up, not ours. The caller patches what must be patched
(the sentence splitter, tldextract's suffix list, langdetect's seed).
"""
import collections
import functools
import json
import pathlib

from tensorflow_datasets.text import c4, c4_utils

# c4.py's configs: (clean and dedupe, bad words, realnewslike, webtextlike).
TFDS_CONFIGS = {"en": (True, True, False, False), "en.noclean": (False, False, False, False),
                "realnewslike": (True, True, True, False), "webtextlike": (True, True, False, True)}


def _noop_counter(*_):
    pass


def _tfds_dedup(pages, min_num_sentences):
    """c4_utils.remove_duplicate_text: each line hash goes to the page whose URL has the smallest
    MD5 hex digest (`Top.PerKey(1, key=_hash_text, reverse=True)`), then each page keeps its
    lines (`_remove_lines_from_text`)."""
    owner = {}
    for page in pages:
        for line_hash, url in c4_utils._emit_url_to_lines(page):
            if line_hash not in owner or (
                    c4_utils._hash_text(url) < c4_utils._hash_text(owner[line_hash])):
                owner[line_hash] = url
    lines_of_url = collections.defaultdict(list)
    for line_hash, url in owner.items():
        lines_of_url[url].append(line_hash)
    kept = []
    for page in pages:
        joined = (page.url, {"pages": [page], "lines": lines_of_url[page.url]})
        kept.extend(c4_utils._remove_lines_from_text(
            joined, counter_inc_fn=_noop_counter, min_num_sentences=min_num_sentences))
    return kept


def tfds_c4(wet_paths, config, badwords_path, realnews_path, webtext_urls):
    """The pages of a TFDS c4 config and their split, as c4.py's `_get_pages_pcollection` and
    `_split_generators` make them; URL ties go to the first page seen in input order."""
    clean, badwords, realnewslike, webtextlike = TFDS_CONFIGS[config]
    pages = [page for path in wet_paths for page in c4_utils.split_wet_file(str(path))]
    pages = [page for page in pages if c4_utils.is_valid_length(page)]
    if realnewslike:
        realnews_domains = json.loads(pathlib.Path(realnews_path).read_text())
        pages = [page for page in pages if c4_utils.is_realnews_domain(page, realnews_domains)]
    by_url = collections.defaultdict(list)
    for page in pages:
        by_url[page.normalized_url].append(page)
    pages = [c4_utils.select_newest_page(group) for group in by_url.values()]
    if webtextlike:
        listed = {c4_utils.normalize_url(url) for url in webtext_urls}
        pages = [kept for page in pages for kept in c4_utils.filter_by_webtextlike(
            (page.normalized_url, {"pages": [page], "webtextlike_urls":
                                   [c4_utils.PageFeatures()] if page.normalized_url in listed
                                   else []}))]
    if clean:
        clean_page = c4_utils.get_clean_page_fn()
        pages = [kept for page in pages for kept in clean_page(page)]
        pages = _tfds_dedup(pages, min_num_sentences=c4_utils._MIN_NUM_SENTENCES)
    pages = [kept for page in pages for kept in c4_utils.detect_english(page)]
    if badwords:
        with open(badwords_path, encoding="utf-8") as lines:
            terms = {line.strip() for line in lines}
        keep = c4_utils.get_badwords_filter_fn({"en": terms}, filter_fraction=1.0)
        pages = [page for page in pages if keep(page)]
    in_validation = c4_utils.get_hashed_url_filter_fn(lambda value: value % 1000 == 0)
    return {page.url: {"text": page.text, "timestamp": page.timestamp,
                       "content-type": page.content_type,
                       "content-length": page.content_length,
                       "split": "validation" if in_validation(page) else "train"}
            for page in pages}


class _PCollectionStandIn:
    """What `pages` is to c4_utils.detect_languages: `pages | beam.ParDo(fn)` hands back the
    ParDo itself, so its DoFn (TFDS's `_PredictLanguageFn`, defined inside the transform) can be
    called directly, without a Beam pipeline."""

    def __or__(self, transform):
        return transform


def tfds_language_fn(valid_languages=tuple(c4.MC4_LANGUAGES)):
    """TFDS's own CLD3 DoFn of `detect_languages`, started (`start_bundle`) and ready for
    `process(page)`, which yields the page with its language or nothing (a reliable language
    outside valid_languages)."""
    predict = c4_utils.detect_languages(_PCollectionStandIn(),
                                        valid_languages=list(valid_languages)).fn
    predict.start_bundle()
    return predict


def tfds_mc4_badwords(badwords_dir):
    """{language: set of terms} as c4.py's `_get_pages_pcollection` builds it: one file per
    `_BADWORDS_LANGS` entry (English from the file `en`, the 25e679f list TFDS pins), the
    language's suffix stripped (`fr-CA-u-sd-caqc` counts for `fr`), `_BADWORDS_ALLOWLIST`
    removed."""
    badwords = collections.defaultdict(set)
    for lang in c4._BADWORDS_LANGS:
        with open(pathlib.Path(badwords_dir) / lang, encoding="utf-8") as lines:
            badwords[lang.split("-")[0]].update(line.strip() for line in lines)
    for lang, allowlist in c4._BADWORDS_ALLOWLIST.items():
        badwords[lang] -= allowlist
    return badwords


def tfds_mc4_split(page):
    """The split of c4.py's `_split_generators` for a multilingual page: `<lang>` or
    `<lang>-validation` (MD5 of the normalized URL modulo 1000 is 0)."""
    assert page.language in c4.MC4_LANGUAGES + [c4_utils.UNKNOWN_LANGUAGE], page.language
    in_validation = c4_utils.get_hashed_url_filter_fn(lambda value: value % 1000 == 0)
    return f"{page.language}-validation" if in_validation(page) else page.language


def tfds_mc4(wet_paths, badwords_dir):
    """The pages of TFDS's `multilingual` config (mC4) and their split, as c4.py's
    `_get_pages_pcollection` and `_split_generators` make them: WET parsing, the length limit,
    the newest page per normalized URL (ties to the first page in input order), the paragraph
    filter, line dedup without a sentence floor (`remove_duplicate_text(pages,
    min_num_sentences=0)`), CLD3 (`detect_languages` over MC4_LANGUAGES), the per-language bad
    words at 0.999, then the split. {url: {text, timestamp, content-type, content-length,
    language, split}}."""
    pages = [page for path in wet_paths for page in c4_utils.split_wet_file(str(path))]
    pages = [page for page in pages if c4_utils.is_valid_length(page)]
    by_url = collections.defaultdict(list)
    for page in pages:
        by_url[page.normalized_url].append(page)
    pages = [c4_utils.select_newest_page(group) for group in by_url.values()]
    pages = [page for page in pages if c4_utils.paragraph_filter(page)]
    pages = _tfds_dedup(pages, min_num_sentences=0)
    predict = tfds_language_fn()
    pages = [kept for page in pages for kept in predict.process(page)]
    keep = c4_utils.get_badwords_filter_fn(tfds_mc4_badwords(badwords_dir), filter_fraction=0.999)
    pages = [page for page in pages if keep(page)]
    return {page.url: {"text": page.text, "timestamp": page.timestamp,
                       "content-type": page.content_type,
                       "content-length": page.content_length,
                       "language": page.language, "split": tfds_mc4_split(page)}
            for page in pages}


def tfds_mc4_beam(wet_paths, badwords_dir, work_dir,
                  beam_args=("--direct_num_workers=1", "--direct_running_mode=in_memory")):
    """TFDS's own Beam graph of `multilingual`, run on the DirectRunner: c4.py's
    `C4._get_pages_pcollection` (with the config's builder_config) and `C4._build_pcollection`
    for each of `_split_generators`' splits, unchanged. The WET files are given as c4.py reads
    them: a wet.paths manifest of relative paths, each already in the download folder (linked),
    so `_download_wet_file` finds it and downloads nothing; the bad-words files as
    `download_and_extract` would return them. The examples go to gzipped JSON lines under
    work_dir/out (TFDS's own writer, tfrecord shards, is left out). Returns
    {url: {text, timestamp, content-type, content-length, language, split}}; the language is
    the split's (TFDS's examples carry none). URL ties go where Beam's combine takes them."""
    import glob
    import gzip
    import json
    import os
    import types

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    work_dir = pathlib.Path(work_dir)
    download_dir = work_dir / "downloads"
    relative = []
    for number, path in enumerate(wet_paths):
        name = f"crawl-data/CC-MAIN-oracle/segments/{number}/wet/{pathlib.Path(path).name}"
        target = download_dir / "c4_wet_files" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.abspath(path), target)
        relative.append(name)
    manifest = work_dir / "wet.paths"
    manifest.write_text("".join(f"{name}\n" for name in relative))
    file_paths = {"wet_path_urls": [str(manifest)],
                  "badwords": {lang: str(pathlib.Path(badwords_dir) / lang)
                               for lang in c4._BADWORDS_LANGS}}
    config = next(config for config in c4.C4.BUILDER_CONFIGS if config.name == "multilingual")
    builder = types.SimpleNamespace(builder_config=config)  # What the two methods read of self.
    dl_manager = types.SimpleNamespace(download_dir=str(download_dir))

    def in_split(page, lang, predicate_fn):  # _split_generators' `_filter`.
        return page.language == lang and c4_utils.get_hashed_url_filter_fn(predicate_fn)(page)

    def train(value):
        return value % 1000 != 0

    def validation(value):
        return value % 1000 == 0

    @beam.ptransform_fn
    def build_split(pages, pipeline, split, split_filter_fn):  # As TFDS labels it: the split.
        return c4.C4._build_pcollection(builder, pipeline, split, pages, split_filter_fn)

    out = work_dir / "out"
    with beam.Pipeline(options=PipelineOptions(list(beam_args))) as pipeline:
        pages = c4.C4._get_pages_pcollection(builder, pipeline, file_paths, dl_manager)
        examples = []
        for lang in config.languages + [c4_utils.UNKNOWN_LANGUAGE]:
            for split, predicate_fn in ((lang, train), (f"{lang}-validation", validation)):
                examples.append(
                    pages
                    | split >> build_split(pipeline, split, functools.partial(
                        in_split, lang=lang, predicate_fn=predicate_fn))
                    | f"tag_{split}" >> beam.Map(
                        lambda example, split=split, lang=lang: json.dumps(
                            {**example[1], "split": split, "language": lang})))
        (examples | "flatten_splits" >> beam.Flatten()
         | "write" >> beam.io.WriteToText(str(out), file_name_suffix=".jsonl.gz"))
    result = {}
    for shard in sorted(glob.glob(f"{out}*.jsonl.gz")):
        with gzip.open(shard, "rt", encoding="utf-8") as records:
            for line in records:
                record = json.loads(line)
                assert record["url"] not in result, record["url"]
                result[record.pop("url")] = record
    return result
