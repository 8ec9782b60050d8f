"""SegaBERT's model against independent restatements of the authors' code: the optimizer (apex's
FusedAdam), the embedding layer (modeling_segabert.py), and what the structure indices do to the
logits."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.support.mtf_optimizer import optimizer_steps


# --------------------------------------------------------------------------------------------
# The optimizer.

def fused_adam_steps(start, gradient, steps, lr, decayed, beta1=0.9, beta2=0.999, eps=1e-8,
                     weight_decay=0.01):
    """apex's FusedAdam in AdamW mode (csrc/multi_tensor_adam.cu, ADAM_MODE_1), restated:
    m, v as Adam's; m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t); update = m_hat /
    (sqrt(v_hat) + eps) + decay * p; p -= lr * update. `decayed`: the names with decay. In
    float64, with the constants rounded to float32 as the kernel's arguments are."""
    beta1, beta2, eps, weight_decay, lr = (float(np.float32(c))
                                           for c in (beta1, beta2, eps, weight_decay, lr))
    params = {k: v.astype(np.float64) for k, v in start.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    history = []
    for t in range(1, steps + 1):
        grads = gradient(params)
        new = {}
        for k, p in params.items():
            m[k] = beta1 * m[k] + (1 - beta1) * grads[k]
            v[k] = beta2 * v[k] + (1 - beta2) * grads[k] ** 2
            m_hat, v_hat = m[k] / (1 - beta1 ** t), v[k] / (1 - beta2 ** t)
            update = m_hat / (np.sqrt(v_hat) + eps) + (weight_decay * p if k in decayed else 0)
            new[k] = p - lr * update
        params = new
        history.append(params)
    return history


def test_segabert_optimizer_updates_as_apex_fused_adam(clean_gin):
    """SegaBert.optimizer over 8 steps equals apex's FusedAdam (AdamW mode, as the authors'
    pretrain_segabert.py builds it: betas 0.9/0.999, eps 1e-8, weight decay 0.01, none on
    biases and layer norms) on the same loss. BERT's AdamWeightDecay (no bias correction, eps
    1e-6) fails, and so do a decay scaled by the bias correction (OpenAI's), epsilon outside
    the correction (transformers' AdamW) and a decayed bias."""
    import gin
    from model.families.segabert.model import SegaBert
    from model.trainer.model_config import ModelConfig
    from model.trainer.mtf_compat import mtf
    gin.parse_config("BertConfig.head = 'mlm'")
    rng = np.random.RandomState(0)
    start = {"w/kernel": rng.normal(size=(3, 4)).astype(np.float32),
             "w/bias": rng.normal(size=(4,)).astype(np.float32),
             "layer_norm/scale": rng.normal(size=(4,)).astype(np.float32)}
    x = rng.normal(size=(3,)).astype(np.float32)
    target = rng.normal(size=(4,)).astype(np.float32)
    # A tiny gradient on one entry, where epsilon's place in the formula shows.
    scale = np.ones((3, 4), np.float32)
    scale[0, 0] = 1e-7

    def gradient(params):  # of sum(((x @ (scale * kernel) + bias) * gain - target)^2)
        hidden = x @ (scale * params["w/kernel"]) + params["w/bias"]
        residual = 2 * (hidden * params["layer_norm/scale"] - target)
        into_hidden = residual * params["layer_norm/scale"]
        return {"w/kernel": scale * np.outer(x, into_hidden), "w/bias": into_hidden,
                "layer_norm/scale": residual * hidden}

    rows, cols = mtf.Dimension("rows", 3), mtf.Dimension("cols", 4)

    def loss(mesh, variables):
        inputs = mtf.import_tf_tensor(mesh, tf.constant(x), mtf.Shape([rows]))
        scaled = variables["w/kernel"] * mtf.import_tf_tensor(mesh, tf.constant(scale),
                                                              mtf.Shape([rows, cols]))
        hidden = mtf.einsum([inputs, scaled], reduced_dims=[rows]) + variables["w/bias"]
        return mtf.reduce_sum(mtf.square(
            hidden * variables["layer_norm/scale"]
            - mtf.import_tf_tensor(mesh, tf.constant(target), mtf.Shape([cols]))))

    steps, lr = 8, 0.05
    expected = fused_adam_steps(start, gradient, steps, lr, decayed={"w/kernel"})
    family = SegaBert(ModelConfig(architecture="segabert"), 100)
    shapes = {"w/kernel": mtf.Shape([rows, cols]), "w/bias": mtf.Shape([cols]),
              "layer_norm/scale": mtf.Shape([cols])}
    got = optimizer_steps(lambda: family.optimizer(tf.constant(lr)), shapes, start, loss, steps)
    # float32 against float64: about 3e-6 apart after 8 steps; every variant above is 3e-4 or
    # more away by the first.
    for step in range(steps):
        for name in start:
            np.testing.assert_allclose(got[step][name], expected[step][name], rtol=1e-4,
                                       atol=1e-5, err_msg=f"{name} at step {step + 1}")


# --------------------------------------------------------------------------------------------
# The embeddings and what the indices do to the logits.

VOCAB, LENGTH = 40, 10
KEYS = ("token_index", "sentence_index", "paragraph_index")


def tiny_config(architecture):
    from model.trainer.model_config import ModelConfig
    return ModelConfig(architecture=architecture, d_model=16, d_ff=32, num_heads=2, d_kv=8,
                       num_layers=2, dropout_rate=0.0)


def lowered_run(family, features, build, assign=None):
    """`build(family, batch) -> {name: mtf.Tensor}` on a one-device mesh over `features`
    ([n, LENGTH] int32 each); the variables named in `assign` are set to those values, the
    others keep their random initialisation. Returns (outputs, every variable's value)."""
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.mtf_compat import mtf
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        rows = next(iter(features.values())).shape[0]
        shape = mtf.Shape([mtf.Dimension("batch", rows), mtf.Dimension("length", LENGTH)])
        batch = {key: mtf.import_tf_tensor(mesh, tf.constant(value, tf.int32), shape)
                 for key, value in features.items()}
        outputs = build(family, batch)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        variables = {v.name: v for v in graph.all_variables}
        assigns = [variables[name].assign_to_master(value) for name, value in (assign or {}).items()]
        exported = {key: lowering.export_to_tf_tensor(t) for key, t in outputs.items()}
        values = {name: lowering.export_to_tf_tensor(v.outputs[0]) for name, v in variables.items()}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(assigns)
            session.run(lowering.copy_masters_to_slices())
            return session.run(exported), session.run(values)


def embeddings_only(family, batch):
    with tf.variable_scope("bert"):
        return {"embeddings": family.embed(batch, training=False)[0]}


def mlm_logits(family, batch):
    return {"logits": family.head.outputs(family.encode(batch, training=False),
                                          False)["mlm_logits"]}


def segabert_family():
    import gin
    from model.families.segabert.model import SegaBert
    gin.parse_config("BertConfig.head = 'mlm'")
    return SegaBert(tiny_config("segabert"), VOCAB, family_config=SegaBert.configured_family_config())


def structured_features(rng, rows):
    """Random tokens, both token types, and indices over every row of the three tables' first
    rows (a paragraph index up to 5, a sentence index up to 7, a token index up to 9)."""
    return {"bert_input_tokens": rng.integers(5, VOCAB, size=(rows, LENGTH)),
            "bert_token_types": rng.integers(0, 2, size=(rows, LENGTH)),
            "token_index": rng.integers(0, 10, size=(rows, LENGTH)),
            "sentence_index": rng.integers(0, 8, size=(rows, LENGTH)),
            "paragraph_index": rng.integers(0, 6, size=(rows, LENGTH))}


def test_embeddings_are_the_authors_sum_of_five_tables_then_layer_norm(clean_gin):
    """Our embedding layer equals a numpy restatement of the authors' BertEmbeddings.forward
    (rsvp-ai/segatron_aaai, transformers/transformers/modeling_segabert.py, input_type
    para_sent_token): word + token_position(token_pos) + para_position(para_pos) +
    sent_position(sent_pos) + token_type, then LayerNorm (eps 1e-12), on the same weights,
    the layer norm's gain and bias random too."""
    rng = np.random.default_rng(0)
    features = structured_features(rng, 3)
    prefix = "bert/embeddings/"
    layer_norm = {prefix + "layer_norm/scale": rng.normal(1.0, 0.3, 16).astype(np.float32),
                  prefix + "layer_norm/bias": rng.normal(0.0, 0.3, 16).astype(np.float32)}
    got, weights = lowered_run(segabert_family(), features, embeddings_only, layer_norm)
    table = lambda name: weights[prefix + name]
    summed = (table("word_embeddings")[features["bert_input_tokens"]]
              + table("token_type_embeddings")[features["bert_token_types"]]
              + table("token_index_embeddings")[features["token_index"]]
              + table("sentence_index_embeddings")[features["sentence_index"]]
              + table("paragraph_index_embeddings")[features["paragraph_index"]])
    mean = summed.mean(-1, keepdims=True)
    variance = ((summed - mean) ** 2).mean(-1, keepdims=True)
    expected = ((summed - mean) / np.sqrt(variance + 1e-12) * layer_norm[prefix + "layer_norm/scale"]
                + layer_norm[prefix + "layer_norm/bias"])
    np.testing.assert_allclose(got["embeddings"], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("key", KEYS)
def test_changing_one_index_changes_the_logits(key, clean_gin):
    """Rows of the same tokens: a row whose paragraph (or sentence, or token) indices differ in
    one place, or everywhere, gets other masked-LM logits at every position (attention spreads
    the change); a row with the same indices gets the same logits. Weights drawn with a
    standard deviation of 0.5 (BERT's 0.02 makes every logit nearly 0)."""
    import gin
    gin.parse_config("BertConfig.initializer_range = 0.5")
    features = {k: np.repeat(v, 4, axis=0)
                for k, v in structured_features(np.random.default_rng(1), 1).items()}
    features[key][1, 4] = (features[key][1, 4] + 1) % 6
    features[key][2, :] = (features[key][2, :] + 1) % 6
    logits = lowered_run(segabert_family(), features, mlm_logits)[0]["logits"]
    assert logits.shape == (4, LENGTH, VOCAB)
    difference = lambda row: np.abs(logits[row] - logits[0]).max(axis=-1)
    assert (difference(1) > 0.01).all(), difference(1)
    assert (difference(2) > 0.01).all(), difference(2)
    assert (difference(3) < 1e-5).all(), difference(3)


def test_one_sentence_one_paragraph_with_bert_positions_is_bert(clean_gin):
    """SegaBERT with its token table set to BERT's position table (its first 256 rows), the
    sentence and paragraph tables' row 0 zero, and every other weight BERT's: a row of one
    sentence in one paragraph, token indices 0, 1, ... (the positions), gives BERT's masked-LM
    logits. (A framed window gives [CLS] its first token's index, so the indices are given
    here as the positions.)"""
    import gin
    from model.families.bert.model import Bert
    rng = np.random.default_rng(2)
    features = structured_features(rng, 2)
    for key in KEYS:
        features[key] = np.zeros_like(features[key])
    features["token_index"][:] = np.arange(LENGTH)
    gin.parse_config("BertConfig.head = 'mlm'")
    bert_features = {k: features[k] for k in ("bert_input_tokens", "bert_token_types")}
    bert_logits, bert_weights = lowered_run(
        Bert(tiny_config("bert"), VOCAB, family_config=Bert.configured_family_config()),
        bert_features, mlm_logits)
    prefix = "bert/embeddings/"
    shared = {name: value for name, value in bert_weights.items()
              if name != prefix + "position_embeddings"}
    index_rows = {"sentence_index_embeddings": 100, "paragraph_index_embeddings": 50}
    tables = {prefix + name: np.concatenate([np.zeros((1, 16), np.float32),
                                             rng.normal(0, 0.02, (rows - 1, 16))]).astype(np.float32)
              for name, rows in index_rows.items()}
    tables[prefix + "token_index_embeddings"] = bert_weights[prefix + "position_embeddings"][:256]
    segabert_logits, segabert_weights = lowered_run(segabert_family(), features, mlm_logits,
                                                    {**shared, **tables})
    assert set(segabert_weights) == set(shared) | set(tables)
    np.testing.assert_allclose(segabert_logits["logits"], bert_logits["logits"], rtol=1e-5,
                               atol=1e-5)


def test_finetune_gin_is_the_authors_fine_tuning(clean_gin):
    """segabert/finetune.gin over BERT's fine-tuning gin: no weight decay and a linear decay
    from 3e-5 without warm-up (transformers' get_linear_schedule_with_warmup with
    --warmup_steps 0, as the authors' run_glue.py and train_glue.sh run it)."""
    import gin
    from model.families.segabert.model import FusedAdamConfig
    from model.trainer import schedules
    from model.trainer.gin_files import GIN_DIR
    gin.parse_config_files_and_bindings(
        [str(GIN_DIR / name) for name in ("finetune.gin", "segabert/tiny.gin",
                                          "bert/finetune_classification.gin",
                                          "segabert/finetune.gin")],
        ["lr.bert_linear.total_steps = 100"])
    assert FusedAdamConfig().weight_decay_rate == 0.0
    with tf.Graph().as_default(), tf.Session() as session:
        rates = [session.run(schedules.bert_linear(tf.constant(step))) for step in (0, 1, 50, 100)]
    assert rates == pytest.approx([3e-5, 3e-5 * 0.99, 1.5e-5, 0.0], rel=1e-5, abs=1e-12)
