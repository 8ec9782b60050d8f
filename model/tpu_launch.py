"""How each model family pre-trains on Cloud TPU, by family package (the name `--family` takes),
in a module that imports nothing: deploy/tpu's dry run plans from it without TensorFlow, which
importing a family (model/families/) would load. tests/deploy/test_deploy.py checks each entry
against the registry: a registered family of that package builds the architectures named here.
"""
import dataclasses
from typing import Dict, Mapping, Tuple


@dataclasses.dataclass(frozen=True)
class TPULaunch:
    """What a TPU launcher (deploy/tpu) plans a family's pre-training with, beside the gin
    files it reads: where the family's sizes are, which files configure its pre-training, the
    vocabulary it plans the layout for and the model parallelism some sizes need."""

    size_dir: str  # under model/gin/: the family's size files (those that bind d_model)
    pretrain_gin: Tuple[str, ...]  # read after pretrain.gin
    # Ids of the vocabulary the layout splits over the `model` mesh axis. The launcher does not
    # read --vocabulary (on gs://), so it plans for the family's own.
    vocab_size: int
    # Read before a size file that names no ModelConfig.architecture (T5's); a family whose
    # size files name theirs leaves it empty.
    architecture_gin: Tuple[str, ...] = ()
    # Model parallelism needed on 8-core TPUs (v2-8/v3-8) by size name: below it the weights,
    # gradients and activations of one replica do not fit one core's memory. Sizes not listed
    # fit one core.
    min_model_parallelism: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # The ModelConfig.architecture values the family's size files name, by which a size file
    # PATH.gin finds its family (empty when architecture_gin supplies it).
    architectures: Tuple[str, ...] = ()


TPU_LAUNCHES: Dict[str, TPULaunch] = {
    # T5's size files (model/gin/sizes/) name no architecture; SentencePiece padded to a
    # multiple of 128 (32,128 ids); the T5 authors' model parallelism for the sizes that need it.
    "t5": TPULaunch("sizes", (), 32_128, ("architectures/encoder_decoder.gin",),
                    {"base": 2, "large": 8, "3B": 8, "11B": 8}),
    # OpenAI's BPE: 40,478 ids, not padded (divisible by 2 only).
    "gpt1": TPULaunch("gpt1", ("gpt1/pretrain.gin",), 40_478, architectures=("gpt1",)),
    # Phase 1 of the two (90% of the steps at 128 pieces); the uncased WordPiece vocabulary's
    # 30,522 pieces, not padded (divisible by 2 only).
    "bert": TPULaunch("bert", ("bert/pretrain_128.gin",), 30_522, architectures=("bert",)),
    # BERT's WordPiece vocabulary (30,522 pieces).
    "segabert": TPULaunch("segabert", ("segabert/pretrain.gin",), 30_522,
                          architectures=("segabert",)),
}
