"""What a task is: where its examples come from, how they become text pairs, how answers are scored.

Plain Python over plain dicts: an example is the dict the task's TFDS dataset gives (strings, ints,
floats, lists, nested dicts), whether it was read by TFDS or from the original release files.
"""
from __future__ import annotations

import csv
import dataclasses
from typing import Any, Callable, Iterator, Mapping, Sequence

from model.tasks import sources
from model.tasks.sources import TfdsSplit

Example = Mapping[str, Any]
TextPair = dict[str, str]  # {"inputs": ..., "targets": ...}


@dataclasses.dataclass(frozen=True)
class Decoding:
    """How a task's predictions are decoded: greedy (beam_size 1), or beam search with the length
    penalty ((5 + length) / 6) ** alpha of Wu et al. (2016), as Mesh TensorFlow's decoder has it."""
    beam_size: int = 1
    alpha: float = 0.6

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {self.beam_size}")

    @property
    def is_beam_search(self) -> bool:
        return self.beam_size > 1

    def settings(self) -> dict:
        """What a score records of its decoding: the beam size, and alpha with beam search
        only (greedy decoding has no length penalty)."""
        return dataclasses.asdict(self) if self.is_beam_search else {"beam_size": self.beam_size}


GREEDY = Decoding()
# The decoding of the paper's final models for WMT and CNN/Daily Mail (Section 3.7): beam width
# 4, alpha 0.6. Section 3's experiments (the baseline and every comparison) decode greedily.
BEAM_SEARCH = Decoding(beam_size=4, alpha=0.6)


@dataclasses.dataclass(frozen=True)
class SequenceLengths:
    """Token lengths of a task, EOS included: fine-tuning trims inputs and targets to them, and
    evaluation decodes up to `targets` tokens (as the t5 library, which decodes to the targets
    length). The values are the t5 library's (t5/models/gin/sequence_lengths/)."""
    inputs: int
    targets: int

    def __post_init__(self) -> None:
        if min(self.inputs, self.targets) < 2:
            raise ValueError(f"sequence lengths hold at least one token and EOS, got {self}")

    def covering(self, other: SequenceLengths) -> SequenceLengths:
        """The shortest lengths that cut neither these nor `other`'s sequences."""
        return SequenceLengths(max(self.inputs, other.inputs), max(self.targets, other.targets))


# t5/models/gin/sequence_lengths/default.gin, and the library's CNN/DM and WMT files.
DEFAULT_LENGTHS = SequenceLengths(inputs=512, targets=512)


@dataclasses.dataclass(frozen=True)
class LocalFormat:
    """A reader for the original release files of a task: `read(*paths)` yields the TFDS dicts."""
    description: str  # e.g. "GLUE TSV (train.tsv, dev.tsv)"
    read: Callable[..., Iterator[dict]]


@dataclasses.dataclass(frozen=True)
class ReleaseLayout:
    """Where a task's original release files lie in a folder of releases (the command line's
    `--task_dir DIR`): the task's folder under DIR, and per split the file's path inside the
    release (XNLI's validation: `XNLI-1.0/xnli.dev.tsv`). The file may lie at any depth under
    DIR/folder, as an unpacked archive or a sample adds a level; it must be found once."""
    folder: str
    files: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class ReleaseText:
    """The text of a task's release files that a web page could hold, for the contamination
    study (model/tasks/contamination.py) over a folder of releases laid out as
    ../shared/data/tasks: the task's folder there, the patterns of its files in it (at any
    depth, each match read by the task's local format; with `aligned`, a match is the source
    side, read with the file of that suffix beside it, as WMT's line-aligned files), and the
    fields of its examples that hold text. `identity`: the parts of an example's `idx` that name
    one text, where its examples share it (MultiRC's answer options share their question);
    empty, the example's own `idx` or `id`."""
    folder: str
    files: tuple[str, ...]
    fields: tuple[str, ...]
    aligned: str = ""
    identity: tuple[str, ...] = ()


def training_of(splits: Mapping[str, Any], trained_by: str) -> dict:
    """`trained_on` and `untrained_reason` of a task of mT5's benchmarks: trained where it has a
    training split, else evaluated only, `trained_by` (a mixture) training for it."""
    trained = "train" in splits
    return {"trained_on": trained,
            "untrained_reason": "" if trained else f"it has no training split: {trained_by} trains for it"}


@dataclasses.dataclass(frozen=True)
class Task:
    """A downstream task of the paper, cast as text to text.

    preprocess(example) -> {"inputs", "targets"}: the pair the model sees in evaluation (and, for
      most tasks, in training).
    training_pairs(example) -> list of pairs: what fine-tuning uses; empty for an example a task
      does not train on (WSC's wrong referents), several for ReCoRD (one per answer).
    reference(example): what `score` compares a prediction with; the target string unless the
      metric needs more (all SQuAD/ReCoRD answers, the MultiRC question, the WSC label).
    postprocess(text): a predicted string as the metric takes it (class id, float, answer); a
      string that is no valid label gives a value that scores as wrong.
    score(targets, predictions) -> {metric: percent}: targets are target strings or references.
    """
    name: str
    splits: Mapping[str, TfdsSplit]  # our split name ("train", "validation", ...) -> TFDS split
    local_format: LocalFormat
    preprocess: Callable[[Example], TextPair]
    postprocess: Callable[[str], Any]
    metric_names: tuple[str, ...]
    score_postprocessed: Callable[[Sequence[Any], Sequence[Any]], dict[str, float]]
    # The TFDS train split's size, for mixing rates; None where it is not known (a task that
    # only mixes equally, as mT5's do): examples-proportional mixing then refuses it.
    num_train_examples: int | None
    training_pairs_of: Callable[[Example], list[TextPair]] | None = None
    reference_of: Callable[[Example], Any] | None = None
    target_to_reference: Callable[[str], Any] | None = None
    trained_on: bool = True  # False: evaluated only, as the paper never trains on WNLI
    untrained_reason: str = ""  # why a task is evaluated only, for the refusal to fine-tune on it
    benchmark: str = ""  # "glue" or "super_glue": counts in that benchmark's average
    # How the paper's final models decode this task (BEAM_SEARCH for WMT and CNN/DM); used only
    # when beam search is switched on (model.trainer.decoding.DecodingConfig), else every task is greedy.
    final_decoding: Decoding = GREEDY
    lengths: SequenceLengths = DEFAULT_LENGTHS
    # A classification task's classes by id, as its targets spell them (MRPC's "not_equivalent",
    # "equivalent"); None for other tasks. An export names a classifier's outputs by them.
    label_names: tuple[str, ...] | None = None
    # The splits an evaluation scores; None: the registered validation splits. A "test" split
    # is scored and reported but never picks a checkpoint when the task has another split.
    eval_splits: tuple[str, ...] | None = None
    release: ReleaseLayout | None = None  # where `--task_dir` finds the release files
    language: str = ""  # ISO 639-1 code of a task of one language of a multilingual benchmark
    text: ReleaseText | None = None  # what of its release files a web page could hold

    def decoding(self, beam_search: bool) -> Decoding:
        """Greedy, as the paper's Section 3 experiments decode; with `beam_search`, the final
        models' decoding of this task."""
        return self.final_decoding if beam_search else GREEDY

    def training_pairs(self, example: Example) -> list[TextPair]:
        if self.training_pairs_of is not None:
            return self.training_pairs_of(example)
        return [self.preprocess(example)]

    def reference(self, example: Example) -> Any:
        if self.reference_of is not None:
            return self.reference_of(example)
        return self.postprocess(self.preprocess(example)["targets"])

    def score(self, targets: Sequence[Any], predictions: Sequence[str]) -> dict[str, float]:
        if len(targets) != len(predictions):
            raise ValueError(f"{self.name}: {len(targets)} targets but {len(predictions)} predictions")
        if not targets:
            raise ValueError(f"{self.name}: nothing to score")
        references = [self._as_reference(t) for t in targets]
        return self.score_postprocessed(references, [self.postprocess(p) for p in predictions])

    def _as_reference(self, target: Any) -> Any:
        if not isinstance(target, str):
            return target  # already a reference(example)
        if self.target_to_reference is not None:
            return self.target_to_reference(target)
        return self.postprocess(target)

    def examples(self, split: str, data_dir: str | None = None) -> Iterator[dict]:
        """The raw examples of a split from TFDS (needs the prepared dataset or the internet)."""
        if split not in self.splits:
            raise KeyError(f"{self.name} has no split {split!r}; it has {sorted(self.splits)}")
        return sources.tfds_examples(self.splits[split], data_dir)

    def local_examples(self, *paths: str) -> Iterator[dict]:
        """The raw examples of original release files, as TFDS gives them. A file that its
        reader cannot take (another task's file, another layout) is an error naming the files,
        the task and the layout it reads."""
        try:
            yield from self.local_format.read(*paths)
        # What the readers raise on a file of another layout: a JSON or TSV they cannot parse,
        # a field or column that is not there, a row of another shape.
        except (ValueError, KeyError, IndexError, TypeError, csv.Error) as error:
            raise TaskFileError(
                f"{', '.join(paths)}: not the files {self.name} reads "
                f"({self.local_format.description}): {type(error).__name__}: {error}"
            ) from None


class TaskFileError(ValueError):
    """A task's release file that its reader cannot take."""
