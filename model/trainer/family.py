"""The contract between the trainer and a model family: everything the trainer asks of one.

The trainer owns it and knows no family by name: a run (model/trainer/runs.py) carries a class
of this protocol, the model function (model/trainer/model_fn.py) configures one object of it per
run and calls it, and checkpoint conversion (model/convert/checkpoints.py) builds one to name its
variables. Families implement it through model/families/base.py's `ModelFamily`, which adds
what the registry and the command line ask of a family (its name, architectures, task runs,
exports, checkpoint formats) and the run-side recipe every family shares (the pre-training
streams).

What is asked, and when:
- before any model is built, of the class: the `vocabulary` a run's `DataConfig.vocabulary`
  names, and the pre-training examples (`training_stream`, `validation_examples`) made with
  the family's feature converter (`converter`);
- once per run, the class is called as `family(model_config, vocab_size, variable_dtype,
  run_vocabulary=..., family_config=...)`, `run_vocabulary` the run's vocabulary (`vocabulary`
  of DataConfig's file; None where no run names one, as in a checkpoint conversion): what a
  model reads of it (BERT's [SEP] id, GPT-1's special tokens' order) comes from there;
  `family_config` an object of the family's `config_class` (BertConfig, GPT1Config), built once
  from gin by the command line (runs.configured_run) and handed down in the run (None: the
  class's defaults). No family reads gin when it is constructed;
- in each mode of the model function, of that object: `build` the Mesh TensorFlow model, then
  for TRAIN and EVAL the `feature_keys` it reads (`float_feature_keys` as float32) and its
  `losses`, for PREDICT `predict` on `inputs` (plus `predict_feature_keys` the input has);
- in TRAIN, the `optimizer`, the gradient clipping (`gradient_clip_norm`) and how warm start
  treats it: which variables may stay fresh (`fresh_on_warm_start`), whether the optimizer's
  slots and the global step continue (`warm_start_continues_training`) and which other names a
  checkpoint may give its variables (`checkpoint_aliases`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, List, Optional, Protocol, Tuple, Type

import tensorflow as tf2

from model.data.features import FeatureConverter
from model.data.input_position import ResumableExamples
from model.data.vocabulary import Vocabulary
from model.trainer.losses import Losses
from model.trainer.mtf_compat import mtf


class Family(Protocol):
    """One model family, configured for one run (`run` below is a model/trainer/runs.py Run)."""

    # The feature converter: the class (model/data/features.py's FeatureConverter) that turns
    # examples {"inputs", "targets"} into the family's features (None: the family makes its own).
    converter: ClassVar[Optional[Type[FeatureConverter]]]
    # Regular expressions of variable names that warm start may leave freshly initialised
    # (new heads); every other variable must come from the checkpoint.
    fresh_on_warm_start: ClassVar[Tuple[str, ...]]
    # Fine-tuning from a checkpoint: True restores every variable, the optimizer's slots and the
    # global step included, and the step continues; False restores the trained weights only and
    # the optimizer and the schedule start over at step 0.
    warm_start_continues_training: ClassVar[bool]
    # (regular expression, replacement) renamings of a variable's name under which a checkpoint
    # may hold it.
    checkpoint_aliases: ClassVar[Tuple[Tuple[str, str], ...]]
    # Features PREDICT passes to `predict` by name, beside `inputs`, when the input has them.
    predict_feature_keys: ClassVar[Tuple[str, ...]]
    # The global gradient norm is clipped to this before the update (None: no clipping).
    gradient_clip_norm: ClassVar[Optional[float]]
    # The family's own configuration beyond ModelConfig's sizes: a frozen dataclass,
    # configurable in gin (None: the family has none).
    config_class: ClassVar[Optional[type]]

    def __init__(self, config: Any, vocab_size: int,
                 variable_dtype: mtf.VariableDType = ...,
                 run_vocabulary: Optional[Vocabulary] = None,
                 family_config: Any = None) -> None: ...

    # ---- The run's side (class methods).

    @classmethod
    def configured_family_config(cls) -> Any:
        """The family's config as the parsed gin bindings make it (None: it has none)."""

    @classmethod
    def vocabulary(cls, path: str) -> Vocabulary:
        """The vocabulary file `DataConfig.vocabulary` names, read as this family reads it."""

    @classmethod
    def training_stream(cls, run: Any) -> ResumableExamples:
        """Pre-training examples over `DataConfig.source`, epoch after epoch, resumable at a
        recorded position (model/data/input_position.py)."""

    @classmethod
    def validation_examples(cls, run: Any) -> tf2.data.Dataset:
        """The validation text's examples, as the training stream makes them."""

    # ---- The model's side.

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        """The features the model reads in TRAIN and EVAL."""

    @property
    def float_feature_keys(self) -> Tuple[str, ...]:
        """The `feature_keys` imported as float32; every other feature is int32."""

    def build(self, training: bool) -> Any:
        """The Mesh TensorFlow model (dropout only when `training`)."""

    def losses(self, model: Any, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        """Losses and metrics for a batch of `feature_keys` ([batch, length] each)."""

    def predict(self, model: Any, inputs: mtf.Tensor, decode_length: int, beam_size: int = 1,
                alpha: float = 0.6, **features: mtf.Tensor) -> mtf.Tensor:
        """PREDICT's outputs for `inputs` (ids ending in EOS, zero padded) and the
        `predict_feature_keys` given: greedy, or beam search of `beam_size` with length
        penalty `alpha`."""

    def optimizer(self, learning_rate: Any) -> mtf.optimize.Optimizer:
        """The optimizer of a training step at `learning_rate` (a scalar tensor)."""


def default_family_config(config_class: Optional[type]) -> Any:
    """An object of `config_class` with every field at its default, gin not consulted (each
    plain default is given: gin fills only what a call leaves out; a field made by a default
    factory is the class's own); None without a class."""
    if config_class is None:
        return None
    return config_class(**{field.name: field.default for field in dataclasses.fields(config_class)
                           if field.default is not dataclasses.MISSING})


def config_parts(config: Any) -> List[Any]:
    """The gin-configurable dataclasses a family config is made of: itself, or its fields
    where each is one (SegaBERT's: BERT's config, its structure limits, its optimizer's)."""
    if config is None:
        return []
    values = [getattr(config, field.name) for field in dataclasses.fields(config)]
    if values and all(dataclasses.is_dataclass(value) for value in values):
        return values
    return [config]


def replaced_config(config: Any, changes: Dict[str, Any]) -> Any:
    """`config` with `changes` to its fields, or, for a config made of parts, to the one part
    that has them all."""
    if config_parts(config) == [config]:
        return dataclasses.replace(config, **changes)
    for field in dataclasses.fields(config):
        part = getattr(config, field.name)
        if set(changes) <= {part_field.name for part_field in dataclasses.fields(part)}:
            return dataclasses.replace(config, **{field.name: dataclasses.replace(part, **changes)})
    raise ValueError(f"no part of {type(config).__name__} has all of {sorted(changes)}")
