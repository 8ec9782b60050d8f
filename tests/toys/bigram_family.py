"""A toy model family defined outside model/: a bigram language model, one embedding table for a
body and a head of its own (each token's embedding scores the next token against the same
table), reading features of its own converter. It exists to show that a family is a class of
model/families/base.py's interface plus one registry entry: the trainer and the command line
pre-train it, evaluate it and export it unchanged, and the one task loop fine-tunes, scores and
decodes it on a task text to text (tests/project/test_layout.py); its features need no change in
model/data/ (tests/model/test_features.py)."""
import json
import pathlib

import numpy as np
import tensorflow.compat.v1 as tf

from model.data import features
from model.data.vocabulary import Vocabulary
from model.families.base import ModelFamily
from model.trainer.losses import Losses, token_losses
from model.trainer.mtf_compat import mtf


EMBEDDING = "toy_bigram/embedding"


class BigramConverter(features.FeatureConverter):
    """The toy's features: each target token, its predecessor (0 at an example's start) and its
    weight in the loss (0 on padding), packed. A bigram reads nothing else, so there are no
    segment ids or positions to give it."""

    name = "toy_bigram"
    task_features = ("targets",)
    model_features = ("previous_tokens", "next_tokens", "next_token_weights")

    def stream_lengths(self, sequence_lengths, element_spec):
        return {"targets": sequence_lengths["targets"]}

    def streams(self, example):
        return {"targets": example["targets"]}

    def model_row(self, packed):
        tokens, segment_ids = packed["targets"], packed["targets_segment_ids"]
        return {"previous_tokens": features.shift_right(tokens, packed["targets_positions"], segment_ids),
                "next_tokens": tokens,
                "next_token_weights": tf.cast(segment_ids > 0, tf.int32)}


class NextTokenHead:
    """The toy's head: the body's table scores each token's successor."""

    def __init__(self, family: "ToyBigram"):
        self._family = family

    def losses(self, batch) -> Losses:
        tokens = batch["previous_tokens"]
        table = embedding_table(self._family, tokens.mesh)
        vocab = table.shape.dims[0]
        hidden = mtf.gather(table, tokens, vocab)
        logits = mtf.einsum([hidden, table], output_shape=mtf.Shape(tokens.shape.dims + [vocab]))
        return token_losses(logits, batch["next_tokens"], batch["next_token_weights"], 0.0)


def embedding_table(family: "ToyBigram", mesh: mtf.Mesh) -> mtf.Tensor:
    """The toy's one table, [vocab, d_model]."""
    vocab = mtf.Dimension("vocab", family.vocab_size)
    width = mtf.Dimension("d_model", family.config.d_model)
    return mtf.get_variable(mesh, EMBEDDING, mtf.Shape([vocab, width]),
                            initializer=tf.random_normal_initializer(stddev=0.1),
                            dtype=family.variable_dtype)


class ToyBigram(ModelFamily):
    name = "toy_bigram"
    # Its own converter, over the `lm` objective's examples (targets only).
    converter = BigramConverter
    architectures = ("toy_bigram",)

    @classmethod
    def vocabulary(cls, path: str) -> Vocabulary:
        return Vocabulary(path)  # a SentencePiece model, as T5's

    def optimizer(self, learning_rate):
        return mtf.optimize.AdafactorOptimizer(learning_rate=learning_rate)

    @classmethod
    def export(cls, run, export_dir: str, checkpoint: str, task) -> dict:
        """`--mode export`: the embedding table as a numpy file, with the vocabulary's size."""
        table = tf.train.load_variable(checkpoint, EMBEDDING)
        folder = pathlib.Path(export_dir)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "embedding.npy", table)
        (folder / "config.json").write_text(json.dumps({"vocab_size": int(table.shape[0])}))
        return {"export_dir": export_dir, "checkpoint": checkpoint}

    def build(self, training: bool):
        return None  # no layers beyond the one table the head creates

    def losses(self, model, batch, mode) -> Losses:
        return NextTokenHead(self).losses(batch)

    def predict(self, model, inputs, decode_length, beam_size=1, alpha=0.6):
        """Greedy bigram decoding (no beam search): from each input's first token, each next
        token is the one the table scores best after the previous."""
        table = embedding_table(self, inputs.mesh)
        vocab = table.shape.dims[0]
        batch, length = inputs.shape.dims
        previous = mtf.gather(inputs, mtf.constant(inputs.mesh, 0, dtype=tf.int32), length)
        decoded = []
        for _ in range(decode_length):
            logits = mtf.einsum([mtf.gather(table, previous, vocab), table],
                                output_shape=mtf.Shape([batch, vocab]))
            previous = mtf.cast(mtf.argmax(logits, vocab), tf.int32)
            decoded.append(previous)
        return mtf.stack(decoded, "decode_length", axis=1)
