"""Where Common Crawl is read from, and which of its monthly dumps each variant reads by default.

The one owner of these names: pipelines.c4 (the CLI's default input), tfds_c4 (the builder's
default input) and deploy (the Dataflow presets) import them.
"""
from typing import Tuple

BASE_URL = "https://data.commoncrawl.org/"

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


def default_dumps(domain_filter) -> Tuple[str, ...]:
    """The dumps a variant reads when no input is given, by its `VariantConfig.domain_filter`:
    the 12 WebText-like dumps for the OpenWebText filter (which keeps few pages of any one dump),
    else the released C4's dump."""
    return WEBTEXTLIKE_DUMPS if domain_filter == "webtext" else (C4_DUMP,)


def manifest_url(dump: str, base_url: str = BASE_URL) -> str:
    """The `wet.paths.gz` list of one dump's WET files, under `base_url` (https, s3 or a mirror)."""
    return f"{base_url.rstrip('/')}/crawl-data/{dump}/wet.paths.gz"
