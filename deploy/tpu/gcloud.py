"""The gcloud (and git) commands of each stage of a TPU run, in the order they run."""
from typing import Sequence

from deploy import requirements
from deploy.tpu.remote import REMOTE_SOURCE_ARCHIVE, TpuRun, install_script, train_script

STAGES = ("create", "install", "train", "delete")
DEFAULT_STAGES = ("create", "install", "train")

def _gcloud_tpu(run: TpuRun, verb: str, *args: str) -> list[str]:
    return ["gcloud", "compute", "tpus", "tpu-vm", verb, *args,
            f"--project={run.project}", f"--zone={run.zone}"]


def local_archive(run: TpuRun) -> str:
    return f"/tmp/{run.tpu_name}-{REMOTE_SOURCE_ARCHIVE}"


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


