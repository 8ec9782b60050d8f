"""The TPU slice an accelerator type names, and the Mesh TensorFlow mesh of one size on it."""
import argparse
import dataclasses
import math

from deploy.tpu.sizes import Size

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

