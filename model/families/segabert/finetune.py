"""SegaBERT's fine-tuning: BERT's heads and runs (model/families/bert/finetune.py) on inputs
that carry the three structure indices, computed as the authors' task processors compute them
(model/families/segabert/structure.py)."""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from model.families.bert.finetune import HeadTask, SquadQuestion
from model.families.segabert import structure
from model.tasks import discriminative


class StructuredHeadTask(HeadTask):
    """A BERT head task whose features add SegaBERT's structure indices."""

    @property
    def structure_config(self) -> structure.StructureConfig:
        special = self.vocabulary.special
        return structure.StructureConfig(special.cls, special.sep, self.length)

    def span_features(self, questions: Sequence[SquadQuestion]) -> Dict[str, np.ndarray]:
        features = super().span_features(questions)
        features.update(structure.squad_indices(questions, self.structure_config))
        return features

    def example_features(self, examples: Sequence[discriminative.Example]) -> Dict[str, np.ndarray]:
        return structure.head_features(examples, discriminative.view(self.name).kind,
                                       self.vocabulary.encode_batch, self.structure_config)
