"""T5's model families (the paper's Section 3.2): encoder-decoder (full, shared, half layers),
decoder-only language model and prefix language model, on `model/families/t5/architectures.py`.

How features meet Mesh TensorFlow's transformer arguments:
    encoder_input_tokens -> inputs                 encoder_segment_ids -> encoder_sequence_id
    decoder_target_tokens -> targets               decoder_segment_ids -> (decoder_)sequence_id
    decoder_input_tokens -> inputs (decoder-only)  decoder_loss_weights -> the loss's weights
The positions are not passed: relative attention takes them from the index, and packing restarts
them per segment where attention cannot cross segments anyway. The Bitransformer derives its
decoder inputs from the targets and segment ids itself (the same shift-right-within-segment as
`decoder_input_tokens`). The prefix LM finds its bidirectional prefix from the
`<inputs> EOS <targets> EOS` layout of each packed example (mtf's `delimited_lm`: positions with
an even count of earlier EOS in the row, plus one), so it ignores `decoder_causal_attention` yet
equals it while every example's inputs and targets end in EOS, as
`objectives.append_eos_after_trim` makes them (tests/model/test_prefix_lm.py checks it on packed
rows).
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Dict

from model.data import features
from model.data.vocabulary import Vocabulary
from model.families.base import ModelFamily
from model.families.t5 import hf, mesh_tf
from model.families.t5.architectures import Architecture, Model, build_model
from model.trainer import decoding
from model.trainer.losses import Losses, token_losses
from model.trainer.mtf_compat import mtf


class _T5Family(ModelFamily):
    """Token prediction with T5's layers; subclasses say which stream is read how."""

    # Our norms carry the names of T5's released checkpoints (mtf's legacy
    # `sublayer_legacy_rms_norm`: `.../layer_norm/scale`, `encoder/final_layer_norm/scale`);
    # checkpoints written from today's t5 gin files with mtf's current defaults
    # (`sublayer_rms_norm`) name both `rms_norm`. Either loads, optimizer slots included.
    checkpoint_aliases = ((r"/(final_)?layer_norm/", "/rms_norm/"),)

    @classmethod
    def vocabulary(cls, path: str) -> Vocabulary:
        """T5's vocabulary: a SentencePiece model (the paper's 32k C4 one, or one trained here)."""
        return Vocabulary(path)

    @classmethod
    def export(cls, run, export_dir, checkpoint, task):
        return hf.export(run, export_dir, checkpoint, task)

    def optimizer(self, learning_rate) -> mtf.optimize.Optimizer:
        """T5's optimizer: Adafactor with mtf's defaults (factored second moments, decay
        1 - (step + 1)^-0.8, update clipping 1, no momentum, parameter-scaled updates)."""
        return mtf.optimize.AdafactorOptimizer(learning_rate=learning_rate)

    def build(self, training: bool) -> Model:
        config = self.config if training else dataclasses.replace(self.config, dropout_rate=0.0)
        return build_model(config, self.vocab_size)

    @abc.abstractmethod
    def logits(self, model: Model, batch: Dict[str, mtf.Tensor], mode: str) -> mtf.Tensor:
        """Teacher-forced logits, [batch, length, vocab]."""

    def losses(self, model: Model, batch: Dict[str, mtf.Tensor], mode: str) -> Losses:
        return token_losses(self.logits(model, batch, mode), batch["decoder_target_tokens"],
                            batch["decoder_loss_weights"], self.config.z_loss)


class EncoderDecoder(_T5Family):
    name = "encoder_decoder"
    converter = features.EncoderDecoderConverter
    architectures = (Architecture.ENCODER_DECODER.value,
                     Architecture.ENCODER_DECODER_SHARED.value,
                     Architecture.ENCODER_DECODER_HALF_LAYERS.value)

    @classmethod
    def checkpoint_formats(cls):
        # hf: transformers' T5ForConditionalGeneration (`--family t5`: this package's name);
        # t5: the t5 library's Mesh TF checkpoints (import).
        return {"hf": hf.HFFormat(cls), "t5": mesh_tf.MeshTFFormat(cls)}

    def logits(self, model, batch, mode):
        logits, _ = model.call_simple(
            inputs=batch["encoder_input_tokens"],
            targets=batch["decoder_target_tokens"],
            compute_loss=False,
            mode=mode,
            variable_dtype=self.variable_dtype,
            encoder_sequence_id=batch["encoder_segment_ids"],
            decoder_sequence_id=batch["decoder_segment_ids"])
        return logits

    def predict(self, model, inputs, decode_length, beam_size=1, alpha=0.6):
        if beam_size > 1:
            return decoding.beam_search_decode(model, inputs, decode_length, self.variable_dtype,
                                               beam_size, alpha)
        return decoding.greedy_decode(model, inputs, decode_length, self.variable_dtype)


class DecoderOnlyLM(_T5Family):
    """Reads inputs followed by targets as one causal stream; loss on the whole stream."""

    name = "decoder_only"
    converter = features.DecoderOnlyConverter
    architectures = (Architecture.DECODER_ONLY_LM.value,)

    def logits(self, model, batch, mode):
        logits, _ = model.call_simple(
            inputs=batch["decoder_input_tokens"],
            targets=batch["decoder_target_tokens"],
            compute_loss=False,
            mode=mode,
            variable_dtype=self.variable_dtype,
            sequence_id=batch["decoder_segment_ids"])
        return logits

    def predict(self, model, inputs, decode_length, beam_size=1, alpha=0.6):
        if beam_size > 1:
            raise ValueError(f"{self.name} decodes greedily only (beam search is the "
                             "encoder-decoder's)")
        return decoding.greedy_continue(model, inputs, decode_length, self.variable_dtype)


class PrefixLM(DecoderOnlyLM):
    """The same stream with full attention over the prefix; loss on the targets only (the
    converter's loss weights)."""

    name = "prefix_lm"
    converter = features.PrefixLMConverter
    architectures = (Architecture.PREFIX_LM.value,)
