"""The local runner: a job run in this process on Beam's DirectRunner (without its first try of
the Prism runner), and the memory such a run needs, which grows with its input (the DirectRunner
holds every group of the job in memory).
"""
import dataclasses
import os
from typing import Optional, Sequence

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner


@dataclasses.dataclass(frozen=True)
class EmbeddedMemory:
    """Peak memory of a run on the embedded DirectRunner: a fixed part plus a part proportional
    to the gzipped WET input, since that runner holds every group of the job in memory."""
    fixed_bytes: int
    bytes_per_input_byte: float


# Measured by bench/bench_scale.py --synthetic 1 2 (full-size synthetic WET files of 40,000 pages,
# 65.8 MB gzipped; peaks of the whole process tree; 2026-12-03, after the phases of issue 29):
# in_memory 1,005 MB for one file, 1,780 MB for two; multi_processing with two workers 2,098 and
# 3,250 MB. The slopes (775 and 1,152 MB per file) are per gzipped byte below, the rest fixed.
EMBEDDED_MEMORY = {
    "in_memory": EmbeddedMemory(fixed_bytes=230_000_000, bytes_per_input_byte=11.8),
    "multi_processing": EmbeddedMemory(fixed_bytes=946_000_000, bytes_per_input_byte=17.5),
}
# One process, as in_memory (not measured apart).
EMBEDDED_MEMORY["multi_threading"] = EMBEDDED_MEMORY["in_memory"]
# The share of this machine's memory a run may plan to use (the system, the page cache).
MEMORY_HEADROOM = 0.8
# The runner names (None: no --runner) that run a job on the DirectRunner, in this process.
EMBEDDED_RUNNERS = (None, "DirectRunner", "direct", "SwitchingDirectRunner")


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def embedded_peak_bytes(wet_bytes: int, running_mode: str) -> int:
    memory = EMBEDDED_MEMORY[running_mode]
    return int(memory.fixed_bytes + memory.bytes_per_input_byte * wet_bytes)


def memory_warning(wet_bytes: int, machine_bytes: int, running_mode: str) -> Optional[str]:
    """What to tell a user whose input the embedded runner cannot hold in this machine's
    memory, or None when it can."""
    peak = embedded_peak_bytes(wet_bytes, running_mode)
    if peak <= MEMORY_HEADROOM * machine_bytes:
        return None
    return (f"{wet_bytes / 1e9:,.1f} GB of WET input needs about {peak / 1e9:,.0f} GB of memory "
            f"on the embedded DirectRunner ({running_mode}), which holds every group of the job "
            f"in memory; this machine has {machine_bytes / 1e9:,.0f} GB. Beyond it, run in "
            "stages (--staged, the default where this warning would apply: memory bounded by a "
            "bucket), on Dataflow (python -m deploy.dataflow, see deploy/README.md) or another "
            "Beam runner (--runner ...), or read fewer files (--max_files).")


def runs_embedded(options: PipelineOptions) -> bool:
    """Whether the Beam options run the job on the DirectRunner, in this process."""
    return options.view_as(StandardOptions).runner in EMBEDDED_RUNNERS


def embedded_runner() -> SwitchingDirectRunner:
    """The DirectRunner without its first try of the Prism runner (Beam 2.77's DirectRunner
    downloads Prism from GitHub, and falls back to its own engine after a failure or a wait). In
    Beam 2.77 the interactive flag does one thing: it rules Prism out (direct_runner.py,
    SwitchingDirectRunner.run_pipeline); the DirectRunner then picks its FnApiRunner."""
    runner = SwitchingDirectRunner()
    runner.is_interactive()
    return runner


def embedded_running_mode(beam_args: Sequence[str]) -> Optional[str]:
    """The DirectRunner's running mode the Beam options ask for, or None for another runner."""
    options = PipelineOptions(beam_args)
    if not runs_embedded(options):
        return None
    return options.view_as(DirectOptions).direct_running_mode
