"""The trainer's Adam (model/trainer/adam.py), which BERT, SegaBERT and GPT-1 subclass: BERT's
hooks give mtf's AdamWeightDecayOptimizer to the bit (BERT's slot names are checked in
test_bert.py's model-function test, checkpoints written before by its round trips).
(GPT-1's and SegaBERT's are checked against their authors' code in test_gpt1.py and
test_segabert_model.py.)"""
import numpy as np
import tensorflow.compat.v1 as tf

from tests.support.mtf_optimizer import optimizer_steps


def test_bert_adam_weight_decay_is_mtf_adam_weight_decay_to_the_bit(clean_gin):
    """BERT's AdamWeightDecay (the trainer's Adam, no decay on layer norms and biases) gives
    the very float32 values of mtf's AdamWeightDecayOptimizer with BERT's exclusions, step by
    step."""
    from model.families.bert.model import AdamWeightDecay
    from model.trainer.mtf_compat import mtf
    rng = np.random.RandomState(0)
    start = {"w/kernel": rng.normal(size=(3, 4)).astype(np.float32),
             "w/bias": rng.normal(size=(4,)).astype(np.float32),
             "layer_norm/scale": rng.normal(size=(4,)).astype(np.float32)}
    x = rng.normal(size=(3,)).astype(np.float32)
    rows, cols = mtf.Dimension("rows", 3), mtf.Dimension("cols", 4)
    shapes = {"w/kernel": mtf.Shape([rows, cols]), "w/bias": mtf.Shape([cols]),
              "layer_norm/scale": mtf.Shape([cols])}

    def loss(mesh, variables):
        inputs = mtf.import_tf_tensor(mesh, tf.constant(x), mtf.Shape([rows]))
        hidden = mtf.einsum([inputs, variables["w/kernel"]], reduced_dims=[rows])
        return mtf.reduce_sum(mtf.square((hidden + variables["w/bias"])
                                         * variables["layer_norm/scale"] - 1.0))

    settings = dict(beta_1=0.9, beta_2=0.98, epsilon=1e-6, weight_decay_rate=0.1)

    def ours():
        return AdamWeightDecay(tf.constant(0.05), beta1=settings["beta_1"],
                               beta2=settings["beta_2"], epsilon=settings["epsilon"],
                               weight_decay=settings["weight_decay_rate"])

    def mtf_reference():
        return mtf.optimize.AdamWeightDecayOptimizer(
            tf.constant(0.05), exclude_from_weight_decay=["layer_norm", "bias"], **settings)

    got = optimizer_steps(ours, shapes, start, loss, 5)
    expected = optimizer_steps(mtf_reference, shapes, start, loss, 5)
    for step, (got_step, expected_step) in enumerate(zip(got, expected), 1):
        for name in start:
            np.testing.assert_array_equal(got_step[name], expected_step[name],
                                          err_msg=f"{name} at step {step}")
    assert got[-1]["w/bias"].tolist() != start["w/bias"].tolist()
    assert got[-1]["layer_norm/scale"].tolist() != start["layer_norm/scale"].tolist()
