"""A family's optimizer run for some steps on a tiny Mesh TensorFlow graph, to compare with a
numpy restatement of a reference optimizer (GPT-1's OpenAI Adam, SegaBERT's FusedAdam)."""
from typing import Callable, Dict, List, Mapping

import numpy as np
import tensorflow.compat.v1 as tf


def optimizer_steps(make_optimizer: Callable, shapes: Mapping[str, "mtf.Shape"],
                    start: Mapping[str, np.ndarray], loss: Callable, steps: int
                    ) -> List[Dict[str, np.ndarray]]:
    """The variables (name -> value) after each of `steps` updates of the optimizer that
    `make_optimizer()` makes (an mtf.optimize.Optimizer, made in the graph built here), the
    variables starting at `start` with the given mtf shapes and `loss(mesh, variables)` the mtf
    scalar minimised. The global step counts the updates, as the model function's does."""
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.mtf_compat import mtf
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        variables = {name: mtf.get_variable(mesh, name, shapes[name],
                                            initializer=tf.constant_initializer(start[name]))
                     for name in start}
        trainable = graph.trainable_variables
        grads = mtf.gradients([loss(mesh, variables)], [v.outputs[0] for v in trainable])
        updates = make_optimizer().apply_grads(grads, trainable)
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        global_step = tf.train.get_or_create_global_step()
        with tf.control_dependencies([lowering.lowered_operation(op) for op in updates]):
            train_op = tf.assign_add(global_step, 1)
        values = {name: lowering.export_to_tf_tensor(t) for name, t in variables.items()}
        history = []
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(lowering.copy_masters_to_slices())
            for _ in range(steps):
                session.run(train_op)
                history.append(session.run(values))
        return history
