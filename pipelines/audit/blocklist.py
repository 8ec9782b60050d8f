"""The blocklist study of Dodge et al. (2021, Section 5) over one run's exclusions: the pages the
bad-words filter dropped, the terms that triggered it with their counts, the pages' domains, the
pages scaled by the sample's fraction. Its command line is pipelines/blocklist.py.
"""
import collections
import json
from typing import Iterable, Optional

import orjson
from apache_beam.io.filesystems import FileSystems

from pipelines.filters import badwords, domains
from pipelines.stats import provenance
from pipelines.steps.filter_steps import Badwords
from pipelines.writers import exclusions


def dropped_for_badwords(lines: Iterable[bytes]) -> Iterable[dict]:
    """The page records the bad-words stage dropped, of an exclusions file's lines."""
    for line in lines:
        record = orjson.loads(line)
        if record["stage"] == Badwords.stage and record["level"] == "page":
            yield record


def study(records: Iterable[dict], matcher: badwords.BadwordsMatcher, fraction: float) -> dict:
    """Pages, term counts (each term once a page: how many pages it took out, alone or with
    others), pages taken out by one term alone, and domains."""
    extractor = domains.offline_domain_extractor()
    terms, alone, hosts = collections.Counter(), collections.Counter(), collections.Counter()
    pages = 0
    for record in records:
        pages += 1
        found = set(badwords.found_badwords(record["text"], matcher))
        terms.update(found)
        if len(found) == 1:
            alone.update(found)
        parts = extractor(record["url"])
        hosts[f"{parts.domain}.{parts.suffix}" if parts.suffix else parts.domain] += 1

    def ranked(counter):
        return [[name, count] for name, count in
                sorted(counter.items(), key=lambda item: (-item[1], item[0]))]
    return {"pages": pages, "fraction": fraction,
            "estimated_pages": round(pages / fraction),
            "terms": ranked(terms), "terms_alone": ranked(alone), "domains": ranked(hosts)}


def exclusions_of(output_dir: str, given: Optional[str]) -> tuple:
    """(the exclusions' folder, their fraction): given, or as the run's run_config.json names
    (exclusions.locate: from any working folder)."""
    config_path = FileSystems.join(output_dir, provenance.RUN_CONFIG_FILE)
    if not FileSystems.exists(config_path):
        raise ValueError(f"no {provenance.RUN_CONFIG_FILE} in {output_dir}: is it a C4 run's "
                         "output folder?")
    directory = exclusions.locate(output_dir, json.loads(FileSystems.open(config_path).read()),
                                  given)
    if directory is None:
        raise ValueError(f"the run in {output_dir} wrote no exclusions: rerun it with "
                         "--exclusions DIR, or name them with --exclusions")
    summary = json.loads(FileSystems.open(
        FileSystems.join(directory, exclusions.SUMMARY_FILE)).read())
    return directory, summary["fraction"]
