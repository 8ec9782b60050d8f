"""A toy model family defined outside model/: a bigram language model (each token's embedding
scores the next token against the same table). It exists to show that a family is a class of
model/families/base.py's interface plus one registry entry: the trainer and the command line
train it unchanged (tests/test_layout.py)."""
import tensorflow.compat.v1 as tf

from model.data.vocabulary import Vocabulary
from model.families.base import ModelFamily
from model.trainer.losses import Losses, token_losses
from model.trainer.mtf_compat import mtf


class ToyBigram(ModelFamily):
    name = "toy_bigram"
    # The features of the `lm` objective's decoder-only examples (model/data/features.py).
    converter = "decoder_only"
    architectures = ("toy_bigram",)

    @classmethod
    def vocabulary(cls, path: str) -> Vocabulary:
        return Vocabulary(path)  # a SentencePiece model, as T5's

    def optimizer(self, learning_rate):
        return mtf.optimize.AdafactorOptimizer(learning_rate=learning_rate)

    def build(self, training: bool):
        return None  # no layers beyond the one table `losses` creates

    def losses(self, model, batch, mode) -> Losses:
        tokens = batch["decoder_input_tokens"]
        vocab = mtf.Dimension("vocab", self.vocab_size)
        width = mtf.Dimension("d_model", self.config.d_model)
        table = mtf.get_variable(tokens.mesh, "toy_bigram/embedding", mtf.Shape([vocab, width]),
                                 initializer=tf.random_normal_initializer(stddev=0.1),
                                 dtype=self.variable_dtype)
        hidden = mtf.gather(table, tokens, vocab)
        logits = mtf.einsum([hidden, table], output_shape=mtf.Shape(tokens.shape.dims + [vocab]))
        return token_losses(logits, batch["decoder_target_tokens"],
                            batch["decoder_loss_weights"], 0.0)

    def predict(self, model, inputs, decode_length, beam_size=1, alpha=0.6):
        raise NotImplementedError("the toy family does not decode")
