"""Pre-train a model (T5, GPT-1, BERT or SegaBERT) on Cloud TPU: create the TPU VM (or pod
slice), install, launch.

    python -m deploy.tpu --project my-project --zone europe-west4-a --tpu_name t5-small-en \
        --accelerator_type v3-8 --size small --variant en --bucket gs://my-bucket \
        --vocabulary gs://my-bucket/vocab/spm.model --dry-run

prints every command (gcloud and the remote shell scripts) without running any; without
--dry-run it runs them in order and stops at the first failure. `--family gpt1 --size base`
(or bert base/large, segabert base) picks another family's size from its gin directory;
`--size PATH.gin` takes a size file of the checkout (its ModelConfig.architecture names the
family). Checkpoints and TensorBoard event files go to --model_dir on gs:// (default
BUCKET/models/SIZE-VARIANT for T5, BUCKET/models/FAMILY-SIZE-VARIANT for the others), so a rerun
of the `train` stage resumes from the latest checkpoint there.
"""
import argparse
import dataclasses
import math
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Optional, Sequence

from deploy import arguments, requirements
from deploy.dataflow import REPO_ROOT
from model.trainer.gin_files import GIN_DIR, literal_bindings
from model.trainer.verbosity import quiet_libraries
from pipelines.config import PRETRAINING_VARIANTS

if __name__ == "__main__":
    # The family registry below imports TensorFlow: its start-up lines stay off stderr, as the
    # model command lines keep them (their --verbosity 0).
    quiet_libraries(0)

from model import families  # noqa: E402  (after the log level above)
from model.families.base import TPULaunch  # noqa: E402


def _pinned_version(name: str) -> str:
    (pin,) = [pin for pin in requirements.pinned_requirements()
              if requirements.requirement_name(pin) == name]
    return pin.split("==", 1)[1]


# requirements.txt's pin picks the TPU image (Mesh TensorFlow 0.1.21 needs tf.estimator: TF 2.15).
TENSORFLOW_VERSION = _pinned_version("tensorflow")

# The TFDS builder of tfds_c4/; its configs are pipelines.config.TFDS_VARIANTS (imported from
# there, so a dry run needs no TFDS).
TFDS_BUILDER = "t5_c4"
STAGES = ("create", "install", "train", "delete")
DEFAULT_STAGES = ("create", "install", "train")

# Model sizes and the batch are model/gin's: a family's size file (sizes/NAME.gin for T5,
# gpt1/base.gin, bert/large.gin, ...) and its pre-training files (pretrain.gin, the --mode
# pretrain default, then the family's), read here with gin's parser; which files, the vocabulary
# and the model parallelism sizes need are the family's (`ModelFamily.tpu_launch`). The trainer
# reads the same files on the TPU host, and tpu.gin (use the TPU, T5's bfloat16 precision). The
# mesh layout (which tensor dimension goes to which mesh axis) is the trainer's own default
# (model/trainer/mesh.py), so the launcher binds only the mesh shape.
PRETRAIN_GIN = "pretrain.gin"
TPU_GIN = "tpu.gin"


@dataclasses.dataclass(frozen=True)
class Family:
    """A family the launcher pre-trains: its package's name and what it says of its launch
    (model/families/base.py's TPULaunch: sizes, pre-training files, vocabulary, parallelism)."""

    name: str
    launch: TPULaunch
    architectures: tuple[str, ...] = ()  # the ModelConfig.architecture values it builds

    def sizes(self) -> dict[str, pathlib.Path]:
        """{size name: size file}, smallest first (as the README's mesh table)."""
        files = {path.stem: path for path in sorted((GIN_DIR / self.launch.size_dir).glob("*.gin"))
                 if "ModelConfig.d_model" in literal_bindings(path)}
        return dict(sorted(files.items(),
                           key=lambda item: _approximate_parameters(literal_bindings(item[1]))))

    def pretrain_bindings(self) -> dict:
        bindings = {}
        for name in (PRETRAIN_GIN, *self.launch.pretrain_gin):
            bindings.update(literal_bindings(name))
        return bindings

    def batch_sequences(self) -> int:
        """Sequences per pre-training batch: the token budget over the longest sequence (the
        trainer divides by its longest feature): T5's 2^16 tokens in 512-token inputs (128),
        GPT-1's 64 x 512, BERT's 256 x 128 (phase 1), SegaBERT's 256 x 512."""
        bindings = self.pretrain_bindings()
        length = max(bindings["DataConfig.inputs_length"], bindings["DataConfig.targets_length"])
        return bindings["TrainConfig.tokens_per_batch"] // length

    def train_steps(self) -> int:
        """The pre-training's steps (TrainConfig.train_steps; the schedules follow them)."""
        return self.pretrain_bindings()["TrainConfig.train_steps"]


def launched_families() -> dict[str, Family]:
    """{package name: Family} of the registered families that say how they launch (`--family`
    takes the package's name, as model.convert's)."""
    found: dict[str, Family] = {}
    for family in families.REGISTRY.families:
        if family.tpu_launch is None:
            continue
        package = family.__module__.split(".")[-2]
        if package in found:
            raise ValueError(f"two families of package {package} say how they launch")
        found[package] = Family(package, family.tpu_launch, tuple(family.architectures))
    return found


FAMILIES = launched_families()
# ModelConfig.architecture of a size file -> its family; a size file that names none is the
# family's whose launch reads an architecture file first (T5's).
ARCHITECTURE_FAMILIES = {architecture: family.name for family in FAMILIES.values()
                         if not family.launch.architecture_gin
                         for architecture in family.architectures}
(DEFAULT_FAMILY,) = [family.name for family in FAMILIES.values() if family.launch.architecture_gin]


def _approximate_parameters(bindings: dict) -> int:
    """Attention and feed-forward weights of the stacks: only to order sizes."""
    d_model, layers = bindings["ModelConfig.d_model"], bindings["ModelConfig.num_layers"]
    attention = 4 * d_model * bindings["ModelConfig.num_heads"] * bindings["ModelConfig.d_kv"]
    return layers * (attention + 2 * d_model * bindings["ModelConfig.d_ff"])


@dataclasses.dataclass(frozen=True)
class Size:
    """One size of one family: its gin file, as the trainer on the TPU host names it."""

    family: Family
    name: str
    gin_file: str  # relative to model/gin/, or to the checkout's root

    @property
    def bindings(self) -> dict:
        return literal_bindings(_local_path(self.gin_file))

    @property
    def num_heads(self) -> int:
        return self.bindings["ModelConfig.num_heads"]

    @property
    def min_model_parallelism(self) -> int:
        return self.family.launch.min_model_parallelism.get(self.name, 1)


def _local_path(gin_file: str) -> pathlib.Path:
    in_gin_dir = GIN_DIR / gin_file
    return in_gin_dir if in_gin_dir.is_file() else REPO_ROOT / gin_file


def named_size(family: str, name: str) -> Size:
    chosen = FAMILIES[family]
    sizes = chosen.sizes()
    if name not in sizes:
        raise ValueError(f"{family} has no size {name!r}: choose one of {', '.join(sizes)} "
                         f"(model/gin/{chosen.launch.size_dir}/), or give a size file PATH.gin")
    return Size(chosen, name, f"{chosen.launch.size_dir}/{name}.gin")


def size_file(path: str) -> Size:
    """A size file of the checkout (the TPU host runs the committed tree), its family named by
    its ModelConfig.architecture."""
    local = pathlib.Path(path).resolve()
    if not local.is_file():
        raise ValueError(f"size file {path} not found")
    try:
        relative = local.relative_to(GIN_DIR)
    except ValueError:
        try:
            relative = local.relative_to(REPO_ROOT)
        except ValueError:
            raise ValueError(f"size file {path} is outside the checkout, which is what the TPU "
                             f"host receives") from None
    bindings = literal_bindings(local)
    if "ModelConfig.d_model" not in bindings:
        raise ValueError(f"{path} binds no ModelConfig sizes")
    architecture = bindings.get("ModelConfig.architecture")
    if architecture and architecture not in ARCHITECTURE_FAMILIES:
        raise ValueError(f"{path}: the launcher pre-trains {DEFAULT_FAMILY} (size files without "
                         f"an architecture) and the architectures "
                         f"{', '.join(sorted(ARCHITECTURE_FAMILIES))}, not {architecture!r}")
    family = ARCHITECTURE_FAMILIES[architecture] if architecture else DEFAULT_FAMILY
    return Size(FAMILIES[family], local.stem, str(relative))


# Largest slice of each generation; sizes are powers of two from 8 up.
MAX_SLICE = {"v2": 512, "v3": 2048, "v4": 4096}


@dataclasses.dataclass(frozen=True)
class Accelerator:
    generation: str  # v2, v3 or v4
    tensor_cores: int  # the number in the accelerator type name

    @property
    def name(self) -> str:
        return f"{self.generation}-{self.tensor_cores}"

    @property
    def devices(self) -> int:
        """Devices TensorFlow sees: a core on v2/v3; a chip (two cores as one) on v4."""
        return self.tensor_cores // 2 if self.generation == "v4" else self.tensor_cores

    @property
    def hosts(self) -> int:
        # Every generation here has 8 TensorCores per host VM.
        return max(1, self.tensor_cores // 8)


@dataclasses.dataclass(frozen=True)
class MeshPlan:
    mesh_shape: str
    model_parallelism: int
    data_parallelism: int
    sequences_per_replica: int


def accelerator_type(value: str) -> Accelerator:
    generation, _, size = value.partition("-")
    if generation not in MAX_SLICE or not size.isdigit():
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a TPU type this launcher supports: expected v2-N, v3-N or v4-N "
            "(TPU VM images with TensorFlow 2.15 exist for these generations)")
    cores = int(size)
    if cores < 8 or cores & (cores - 1) or cores > MAX_SLICE[generation]:
        raise argparse.ArgumentTypeError(
            f"{value!r}: the size must be a power of two from 8 to {MAX_SLICE[generation]}")
    return Accelerator(generation, cores)


def mesh_plan(accelerator: Accelerator, size: Size) -> MeshPlan:
    """The Mesh TensorFlow mesh for one model size on one TPU slice.

    The batch dimension cannot be split over more replicas than the batch has sequences (T5's
    128, GPT-1's 64), so slices with more devices than that must use model parallelism even for
    small models. Heads, d_ff and the vocabulary are split over the `model` dimension (the
    trainer's layout, model.trainer.mesh.DEFAULT_LAYOUT), so model parallelism must divide the number of
    heads, d_ff and the family's vocabulary (TPULaunch.vocab_size). Only T5 pads its vocabulary
    (to a multiple of 128); GPT-1's and BERT's are divisible by 2 only, so a slice that needs
    model parallelism 4 or more for their batch is refused (a larger batch would make room).
    """
    sequences = size.family.batch_sequences()
    model = max(size.min_model_parallelism, accelerator.devices // sequences)
    split = {"heads": size.num_heads, "d_ff": size.bindings["ModelConfig.d_ff"],
             "vocabulary ids": size.family.launch.vocab_size}
    indivisible = [f"{count:,} {name}" for name, count in split.items() if count % model]
    if model > accelerator.devices or indivisible:
        message = (f"{size.family.name} {size.name} cannot be laid out on {accelerator.name}: "
                   f"it needs model parallelism {model} (at least {size.min_model_parallelism} "
                   f"for memory, and {accelerator.devices} devices over its batch of "
                   f"{sequences} sequences), which must be at most the devices and "
                   f"divide {', '.join(f'{count:,} {name}' for name, count in split.items())}")
        # Mesh sizes are powers of two: the most model parallelism the split dimensions allow
        # is the lowest set bit of their greatest common divisor.
        common = math.gcd(*split.values())
        widest_model = common & -common
        if indivisible and size.min_model_parallelism <= widest_model:
            message += (f" (not divisible: {', '.join(indivisible)}); model parallelism "
                        f"{widest_model} at most, so a slice of at most "
                        f"{widest_model * sequences} devices")
        raise ValueError(message)
    batch = accelerator.devices // model
    return MeshPlan(mesh_shape=f"model:{model},batch:{batch}", model_parallelism=model,
                    data_parallelism=batch, sequences_per_replica=sequences // batch)


@dataclasses.dataclass(frozen=True)
class TpuRun:
    """One pre-training run on one TPU VM or pod slice."""
    project: str
    zone: str
    tpu_name: str
    accelerator: Accelerator
    size: Size
    variant: str
    model_dir: str
    tfds_data_dir: str
    vocabulary: str
    train_steps: int
    preemptible: bool = False
    runtime_version: Optional[str] = None

    @property
    def software_version(self) -> str:
        # Mesh TensorFlow drives the TPU through TPUEstimator, which runs on the stream
        # executor ("se") runtime; multi-host slices need the "pod" image.
        pod = "-pod" if self.accelerator.hosts > 1 else ""
        return self.runtime_version or f"tpu-vm-tf-{TENSORFLOW_VERSION}{pod}-se"


REMOTE_SOURCE_ARCHIVE = "t5-c4-src.tar.gz"
REMOTE_CHECKOUT = "t5-c4"
# The vocabularies read local files: the train stage copies --vocabulary from gs:// to
# `local_vocabulary` in the checkout the trainer runs in, keeping its extension (a SentencePiece
# .model; BERT's and SegaBERT's WordPiece vocab .txt).
LOCAL_VOCABULARY_STEM = "vocabulary"


def local_vocabulary(run: TpuRun) -> str:
    return LOCAL_VOCABULARY_STEM + pathlib.PurePosixPath(run.vocabulary).suffix


def _gcloud_tpu(run: TpuRun, verb: str, *args: str) -> list[str]:
    return ["gcloud", "compute", "tpus", "tpu-vm", verb, *args,
            f"--project={run.project}", f"--zone={run.zone}"]


def local_archive(run: TpuRun) -> str:
    return f"/tmp/{run.tpu_name}-{REMOTE_SOURCE_ARCHIVE}"


def _pip_word(pin: str) -> str:
    """A pin as one word of the TPU host's shell. A pin with a marker (`; python_version < "3.11"`)
    goes in double quotes, its own escaped, so that the script still fits in one single-quoted
    ssh --command and the host's pip evaluates the marker for the host's Python."""
    if ";" not in pin:
        return pin
    escaped = pin.replace('"', '\\"')
    return f'"{escaped}"'


def install_script(pins: Sequence[str]) -> str:
    """Shell script run on every TPU host: unpack the code, install it with the pinned versions.

    The TPU image ships its own TensorFlow build linked against libtpu: it must stay, so
    tensorflow is not reinstalled and tensorflow-text (which depends on it) goes in without
    dependencies. The last line fails the install if anything replaced that TensorFlow.
    """
    keep_image_tf = {"tensorflow", "tensorflow-text"}
    installed = [_pip_word(pin) for pin in pins
                 if requirements.requirement_name(pin) not in keep_image_tf]
    without_deps = [_pip_word(pin) for pin in pins
                    if requirements.requirement_name(pin) == "tensorflow-text"]
    # Double quotes only: the script travels inside one single-quoted ssh --command.
    check_tf = (f'python3 -c "import tensorflow as tf; print(tf.__version__)" '
                f'| grep -Fqx {TENSORFLOW_VERSION} '
                f'|| {{ echo "the TPU image TensorFlow {TENSORFLOW_VERSION} was replaced" >&2; '
                'exit 1; }')
    pip_install = "python3 -m pip install --quiet"
    # `set -e` stops at the first failing step; `;` keeps each step's failure its own.
    return "; ".join([
        "set -euo pipefail",
        f"rm -rf ~/{REMOTE_CHECKOUT}",
        f"mkdir -p ~/{REMOTE_CHECKOUT}",
        f"tar -xzf ~/{REMOTE_SOURCE_ARCHIVE} -C ~/{REMOTE_CHECKOUT}",
        f"cd ~/{REMOTE_CHECKOUT}",
        " ".join([pip_install, *installed]),
        " ".join([pip_install, "--no-deps", *without_deps, "."]),
        check_tf,
    ])


def train_argv(run: TpuRun) -> list[str]:
    """The trainer's command line (model/train.py) as words for the TPU host's shell: gin files
    for the size, the family's pre-training and the TPU, gin bindings for data, mesh shape, TPU
    name and steps. The batch comes from model/gin/pretrain.gin, which pretrain mode reads (T5's
    2^16 tokens = 128 x 512), and the family's pre-training files."""
    plan = mesh_plan(run.accelerator, run.size)
    # One host talks to its own TPU; on a pod slice the program runs on host 0 and reaches
    # the other hosts through the TPU cluster resolver, by the slice's name.
    tpu = "local" if run.accelerator.hosts == 1 else run.tpu_name
    source = f"tfds:{TFDS_BUILDER}/{run.variant}@{run.tfds_data_dir}"
    bindings = [
        f"DataConfig.source={_gin_string(source)}",
        f"DataConfig.vocabulary={_gin_string(local_vocabulary(run))}",
        f"MeshConfig.mesh_shape={_gin_string(plan.mesh_shape)}",
        f"TrainConfig.tpu={_gin_string(tpu)}",
        f"TrainConfig.train_steps={run.train_steps}",
    ]
    family = run.size.family
    gin_files = [_shell_word(run.size.gin_file), *family.launch.architecture_gin,
                 *family.launch.pretrain_gin, TPU_GIN]
    argv = ["python3", "-m", "model.train", "--mode", "pretrain",
            "--model_dir", _shell_word(run.model_dir)]
    for gin_file in gin_files:
        argv += ["--gin_file", gin_file]
    for binding in bindings:
        argv += ["--gin_param", binding]
    return argv


# Characters that mean nothing to a shell, so a value needs no quoting on the TPU host.
_SHELL_SAFE = re.compile(r"^[A-Za-z0-9._:/@,=+-]+$")


def _shell_word(value: str) -> str:
    if not _SHELL_SAFE.match(value):
        raise ValueError(f"{value!r}: use only letters, digits and ._:/@,=+- in TPU run paths")
    return value


def _gin_string(value: str) -> str:
    """A gin string literal for the remote command line: double quotes escaped for the shell,
    so the whole script still fits in one single-quoted ssh --command."""
    return f'\\"{_shell_word(value)}\\"'


def train_script(run: TpuRun) -> str:
    """Fetches the vocabulary, then starts training detached from the ssh session."""
    log = f"~/train-{run.tpu_name}.log"
    environment = "TPU_LOAD_LIBRARY=0 " if run.accelerator.hosts > 1 else ""
    fetch_vocabulary = (f"gcloud storage cp {_shell_word(run.vocabulary)} "
                        f"{local_vocabulary(run)}")
    # Not shlex.join: the gin strings carry their own shell escaping (see _gin_string).
    return (f"cd ~/{REMOTE_CHECKOUT} && {fetch_vocabulary} && "
            f"{environment}nohup {' '.join(train_argv(run))} > {log} 2>&1 &")


def commands(run: TpuRun, stages: Sequence[str]) -> list[list[str]]:
    """Every command of the requested stages, in the order they must run."""
    steps = {
        "create": [_gcloud_tpu(run, "create", run.tpu_name,
                               f"--accelerator-type={run.accelerator.name}",
                               f"--version={run.software_version}",
                               *(["--preemptible"] if run.preemptible else []))],
        "install": [
            # Ships the committed tree only: what runs on the TPU is a known commit.
            ["git", "archive", "--format=tar.gz", f"--output={local_archive(run)}", "HEAD"],
            _gcloud_tpu(run, "scp", local_archive(run), f"{run.tpu_name}:{REMOTE_SOURCE_ARCHIVE}",
                        "--worker=all"),
            # Training needs the model extra's pins (no torch: exporting is done elsewhere).
            _gcloud_tpu(run, "ssh", run.tpu_name, "--worker=all",
                        f"--command={install_script(requirements.extras_require()['model'])}"),
        ],
        "train": [_gcloud_tpu(run, "ssh", run.tpu_name, "--worker=0",
                              f"--command={train_script(run)}")],
        "delete": [_gcloud_tpu(run, "delete", run.tpu_name, "--quiet")],
    }
    return [command for stage in STAGES if stage in stages for command in steps[stage]]


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


if __name__ == "__main__":
    main()
