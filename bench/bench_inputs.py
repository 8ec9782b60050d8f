"""Tokens/s of the whole pre-training input pipeline on one core.

Reads C4 text (JSON lines, as the pipeline writes it), tokenizes with the SentencePiece vocabulary
inside tf.data, applies span corruption (inputs 512 / targets 114) and packs encoder-decoder
rows. tf.data runs with a private threadpool of one thread and TF ops with one intra/inter-op
thread. Counts non-padding tokens of the packed rows (encoder + decoder), median over windows
after a warm-up. The shared sample text is small, so it is read again and again.

  python bench/bench_inputs.py [--vocab PREFIX.model]   (default: trains a 1000-piece one)
"""
import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

from model.data.features import EncoderDecoderConverter  # noqa: E402
from model.data.inputs import jsonl_text_dataset, pretraining_dataset  # noqa: E402
from model.data.vocabulary import Vocabulary  # noqa: E402
from tests.support.trained_vocab import trained_vocabulary  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
TRAINER_TOKENS_PER_SECOND = 2300  # STACK.md: the CPU bench model at 1 thread
LENGTHS = {"inputs": 512, "targets": 114}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", help="a trained PREFIX.model (default: the test vocabulary)")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--rows_per_window", type=int, default=200)
    args = parser.parse_args()
    vocabulary = Vocabulary(args.vocab) if args.vocab else trained_vocabulary(DATA)
    text = jsonl_text_dataset(str(DATA / "c4_samples/olmo/*.json*.gz")).repeat()
    dataset = pretraining_dataset(text, vocabulary, "span_corruption", LENGTHS, EncoderDecoderConverter, seed=0)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    rows = iter(dataset.with_options(options))
    for _ in range(args.rows_per_window):  # warm-up: graph building, cache filling
        next(rows)
    rates = []
    for _ in range(args.windows):
        tokens, start = 0, time.perf_counter()
        for _ in range(args.rows_per_window):
            row = next(rows)
            tokens += int(tf.math.count_nonzero(row["encoder_segment_ids"]) + tf.math.count_nonzero(row["decoder_segment_ids"]))
        rates.append(tokens / (time.perf_counter() - start))
    median = statistics.median(rates)
    print(f"input pipeline (read, tokenize, span corruption {LENGTHS}, pack), 1 thread: "
          f"median {median:,.0f} tokens/s over {args.windows} windows of {args.rows_per_window} rows "
          f"(min {min(rates):,.0f}, max {max(rates):,.0f}); "
          f"{median / TRAINER_TOKENS_PER_SECOND:.1f}x the trainer's ~{TRAINER_TOKENS_PER_SECOND:,} tokens/s")


if __name__ == "__main__":
    main()
