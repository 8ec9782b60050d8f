"""A family's sizes and pre-training batch, read from model/gin with gin's parser."""
import dataclasses
import pathlib

from deploy import REPO_ROOT
from model.tpu_launch import TPU_LAUNCHES, TPULaunch
from model.trainer.gin_files import GIN_DIR, literal_bindings

# Model sizes and the batch are model/gin's: a family's size file (sizes/NAME.gin for T5,
# gpt1/base.gin, bert/large.gin, ...) and its pre-training files (pretrain.gin, the --mode
# pretrain default, then the family's), read here with gin's parser; which files, the vocabulary
# and the model parallelism sizes need are the family's (model/tpu_launch.py). The trainer
# reads the same files on the TPU host, and tpu.gin (use the TPU, T5's bfloat16 precision). The
# mesh layout (which tensor dimension goes to which mesh axis) is the trainer's own default
# (model/trainer/mesh.py), so the launcher binds only the mesh shape.
PRETRAIN_GIN = "pretrain.gin"
TPU_GIN = "tpu.gin"


@dataclasses.dataclass(frozen=True)
class Family:
    """A family the launcher pre-trains: its package's name and what model/tpu_launch.py says
    of its launch (sizes, pre-training files, vocabulary, parallelism, size files' architectures)."""

    name: str
    launch: TPULaunch

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
    """{package name: Family} of the families model/tpu_launch.py launches (`--family` takes the
    package's name, as model.convert's)."""
    return {package: Family(package, launch) for package, launch in TPU_LAUNCHES.items()}


FAMILIES = launched_families()
# ModelConfig.architecture of a size file -> its family; a size file that names none is the
# family's whose launch reads an architecture file first (T5's).
ARCHITECTURE_FAMILIES = {architecture: family.name for family in FAMILIES.values()
                         for architecture in family.launch.architectures}
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

