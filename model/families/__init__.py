"""Model families behind one interface (`base.ModelFamily`), and the one map from
`ModelConfig.architecture` names to them.

Each family is one package here: t5/ (the paper's encoder-decoder, decoder-only and prefix LM),
gpt1/, bert/ and segabert/ (which builds on bert/, the one documented direction between
families). A package owns its Mesh TensorFlow model, its inputs, its heads and its part of
a task run (`ModelFamily.task_plan`), its config class, its vocabulary kind and its checkpoint
formats. Adding a family is one package, one entry in `REGISTRY` below and its gin files: the
trainer (model/trainer/), the one task loop (model/tasks/task_runs.py) and the command line
(model/train.py) do not change. The list is explicit: importing a module registers
nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from model.families.base import ModelFamily, Registry, package_of
from model.families.bert.model import Bert
from model.families.gpt1.model import GPT1
from model.families.segabert.model import SegaBert
from model.families.t5.model import DecoderOnlyLM, EncoderDecoder, PrefixLM
from model.trainer import runs
from model.trainer.mtf_compat import mtf

REGISTRY = Registry((EncoderDecoder, DecoderOnlyLM, PrefixLM, Bert, GPT1, SegaBert))


def family_class(architecture: str) -> type:
    """The family that builds `architecture` (a ValueError naming the known ones otherwise)."""
    return REGISTRY.family_class(architecture)


def family_for(config: Any, vocab_size: int,
               variable_dtype: mtf.VariableDType = mtf.VariableDType(),
               family_config: Any = None) -> ModelFamily:
    """The family of `config.architecture`, configured for one run (`family_config`: the
    run's, None: the family's defaults)."""
    return family_class(config.architecture)(config, vocab_size, variable_dtype,
                                             family_config=family_config)


def families_by_package(declares: Callable[[type], Any], what: str) -> Dict[str, type]:
    """{package name: family class} of the registered families for which `declares(family)`
    is true; two of one package that both declare it are an error naming them and `what`."""
    found: Dict[str, type] = {}
    for family in REGISTRY.families:
        if not declares(family):
            continue
        package = package_of(family)
        if package in found:
            raise ValueError(f"families {found[package].name} and {family.name} of package "
                             f"{package} both declare {what}")
        found[package] = family
    return found


def configured_run(model_dir: str) -> runs.Run:
    """The run the parsed gin bindings describe, with the family of its architecture."""
    return runs.configured_run(model_dir, family_class)


__all__ = ["ModelFamily", "REGISTRY", "configured_run", "families_by_package", "family_class",
           "family_for", "package_of"]
