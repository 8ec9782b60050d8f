"""Our trainer against plain Mesh TensorFlow, interleaved in one process, 1 thread.

The reference is what a Mesh TensorFlow user writes without our trainer: mtf's
`transformer.Bitransformer` with T5's layers (built here from mtf's classes, not from
model/families/t5/architectures.py), its own loss (`compute_loss=True`, z-loss 1e-4), mtf's Adafactor,
T5's learning-rate schedule, a PlacementMeshImpl on one device and a plain `tf.compat.v1.Session`
loop running the train op on batches from a `tf.data` iterator. Ours is `model.train`'s
TPUEstimator (use_tpu=False) with its hooks, host call and checkpoint machinery, fed the same
synthetic batches. Model: encoder-decoder, d_model 256, 4+4 layers, d_ff 1024, 4 heads of 64,
inputs 128, targets 32, batch 16, vocabulary 32128, dropout 0.1 (STACK.md's setting).

Interleaving: ours runs inside `estimator.train`; a hook pauses it after every window of steps
and runs a window of the reference session, so both see the same machine state. Each side's
figure is the median over its windows after warm-up; the ratio is ours / reference tokens/s.
Each trainer option (`--options`) is a separate training run against the same reference session.
`--reference_activations bfloat16` gives the reference bfloat16 activations too (mtf's
`VariableDType` activation dtype), comparing the two trainers at the same precision.
`--profile N` traces N steps of each side and prints the share of op time per op type;
`--curves N` trains N steps with float32 and with bfloat16 activations (dropout 0) and prints
how far apart the loss curves are.

Measured and not kept: XLA auto-clustering (the session's global_jit_level ON_1) made both
precisions slower (float32 0.91x against 1.24x without it, bfloat16 2.28x against 2.55x, in one
interleaved run), so the trainer does not offer it.

    .venv/bin/python bench/bench_train_vs_mtf.py                 # all options
    .venv/bin/python bench/bench_train_vs_mtf.py --options float32 --profile 2 --curves 50
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Sequence

import numpy as np
import tensorflow.compat.v1 as tf

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_train import INPUTS, TARGETS, synthetic_examples, synthetic_run  # noqa: E402
from model.trainer.hooks import logged_losses  # noqa: E402
from model.trainer.model_config import ModelConfig  # noqa: E402
from model.trainer.model_fn import PrecisionConfig  # noqa: E402
from model.trainer.mtf_compat import learning_rate_schedules, mtf, placement_mesh_impl, transformer, transformer_layers
from model.trainer.runs import TrainConfig  # noqa: E402

BATCH, VOCAB = 16, 32128
D_MODEL, D_FF, HEADS, D_KV, LAYERS = 256, 1024, 4, 64, 4
TOKENS_PER_STEP = BATCH * (INPUTS + TARGETS)
# What mtf's Bitransformer reads (it weighs every non-padding target itself).
FEATURES = ("encoder_input_tokens", "encoder_segment_ids", "decoder_target_tokens",
            "decoder_segment_ids")


@dataclasses.dataclass(frozen=True)
class Option:
    """One configuration of our trainer."""

    precision: PrecisionConfig = PrecisionConfig()


OPTIONS: Dict[str, Option] = {
    "float32": Option(),
    "bfloat16": Option(precision=PrecisionConfig(activation_dtype="bfloat16")),
}


def synthetic_batches(batch_size: int = BATCH) -> tf.data.Dataset:
    return synthetic_examples().repeat().batch(batch_size, drop_remainder=True)


def reference_layer_stack(with_enc_dec_attention: bool) -> transformer.LayerStack:
    """T5's block (as its gin configs give mtf): relative-bias self-attention shared per stack,
    encoder-decoder attention in the decoder, ReLU feed-forward without biases."""
    layers = []
    for _ in range(LAYERS):
        layers.append(transformer_layers.SelfAttention(
            num_heads=HEADS, key_value_size=D_KV, dropout_rate=0.1,
            relative_attention_type="bias_shared", relative_attention_num_buckets=32))
        if with_enc_dec_attention:
            layers.append(transformer_layers.EncDecAttention(
                num_heads=HEADS, key_value_size=D_KV, dropout_rate=0.1))
        layers.append(transformer_layers.DenseReluDense(hidden_size=D_FF, dropout_rate=0.1))
    return transformer.LayerStack(layers, dropout_rate=0.1, norm_epsilon=1e-6)


def reference_model() -> transformer.Bitransformer:
    def stack(name, decoder):
        return transformer.Unitransformer(
            layer_stack=reference_layer_stack(decoder), d_model=D_MODEL, input_vocab_size=VOCAB,
            output_vocab_size=VOCAB if decoder else None, autoregressive=decoder,
            max_length=None, shared_embedding_and_softmax_weights=True, z_loss=1e-4,
            name=name, vocab_divisor=128, positional_embedding=False)
    return transformer.Bitransformer(stack("encoder", False), stack("decoder", True),
                                     shared_embedding=True)


class Reference:
    """Plain Mesh TensorFlow: its own graph, session and training loop."""

    def __init__(self, activation_dtype: str = "float32"):
        self.activation_dtype = activation_dtype
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(0)
            features = tf.data.make_one_shot_iterator(synthetic_batches()).get_next()
            graph = mtf.Graph()
            mesh = mtf.Mesh(graph, "mesh")
            impl = placement_mesh_impl.PlacementMeshImpl(mtf.Shape([]), mtf.LayoutRules([]), [""])
            batch_dim = mtf.Dimension("batch", BATCH)
            imported = {key: mtf.import_tf_tensor(
                mesh, features[key], mtf.Shape([batch_dim, mtf.Dimension(
                    "length", features[key].shape[1])])) for key in FEATURES}
            _, loss = reference_model().call_simple(
                inputs=imported["encoder_input_tokens"],
                targets=imported["decoder_target_tokens"], compute_loss=True,
                mode=tf.estimator.ModeKeys.TRAIN,
                variable_dtype=mtf.VariableDType(
                    tf.float32, tf.float32, tf.as_dtype(activation_dtype)),
                encoder_sequence_id=imported["encoder_segment_ids"],
                decoder_sequence_id=imported["decoder_segment_ids"])
            global_step = tf.train.get_or_create_global_step()
            learning_rate = learning_rate_schedules.truncated_rsqrt(global_step, None)
            variables = graph.trainable_variables
            gradients = mtf.gradients([loss], [v.outputs[0] for v in variables])
            updates = mtf.optimize.AdafactorOptimizer(learning_rate=learning_rate).apply_grads(
                gradients, variables)
            lowering = mtf.Lowering(graph, {mesh: impl})
            self.train_op = tf.group([lowering.lowered_operation(op) for op in updates]
                                     + [tf.assign_add(global_step, 1)])
            self.session = tf.Session(config=tf.ConfigProto(
                intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
            self.session.run(tf.global_variables_initializer())
            self.session.run(lowering.copy_masters_to_slices())

    def window(self, steps: int) -> float:
        """Seconds per step over `steps` steps."""
        start = time.perf_counter()
        for _ in range(steps):
            self.session.run(self.train_op)
        return (time.perf_counter() - start) / steps


class Interleave(tf.train.SessionRunHook):
    """Times windows of our training steps, running a reference window after each."""

    def __init__(self, reference: Reference, window: int):
        self.reference = reference
        self.window = window
        self.ours: List[float] = []
        self.theirs: List[float] = []
        self.steps = 0
        self.start = None

    def after_run(self, run_context, run_values):
        self.steps += 1
        if self.start is None:  # first step: graph optimisation, compilation
            self.start = time.perf_counter()
            self.steps = 0
        elif self.steps == self.window:
            self.ours.append((time.perf_counter() - self.start) / self.window)
            self.theirs.append(self.reference.window(self.window))
            self.steps = 0
            self.start = time.perf_counter()


class Trace(tf.train.SessionRunHook):
    """Traces steps 1..`steps` (after the first, which optimises the graph): keep them within
    the warm-up windows."""

    def __init__(self, steps: int):
        self.steps = steps
        self.step = 0
        self.metadata = tf.RunMetadata()

    def before_run(self, run_context):
        if 1 <= self.step <= self.steps:
            return tf.train.SessionRunArgs(None, options=tf.RunOptions(
                trace_level=tf.RunOptions.FULL_TRACE))
        return None

    def after_run(self, run_context, run_values):
        if 1 <= self.step <= self.steps:
            self.metadata.MergeFrom(run_values.run_metadata)
        self.step += 1


def train_ours(option: Option, steps: int, hooks: Sequence[tf.train.SessionRunHook] = (),
               dropout_rate: float = 0.1) -> List[float]:
    """Trains our trainer `steps` steps on the synthetic batches; returns its logged losses."""
    model_config = ModelConfig(d_model=D_MODEL, d_ff=D_FF, num_heads=HEADS, d_kv=D_KV,
                               num_layers=LAYERS, dropout_rate=dropout_rate)
    train_config = TrainConfig(tokens_per_batch=BATCH * INPUTS, save_checkpoints_steps=10**9,
                               keep_checkpoint_max=1, intra_op_threads=1, inter_op_threads=1)
    with tempfile.TemporaryDirectory() as model_dir:
        estimator = synthetic_run(model_config, train_config, model_dir,
                                  option.precision).estimator(BATCH, VOCAB)
        estimator.train(lambda params: synthetic_batches(params["batch_size"]),
                        max_steps=steps, hooks=list(hooks))
        return [entry["loss"] for entry in logged_losses(model_dir)]


def bench_option(name: str, option: Option, reference: Reference, warmup: int, windows: int,
                 window: int, profile: int) -> dict:
    hook = Interleave(reference, window)
    trace = Trace(profile)
    train_ours(option, 1 + (warmup + windows) * window, [trace, hook])
    ours = statistics.median(hook.ours[warmup:])
    theirs = statistics.median(hook.theirs[warmup:])
    result = {"option": name, "ours_tokens_per_s": TOKENS_PER_STEP / ours,
              "mtf_tokens_per_s": TOKENS_PER_STEP / theirs, "ratio": theirs / ours,
              "windows": len(hook.ours) - warmup}
    print(f"{name:>14}: ours {result['ours_tokens_per_s']:7,.0f} tokens/s, plain mtf "
          f"({reference.activation_dtype}) "
          f"{result['mtf_tokens_per_s']:7,.0f} tokens/s, ratio {result['ratio']:.2f}x "
          f"(medians of {result['windows']} interleaved windows of {window} steps after "
          f"{warmup} warm-up windows)", flush=True)
    if profile:
        print(f"{name:>14}: {op_time_summary(trace.metadata, profile)}", flush=True)
    return result


def op_time_summary(run_metadata: tf.RunMetadata, steps: int, top: int = 12) -> str:
    """Op time summed over the traced ops per step (tracing slows them and ops may overlap, so
    not the step's wall time) and its share per op type."""
    per_type = collections.Counter()
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            kind = node.timeline_label.split("(")[0].split("=")[-1].strip() or node.node_name
            per_type[kind.split(" ")[0]] += node.all_end_rel_micros
    total = sum(per_type.values())
    return f"{total / steps / 1e6:.3f} s of traced op time per step: " + ", ".join(
        f"{kind} {micros / total:.0%}" for kind, micros in per_type.most_common(top))


def profile_reference(reference: Reference, steps: int) -> None:
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    for _ in range(steps):
        reference.session.run(reference.train_op, options=options, run_metadata=metadata)
    print(f"plain mtf ({reference.activation_dtype}): {op_time_summary(metadata, steps)}")


def compare_curves(steps: int) -> None:
    """bfloat16 against float32 activations, dropout 0 (the same steps on the same batches)."""
    float32 = np.array(train_ours(OPTIONS["float32"], steps, dropout_rate=0.0))
    bfloat16 = np.array(train_ours(OPTIONS["bfloat16"], steps, dropout_rate=0.0))
    relative = np.abs(bfloat16 - float32) / float32
    print(f"loss curves over {steps} steps, dropout 0: float32 {float32[0]:.4f} -> "
          f"{float32[-1]:.4f}, bfloat16 {bfloat16[0]:.4f} -> {bfloat16[-1]:.4f}; bfloat16 vs "
          f"float32 relative difference: max {relative.max():.2%} (step "
          f"{relative.argmax() + 1}), mean {relative.mean():.2%}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", nargs="+", choices=sorted(OPTIONS), default=list(OPTIONS))
    parser.add_argument("--warmup", type=int, default=1, help="warm-up windows per option")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--window", type=int, default=3, help="steps per window")
    parser.add_argument("--profile", type=int, default=0,
                        help="trace this many steps of each side (in the warm-up of ours) and "
                        "print op time by type")
    parser.add_argument("--reference_activations", choices=["float32", "bfloat16"],
                        default="float32", help="the reference's activation dtype (mtf's "
                        "default float32; bfloat16 compares the two at the same precision)")
    parser.add_argument("--curves", type=int, default=0,
                        help="also train this many steps with float32 and with bfloat16 "
                        "activations (dropout 0) and compare the loss curves")
    args = parser.parse_args()
    tf.disable_eager_execution()
    reference = Reference(args.reference_activations)
    reference.window(2)  # warm-up
    if args.profile:
        profile_reference(reference, args.profile)
    for name in args.options:
        bench_option(name, OPTIONS[name], reference, args.warmup, args.windows, args.window,
                     args.profile)
    if args.curves:
        compare_curves(args.curves)


if __name__ == "__main__":
    main()
