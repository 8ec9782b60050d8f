"""A staged run's plan (pipelines/executors/staged.py): a stage's tasks from the markers of the
stages before it, and whether a task is done."""
from typing import Dict, List, Optional, Sequence, Tuple

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from pipelines import records
from pipelines.executors.base import NOT_DONE, STOPPED_WHILE_WRITTEN
from pipelines.executors.staged import (EXCLUDED_FOLDER, MARKER_FILE, Input, StagedRun, Task,
                                        TaskMarker)
from pipelines.executors.task_files import bucket_name, destination_name, shard_counts, shard_path
from pipelines.writers import exclusions, output


class _Written:
    """The files the tasks of one stage wrote, by name, as inputs of the next: indexed once,
    not searched once per task (a stage writes about tasks x buckets files)."""

    def __init__(self, run: StagedRun, stage: str, markers: Sequence[TaskMarker]):
        self._by_name: Dict[str, List[Tuple[str, int, records.RecordFile]]] = {}
        for marker in markers:
            directory = run.task_dir(Task(stage, marker.index))
            for each in marker.files:
                self._by_name.setdefault(each.name, []).append(
                    (FileSystems.join(directory, each.name), marker.index, each))

    def inputs(self, role: str, name: str) -> List[Input]:
        return [Input(role, index, path, each)
                for path, index, each in self._by_name.get(name, ())]


def stage_tasks(run: StagedRun, stage: str, markers: Dict[str, List[TaskMarker]]) -> List[Task]:
    """The tasks of `stage`, given the markers of every stage before it."""
    cut = run.layout
    if stage == "read":
        return [Task(stage, index) for index in range(-(-run.job.plan.files // cut.read_files))]
    if stage == "url_lists":
        return [Task(stage, index) for index in range(len(run.job.resources.webtext_url_files))]
    if stage == "url":
        pages = _Written(run, "read", markers["read"])
        listed = _Written(run, "url_lists", markers.get("url_lists", ()))
        return [Task(stage, bucket, tuple(
            pages.inputs("pages", bucket_name("url", bucket))
            + pages.inputs("excluded", bucket_name("excluded", bucket))
            + listed.inputs("listed", bucket_name("url", bucket))))
                for bucket in range(cut.url_buckets)]
    if stage == "spans":
        winners = _Written(run, "url", markers["url"])
        return [Task(stage, bucket, tuple(winners.inputs("winners", bucket_name("spans", bucket))))
                for bucket in range(cut.span_buckets)]
    if stage == "finish":
        losses = _Written(run, "spans", markers.get("spans", ()))
        tasks = []
        for marker in markers["url"]:
            own = _Written(run, "url", [marker])
            tasks.append(Task(stage, marker.index, tuple(
                own.inputs("pages", "pages") + own.inputs("lost", "lost")
                + own.inputs("excluded", "excluded")
                + losses.inputs("lost", bucket_name("url", marker.index)))))
        return tasks
    if stage == "partition":
        shards = tuple((*destination, buckets) for destination, buckets
                       in sorted(shard_counts(run, markers["finish"]).items()))
        tasks = []
        for marker in markers["finish"]:
            own = _Written(run, "finish", [marker])
            tasks.append(Task(stage, marker.index, tuple(
                each for destination in marker.facts["pages"]
                for each in own.inputs("entries", destination)), shards))
        return tasks
    if stage == "write":
        return _write_tasks(run, markers["partition"])
    raise ValueError(f"no stage {stage!r}")


def _write_tasks(run: StagedRun, partition_markers: Sequence[TaskMarker]) -> List[Task]:
    occupied = output.occupied_buckets({tuple(each) for marker in partition_markers
                                        for each in marker.facts["occupied"]})
    excluded = {destination: buckets for destination, buckets in occupied.items()
                if destination[0] == EXCLUDED_FOLDER}
    pages = {destination: buckets for destination, buckets in occupied.items()
             if destination not in excluded}
    folders = ("",) if run.job.config.language_folders is None else run.job.config.language_folders
    shards = [(folder, split, bucket, *output.shard_numbering(bucket, buckets))
              for (folder, split), buckets in occupied.items() for bucket in buckets]
    shards += [(folder, split, bucket, 0, 1) for (folder, split, bucket), _ in
               output.empty_splits(pages, folders, tuple(run.job.max_shards))]
    if run.job.excluded:
        shards += [(folder, split, bucket, 0, 1) for (folder, split, bucket), _ in
                   output.empty_splits(excluded, (EXCLUDED_FOLDER,),
                                       tuple(exclusions.max_shards(run.job.max_shards)))]
    written = _Written(run, "partition", partition_markers)
    tasks = []
    for index, shard in enumerate(sorted(shards)):
        folder, split, bucket = shard[:3]
        name = f"{destination_name(folder, split)}.{bucket:05d}"
        tasks.append(Task("write", index, tuple(written.inputs("shard", name)), shard))
    return tasks


def task_state(run: StagedRun, task: Task) -> Tuple[Optional[TaskMarker], str]:
    """(the task's marker, "") when it is done and its files are whole; else (None, why it is
    (re)done)."""
    directory = run.task_dir(task)
    names = records.file_sizes(directory)
    if MARKER_FILE not in names:
        return None, STOPPED_WHILE_WRITTEN if names else NOT_DONE
    try:
        marker = TaskMarker.from_json(records.read_all(run.marker_path(task)))
    except (ValueError, TypeError, KeyError, IOError, OSError, BeamIOError):
        return None, "its marker is unreadable (truncated?)"
    if marker.config_sha256 != run.config_sha256:
        return None, "made by a run of another configuration"
    if (marker.stage, marker.index) != (task.stage, task.index):
        return None, "its marker is another task's"
    if task.stage == "write":
        names = _shard_sizes(run, marker)
    for each in marker.files:
        if each.name not in names:
            return None, f"{each.name} is missing"
        if names[each.name] != each.bytes:
            return None, f"{each.name} has {names[each.name]:,} bytes, not {each.bytes:,}"
    return marker, ""


def _shard_sizes(run: StagedRun, marker: TaskMarker) -> Dict[str, int]:
    sizes = {}
    for each in marker.files:
        matched = FileSystems.match([shard_path(run, each.name)])[0]
        sizes.update((each.name, metadata.size_in_bytes) for metadata in matched.metadata_list)
    return sizes
