"""The one module that imports Mesh TensorFlow; everything else imports `mtf` from here.

mesh-tensorflow 0.1.21 (its last release) calls `ops.register_tensor_conversion_function`, which
TensorFlow 2.15 moved to `tensor_conversion_registry`. Aliasing it back before the import is all
mesh-tensorflow needs to run on TF 2.15 (the newest TF that still ships `tf.estimator`).
"""
from tensorflow.python.framework import ops as _tf_ops
from tensorflow.python.framework import tensor_conversion_registry as _registry

if not hasattr(_tf_ops, "register_tensor_conversion_function"):
    _tf_ops.register_tensor_conversion_function = _registry.register_tensor_conversion_function

import mesh_tensorflow as mtf  # noqa: E402  (must follow the alias above)
from mesh_tensorflow import placement_mesh_impl, simd_mesh_impl  # noqa: E402
from mesh_tensorflow import utils as mtf_utils  # noqa: E402
from mesh_tensorflow.transformer import (learning_rate_schedules, transformer,  # noqa: E402
                                         transformer_layers)

__all__ = ["mtf", "mtf_utils", "placement_mesh_impl", "simd_mesh_impl", "learning_rate_schedules",
           "transformer", "transformer_layers"]
