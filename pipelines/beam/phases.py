"""Steps in Beam: the steps between two shuffles as one DoFn (PhaseFn), their counters summed
and reported once a bundle; the outputs a step routes (steps.Routed) as tagged outputs; the
page's coder is pipelines/coders.py.
"""
import dataclasses
from typing import List, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from pipelines import counters, exclusion_sample
from pipelines.steps.base import Counts, Routed, Step, run_steps

# The tag of the exclusion records (exclusion_sample.Excluded) a phase gives beside its elements.
EXCLUDED_TAG = "excluded"


def _count(stage: str, name: str, value: int = 1):
    Metrics.counter(counters.namespace(stage), name).inc(value)


def report(counts: Counts) -> None:
    """`counts`' increments to Beam's counters, once each."""
    for (stage, name), value in sorted(counts.take().items()):
        _count(stage, name, value)


def counted_per_element(function):
    """`function(element, *args, counts)` as a generator over its element that reports its
    counts to Beam when it is done (for beam.FlatMap)."""
    def counted_function(element, *args):
        counts = Counts()
        try:
            yield from function(element, *args, counts)
        finally:
            report(counts)
    return counted_function


def _tagged(output):
    return (beam.pvalue.TaggedOutput(output.to, output.value) if isinstance(output, Routed)
            else output)


class PhaseFn(beam.DoFn):
    """The steps between two shuffles as one DoFn: Beam's per-element cost (a transform hop, its
    counters) is paid once per element of the phase, not once per stage. Only the last step
    may hold elements across a bundle (its `finish`) or route outputs (steps.Routed, given
    as tagged outputs). With a `sample_fraction`, the steps' drops in the exclusions' sample
    leave as EXCLUDED_TAG."""

    def __init__(self, steps: Sequence[Step], sample_fraction: Optional[float] = None):
        self._steps = tuple(steps)
        self._sample_fraction = sample_fraction
        self._counts = Counts()

    def setup(self):
        for step in self._steps:
            step.setup()

    def start_bundle(self):
        self._counts = Counts(None if self._sample_fraction is None
                              else exclusion_sample.Sample(self._sample_fraction))
        for step in self._steps:
            step.start()

    def process(self, element):
        outputs = [_tagged(output) for output in run_steps(self._steps, element, self._counts)]
        return outputs + self._excluded()

    def _excluded(self) -> list:
        if self._counts.sample is None:
            return []
        return [beam.pvalue.TaggedOutput(EXCLUDED_TAG, record)
                for record in self._counts.sample.take()]

    def finish_bundle(self):
        # What a buffer holds leaves in the global window: the C4 pipeline is a batch job over
        # the whole dataset, in the global window.
        for output in [*map(_tagged, self._steps[-1].finish(self._counts)), *self._excluded()]:
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag,
                                               GlobalWindows.windowed_value(output.value))
            else:
                yield GlobalWindows.windowed_value(output)
        report(self._counts)


@dataclasses.dataclass
class SampleOutputs:
    """A graph's exclusions' sample (--exclusions): its fraction, and the records its phases
    give, to be written at once (graph.write_exclusions)."""
    fraction: float
    records: List[beam.PCollection] = dataclasses.field(default_factory=list)


def apply_phase(pcoll: beam.PCollection, label: str, steps: Sequence[Step],
                sample: Optional[SampleOutputs], *tags: str, output_type=None):
    """`steps` as one PhaseFn over `pcoll`: its outputs by tag (the main one is "main"), its
    exclusion records added to `sample`."""
    phase = beam.ParDo(PhaseFn(steps, sample and sample.fraction))
    if output_type is not None:
        phase = phase.with_output_types(output_type)
    outputs = pcoll | label >> phase.with_outputs(EXCLUDED_TAG, *tags, main="main")
    if sample is not None:
        sample.records.append(outputs[EXCLUDED_TAG])
    return outputs
