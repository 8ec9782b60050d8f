"""What runs on the TPU hosts: the install script, and the trainer's command line."""
import dataclasses
import pathlib
import re
from typing import Optional, Sequence

from deploy import requirements
from deploy.tpu.mesh import Accelerator, mesh_plan
from deploy.tpu.sizes import TPU_GIN, Size


def _pinned_version(name: str) -> str:
    (pin,) = [pin for pin in requirements.pinned_requirements()
              if requirements.requirement_name(pin) == name]
    return pin.split("==", 1)[1]


# requirements.txt's pin picks the TPU image (Mesh TensorFlow 0.1.21 needs tf.estimator: TF 2.15).
TENSORFLOW_VERSION = _pinned_version("tensorflow")

# The TFDS builder of tfds_c4/; its configs are pipelines.config.TFDS_VARIANTS (imported from
# there, so a dry run needs no TFDS).
TFDS_BUILDER = "t5_c4"


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
    argv = ["python3", "-m", "model", "pretrain",
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


