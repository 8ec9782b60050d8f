"""Peak memory (RSS) of a tiny fine-tuning run on COPA through the command line, each run in a
process of its own: GPT-1 (gpt1/tiny.gin, gpt1/finetune.gin: 3 epochs of the 32 training
examples of the shared sample, then the 100 validation examples scored), the same with every
sequence padded to DataConfig.targets_length (512) as before `gpt1.finetune.unpadded`, and T5's
tiny encoder-decoder on the same task (3 steps of 32 sequences of 512 tokens, then the
validation examples decoded) as a reference; and a process that only imports TensorFlow and the
trainer. Fine-tuning starts from random weights (warm start adds only the checkpoint's read).

Issue 19 measured 5.0 GB for the GPT-1 run. Measured here (2 cores, TensorFlow's default
threads; peak RSS in MiB):
    imports alone   615   (TensorFlow alone: 504)
    GPT-1 padded  4,458   (the sequences at 512 tokens: attention, LM logits and their gradients)
    GPT-1           888   (the longest sequence: 53 tokens in training, 64 in validation;
                           894 with 5 checkpoints scored)
    T5            3,128   (rows packed to COPA's 512 input tokens, 32 a batch)
Run: .venv/bin/python bench/bench_finetune_memory.py (about 3 minutes, most of it the vocabulary).
"""
import argparse
import pathlib
import resource
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COPA = REPO.parent / "shared" / "data" / "tasks" / "superglue_copa"
RUNS = {
    "gpt1": ["--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/finetune.gin"],
    "gpt1_padded": ["--gin_file", "gpt1/tiny.gin", "--gin_file", "gpt1/finetune.gin"],
    "t5": ["--gin_file", "sizes/tiny.gin", "--gin_file", "architectures/encoder_decoder.gin",
           "--gin_param", "TrainConfig.tokens_per_batch = 16384",
           "--gin_param", "TrainConfig.train_steps = 3",
           "--gin_param", "TrainConfig.save_checkpoints_steps = 3"],
}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def child(name: str, vocabulary: str, model_dir: str) -> None:
    """One run in this process; prints its peak RSS in MiB."""
    from model.trainer.verbosity import quiet_libraries
    quiet_libraries(0)
    from model import train  # noqa: F401  (the imports' own footprint)
    if name == "imports":
        print(peak_mib())
        return
    if name == "gpt1_padded":
        from model.families.gpt1 import finetune
        finetune.unpadded = lambda rows, sequences: rows  # every sequence at targets_length
    argv = ["--mode", "finetune", "--model_dir", model_dir, "--task", "super_glue_copa",
            "--task_files", f"super_glue_copa:train={COPA / 'train.jsonl'}",
            "--task_files", f"super_glue_copa:validation={COPA / 'val.jsonl'}",
            "--gin_param", f"DataConfig.vocabulary = '{vocabulary}'"] + RUNS[name]
    if train.main(argv) != 0:
        raise SystemExit(f"{name}: the run failed")
    print(peak_mib())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("NAME", "VOCABULARY", "MODEL_DIR"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(REPO.parent / "shared" / "data").path
    for name in ("imports", "gpt1_padded", "gpt1", "t5"):
        with tempfile.TemporaryDirectory() as model_dir:
            done = subprocess.run([sys.executable, __file__, "--child", name, vocabulary, model_dir],
                                  capture_output=True, text=True, cwd=REPO)
        if done.returncode:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        print(f"{name:12s} peak RSS {float(done.stdout.split()[-1]):8,.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
