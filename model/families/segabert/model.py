"""SegaBERT (Bai et al., "Segatron: Segment-Aware Transformer for Language Modeling and
Understanding"): BERT whose position embedding is replaced by three learned embeddings summed
into each token: the token's index in its sentence (256 rows), its sentence's index in its
paragraph (100) and its paragraph's index in the document (50). Pre-trained with masked LM alone
(`BertConfig.head = 'mlm'`, no next-sentence prediction); fine-tuned with BERT's heads.

The optimizer is the authors' (their pretrain_segabert.py: apex's `FusedAdam`, in its AdamW mode
since apex's 2019 rework, the one of the NGC PyTorch 20.03 image their README names): Adam with
bias correction, epsilon 1e-8 added to the corrected root, the decay `weight_decay * param`
added to the update outside the moments and scaled by the learning rate alone, not on layer
norms and biases (Megatron's get_params_for_weight_decay_optimization). BERT's AdamWeightDecay
has no bias correction and epsilon 1e-6; `FusedAdamConfig` holds SegaBERT's settings (BertConfig's
`adam_*` and `weight_decay_rate` are BERT's and are not read here).

Everything else is BERT's (model/families/bert/model.py): the encoder, token types, the MLM head and
the classification and span heads. The indices come from model/families/segabert/structure.py (how they are
counted, what [CLS] and [SEP] get, what happens at the maxima); the features are BERT's plus
`token_index`, `sentence_index`, `paragraph_index` ([batch, length] int32 each).

PREDICT reads the indices as training does when the input has them (`predict_feature_keys`:
model/families/bert/finetune.py scores a task with the indices of its features, so a segment indexed as
sentences is seen as in fine-tuning). Given token ids alone (decoding raw text), it derives them
in the graph: each segment ([CLS] A [SEP], then B [SEP]) a paragraph of one sentence, its tokens
counted from 0 ([CLS] 0, as its first token; [SEP] one past its last), which is what
finetune.head_features gives a GLUE pair (the authors' processors/glue.py).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple

import gin
import tensorflow.compat.v1 as tf

from model.families.bert import finetune as bert_finetune, inputs as bert_inputs
from model.families.bert.model import AdamWeightDecay, Bert, BertConfig
from model.families.segabert import finetune, pytorch, structure
from model.trainer.adam import bias_correction_step
from model.trainer.family import default_family_config
from model.trainer.mtf_compat import mtf

# The three embedding tables, in structure.INDEX_KEYS order.
TABLES = ("token_index_embeddings", "sentence_index_embeddings", "paragraph_index_embeddings")


@gin.configurable
@dataclasses.dataclass(frozen=True)
class FusedAdamConfig:
    """SegaBERT's optimizer settings (pretrain_segabert.py: betas (0.9, 0.999), FusedAdam's
    epsilon 1e-8, --weight-decay 1e-2 in pretrain_segabert_distributed.sh)."""

    weight_decay_rate: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8


@dataclasses.dataclass(frozen=True)
class SegaBertConfig:
    """SegaBERT's family config: BERT's (its head and sizes), the structure tables' sizes and
    the optimizer's settings, each bound in gin under its own name."""

    # SegaBERT pre-trains with masked LM alone.
    bert: BertConfig = dataclasses.field(
        default_factory=lambda: dataclasses.replace(default_family_config(BertConfig), head="mlm"))
    limits: structure.StructureLimits = dataclasses.field(
        default_factory=lambda: default_family_config(structure.StructureLimits))
    adam: FusedAdamConfig = dataclasses.field(
        default_factory=lambda: default_family_config(FusedAdamConfig))


class FusedAdam(AdamWeightDecay):
    """apex's FusedAdam in AdamW mode (multi_tensor_adam.cu, ADAM_MODE_1), step t = global
    step + 1: m and v as Adam's, `update = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) +
    epsilon) + weight_decay * param` (the decay where BERT's `decays`), `param -= lr *
    update`: BERT's AdamWeightDecay with the bias correction."""

    def adam_step(self, m: mtf.Tensor, v: mtf.Tensor) -> mtf.Tensor:
        step = bias_correction_step()
        m_unbiased = m / (1.0 - tf.pow(self.beta1, step))
        v_unbiased = v / (1.0 - tf.pow(self.beta2, step))
        return m_unbiased / (mtf.sqrt(v_unbiased) + self.epsilon)


def indices_from_tokens(tokens: mtf.Tensor, cls_id: int, sep_id: int) -> Dict[str, mtf.Tensor]:
    """PREDICT's indices for token ids alone (see the module docstring): paragraph = the number
    of [SEP] before the token, sentence 0, token index = the distance from its segment's first
    token (the one after [CLS] or a [SEP]); [CLS] gets 0 and each [SEP] the index after its
    segment's last."""
    length_dim = tokens.shape.dims[-1]
    is_sep = mtf.cast(mtf.equal(tokens, sep_id), tf.int32)
    paragraph = mtf.cumsum(is_sep, length_dim, exclusive=True)
    position = mtf.range(tokens.mesh, length_dim, tf.int32)
    special = mtf.cast(mtf.equal(tokens, cls_id), tf.int32) + is_sep
    first_of_segment = mtf.shift(special, 1, length_dim, wrap=False)
    # The latest segment start at or before each position: a [length, length] maximum.
    memory_dim = mtf.Dimension("start_memory", length_dim.size)
    starts = mtf.rename_dimension(first_of_segment * position, length_dim.name, memory_dim.name)
    visible = mtf.cast(mtf.less_equal(mtf.range(tokens.mesh, memory_dim, tf.int32), position),
                       tf.int32)
    segment_start = mtf.reduce_max(starts * visible, reduced_dim=memory_dim)
    token = position - segment_start
    return {"token_index": token, "sentence_index": mtf.zeros_like(token),
            "paragraph_index": paragraph}


class SegaBert(Bert):
    # Its examples come from documents as BERT's (the trainer's BERT path), by
    # structure.SegaBertStream.
    name = "segabert"
    architectures = ("segabert",)
    # fresh_on_warm_start is BERT's: new heads start fresh. (Masked LM alone never trains the
    # pooler: a pre-trained checkpoint has its initial weights.)

    config_class = SegaBertConfig

    @classmethod
    def head_export(cls, head, model_dir):
        # The authors' layout (format pytorch) holds the masked LM alone: no head exports.
        return ""

    def __init__(self, config, vocab_size, variable_dtype=mtf.VariableDType(),
                 run_vocabulary=None, family_config: Optional[SegaBertConfig] = None):
        super().__init__(config, vocab_size, variable_dtype, run_vocabulary, family_config)
        if self.bert.head == "pretraining":
            raise ValueError("SegaBERT pre-trains with masked LM alone: set BertConfig.head = "
                             "'mlm' (model/gin/segabert/)")
        self.limits = self.family_config.limits

    @classmethod
    def configured_family_config(cls) -> SegaBertConfig:
        return SegaBertConfig(BertConfig(), structure.StructureLimits(), FusedAdamConfig())

    predict_feature_keys = structure.INDEX_KEYS

    @classmethod
    def checkpoint_formats(cls):
        # BERT's formats hold no structure tables: SegaBERT's own are the authors' release.
        return {"pytorch": pytorch.PytorchFormat(cls, BertConfig)}

    @classmethod
    def pretraining_stream(cls, run, source):
        # Structured windows with their indices instead of BERT's NSP pairs.
        return structure.SegaBertStream(source, run.vocabulary, run.data_config.inputs_length,
                                        run.data_config.seed, bert_inputs.BertDataConfig())

    @classmethod
    def task_plan(cls, run, request, training):
        return bert_finetune.task_plan(run, request, training, finetune.StructuredHeadTask)

    def optimizer(self, learning_rate):
        settings = self.family_config.adam
        return FusedAdam(learning_rate, beta1=settings.beta1, beta2=settings.beta2,
                         epsilon=settings.epsilon, weight_decay=settings.weight_decay_rate)

    @property
    def feature_keys(self) -> Tuple[str, ...]:
        return super().feature_keys + structure.INDEX_KEYS

    def position_embedding(self, batch: Dict[str, mtf.Tensor]) -> mtf.Tensor:
        """The sum of the token-in-sentence, sentence-in-paragraph and paragraph-in-document
        embeddings, [batch, length, d_model]."""
        tokens = batch["bert_input_tokens"]
        indices = (batch if structure.INDEX_KEYS[0] in batch
                   else indices_from_tokens(tokens, self.special.cls, self.special.sep))
        rows = (self.limits.tokens_per_sentence, self.limits.sentences_per_paragraph,
                self.limits.paragraphs_per_document)
        embeddings = []
        for key, table_name, size in zip(structure.INDEX_KEYS, TABLES, rows):
            rows_dim = mtf.Dimension(table_name, size)
            table = self.variable(tokens.mesh, table_name, [rows_dim, self.d_model])
            # The data path keeps indices within the rows (model/families/segabert/structure.py); decoding's
            # derived ones are clamped the same way.
            embeddings.append(mtf.gather(table, mtf.minimum(indices[key], size - 1), rows_dim))
        return mtf.add_n(embeddings)
