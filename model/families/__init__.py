"""Model families behind one interface (`base.ModelFamily`), and the one map from
`ModelConfig.architecture` names to them.

Adding a family (GPT-1, BERT, SegaBERT, a fine-tuning head): write a module here with a
`ModelFamily` subclass (its converter, architectures, build, losses, predict; optionally extra
features through a new converter in model/features.py, extra loss terms, its own optimizer and
variables that warm start may leave fresh), and add the class to `REGISTRY` below. Nothing in
model_fn.py or train.py changes. The list is explicit: importing a module registers nothing.
"""
from __future__ import annotations

from typing import Any

from model.families.base import ModelFamily, Registry
from model.families.bert import Bert
from model.families.gpt1 import GPT1
from model.families.segabert import SegaBert
from model.families.t5 import DecoderOnlyLM, EncoderDecoder, PrefixLM
from model.mtf_compat import mtf

REGISTRY = Registry((EncoderDecoder, DecoderOnlyLM, PrefixLM, Bert, GPT1, SegaBert))


def family_class(architecture: str) -> type:
    """The family that builds `architecture` (a ValueError naming the known ones otherwise)."""
    return REGISTRY.family_class(architecture)


def family_for(config: Any, vocab_size: int,
               variable_dtype: mtf.VariableDType = mtf.VariableDType()) -> ModelFamily:
    """The family of `config.architecture`, configured for one run."""
    return family_class(config.architecture)(config, vocab_size, variable_dtype)


__all__ = ["ModelFamily", "REGISTRY", "family_class", "family_for"]
