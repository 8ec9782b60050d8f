"""SegaBERT's model against independent restatements of the authors' code: the optimizer (apex's
FusedAdam), the embedding layer (modeling_segabert.py), and what the structure indices do to the
logits."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf


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
    1e-6) moves the first step's weights about 3x less here and fails; so do a decay scaled by
    the bias correction (OpenAI's) and epsilon outside it (transformers' AdamW)."""
    import gin
    from model.architectures import ModelConfig
    from model.families.segabert import SegaBert
    from model.mesh import MeshConfig, cpu_mesh_impl
    from model.mtf_compat import mtf
    gin.parse_config("BertConfig.head = 'mlm'")
    rng = np.random.RandomState(0)
    names = ("w/kernel", "w/bias", "layer_norm/scale")
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

    steps, lr = 8, 0.05
    expected = fused_adam_steps(start, gradient, steps, lr, decayed={"w/kernel"})
    family = SegaBert(ModelConfig(architecture="segabert"), 100)
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        rows, cols = mtf.Dimension("rows", 3), mtf.Dimension("cols", 4)
        shapes = {"w/kernel": [rows, cols], "w/bias": [cols], "layer_norm/scale": [cols]}
        variables = {name: mtf.get_variable(mesh, name, mtf.Shape(shapes[name]),
                                            initializer=tf.constant_initializer(start[name]))
                     for name in names}
        inputs = mtf.import_tf_tensor(mesh, tf.constant(x), mtf.Shape([rows]))
        scaled = variables["w/kernel"] * mtf.import_tf_tensor(mesh, tf.constant(scale),
                                                              mtf.Shape([rows, cols]))
        hidden = mtf.einsum([inputs, scaled], reduced_dims=[rows]) + variables["w/bias"]
        loss = mtf.reduce_sum(mtf.square(
            hidden * variables["layer_norm/scale"]
            - mtf.import_tf_tensor(mesh, tf.constant(target), mtf.Shape([cols]))))
        trainable = graph.trainable_variables
        grads = mtf.gradients([loss], [v.outputs[0] for v in trainable])
        updates = family.optimizer(tf.constant(lr)).apply_grads(grads, trainable)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        global_step = tf.train.get_or_create_global_step()
        with tf.control_dependencies([lowering.lowered_operation(op) for op in updates]):
            train_op = tf.assign_add(global_step, 1)
        values = {name: lowering.export_to_tf_tensor(t) for name, t in variables.items()}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(lowering.copy_masters_to_slices())
            for step in range(steps):
                session.run(train_op)
                got = session.run(values)
                for name in names:
                    np.testing.assert_allclose(got[name], expected[step][name], rtol=1e-4,
                                               atol=1e-5, err_msg=f"{name} at step {step + 1}")
