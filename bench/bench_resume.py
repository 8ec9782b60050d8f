"""Seconds from "resume at step N" to the first batch, with the input position recorded beside
the checkpoint (model/data/input_position.py), at step 10 and at a simulated step 500,000.

The source is C4 text as JSON lines in two shards written to a temporary folder: the 40 sample
pages, then a shard the size of a real C4 shard's worth of seeking (the 800 real C4 pages of the
round-trip WET file, repeated to --big_shard_pages pages). Batches are the paper's: 128 rows of
span corruption 512/114, encoder-decoder packing. A first run records positions every 10 steps;
a record for step 500,000 is then written 1,000 pages before the end of the big shard, in epoch
3,000, as a long run would have written it (for timing, any document start is a valid position).

For comparison it times the batches a resume without a record regenerates and skips (what
resuming cost before), and extrapolates that to step 500,000.

  python bench/bench_resume.py [--vocab PREFIX.model] [--big_shard_pages 20000]
"""
import argparse
import gzip
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from model.data import input_position  # noqa: E402
from model.data.features import EncoderDecoderConverter  # noqa: E402
from model.data.inputs import PretrainingStream  # noqa: E402
from model.data.vocabulary import Vocabulary  # noqa: E402
from tests.support.trained_vocab import trained_vocabulary  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
LENGTHS = {"inputs": 512, "targets": 114}
BATCH = 128
LARGE_STEP = 500_000
RECORD_EVERY = 10


def write_source(directory: pathlib.Path, big_shard_pages: int) -> str:
    small = [json.loads(line)["text"] for path in sorted((DATA / "c4_samples/olmo").glob("*.json.gz"))
             for line in gzip.open(path, "rt")]
    with open(DATA / "wet/realistic/c4-en-2019-18-roundtrip.warc.wet.gz", "rb") as stream:
        pages = [r.content_stream().read().decode() for r in ArchiveIterator(stream) if r.rec_type == "conversion"]
    shards = [small, [pages[i % len(pages)] for i in range(big_shard_pages)]]
    for number, texts in enumerate(shards):
        with gzip.open(directory / f"train-{number:05d}-of-00002.jsonl.gz", "wt", compresslevel=1) as out:
            out.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    return str(directory / "*.jsonl.gz")


def first_batch_seconds(stream, model_dir: str, step: int) -> float:
    start = time.perf_counter()
    batches = input_position.training_batches(stream, BATCH, step, model_dir, lambda s: False)
    next(iter(batches))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", help="a trained PREFIX.model (default: the test vocabulary)")
    parser.add_argument("--big_shard_pages", type=int, default=20_000)
    args = parser.parse_args()
    vocabulary = Vocabulary(args.vocab) if args.vocab else trained_vocabulary(DATA)
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        source = write_source(directory, args.big_shard_pages)
        model_dir = str(directory / "model")
        stream = PretrainingStream(source, vocabulary=vocabulary, objective="span_corruption",
                                   sequence_lengths=LENGTHS, converter=EncoderDecoderConverter, seed=0)
        identity = {**stream.identity(), "batch_size": BATCH}

        # A first run: positions recorded every 10 steps.
        batches = input_position.training_batches(stream, BATCH, 0, model_dir, lambda s: s % RECORD_EVERY == 0)
        start = time.perf_counter()
        for _ in batches.take(RECORD_EVERY):
            pass
        per_batch = (time.perf_counter() - start) / RECORD_EVERY
        deep = input_position.InputPosition(epoch=3000, shard=1, document=args.big_shard_pages - 1000,
                                            example=LARGE_STEP * BATCH)
        input_position.write_record(model_dir, LARGE_STEP, deep, identity)

        at_10 = first_batch_seconds(stream, model_dir, 10)
        at_large = first_batch_seconds(stream, model_dir, LARGE_STEP)
        skipping_10 = first_batch_seconds(stream, str(directory / "no_records"), 10)
        print(f"resume with recorded input positions (batches of {BATCH} x span corruption {LENGTHS}):")
        print(f"  step 10:      {at_10:.2f} s to the first batch")
        print(f"  step {LARGE_STEP:,}: {at_large:.2f} s to the first batch "
              f"(position: shard 1, document {deep.document:,}, epoch 3000)")
        print(f"without a record (regenerate and skip): step 10 took {skipping_10:.2f} s; "
              f"at {per_batch:.2f} s per batch, step {LARGE_STEP:,} would take "
              f"{per_batch * LARGE_STEP / 3600:,.0f} hours")


if __name__ == "__main__":
    main()
