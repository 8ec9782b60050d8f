"""The registry-facing base class of every model family, and the one map from architecture names
to families.

`ModelFamily` implements the trainer's contract (model/trainer/family.py's `Family`: what the
model function and a run ask of a family) with the defaults every family shares, and adds what
the registry and the command line ask of one: its name and architectures, its part of a task
run (`task_plan`: text to text by default, heads for BERT and GPT-1), its export and its
checkpoint formats, plus the run-side recipe of the pre-training streams (the objective's
examples through the family's feature converter).

A family is one kind of model with its feature contract: which feature converter class
(`model/data/features.py`'s `FeatureConverter`) makes its inputs (and so which feature keys it
receives), how its Mesh TensorFlow model is built, and what it returns for a batch: losses (with
any auxiliary terms), evaluation metrics and predictions. Each family names its vocabulary kind
(`vocabulary`) and its optimizer (`optimizer`): there is no default (T5's SentencePiece and
Adafactor are T5's).

A family that needs other features names a converter class of its own package in `converter`
(as the toy family of tests/toys does; BERT makes its features from documents and names none);
one with extra losses (NSP, classification heads) adds them to `Losses.objective` and reports
them in `Losses.metrics`; one with heads that a pre-trained checkpoint does not have lists them
in `fresh_on_warm_start`; one whose checkpoints convert to or from other formats lists them in
`checkpoint_formats`.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple, Type

import tensorflow as tf2

from model.data import features, inputs, language_mixture
from model.data.input_position import ResumableExamples
from model.data.vocabulary import Vocabulary
from model.convert.checkpoints import CheckpointFormat
from model.tasks import evaluation, text_to_text
from model.tasks.selection import TaskRequest
from model.tasks.task_runs import TaskPlan
from model.trainer.family import Family, default_family_config
from model.trainer.losses import Losses
from model.trainer.mtf_compat import mtf


class ModelFamily(Family, abc.ABC):
    """One model family, configured for one run: model/trainer/family.py's `Family` and what the
    registry and the command line ask of it."""

    # The family's name and its feature converter: the class (model/data/features.py's
    # FeatureConverter) that turns task examples {"inputs", "targets"} into its features.
    name: ClassVar[str]
    converter: ClassVar[Optional[Type[features.FeatureConverter]]]
    # The ModelConfig.architecture values this family builds.
    architectures: ClassVar[Tuple[str, ...]]
    # Regular expressions of variable names that warm start may leave freshly initialised
    # (new heads); every other variable must come from the checkpoint.
    fresh_on_warm_start: ClassVar[Tuple[str, ...]] = ()
    # Fine-tuning from a checkpoint: True restores every variable, the optimizer's slots and the
    # global step included, and the step continues (T5: Adafactor's statistics and its decay
    # schedule go on). False restores the trained weights only: the optimizer starts with fresh
    # slots at step 0 and the schedule starts over (google-research/bert's run_classifier.py
    # and run_squad.py restore trainable variables only; OpenAI's finetune-transformer-lm
    # train.py loads the parameters and starts Adam at t = 0).
    warm_start_continues_training: ClassVar[bool] = True
    # (regular expression, replacement) renamings of a variable's name under which a
    # checkpoint written by another version of the reference code may hold it.
    checkpoint_aliases: ClassVar[Tuple[Tuple[str, str], ...]] = ()
    # Features PREDICT passes to `predict` by name, beside `inputs`, when the input has them
    # (SegaBERT's structure indices).
    predict_feature_keys: ClassVar[Tuple[str, ...]] = ()
    # The global gradient norm is clipped to this before the update (None: no clipping; T5's
    # Adafactor clips its updates instead). BERT's and OpenAI's code clip at 1.0.
    gradient_clip_norm: ClassVar[Optional[float]] = None

    # The family's own configuration (model/trainer/family.py): a frozen dataclass that gin
    # configures, built once per run by `configured_family_config` (None: the family has none).
    config_class: ClassVar[Optional[type]] = None

    def __init__(self, config: Any, vocab_size: int,
                 variable_dtype: mtf.VariableDType = mtf.VariableDType(),
                 run_vocabulary: Optional[Vocabulary] = None, family_config: Any = None):
        self.config = config
        self.vocab_size = vocab_size
        self.variable_dtype = variable_dtype
        # The run's vocabulary (None: no run's, as in a checkpoint conversion).
        self.run_vocabulary = run_vocabulary
        # The run's family config as handed down (None: the class's defaults, not gin's).
        self.family_config = (default_family_config(self.config_class)
                              if family_config is None else family_config)

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        """The features the model reads: every key of its converter's output."""
        return self.converter.model_features

    @property
    def float_feature_keys(self) -> Tuple[str, ...]:
        """The `feature_keys` the model function imports as float32 (a regression head's
        label); every other feature is int32."""
        return ()

    def convert_features(self, dataset: tf2.data.Dataset, sequence_lengths: Mapping[str, int],
                         pack: bool = True) -> tf2.data.Dataset:
        """Task examples -> this family's features."""
        return features.convert_features(dataset, self.converter, sequence_lengths, pack=pack)

    @abc.abstractmethod
    def build(self, training: bool) -> Any:
        """The Mesh TensorFlow model (dropout only when `training`)."""

    @abc.abstractmethod
    def losses(self, model: Any, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        """Losses and metrics for a batch of `feature_keys` ([batch, length] int32 each, but
        `float_feature_keys` float32)."""

    @abc.abstractmethod
    def predict(self, model: Any, inputs: mtf.Tensor, decode_length: int, beam_size: int = 1,
                alpha: float = 0.6) -> mtf.Tensor:
        """[batch, decode_length] predicted ids for `inputs` (ids ending in EOS, zero padded):
        greedy, or beam search of `beam_size` with length penalty `alpha`."""

    # ---- The run's side: what the trainer and the command line ask of a family before any
    # model is built (class methods; `run` is a model/trainer/runs.py Run).

    @classmethod
    def configured_family_config(cls) -> Any:
        """The family's config as the parsed gin bindings make it (None: the family has
        none): the one place a family's settings are read from gin, once per run, by the
        command line (runs.configured_run)."""
        return None if cls.config_class is None else cls.config_class()

    @classmethod
    @abc.abstractmethod
    def vocabulary(cls, path: str) -> Vocabulary:
        """The vocabulary file `DataConfig.vocabulary` names, read as this family reads it
        (T5's: SentencePiece; BERT's: WordPiece)."""
        raise NotImplementedError(f"the {cls.name} family names no vocabulary kind")

    @classmethod
    def training_stream(cls, run: Any) -> ResumableExamples:
        """Pre-training examples over `DataConfig.source`, epoch after epoch, resumable at a
        recorded position: the objective's examples, converted and packed; over the languages of
        a `languages:ROOT` source, mT5's mixture of them (model/data/language_mixture.py)."""
        data = run.data_config
        root = language_mixture.mixture_root(data.source)
        recipe = dict(vocabulary=run.vocabulary, objective=data.objective,
                      sequence_lengths=data.sequence_lengths, converter=cls.converter,
                      seed=data.seed)
        if root is None:
            return inputs.PretrainingStream(data.source, shuffle_windows=data.shuffle_windows,
                                            **recipe)
        if data.shuffle_windows:
            raise ValueError("DataConfig.shuffle_windows is for one source, not a language mixture")
        return language_mixture.LanguageMixtureStream(
            root, languages=tuple(data.languages), exponent=data.language_exponent, **recipe)

    @classmethod
    def validation_examples(cls, run: Any) -> tf2.data.Dataset:
        """The validation text's examples (`DataConfig.eval_source`, else the validation split
        of a `tfds:` source, of a pipeline output folder, or of each language of a mixture), as
        the training stream makes them."""
        data = run.data_config
        if language_mixture.mixture_root(data.source) is not None and not data.eval_source:
            text = cls.training_stream(run).validation_text()
        else:
            text = inputs.validation_text(data.source, data.eval_source)
        return inputs.pretraining_dataset(text, run.vocabulary, data.objective,
                                          data.sequence_lengths, cls.converter, seed=data.seed,
                                          pack=True)

    @classmethod
    def task_plan(cls, run: Any, request: TaskRequest, training: bool) -> TaskPlan:
        """The family's part of a task run with `--task`/`--mixture` (a TaskRequest of
        model/tasks/selection.py; model/tasks/task_runs.py's `run_tasks` is the one loop that
        trains and scores it): the run as the tasks configure it, the validation sets, how a
        checkpoint answers them and, when `training`, how the run trains. By default text to
        text (model/tasks/text_to_text.py): pairs through the family's feature converter,
        answers decoded by its `predict`."""
        if cls.converter is None:
            raise ValueError(f"the {cls.name} family does not fine-tune on tasks")
        return text_to_text.task_plan(run, request, training)

    @classmethod
    def checkpoint_formats(cls) -> Dict[str, CheckpointFormat]:
        """{format name: CheckpointFormat} of the checkpoints this family converts from and to
        (`python -m model import|export --family PACKAGE --format NAME`, PACKAGE the
        name of the family's package under model/families/). Each format is a module of the
        family's package over model/convert/checkpoints.py; the objects are made when the
        command line asks, after gin is parsed, and read gin only when they convert."""
        return {}

    @classmethod
    def export(cls, run: Any, export_dir: str, checkpoint: str, task: Optional[str]) -> dict:
        """`python -m model export` without --format: `checkpoint` as a transformers
        `save_pretrained` folder."""
        exported = [name for name, chosen in cls.checkpoint_formats().items()
                    if "export" in chosen.directions]
        raise ValueError(f"the {cls.name} family has no export without --format: python -m "
                         f"model export --family {package_of(cls)} --format FORMAT writes its "
                         f"formats ({', '.join(exported) or 'none'})")

    @classmethod
    def text_decoding_refusal(cls, family_config: Any, model_dir: str) -> Optional[str]:
        """Why `decode --input_file` (text in, text out) does not apply to the run in
        `model_dir` with `family_config`, and the export that serves it instead where there is
        one; None where the run decodes text. The command line adds the task's `eval`."""
        return None

    # ---- The model's side: what the model function asks of a configured family.

    @abc.abstractmethod
    def optimizer(self, learning_rate: Any) -> mtf.optimize.Optimizer:
        """The optimizer of a training step at `learning_rate` (T5's: Adafactor)."""


def eval_on_tasks(model_dir: str) -> str:
    """The command that scores a fine-tuned run on its tasks (those its eval/best.json names,
    else TASK), for a message: what a run that answers tasks does instead of decoding text."""
    named = evaluation.evaluated_tasks(model_dir)
    task = named[0] if len(named) == 1 else "TASK"
    return (f"score it on its task: python -m model eval --task {task} --model_dir {model_dir} "
            f"(with the --task_files or --task_dir it was fine-tuned with)")


def package_of(family: type) -> str:
    """The package of model/families/ (or elsewhere) that defines `family`: the name
    `--family` takes on the command lines that pick a family by package (model.convert,
    deploy.tpu)."""
    return family.__module__.split(".")[-2]


@dataclasses.dataclass(frozen=True)
class Registry:
    """The one map from architecture names to families."""

    families: Tuple[type, ...]

    def __post_init__(self) -> None:
        seen: Dict[str, str] = {}
        for family in self.families:
            for architecture in family.architectures:
                if architecture in seen:
                    raise ValueError(f"architecture {architecture!r} is claimed by families "
                                     f"{seen[architecture]} and {family.name}")
                seen[architecture] = family.name

    @property
    def architectures(self) -> Dict[str, type]:
        return {a: family for family in self.families for a in family.architectures}

    def family_class(self, architecture: str) -> type:
        known = self.architectures
        if architecture not in known:
            raise ValueError(f"unknown architecture {architecture!r}; choose one of "
                             f"{sorted(known)}")
        return known[architecture]
