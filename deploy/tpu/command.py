"""`python -m deploy.tpu`: the run its arguments describe, and its commands printed or run."""
import argparse
import shlex
import subprocess
import sys
from typing import Optional, Sequence

from deploy import REPO_ROOT, arguments
from deploy.tpu.gcloud import DEFAULT_STAGES, STAGES, commands
from deploy.tpu.mesh import accelerator_type
from deploy.tpu.remote import TENSORFLOW_VERSION, TpuRun, train_argv
from deploy.tpu.sizes import DEFAULT_FAMILY, FAMILIES, Size, named_size, size_file
from pipelines.config import PRETRAINING_VARIANTS

def _stages(value: str) -> tuple[str, ...]:
    stages = tuple(stage.strip() for stage in value.split(","))
    unknown = [stage for stage in stages if stage not in STAGES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(STAGES)}")
    return stages


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deploy.tpu", allow_abbrev=False,
                                     description="Pre-train T5, GPT-1, BERT or SegaBERT on a "
                                                 "Cloud TPU VM or pod slice.")
    parser.add_argument("--project", required=True, type=arguments.project_id)
    parser.add_argument("--zone", required=True, type=arguments.zone)
    parser.add_argument("--tpu_name", required=True, type=arguments.resource_name)
    parser.add_argument("--accelerator_type", required=True, type=accelerator_type,
                        help="v3-8, v3-256, v4-64, ...")
    parser.add_argument("--family", choices=list(FAMILIES),
                        help="the model family whose --size is named (default t5; a size file "
                             "names its own)")
    parser.add_argument("--size", required=True,
                        help="a size of the family (" + "; ".join(
                            f"{name}: {', '.join(family.sizes())}"
                            for name, family in FAMILIES.items())
                        + "), or a size file PATH.gin of this checkout")
    parser.add_argument("--variant", default="en", choices=PRETRAINING_VARIANTS,
                        help="the C4 variant to pre-train on (prepared as TFDS on gs://)")
    parser.add_argument("--bucket", type=arguments.gcs_path,
                        help="gs://BUCKET: model_dir and tfds_data_dir go under it unless given")
    parser.add_argument("--model_dir", type=arguments.gcs_path)
    parser.add_argument("--tfds_data_dir", type=arguments.gcs_path)
    parser.add_argument("--vocabulary", required=True, type=arguments.gcs_path,
                        help="gs:// path of the SentencePiece .model (model/train_vocab.py); "
                             "BERT and SegaBERT: the WordPiece vocab .txt")
    # Default: the family's pre-training gin files' (T5: the paper's 2^19 steps, about 34B
    # tokens at 2^16 tokens per batch); the printed command always states it.
    parser.add_argument("--train_steps", type=arguments.positive_int)
    parser.add_argument("--preemptible", action="store_true")
    parser.add_argument("--runtime_version",
                        help=f"TPU software version (default: tpu-vm-tf-{TENSORFLOW_VERSION}-se, "
                             f"or tpu-vm-tf-{TENSORFLOW_VERSION}-pod-se for multi-host slices)")
    parser.add_argument("--stages", type=_stages, default=DEFAULT_STAGES,
                        help=f"comma-separated subset of {','.join(STAGES)} "
                             f"(default {','.join(DEFAULT_STAGES)})")
    parser.add_argument("--dry-run", "--dry_run", dest="dry_run", action="store_true",
                        help="print every command instead of running it")
    return parser


def _size(family: Optional[str], size: str) -> Size:
    """--family and --size: a named size of the family (T5 by default), or a size file whose
    family must agree with --family when both are given."""
    if not size.endswith(".gin"):
        return named_size(family or DEFAULT_FAMILY, size)
    chosen = size_file(size)
    if family and family != chosen.family.name:
        raise ValueError(f"{size} is a {chosen.family.name} size, not {family}")
    return chosen


def parse_run(argv: Sequence[str]) -> tuple[TpuRun, tuple[str, ...], bool]:
    """The run an argv describes, its stages, and whether it is a dry run."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.bucket is None and (args.model_dir is None or args.tfds_data_dir is None):
        parser.error("give --bucket gs://BUCKET, or both --model_dir and --tfds_data_dir")
    try:
        size = _size(args.family, args.size)
    except ValueError as error:
        parser.error(str(error))
    # T5's model directories keep their names (SIZE-VARIANT); the other families' say which.
    run_name = (size.name if size.family.name == DEFAULT_FAMILY
                else f"{size.family.name}-{size.name}")
    run = TpuRun(
        project=args.project, zone=args.zone, tpu_name=args.tpu_name,
        accelerator=args.accelerator_type, size=size, variant=args.variant,
        model_dir=args.model_dir or f"{args.bucket}/models/{run_name}-{args.variant}",
        tfds_data_dir=args.tfds_data_dir or f"{args.bucket}/tensorflow_datasets",
        vocabulary=args.vocabulary,
        train_steps=args.train_steps or size.family.train_steps(),
        preemptible=args.preemptible, runtime_version=args.runtime_version)
    try:
        train_argv(run)  # the mesh plan and the remote command line can be made
    except ValueError as error:
        parser.error(str(error))
    return run, args.stages, args.dry_run


def main(argv: Optional[Sequence[str]] = None) -> None:
    run, stages, dry_run = parse_run(sys.argv[1:] if argv is None else argv)
    for command in commands(run, stages):
        print(shlex.join(command), flush=True)
        if not dry_run:
            try:
                subprocess.run(command, check=True, cwd=REPO_ROOT)
            except FileNotFoundError:
                sys.exit(f"{command[0]} is not installed or not on PATH")
            except subprocess.CalledProcessError as error:
                sys.exit(f"stopped: {command[0]} {command[1]} ... exited with {error.returncode}")
    if not dry_run and "train" in stages:
        print(f"training started; watch it with: tensorboard --logdir {run.model_dir}")

