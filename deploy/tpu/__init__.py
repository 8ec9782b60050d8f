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

The package's modules are its concerns: `sizes` (a family's sizes and batch, from model/gin),
`mesh` (the slice and the mesh for one size), `remote` (the scripts the TPU hosts run), `gcloud`
(the commands of each stage) and `command` (the command line). None imports TensorFlow.
"""
from deploy.tpu.command import main, parse_run
from deploy.tpu.gcloud import DEFAULT_STAGES, STAGES, commands
from deploy.tpu.mesh import Accelerator, MeshPlan, accelerator_type, mesh_plan
from deploy.tpu.remote import TENSORFLOW_VERSION, TpuRun, install_script, train_argv, train_script
from deploy.tpu.sizes import (ARCHITECTURE_FAMILIES, DEFAULT_FAMILY, FAMILIES, Family, Size,
                              launched_families, named_size, size_file)

__all__ = ["ARCHITECTURE_FAMILIES", "Accelerator", "DEFAULT_FAMILY", "DEFAULT_STAGES", "FAMILIES",
           "Family", "MeshPlan", "STAGES", "Size", "TENSORFLOW_VERSION", "TpuRun",
           "accelerator_type", "commands", "install_script", "launched_families", "main",
           "mesh_plan", "named_size", "parse_run", "size_file", "train_argv", "train_script"]
