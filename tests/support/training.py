"""What the training tests share: a tiny T5's bindings, a run configured from them, synthetic
encoder-decoder features, and the token loss and accuracy of a checkpoint computed in numpy."""
import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model import families
from model.trainer import runs
from tests.support.checkpoint_logits import checkpoint_logits

TINY_BINDINGS = [
    "ModelConfig.d_model = 32", "ModelConfig.d_ff = 64", "ModelConfig.num_heads = 4",
    "ModelConfig.d_kv = 8", "ModelConfig.num_layers = 2",
    "DataConfig.objective = 'span_corruption'",
    "DataConfig.inputs_length = 32", "DataConfig.targets_length = 8",
    "TrainConfig.tokens_per_batch = 256",  # 8 sequences of 32 input tokens
    "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1",
    "TrainConfig.eval_steps = 4", "TrainConfig.eval_batch_size = 8",
    "TrainConfig.decode_length = 8",
]


def configure(model_dir, data_bindings, *extra, gin_files=("pretrain.gin",)) -> runs.Run:
    gin.clear_config()
    runs.parse_gin(list(gin_files), TINY_BINDINGS + data_bindings + list(extra))
    return families.configured_run(str(model_dir))


def synthetic_examples(num: int = 32, seed: int = 0):
    """Packed-shaped encoder-decoder features: reverse 7 random tokens (no dropout needed)."""
    rng = np.random.RandomState(seed)
    encoder = rng.randint(3, 100, size=(num, 16)).astype(np.int32)
    decoder = np.concatenate([encoder[:, 6::-1], np.ones((num, 1), np.int32)], 1)
    features = {
        "encoder_input_tokens": encoder, "encoder_segment_ids": np.ones_like(encoder),
        "encoder_positions": np.tile(np.arange(16, dtype=np.int32), (num, 1)),
        "decoder_target_tokens": decoder, "decoder_segment_ids": np.ones_like(decoder),
        "decoder_input_tokens": np.pad(decoder[:, :-1], [(0, 0), (1, 0)]),
        "decoder_positions": np.tile(np.arange(8, dtype=np.int32), (num, 1)),
        "decoder_loss_weights": np.ones_like(decoder),
    }
    return lambda: tf.data.Dataset.from_tensor_slices(features)


def numpy_token_metrics(logits: np.ndarray, targets: np.ndarray, weights: np.ndarray) -> dict:
    """Per-token softmax cross entropy (mtf's softmax_cross_entropy_with_logits: log-sum-exp minus
    the target's logit) and argmax accuracy, averaged over the tokens by their weights."""
    logits = logits.astype(np.float64)
    top = logits.max(-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
    target_logits = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
    correct = logits.argmax(-1) == targets
    # A token whose two best logits are within float noise of each other may be argmaxed either
    # way by another graph's kernels (other batch shapes, oneDNN or not).
    top_two = np.sort(logits, -1)[..., -2:]
    near_tie = top_two[..., 1] - top_two[..., 0] < 1e-3
    return {"loss": ((log_z - target_logits) * weights).sum() / weights.sum(),
            "token_accuracy": (correct * weights).sum() / weights.sum(),
            "token_accuracy_range": (((correct & ~near_tie) * weights).sum() / weights.sum(),
                                     ((correct | near_tie) * weights).sum() / weights.sum()),
            "log_z": log_z}


def checkpoint_token_metrics(run, examples, num_examples: int) -> dict:
    """The token loss and accuracy (numpy) of the newest checkpoint's teacher-forced logits on the
    first `num_examples` feature examples."""
    rows = list(examples().take(num_examples).as_numpy_iterator())
    features = {key: np.stack([row[key] for row in rows]) for key in rows[0]}
    return numpy_token_metrics(checkpoint_logits(run, features), features["decoder_target_tokens"],
                                features["decoder_loss_weights"].astype(np.float64))
