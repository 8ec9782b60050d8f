"""The OpenWebText join on Beam: the keyed pages joined with the URLs of the lists, read by
the steps of pipelines/steps/webtext_join.py.
"""
from typing import Optional, Sequence

import apache_beam as beam

from pipelines.beam.phases import SampleOutputs, apply_phase, counted_per_element
from pipelines.config import VariantConfig
from pipelines.steps.base import Step
from pipelines.steps.resources import Resources
from pipelines.steps.url_dedup import KeyByUrl
from pipelines.steps.webtext_join import EncodedPage, webtext_urls_of_file


class JoinWebTextUrls(beam.PTransform):
    """Keyed pages (URL, page) -> (URL, {"pages": [encoded page], "listed": [...]}), joined with
    the OpenWebText URL lists (UnpackJoin reads the groups). The `before` steps (which take
    DedupUrls's output and give pages) run in the DoFn that keys the pages."""

    def __init__(self, config: VariantConfig, resources: Resources, before: Sequence[Step],
                 sample: Optional[SampleOutputs] = None):
        super().__init__()
        self._config = config
        self._resources = resources
        self._before = tuple(before)
        self._sample = sample

    def expand(self, newest):
        listed = (newest.pipeline
                  | "ListUrlFiles" >> beam.Create(list(self._resources.webtext_url_files))
                  | "ReadUrlLists" >> beam.FlatMap(counted_per_element(webtext_urls_of_file),
                                                  self._config.rule_set))
        keyed = apply_phase(newest, "KeyPagesByUrl", [*self._before, KeyByUrl(), EncodedPage()],
                            self._sample).main
        return {"pages": keyed, "listed": listed} | "JoinUrlLists" >> beam.CoGroupByKey()
