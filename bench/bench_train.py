"""Training throughput and peak memory of the Mesh TF trainer on CPU, and of the input pipeline.

Model: T5 encoder-decoder, d_model 256, 4+4 layers, d_ff 1024, 4 heads of 64, inputs 128,
targets 32, batch 16, one device, TensorFlow at 1 thread (intra- and inter-op) because 2-thread
timings on the shared 2-core machines swing by 2x. Tokens counted: inputs + targets per sequence.
Figures are medians over timed windows after warm-up steps. Run: .venv/bin/python bench/bench_train.py
"""
import argparse
import pathlib
import resource
import statistics
import sys
import tempfile
import time

import numpy as np
import tensorflow.compat.v1 as tf

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model import families  # noqa: E402
from model.data import features, inputs  # noqa: E402
from model.trainer.mesh import MeshConfig  # noqa: E402
from model.trainer.model_config import ModelConfig  # noqa: E402
from model.trainer.model_fn import OptimizationConfig, PrecisionConfig  # noqa: E402
from model.trainer.runs import DataConfig, Run, TrainConfig  # noqa: E402

INPUTS, TARGETS, BATCH, VOCAB = 128, 32, 16, 32128
TOKENS_PER_STEP = BATCH * (INPUTS + TARGETS)


def synthetic_run(model_config: ModelConfig, train_config: TrainConfig, model_dir: str,
                  precision: PrecisionConfig = PrecisionConfig()) -> Run:
    """A run of the synthetic examples: no data or vocabulary, a one-device mesh."""
    return Run(families.family_class(model_config.architecture), model_config, MeshConfig(),
               OptimizationConfig(), DataConfig(), train_config, model_dir, precision)


class StepTimer(tf.train.SessionRunHook):
    def __init__(self):
        self.times = []

    def after_run(self, run_context, run_values):
        self.times.append(time.perf_counter())


def synthetic_examples() -> tf.data.Dataset:
    """64 random unpacked sequences (one segment each, no padding) with every encoder-decoder
    feature, repeated by the callers: an input path that costs next to nothing."""
    rng = np.random.RandomState(0)
    encoder = rng.randint(3, 32000, size=(64, INPUTS)).astype(np.int32)
    decoder = rng.randint(3, 32000, size=(64, TARGETS)).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices({
        "encoder_input_tokens": encoder, "encoder_segment_ids": np.ones_like(encoder),
        "encoder_positions": np.broadcast_to(np.arange(INPUTS, dtype=np.int32), encoder.shape),
        "decoder_target_tokens": decoder,
        "decoder_input_tokens": np.pad(decoder[:, :-1], [(0, 0), (1, 0)]),
        "decoder_segment_ids": np.ones_like(decoder),
        "decoder_positions": np.broadcast_to(np.arange(TARGETS, dtype=np.int32), decoder.shape),
        "decoder_loss_weights": np.ones_like(decoder)})


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def window_medians(times, warmup, window):
    """Median seconds per step over consecutive windows of `window` steps after `warmup`."""
    timed = times[warmup:]
    spans = [(timed[i + window] - timed[i]) / window
             for i in range(0, len(timed) - window, window)]
    return statistics.median(spans), len(spans)


def bench_training(warmup: int, windows: int, window: int) -> None:
    tf.disable_eager_execution()
    model_config = ModelConfig(d_model=256, d_ff=1024, num_heads=4, d_kv=64, num_layers=4)
    train_config = TrainConfig(tokens_per_batch=BATCH * INPUTS, save_checkpoints_steps=10**9,
                               keep_checkpoint_max=1, intra_op_threads=1, inter_op_threads=1)
    with tempfile.TemporaryDirectory() as model_dir:
        estimator = synthetic_run(model_config, train_config, model_dir).estimator(BATCH, VOCAB)
        timer = StepTimer()
        steps = warmup + windows * window + 1
        estimator.train(lambda params: synthetic_examples().repeat().batch(
            params["batch_size"], drop_remainder=True), max_steps=steps, hooks=[timer])
    seconds, count = window_medians(timer.times, warmup, window)
    print(f"train: d_model 256, 4+4 layers, d_ff 1024, inputs {INPUTS}, targets {TARGETS}, "
          f"batch {BATCH}, 1 thread: {TOKENS_PER_STEP / seconds:,.0f} tokens/s "
          f"({seconds:.3f} s/step, median of {count} windows of {window} steps after {warmup} "
          f"warm-up); peak RSS {peak_rss_mib():,.0f} MiB")


def bench_input_pipeline(vocabulary_path: str, source: str, batches: int) -> None:
    from model.data.vocabulary import Vocabulary
    tf.enable_eager_execution() if not tf.executing_eagerly() else None
    vocabulary = Vocabulary(vocabulary_path)
    dataset = inputs.pretraining_dataset(
        inputs.text_dataset_from_source(source).repeat(), vocabulary, "span_corruption",
        {"inputs": INPUTS, "targets": TARGETS}, features.EncoderDecoderConverter, seed=0).batch(BATCH)
    iterator = iter(dataset)
    for _ in range(5):  # warm-up: tokenizer construction, first packing windows
        next(iterator)
    times = [time.perf_counter()]
    for _ in range(batches):
        next(iterator)
        times.append(time.perf_counter())
    per_batch = statistics.median(b - a for a, b in zip(times, times[1:]))
    print(f"input pipeline (tokenize, span corruption, pack; {source}): "
          f"{TOKENS_PER_STEP / per_batch:,.0f} tokens/s ({batches} batches of {BATCH}, "
          f"median); peak RSS {peak_rss_mib():,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["train", "input"], default=None,
                        help="run one part (each part runs in its own process by default)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--window", type=int, default=3)
    parser.add_argument("--vocabulary", help="SentencePiece model for the input pipeline "
                        "(default: train the test vocabulary on ../shared/data)")
    parser.add_argument("--source", default=str(
        REPO.parent / "shared" / "data" / "c4_samples" / "olmo" / "c4-sample.0[123].json.gz"))
    args = parser.parse_args()
    if args.part == "train":
        bench_training(args.warmup, args.windows, args.window)
    elif args.part == "input":
        vocabulary = args.vocabulary
        if not vocabulary:
            from tests.support.trained_vocab import trained_vocabulary
            vocabulary = str(trained_vocabulary(REPO.parent / "shared" / "data").path)
        bench_input_pipeline(vocabulary, args.source, batches=50)
    else:
        import subprocess
        # Separate processes, so that each peak-memory figure is its own.
        for part in ("train", "input"):
            subprocess.run([sys.executable, __file__, "--part", part] + sys.argv[1:], check=True)


if __name__ == "__main__":
    main()
