"""The Beam wiring of the steps (pipelines/beam/phases.py, pipelines/beam/graph.py): pages through
shuffles as tuples, the steps between two shuffles as one DoFn, counters reported once a
bundle, a step's routed outputs as tagged outputs."""
import glob
import pathlib

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pipeline import PipelineVisitor
from apache_beam.testing.util import assert_that, equal_to

from pipelines.beam import phases
from pipelines.beam.graph import C4Pages
from pipelines.beam.url_dedup import NewestPageFn
from pipelines.beam.wet_input import ReadWetFiles
from pipelines.coders import PageCoder
from pipelines.config import variant
from pipelines.filters import dedup
from pipelines.filters.urls import newest_page
from pipelines.page import Page
from pipelines.readers import inputs, wet
from pipelines.readers.files import open_raw
from pipelines.steps.filter_steps import ReleasedText, WithinLength
from pipelines.steps.resources import Resources
from pipelines.steps.span_dedup import SpanRecords
from pipelines.steps.url_dedup import NO_PAGE
from text.sentences import split_sentences

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def real_pages():
    path = sorted(glob.glob(str(SHARED / "wet" / "realistic" / "*.warc.wet.gz")))[0]
    return [item for item in wet.read_wet(lambda: open_raw(path), 760_000)
            if isinstance(item, Page)]


def test_a_page_through_a_shuffle_is_its_fields_not_a_pickle(real_pages):
    """Every field comes back equal (the tagged ones and a released position too), and the
    bytes are Beam's tuple encoding, without the pickle Beam's fallback would write."""
    coder = beam.coders.registry.get_coder(Page)
    assert isinstance(coder, PageCoder) and coder.is_deterministic()
    tagged = [page.__class__(**{**page.__dict__, "language": "en",
                                "language_probability": 0.9999971, "input_position": (2, 7, 1)})
              for page in real_pages[:50]]
    for page in real_pages + tagged:
        encoded = coder.encode(page)
        assert coder.decode(encoded) == page
        assert b"pipelines.page" not in encoded
    accumulators = NewestPageFn(newest_page).get_accumulator_coder()
    for accumulator in ((real_pages[0], 3, tuple(real_pages[1:3])), NO_PAGE):
        assert accumulators.decode(accumulators.encode(accumulator)) == accumulator


class _Labelled(PipelineVisitor):
    """The applied transforms whose full label ends with `suffix`."""

    def __init__(self, suffix):
        self.suffix = suffix
        self.found = []

    def visit_transform(self, applied):
        if applied.full_label.endswith(self.suffix):
            self.found.append(applied)

    def enter_composite_transform(self, applied):
        self.visit_transform(applied)


def test_url_dedup_shuffles_typed_pages():
    """The pages going into URL dedup's shuffle carry their type, so Beam picks PageCoder."""
    pipeline = beam.Pipeline()
    _ = (pipeline | beam.Create([]).with_output_types(Page)
         | C4Pages(variant("en"), Resources(badwords={"en": ("bad",)})))
    keyed = _Labelled("UrlDedup/KeyByUrl")
    pipeline.visit(keyed)
    assert len(keyed.found) == 1
    coder = beam.coders.registry.get_coder(keyed.found[0].outputs[None].element_type)
    assert isinstance(coder.value_coder(), PageCoder)


def _page(number, text):
    return Page(url=f"https://site{number}.com/p", normalized_url=f"site{number}.com/p",
                timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                content_length=len(text), text=text)


def test_a_phase_counts_every_page_and_reports_once_a_bundle(monkeypatch):
    """1,000 pages through two steps: the counters sum every page's passes and drops, and Beam's
    counters are incremented once per name and bundle, not once per page."""
    increments = []
    real_count = phases._count

    def counted(stage, name, value=1):
        increments.append((stage, name))
        real_count(stage, name, value)
    monkeypatch.setattr(phases, "_count", counted)
    pages = [_page(number, "x" * (number % 10)) for number in range(1000)]
    with beam.Pipeline(options=PipelineOptions(["--direct_running_mode=in_memory",
                                                "--direct_num_workers=1"])) as pipeline:
        kept = (pipeline | beam.Create(pages)
                | beam.ParDo(phases.PhaseFn([WithinLength(7), ReleasedText(),
                                                  WithinLength(4)]))
                | beam.Map(lambda page: page.url))
        assert_that(kept, equal_to([page.url for page in pages if len(page.text) <= 4
                                    and page.text]))
    counters = {(counter.key.metric.namespace, counter.key.metric.name): counter.committed
                for counter in pipeline.result.metrics().query(MetricsFilter())["counters"]}
    assert counters[("c4.length", "pages.dropped:too_long")] == 200 + 300
    assert counters[("c4.length", "pages.passed")] == 800 + 400
    assert counters[("c4.released_text", "pages.dropped:no_content")] == 100
    assert counters[("c4.released_text", "pages.passed")] == 700
    assert len(increments) < 50


def test_a_file_read_counts_its_pages_once():
    """The reader's counts, summed in the DoFn, are the file's pages."""
    path = sorted(glob.glob(str(SHARED / "wet" / "realistic" / "*.warc.wet.gz")))[0]
    plan = inputs.plan_inputs([path], None, "")
    with beam.Pipeline(options=PipelineOptions(["--direct_running_mode=in_memory",
                                                "--direct_num_workers=1"])) as pipeline:
        _ = pipeline | ReadWetFiles(plan, 760_000)
    counters = {counter.key.metric.name: counter.committed for counter in
                pipeline.result.metrics().query(MetricsFilter().with_namespace("c4.read"))[
                    "counters"]}
    expected = sum(isinstance(item, Page) for item in wet.read_wet(lambda: open_raw(path),
                                                                    760_000))
    assert counters["pages.passed"] == expected and counters["files.read"] == 1


def _run_bundle(phase, elements, finish=True):
    """One bundle of `phase` called as a runner calls it: its outputs and tagged outputs."""
    phase.start_bundle()
    outputs = [output for element in elements for output in phase.process(element)]
    if finish:
        outputs += [output.value if not isinstance(output, beam.pvalue.TaggedOutput)
                    else beam.pvalue.TaggedOutput(output.tag, output.value.value)
                    for output in phase.finish_bundle()]
    return outputs


def test_each_bundle_reports_its_own_counts_once(monkeypatch):
    reported = []
    monkeypatch.setattr(phases, "_count", lambda stage, name, value=1:
                        reported.append((stage, name, value)))
    phase = phases.PhaseFn([WithinLength(3)])
    phase.setup()
    _run_bundle(phase, [_page(number, "x" * number) for number in range(6)])
    assert sorted(reported) == [("length", "pages.dropped:too_long", 2),
                                ("length", "pages.passed", 4)]
    reported.clear()
    _run_bundle(phase, [_page(9, "x")])
    assert reported == [("length", "pages.passed", 1)]


def test_a_retried_bundle_sends_no_keys_of_the_failed_one():
    """Span dedup's buffer holds a bundle's records until it finishes: a bundle that fails
    before it finishes leaves its records behind, and the retry (the same DoFn instance, as
    runners reuse them) must not send them."""
    phase = phases.PhaseFn([SpanRecords(dedup.PAPER_SPAN_DEDUP, split_sentences, 1)])
    phase.setup()
    failed = _page(1, "One two three. Four five six. Seven eight nine. Ten eleven twelve.")
    retried = _page(2, "Other one. Other two. Other three.")
    _run_bundle(phase, [failed, retried], finish=False)
    outputs = _run_bundle(phase, [retried])
    blocks = [output.value for output in outputs
              if isinstance(output, beam.pvalue.TaggedOutput) and output.tag == "winners"]
    sent = b"".join(block for _, block in blocks)
    keys, _ = dedup.distinct_span_keys(dedup.units_of(retried.text, "spans", split_sentences),
                                       dedup.PAPER_SPAN_DEDUP)
    assert len(sent) == len(keys) * 16
