"""A staged run (pipelines/executors/staged.py) driven to its end: its stages in order, each over
its
tasks without a valid marker, run by an executor (base.EXECUTORS); and its plan in words."""
import concurrent.futures
import logging
from typing import Dict, List, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines.executors import layout, planning, staged
from pipelines.executors.base import NOT_DONE, parts_dir
from pipelines.executors.job import Job
from pipelines.executors.one_job import NothingRead, nothing_read_error
from pipelines.executors.progress import Progress
from pipelines.stats import stats
from pipelines.wording import counted

# Threads that check the tasks' markers at launch (and write a Beam job's task files): a few
# reads a task, thousands of tasks on an object store.
MARKER_READERS = 16


def staged_run(job: Job, cut: layout.Layout) -> staged.StagedRun:
    return staged.StagedRun(job, cut, staged.config_sha256(job.run_config(), cut))


def plan_stage(run: staged.StagedRun, tasks: Sequence[staged.Task]
               ) -> Tuple[List[staged.TaskMarker], List[staged.Task], List[Tuple[str, str]]]:
    """(the markers of the tasks done, the tasks to compute, (task, why) of those redone)."""
    with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as readers:
        states = list(readers.map(lambda task: planning.task_state(run, task), tasks))
    done, todo, redo = [], [], []
    for task, (marker, why) in zip(tasks, states):
        if marker is not None:
            done.append(marker)
            continue
        todo.append(task)
        if why != NOT_DONE:
            redo.append((task.name, why))
    return done, todo, redo


def run_staged(job: Job, run: staged.StagedRun, executor) -> stats.Stats:
    """The stages in order, each over its tasks without a valid marker. NothingRead, after the
    read stage and with every task cleared, when the run could read no input."""
    log = logging.getLogger("c4")
    names = layout.stages_of(job.config)
    progress = Progress(job.output_dir, job.config.name, names, executor.workers)
    markers: Dict[str, List[staged.TaskMarker]] = {}
    for stage in names:
        tasks = planning.stage_tasks(run, stage, markers)
        done, todo, redo = plan_stage(run, tasks)
        for name, why in redo:
            log.warning("redoing %s: %s", name, why)
        progress.start_stage(stage, len(tasks), done)
        computed = executor.run(run, stage, todo, progress) if todo else []
        markers[stage] = sorted(done + computed, key=lambda marker: marker.index)
        # No stage is planned from the markers of a stage more than two before it.
        for earlier in names[:max(0, names.index(stage) - 1)]:
            markers.pop(earlier, None)
        if stage == "read":
            error = nothing_read_error(progress.counters)
            if error:
                counters = progress.counters
                FileSystems.delete([parts_dir(job.output_dir)])
                raise NothingRead(error, counters)
    progress.finish()
    return progress.counters


def describe_staged(run: staged.StagedRun) -> str:
    """The plan of a staged run in words: each stage's tasks, those done, and what a failure
    of the stage's job costs (its unfinished tasks, at most its share of the run's CPU)."""
    counts = layout.task_counts(run.job.config, run.layout, run.job.plan.files,
                                len(run.job.resources.webtext_url_files))
    shares = layout.cpu_shares(run.job.config)
    lines = [f"staged: {counted(len(counts), 'stage')}, "
             f"{counted(run.layout.url_buckets, 'URL bucket')} and "
             f"{counted(run.layout.span_buckets, 'span-key bucket')}, "
             f"{counted(run.layout.read_files, 'WET file')} per read task, kept under "
             f"{parts_dir(run.job.output_dir)}"]
    for stage, count in counts.items():
        if count is None:
            what = "a task per output shard, known when partition is done"
        else:
            done, _, _ = plan_stage(run, [staged.Task(stage, index) for index in range(count)])
            what = f"{counted(count, 'task')}, {len(done):,} done"
        lines.append(f"  {stage}: {what}; a failure costs at most its unfinished tasks, "
                     f"{shares[stage]:.0%} of the run's CPU in all")
    return "\n".join(lines)
