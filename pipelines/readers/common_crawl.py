"""Where Common Crawl is read from, and which of its monthly dumps each variant reads by default.

The one owner of these names: pipelines.c4 (the CLI's default input), tfds_c4 (the builder's
default input) and deploy (the Dataflow presets) import them.
"""
BASE_URL = "https://data.commoncrawl.org/"
# The gzipped bytes of a WET file the plans count for a file not on this machine (a manifest's).
REMOTE_WET_FILE_BYTES = 66_000_000

# The dump of April 2019, which the released C4 and the paper's C4 were built from.
C4_DUMP = "CC-MAIN-2019-18"
# The paper's WebText-like corpus, and the public TFDS builder's `c4/webtextlike`
# (OPENWEBTEXT_CC_VERSIONS in tensorflow_datasets/text/c4.py): the 12 monthly dumps from
# August 2018 to July 2019, here in date order.
WEBTEXTLIKE_DUMPS = (
    "CC-MAIN-2018-34", "CC-MAIN-2018-39", "CC-MAIN-2018-43", "CC-MAIN-2018-47",
    "CC-MAIN-2018-51", "CC-MAIN-2019-04", "CC-MAIN-2019-09", "CC-MAIN-2019-13",
    C4_DUMP, "CC-MAIN-2019-22", "CC-MAIN-2019-26", "CC-MAIN-2019-30",
)

# mC4 (the public builder's `multilingual`, ALL_CC_VERSIONS): the 86 dumps of 2013-20 to
# 2022-27, as of August 2022.
MC4_DUMPS = tuple(f"CC-MAIN-{dump}" for dump in """
    2013-20 2013-48 2014-10 2014-15 2014-23 2014-35 2014-41 2014-42 2014-49 2014-52 2015-06
    2015-11 2015-14 2015-18 2015-22 2015-27 2015-32 2015-35 2015-40 2015-48 2016-07 2016-18
    2016-22 2016-26 2016-30 2016-36 2016-40 2016-44 2016-50 2017-04 2017-09 2017-13 2017-17
    2017-22 2017-26 2017-30 2017-34 2017-39 2017-43 2017-47 2017-51 2018-05 2018-09 2018-13
    2018-17 2018-22 2018-26 2018-30 2018-34 2018-39 2018-43 2018-47 2018-51 2019-04 2019-09
    2019-13 2019-18 2019-22 2019-26 2019-30 2019-35 2019-39 2019-43 2019-47 2019-51 2020-05
    2020-10 2020-16 2020-24 2020-29 2020-34 2020-40 2020-45 2020-50 2021-04 2021-10 2021-17
    2021-21 2021-25 2021-31 2021-39 2021-43 2021-49 2022-05 2022-21 2022-27""".split())
# Files the public C4 code skips (_KNOWN_CORRUPT_WET_FILES: they raise UnicodeDecodeError in its
# reader), as their paths end.
KNOWN_CORRUPT_WET_FILES = (
    "crawl-data/CC-MAIN-2017-13/segments/1490218203536.73/wet/"
    "CC-MAIN-20170322213003-00052-ip-10-233-31-227.ec2.internal.warc.wet.gz",
)


def manifest_url(dump: str, base_url: str = BASE_URL) -> str:
    """The `wet.paths.gz` list of one dump's WET files, under `base_url` (https, s3 or a mirror)."""
    return f"{base_url.rstrip('/')}/crawl-data/{dump}/wet.paths.gz"
