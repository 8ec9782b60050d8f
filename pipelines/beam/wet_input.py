"""Reading the input: the WET files of an input plan (pipelines/readers/inputs.py), as Pages, each
with its input position; what is skipped counted under the reader's stage (counters.READ_STAGE).
"""
import dataclasses
import logging
from typing import Optional

import apache_beam as beam

from pipelines import counters
from pipelines.beam.phases import counted_per_element, report
from pipelines.config import VariantConfig
from pipelines.readers import files, inputs, wet
from pipelines.stats import stats
from pipelines.steps.base import Counts
from pipelines.wording import counted

_PROGRESS_EVERY = 1000
_LOG = logging.getLogger("c4")
# The reader's counters of what it could not read (a staged task that counts one gets no
# marker: most likely a passing failure).
MANIFEST_UNREADABLE = "manifests.skipped:unreadable"
READ = counters.READ_STAGE

def read_wet_pages(file_index: int, path: str, max_record_bytes: int, counts: Counts):
    """The Pages of one WET file, each with its input position; what is skipped (records, or the
    whole file when it cannot be read) is counted, and the file's pages too. A file with a
    problem (skipped whole, corrupt records, an unreadable tail) is named in a warning and in
    the run's `file_problems` (stats.file_problem_counter)."""
    pages = 0
    damage = wet.FileDamage()
    try:
        for item in wet.read_wet(lambda: files.open_raw(path), max_record_bytes):
            if isinstance(item, wet.Skipped):
                counts.add(READ, f"records.skipped:{item.reason}")
                if item.reason == "corrupt_record":
                    damage.add(item, pages)
                continue
            item = dataclasses.replace(item, input_position=(file_index, pages))
            pages += 1
            if pages % _PROGRESS_EVERY == 0:
                _LOG.info("%s: %d pages read", path, pages)
            yield item
    except files.InputError as error:
        reason = "not_wet" if isinstance(error, wet.NotWetFile) else "unreadable"
        _LOG.warning("skipping input file %s: %s", path, error)
        counts.add(READ, f"files.skipped:{reason}")
        counts.add(stats.FILE_PROBLEMS, stats.file_problem_counter(
            path, f"skipped whole ({reason}): {error}", pages_read=0, skipped=reason))
    else:
        counts.add(READ, "files.read")
        if damage:
            _LOG.warning("input file %s is damaged: %s (%s read)", path, damage.describe(),
                         counted(pages, "page"))
            counts.add(stats.FILE_PROBLEMS, stats.file_problem_counter(
                path, damage.describe(), pages_read=pages,
                corrupt_records=damage.corrupt_records, corrupt_bytes=damage.corrupt_bytes,
                unreadable_from_byte=damage.unreadable_from,
                unreadable_bytes=(None if damage.unreadable_from is None
                                  or damage.file_bytes is None
                                  else damage.file_bytes - damage.unreadable_from)))
        else:
            _LOG.info("%s: done, %s", path, counted(pages, "page"))
    finally:
        if pages:
            counts.add(READ, counters.PASSED, pages)


class _ReadWetFileFn(beam.DoFn):

    def __init__(self, max_record_bytes: int):
        self._max_record_bytes = max_record_bytes

    def process(self, indexed_path):
        counts = Counts()
        try:
            yield from read_wet_pages(*indexed_path, self._max_record_bytes, counts)
        finally:
            report(counts)


def max_record_bytes(config: VariantConfig) -> int:
    """The largest WET record read: a page over the length limit is dropped anyway, and a
    character is at most 4 bytes of UTF-8."""
    return 4 * config.max_page_chars


def listed_files(source: inputs.WetSource, wanted: range, counts: Counts):
    """(index in the input list, path) of a source's files in `wanted`, but those the public
    C4 code skips as corrupt (counted)."""
    try:
        for indexed_path in source.indexed_paths():
            if indexed_path[0] >= wanted.stop:
                break
            if indexed_path[0] not in wanted:
                continue
            if inputs.is_known_corrupt(indexed_path[1]):
                counts.add(READ, "files.skipped:known_corrupt")
                continue
            yield indexed_path
    except files.InputError as error:
        _LOG.warning("skipping manifest %s: %s", source.manifest, error)
        counts.add(READ, MANIFEST_UNREADABLE)


class ListWetFiles(beam.PTransform):
    """An input plan (pipelines/readers/inputs.py) -> (index in the input list, path) of its files,
    or of those in `wanted`, spread over the workers. The workers list each manifest's files, so
    the job holds the plan, not the paths."""

    def __init__(self, plan: inputs.InputPlan, wanted: Optional[range] = None):
        super().__init__()
        self._wanted = range(plan.files) if wanted is None else wanted
        self._sources = [source for source in plan.sources
                         if source.first_index < self._wanted.stop
                         and self._wanted.start < source.first_index + source.count]

    def expand(self, pipeline):
        return (pipeline
                | "ListSources" >> beam.Create(self._sources)
                | "ListFiles" >> beam.FlatMap(counted_per_element(listed_files), self._wanted)
                | "SpreadFiles" >> beam.Reshuffle())


class ReadWetFiles(beam.PTransform):
    """An input plan -> the Pages of its files' conversion records."""

    def __init__(self, plan: inputs.InputPlan, max_record_bytes: int):
        super().__init__()
        self._plan = plan
        self._max_record_bytes = max_record_bytes

    def expand(self, pipeline):
        return (pipeline
                | "ListWetFiles" >> ListWetFiles(self._plan)
                | "ReadRecords" >> beam.ParDo(_ReadWetFileFn(self._max_record_bytes)))
