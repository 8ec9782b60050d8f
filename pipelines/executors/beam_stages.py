"""A staged run's stages each as one Beam job over its unfinished tasks, on the runner the Beam
options name (Dataflow): a failed job costs its stage's unfinished tasks, and a rerun runs only
those."""
import concurrent.futures
import os
from typing import List, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors import layout, staged
from pipelines.executors.base import NOT_DONE
from pipelines.executors.in_stages import MARKER_READERS, plan_stage
from pipelines.executors.progress import Progress
from pipelines.executors.tasks import run_task
from pipelines.wording import counted


class _StageTaskFn(beam.DoFn):
    """A task's index -> the task (its file, which the launcher wrote) run."""

    def __init__(self, run: staged.StagedRun, stage: str):
        self._run = run
        self._stage = stage

    def setup(self):
        layout.allow_open_files(self._run.layout)

    def process(self, index: int):
        task = staged.Task.from_json(records.read_all(self._run.task_file(self._stage, index)))
        yield run_task(self._run, task).index


class BeamStages:
    """A stage's tasks as one Beam job; its workers are the runner's."""
    workers = None

    def __init__(self, run: staged.StagedRun, workers: int):
        """Nothing to make: the runner starts its workers per job (--workers is not theirs)."""

    def run(self, run: staged.StagedRun, stage: str, tasks: Sequence[staged.Task],
            progress: Progress) -> List[staged.TaskMarker]:
        folder = FileSystems.split(run.task_file(stage, 0))[0]
        if "://" not in folder:
            os.makedirs(folder, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as writers:
            list(writers.map(lambda task: records.write_atomically(
                run.task_file(stage, task.index), task.to_json()), tasks))
        pipeline = run.job.pipeline(stage.replace("_", "-"))
        _ = (pipeline
             | "Tasks" >> beam.Create([task.index for task in tasks])
             | "Spread" >> beam.Reshuffle()
             | "Run" >> beam.ParDo(_StageTaskFn(run, stage)))
        progress.running(len(tasks))
        pipeline.run().wait_until_finish()
        markers, left, redo = plan_stage(run, tasks)
        if left:
            why = dict(redo).get(left[0].name, NOT_DONE)
            raise staged.StagedError(f"{counted(len(left), 'task')} of the {stage} job have no "
                                     f"valid marker ({left[0].name}: {why}): rerun the same "
                                     "command to redo them")
        for marker in markers:
            progress.task_done(marker)
        return markers
