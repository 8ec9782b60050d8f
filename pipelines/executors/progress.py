"""What a staged run (pipelines/executors/staged.py) has done and has left, per stage: for a
person, and as parts/progress.json and stats.json."""
import sys
import time
from typing import Dict, List, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors import base
from pipelines.executors.layout import STAGE_CPU_OVER_READ
from pipelines.executors.staged import TaskMarker
from pipelines.stats import stats
from text.durations import duration


class Progress:
    """What a staged run has done and has left, per stage, for a person (a line per change)
    and as `parts/progress.json` and `stats.json` (the counters of the tasks done so far)."""

    def __init__(self, output_dir: str, variant: str, stage_names: Sequence[str],
                 workers: Optional[int], stream=None):
        """`workers`: the processes that run the tasks, None for a runner's own."""
        self._output_dir = output_dir
        self._variant = variant
        self._stage_names = list(stage_names)
        self._workers = workers
        self._stream = stream or sys.stderr
        self._stages: Dict[str, dict] = {}
        # Summed as tasks end (a dump's run has thousands), not kept.
        self.counters: stats.Stats = {}
        self._seconds: Dict[str, List[float]] = {}  # Of the tasks computed, by stage.
        self._stage_seconds: Dict[str, float] = {}  # Of every task done, by stage.
        self._stage = None
        self._started = time.monotonic()
        self._computed_pages = 0

    def start_stage(self, stage: str, tasks: int, reused: Sequence[TaskMarker]) -> None:
        self._stage = stage
        self._started = time.monotonic()
        self._stages[stage] = {"tasks": tasks, "done": len(reused), "running": 0,
                               "left": tasks - len(reused), "reused": len(reused)}
        self.counters = stats.merged(self.counters, *(marker.counters for marker in reused))
        self._seconds[stage] = []
        self._stage_seconds[stage] = sum(marker.seconds for marker in reused)
        self._computed_pages = 0
        self._report()

    def running(self, count: int) -> None:
        counts = self._stages[self._stage]
        counts["running"] = count
        counts["left"] = counts["tasks"] - counts["done"] - count
        self._report()

    def task_done(self, marker: TaskMarker) -> None:
        counts = self._stages[self._stage]
        counts["done"] += 1
        counts["running"] = max(0, counts["running"] - 1)
        counts["left"] = counts["tasks"] - counts["done"] - counts["running"]
        self.counters = stats.merged(self.counters, marker.counters)
        self._seconds[self._stage].append(marker.seconds)
        self._stage_seconds[self._stage] += marker.seconds
        self._computed_pages += marker.facts.get("pages_in", 0)
        self._report()

    def finish(self) -> None:
        self._stage = "done"
        self._report()

    def record(self) -> dict:
        elapsed = time.monotonic() - self._started
        counts = self._stages.get(self._stage)
        record = {"stage": self._stage,
                  "stages": {name: self._stages.get(name) for name in self._stage_names}}
        if counts is None:
            return {**record, "eta_seconds": 0.0}
        computed = counts["done"] - counts["reused"]
        seconds = self._seconds[self._stage]
        per_task = sum(seconds) / len(seconds) if seconds else None
        record["pages_per_second"] = (round(self._computed_pages / elapsed, 1)
                                      if computed and elapsed > 0 else None)
        record["workers_busy"] = (f"{counts['running']} of {self._workers}" if self._workers
                                  else f"{counts['running']} on the runner's workers")
        if per_task is None:
            record["eta_seconds"] = None
            return record
        # A runner's workers are not counted here: its time left is counted as on one.
        workers = self._workers or 1
        left = per_task * (counts["left"] + counts["running"]) / workers
        # The later stages, from their CPU over the read stage's (all of it, once it is known).
        read_seconds = (per_task * counts["tasks"] if self._stage == "read" else
                        self._stage_seconds.get("read", 0.0))
        later = self._stage_names[self._stage_names.index(self._stage) + 1:]
        left += sum(STAGE_CPU_OVER_READ[name] for name in later) * read_seconds / workers
        record["eta_seconds"] = round(left, 1)
        return record

    def line(self, record: dict) -> str:
        if record["stage"] == "done":
            return "stages: done"
        counts = record["stages"][record["stage"]]
        text = (f"stage {record['stage']} ({self._stage_names.index(record['stage']) + 1} of "
                f"{len(self._stage_names)}): {counts['done']:,} of {counts['tasks']:,} tasks "
                f"done ({counts['reused']:,} reused), {counts['running']:,} running, "
                f"{counts['left']:,} left; workers busy {record['workers_busy']}")
        if record.get("pages_per_second"):
            text += f"; {record['pages_per_second']:,.0f} pages/s"
        if record.get("eta_seconds") is not None:
            text += f"; about {duration(record['eta_seconds'])} left"
        return text

    def _report(self) -> None:
        record = self.record()
        self._stream.write(self.line(record) + "\n")
        self._stream.flush()
        # stats.json first: a reader of progress.json finds stats.json as far along at least.
        if record["stage"] != "done":
            stats.write_stats(self.counters, self._variant, self._output_dir, progress=record)
        records.write_json(FileSystems.join(base.parts_dir(self._output_dir),
                                            base.PROGRESS_FILE), record)
