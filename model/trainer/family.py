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
  run_vocabulary=...)`, `run_vocabulary` the run's vocabulary (`vocabulary` of DataConfig's
  file; None where no run names one, as in a checkpoint conversion): what a model reads of it
  (BERT's [SEP] id, GPT-1's special tokens' order) comes from there, never from gin;
- in each mode of the model function, of that object: `build` the Mesh TensorFlow model, then
  for TRAIN and EVAL the `feature_keys` it reads (`float_feature_keys` as float32) and its
  `losses`, for PREDICT `predict` on `inputs` (plus `predict_feature_keys` the input has);
- in TRAIN, the `optimizer`, the gradient clipping (`gradient_clip_norm`) and how warm start
  treats it: which variables may stay fresh (`fresh_on_warm_start`), whether the optimizer's
  slots and the global step continue (`warm_start_continues_training`) and which other names a
  checkpoint may give its variables (`checkpoint_aliases`).
"""
from __future__ import annotations

from typing import Any, ClassVar, Dict, Optional, Protocol, Tuple, Type

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

    def __init__(self, config: Any, vocab_size: int,
                 variable_dtype: mtf.VariableDType = ...,
                 run_vocabulary: Optional[Vocabulary] = None) -> None: ...

    # ---- The run's side (class methods).

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
