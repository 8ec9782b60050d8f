"""How a checked and loaded C4 job runs: in one Beam job; in parts (a job per groups of input
files, each group's pages kept with a marker, then one global job over them); or in stages of
tasks (pipelines/staged.py) on local worker processes or as a Beam job per stage. The last two
resume where they stopped.
"""
import concurrent.futures
import ctypes
import dataclasses
import logging
import multiprocessing
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines import layout, parts, records, staged, stages, stats
from pipelines.graph import build_pipeline, write_exclusions, write_pages
from pipelines.job import Job
from pipelines.output import shard_glob
from pipelines.wording import counted


class NothingRead(Exception):
    """A run that could read no input file: the message names them; `counters` are the run's."""

    def __init__(self, message: str, counters: stats.Stats):
        super().__init__(message)
        self.counters = counters


# The unreadable files a message names; the rest are counted (all are in stats.json).
NAMED_FILES = 10


def nothing_read_error(counters: stats.Stats) -> Optional[str]:
    """Why a run could read none of its input files (each skipped whole, or unreadable from its
    first byte; or a manifest the workers could not read), naming them; None when a file was
    read. A run of only the files the public C4 code skips (known corrupt) is not refused."""
    read = counters.get("read", {})
    unreadable, damaged_read = [], 0
    for problem in stats.file_problems(counters):
        if problem.get("skipped"):
            unreadable.append(problem["file"])
        elif problem.get("unreadable_from_byte") == 0:
            # Opened as a WET file (counted in files.read), yet no byte of it could be read.
            unreadable.append(problem["file"])
            damaged_read += 1
    manifests = read.get("manifests.skipped:unreadable", 0)
    if read.get("files.read", 0) > damaged_read or not (unreadable or manifests):
        return None
    named = ", ".join(unreadable[:NAMED_FILES])
    if len(unreadable) > NAMED_FILES:
        named += f" and {counted(len(unreadable) - NAMED_FILES, 'more file')}"
    what = [f"{counted(len(unreadable), 'input file')} ({named})"] if unreadable else []
    if manifests:
        what.append(counted(manifests, "manifest") + " the workers could not read")
    return (f"no input could be read: {' and '.join(what)}; see the warnings above, and "
            f"file_problems in {stats.STATS_FILE}. No dataset was written: fix or replace the "
            "files, then rerun")


def _remove_shards(job: Job) -> None:
    """Deletes the split files a job wrote (empty, for a run that read nothing)."""
    folders = [""] + list(job.config.language_folders or ())
    patterns = [FileSystems.join(job.output_dir, folder, shard_glob(split, job.shard_format))
                if folder else FileSystems.join(job.output_dir,
                                                shard_glob(split, job.shard_format))
                for folder in folders for split in job.max_shards]
    found = [metadata.path for match in FileSystems.match(patterns)
             for metadata in match.metadata_list]
    if found:
        FileSystems.delete(found)


def run_one_job(job: Job) -> stats.Stats:
    """The job in one; NothingRead (its split files deleted) when it could read no input."""
    pipeline = job.pipeline()
    build_pipeline(pipeline, job.config, job.resources, job.plan, job.output_dir, job.max_shards,
                   job.validation_fraction, job.pages_per_shard, job.shard_format, job.excluded)
    result = pipeline.run()
    result.wait_until_finish()
    counters = stats.collect_counters(result)
    error = nothing_read_error(counters)
    if error:
        _remove_shards(job)
        raise NothingRead(error, counters)
    return counters


# The global stage's CPU time over that of all the groups (bench/bench_parts.py: 2.8 and 3.7 in
# two runs), for the time left that a job in parts prints.
GLOBAL_STAGE_OVER_GROUPS = 3.3
# Threads that check the groups' markers at launch: two reads a group (its marker, its folder's
# listing), thousands of groups on an object store.
MARKER_READERS = 16


@dataclasses.dataclass(frozen=True)
class PartsPlan:
    groups: List[parts.Group]
    config_sha256: str
    done: Dict[int, parts.Marker]  # Group index -> its valid marker.
    todo: List[parts.Group]
    redo: List[Tuple[parts.Group, str]]  # The groups with something written, and why redone.
    groups_per_job: int

    def describe(self) -> str:
        """The plan in words: the groups done, to compute (of which those redone, each with
        why), and the jobs."""
        jobs = -(-len(self.todo) // self.groups_per_job)
        files = sum(len(group.files) for group in self.todo)
        redone = f", {len(self.redo):,} of them redone" if self.redo else ""
        lines = [f"in parts: {counted(len(self.groups), 'group')} of up to "
                 f"{counted(len(self.groups[0].files) if self.groups else 0, 'WET file')}; "
                 f"{len(self.done):,} done (reused), {len(self.todo):,} to compute{redone} "
                 f"({counted(files, 'file')}) in {counted(jobs, 'job')} of up to "
                 f"{counted(self.groups_per_job, 'group')}, then one global job (URL dedup to "
                 "the shards)"]
        lines += [f"  redo {group.name}: {why}" for group, why in self.redo]
        return "\n".join(lines)


def plan_parts(job: Job, group_files: int, groups_per_job: int, restart: bool,
               dry_run: bool = False) -> PartsPlan:
    """Which groups a job in parts reuses and which it computes; refuses (parts.PartsError)
    the parts of another configuration unless `restart` (which deletes them, but in a
    `dry_run`, which writes nothing)."""
    groups = parts.plan_groups(job.plan.files, group_files)
    record = job.run_config()
    config_sha = parts.config_sha256(record, group_files)
    parts.check_parts_config(job.output_dir, config_sha,
                             {"run_config": record, "group_files": group_files}, restart,
                             write=not dry_run)
    done, todo, redo = {}, [], []
    with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as readers:
        checked = list(readers.map(
            lambda group: parts.marker_problem(job.output_dir, group, config_sha), groups))
    with_files = parts.groups_with_files(job.output_dir)
    for group, (marker, problem) in zip(groups, checked):
        if marker is not None:
            done[group.index] = marker
            continue
        todo.append(group)
        if problem == parts.NOT_DONE and group.name in with_files:
            problem = parts.STOPPED_WHILE_WRITTEN
        if problem != parts.NOT_DONE:
            redo.append((group, problem))
    return PartsPlan(groups, config_sha, done, todo, redo, groups_per_job)


def _check_group_read(group: parts.Group, counters: stats.Stats, output_dir: str) -> None:
    """A group whose workers could not read a manifest that the launcher read (a passing
    failure, most likely) gets no marker, so that a rerun reads it again; a group that skipped
    unreadable WET files (most likely corrupt: a rerun would skip them again) gets its marker,
    with a warning saying how to redo it."""
    read = counters.get("read", {})
    if read.get("manifests.skipped:unreadable"):
        raise parts.PartsError(f"{group.name} could not read a manifest that the launcher read "
                               "(see the log): rerun the same command to redo the group")
    skipped = read.get("files.skipped:unreadable", 0) + read.get("files.skipped:not_wet", 0)
    if skipped:
        logging.getLogger("c4").warning(
            "%s skipped %s (counted in stats.json); if they can be read "
            "now, delete %s and rerun to redo the group", group.name,
            counted(skipped, "unreadable WET file"),
            parts.group_dir(output_dir, group))


def run_in_parts(job: Job, plan: PartsPlan) -> stats.Stats:
    """The groups left, a job per `groups_per_job` of them (each group's marker written when
    its job has ended), then the global job over every group's pages. NothingRead, before the
    global job and with every group cleared, when the groups could read no input."""
    log = logging.getLogger("c4")
    for group, why in plan.redo:
        log.warning("redoing %s: %s", group.name, why)
    progress = parts.Progress(job.output_dir, job.config.name, len(plan.groups),
                              [plan.done[index] for index in sorted(plan.done)],
                              GLOBAL_STAGE_OVER_GROUPS)
    # With exclusions, the read steps run in the global job, whose phases record what they drop.
    steps = [] if job.excluded else stages.read_steps(job.config)
    for first in range(0, len(plan.todo), plan.groups_per_job):
        batch = plan.todo[first:first + plan.groups_per_job]
        for group in batch:
            parts.clear_group(job.output_dir, group)
        progress.start_groups(len(batch))
        started = time.monotonic()
        pipeline = job.pipeline(f"{batch[0].name}-to-{batch[-1].index:05d}")
        for group in batch:
            _ = pipeline | group.name >> parts.WriteGroup(
                job.plan, group, job.output_dir, stages.max_record_bytes(job.config), steps)
        result = pipeline.run()
        result.wait_until_finish()
        seconds = time.monotonic() - started
        markers = []
        for group in batch:
            counters = stats.collect_counters(result, group.name)
            _check_group_read(group, counters, job.output_dir)
            markers.append(parts.write_marker(job.output_dir, group, plan.config_sha256,
                                              counters, seconds / len(batch)))
        progress.groups_done(markers, seconds)
    error = nothing_read_error(progress.counters)
    if error:
        # Nothing is worth keeping, and a rerun after the files are fixed must read them again.
        for group in plan.groups:
            parts.clear_group(job.output_dir, group)
        raise NothingRead(error, progress.counters)
    progress.start_global()
    pipeline = job.pipeline("global")
    sample = job.excluded and stages.SampleOutputs(job.excluded.fraction)
    pages = (pipeline
             | "ReadGroups" >> parts.ReadGroups([parts.marker_path(job.output_dir, group)
                                                 for group in plan.groups])
             | "C4" >> stages.C4Pages(job.config, job.resources,
                                      dedup_buckets=max(1, job.plan.files),
                                      pages_read=not job.excluded, sample=sample))
    write_pages(pages, job.config, job.output_dir, job.max_shards, job.validation_fraction,
                job.pages_per_shard, job.shard_format)
    if sample:
        write_exclusions(sample.records, job.excluded.directory, job.max_shards)
    result = pipeline.run()
    result.wait_until_finish()
    counters = stats.merged(progress.counters, stats.collect_counters(result))
    progress.finish()
    return counters


# A staged run (pipelines/staged.py): its stages in order, each stage's unfinished tasks on
# local worker processes or as one Beam job on the chosen runner.

def staged_run(job: Job, cut: layout.Layout) -> staged.StagedRun:
    return staged.StagedRun(job, cut, staged.config_sha256(job.run_config(), cut))


def check_staged_config(run: staged.StagedRun, restart: bool) -> None:
    """Refuses the parts of another configuration (parts.PartsError) unless `restart`, which
    deletes them; records this one."""
    parts.check_parts_config(run.job.output_dir, run.config_sha256,
                             {"run_config": run.job.run_config(),
                              "staged": dataclasses.asdict(run.layout)}, restart)


_WORKER_RUN: Optional[staged.StagedRun] = None
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies.


def _start_worker(run: staged.StagedRun, launcher: int) -> None:
    """A worker process: dies with the launcher (a killed run leaves no worker writing into its
    folder), and keeps the run it was forked with."""
    global _WORKER_RUN
    _WORKER_RUN = run
    # A Ctrl-C reaches the whole process group: the launcher answers it (it stops the workers);
    # a worker that caught it would send it back as its task's result and take the next task.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # Not Linux: a worker outlives a killed launcher until its task ends.
    if os.getppid() != launcher:  # The launcher died before the signal was asked for.
        os._exit(1)


def _run_in_worker(task: staged.Task) -> staged.TaskMarker:
    return staged.run_task(_WORKER_RUN, task)


class LocalWorkers:
    """A stage's tasks on `workers` local processes (forked, so that the loaded run is not
    copied per task); with one worker, in this process."""

    def __init__(self, workers: int):
        self.workers = workers

    def run(self, run: staged.StagedRun, stage: str, tasks: Sequence[staged.Task],
            progress: staged.Progress) -> List[staged.TaskMarker]:
        if self.workers == 1:
            markers = []
            for task in tasks:
                progress.running(1)
                markers.append(staged.run_task(run, task))
                progress.task_done(markers[-1])
            return markers
        context = multiprocessing.get_context("fork")
        markers = []
        pool = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=context,
                                                      initializer=_start_worker,
                                                      initargs=(run, os.getpid()))
        try:
            task_of = {pool.submit(_run_in_worker, task): task for task in tasks}
            pending = set(task_of)
            progress.running(min(self.workers, len(pending)))
            while pending:
                finished, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in finished:
                    markers.append(_marker_of(future, task_of[future]))
                    progress.task_done(markers[-1])
                progress.running(min(self.workers, len(pending)))
        except BaseException:
            # On a failure or an interrupt, the workers are stopped and the tasks not started
            # dropped, not run to the end of the stage first; the tasks done keep their markers,
            # a task stopped half-written is redone by the next run. (Python 3.11's pool has no
            # public way to stop its workers: 3.14's terminate_workers.)
            for process in list(pool._processes.values()):
                process.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return markers


def _marker_of(future: concurrent.futures.Future, task: staged.Task) -> staged.TaskMarker:
    """A finished task's marker; a StagedError naming the task when it failed."""
    try:
        return future.result()
    except staged.StagedError:
        raise
    except BrokenProcessPool:
        raise staged.StagedError(
            f"a worker process died while it ran {task.name} (killed for memory, most likely): "
            "rerun the same command with a smaller --task_bytes or fewer --workers; the tasks "
            "done are kept") from None
    except Exception as error:
        logging.getLogger("c4").error("%s failed", task.name, exc_info=error)
        raise staged.StagedError(f"{task.name} failed: {type(error).__name__}: {error} (its "
                                 "traceback is in the log above); fix the cause and rerun the "
                                 "same command: the tasks done are kept") from error


class _StageTaskFn(beam.DoFn):
    """A task's index -> the task (its file, which the launcher wrote) run."""

    def __init__(self, run: staged.StagedRun, stage: str):
        self._run = run
        self._stage = stage

    def setup(self):
        layout.allow_open_files(self._run.layout)

    def process(self, index: int):
        task = staged.Task.from_json(records.read_all(self._run.task_file(self._stage, index)))
        yield staged.run_task(self._run, task).index


class BeamStages:
    """A stage's tasks as one Beam job on the runner the Beam options name (Dataflow): a
    failed job costs its stage's unfinished tasks, and a rerun runs only those."""
    workers = None  # The runner's.

    def __init__(self, job: Job):
        self._job = job

    def run(self, run: staged.StagedRun, stage: str, tasks: Sequence[staged.Task],
            progress: staged.Progress) -> List[staged.TaskMarker]:
        folder = FileSystems.split(run.task_file(stage, 0))[0]
        if "://" not in folder:
            os.makedirs(folder, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as writers:
            list(writers.map(lambda task: records.write_atomically(
                run.task_file(stage, task.index), task.to_json()), tasks))
        pipeline = self._job.pipeline(stage.replace("_", "-"))
        _ = (pipeline
             | "Tasks" >> beam.Create([task.index for task in tasks])
             | "Spread" >> beam.Reshuffle()
             | "Run" >> beam.ParDo(_StageTaskFn(run, stage)))
        progress.running(len(tasks))
        pipeline.run().wait_until_finish()
        markers, left, redo = plan_stage(run, tasks)
        if left:
            why = dict(redo).get(left[0].name, staged.NOT_DONE)
            raise parts.PartsError(f"{counted(len(left), 'task')} of the {stage} job have no "
                                   f"valid marker ({left[0].name}: {why}): rerun the same "
                                   "command to redo them")
        for marker in markers:
            progress.task_done(marker)
        return markers


def plan_stage(run: staged.StagedRun, tasks: Sequence[staged.Task]
               ) -> Tuple[List[staged.TaskMarker], List[staged.Task], List[Tuple[str, str]]]:
    """(the markers of the tasks done, the tasks to compute, (task, why) of those redone)."""
    with concurrent.futures.ThreadPoolExecutor(MARKER_READERS) as readers:
        states = list(readers.map(lambda task: staged.task_state(run, task), tasks))
    done, todo, redo = [], [], []
    for task, (marker, why) in zip(tasks, states):
        if marker is not None:
            done.append(marker)
            continue
        todo.append(task)
        if why != staged.NOT_DONE:
            redo.append((task.name, why))
    return done, todo, redo


def run_staged(job: Job, run: staged.StagedRun, executor) -> stats.Stats:
    """The stages in order, each over its tasks without a valid marker. NothingRead, after the
    read stage and with every task cleared, when the run could read no input."""
    log = logging.getLogger("c4")
    names = layout.stages_of(job.config)
    progress = staged.Progress(job.output_dir, job.config.name, names, executor.workers)
    markers: Dict[str, List[staged.TaskMarker]] = {}
    for stage in names:
        tasks = staged.stage_tasks(run, stage, markers)
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
                FileSystems.delete([parts.parts_dir(job.output_dir)])
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
             f"{parts.parts_dir(run.job.output_dir)}"]
    for stage, count in counts.items():
        if count is None:
            what = "a task per output shard, known when partition is done"
        else:
            done, _, _ = plan_stage(run, [staged.Task(stage, index) for index in range(count)])
            what = f"{counted(count, 'task')}, {len(done):,} done"
        lines.append(f"  {stage}: {what}; a failure costs at most its unfinished tasks, "
                     f"{shares[stage]:.0%} of the run's CPU in all")
    return "\n".join(lines)
