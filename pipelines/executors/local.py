"""A staged run's tasks on local worker processes (forked, so that the loaded run is not copied
per task); with one worker, in the launcher's process."""
import concurrent.futures
import ctypes
import logging
import multiprocessing
import os
import signal
from concurrent.futures.process import BrokenProcessPool
from typing import List, Optional, Sequence

from pipelines.executors import layout, staged
from pipelines.executors.progress import Progress
from pipelines.executors.tasks import run_task

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
    return run_task(_WORKER_RUN, task)


class LocalWorkers:
    """A stage's tasks on `workers` local processes. Made before any work: a ValueError where
    this system lets a process keep fewer files open than a read task does."""

    def __init__(self, run: staged.StagedRun, workers: int):
        layout.allow_open_files(run.layout)  # Before the fork: the workers inherit it.
        self.workers = workers

    def run(self, run: staged.StagedRun, stage: str, tasks: Sequence[staged.Task],
            progress: Progress) -> List[staged.TaskMarker]:
        if self.workers == 1:
            markers = []
            for task in tasks:
                progress.running(1)
                markers.append(run_task(run, task))
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
