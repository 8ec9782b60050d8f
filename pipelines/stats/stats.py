"""The run report: every stage's counters, as `stats.json` and as a readable table."""
import json
from typing import Dict, List, Mapping, Optional

from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter

from pipelines import counters
from pipelines.filters.mc4 import UNKNOWN_LANGUAGE
from pipelines.records import write_atomically
from pipelines.steps import plan
from pipelines.wording import counted

STATS_FILE = "stats.json"

# The stage of the counters that name the input files with a problem (skipped whole, corrupt
# records, an unreadable tail), one counter a file: its name is the file's record as JSON
# (file_problem_counter). Beam sums counters over bundles, workers and retries, and a job in
# parts keeps them in its groups' markers, so the list is the same on any runner and bundling.
FILE_PROBLEMS = "file_problems"
# A finished run's stats.json gives the number of files of each split it wrote ("train", and
# "de/train" for a language folder's): its readers (pre-training, the dataset card, TFDS) read
# those files (output.shard_glob with the number), never another run's left beside them. The
# same whatever the format (the run's record of it is run_config.json's). Runs from before it
# have none.
SHARDS_FIELD = "shards"

Stats = Dict[str, Dict[str, int]]


def collect_counters(result, step: Optional[str] = None) -> Stats:
    """{stage: {counter: value}} from a finished pipeline result, stages in pipeline order; of
    the transform labelled `step` alone if given."""
    stats: Stats = {}
    selected = MetricsFilter() if step is None else MetricsFilter().with_step(step)
    for counter in result.metrics().query(selected)["counters"]:
        stage_name = counters.stage_of_namespace(counter.key.metric.namespace)
        if stage_name is None:
            continue
        value = counter.committed if counter.committed is not None else counter.attempted
        stage = stats.setdefault(stage_name, {})
        name = counter.key.metric.name
        stage[name] = stage.get(name, 0) + value
    return _ordered(stats)


def _ordered(stats: Stats) -> Stats:
    order = plan.stage_order()
    ordered = sorted(stats, key=lambda s: (order.index(s) if s in order else len(order), s))
    return {stage: dict(sorted(stats[stage].items())) for stage in ordered}


def merged(*parts: Stats) -> Stats:
    """The counters of several jobs (the groups of a job in parts, its global stage) as one
    job's: each counter summed, stages in pipeline order."""
    total: Stats = {}
    for part in parts:
        for stage, stage_counters in part.items():
            into = total.setdefault(stage, {})
            for name, value in stage_counters.items():
                into[name] = into.get(name, 0) + value
    return _ordered(total)


def file_problem_counter(path: str, problem: str, **counts) -> str:
    """The name of the counter that records one input file's problem: {"file": path,
    "problem": what happened, in words, and `counts` (pages_read, corrupt_records, ...)}."""
    return json.dumps({"file": path, "problem": problem, **counts}, sort_keys=True)


def file_problems(stats: Stats) -> List[dict]:
    """The input files with a problem, each as its record (file_problem_counter), by path."""
    return sorted((json.loads(name) for name in stats.get(FILE_PROBLEMS, {})),
                  key=lambda record: record["file"])


def stage_counters(stats: Stats) -> Stats:
    """The stages' counters, without the file problems (which stats.json lists apart)."""
    return {stage: counters for stage, counters in stats.items() if stage != FILE_PROBLEMS}


def format_table(stats: Stats) -> str:
    """The stages' counters as a table, but those of zero (mC4 counts every language's splits,
    most of them empty on a sample: stats.json keeps them), which a line counts."""
    rows = [(stage, name, value) for stage, counters in stage_counters(stats).items()
            for name, value in counters.items() if value]
    zeros = sum(not value for counters in stage_counters(stats).values()
                for value in counters.values())
    if not rows:
        return "(no counters)" if not zeros else f"({counted(zeros, 'counter')} of zero)"
    width = max(len(f"{stage}  {name}") for stage, name, _ in rows)
    lines = [f"{'stage  counter':<{width}}  {'value':>12}", "-" * (width + 14)]
    for stage, name, value in rows:
        lines.append(f"{stage + '  ' + name:<{width}}  {value:>12,}")
    if zeros:
        lines.append(f"({counted(zeros, 'counter')} of zero left out: they are in {STATS_FILE})")
    return "\n".join(lines)


def languages_of(stats: Stats) -> List[str]:
    """The languages a run wrote apart (those with a `pages.written:<split>:<language>`
    counter), sorted; none for a run that wrote one language in its output folder."""
    written = filter(None, map(counters.parse_written, stats.get(counters.WRITE_STAGE, {})))
    return sorted({folder for _, folder in written if folder})


def of_language(stats: Stats, language: str) -> Stats:
    """The counters of one language's pages, without the language in their names: the stages
    after language detection count per language (`pages.passed:de`, `pages.written:train:de`),
    and `und` has the language stage's reasons for it (`und.not_reliable`)."""
    suffix = ":" + language
    selected: Stats = {}
    for stage, stage_counters in stats.items():
        for name, value in stage_counters.items():
            if name.endswith(suffix):
                selected.setdefault(stage, {})[name[:-len(suffix)]] = value
            elif language == UNKNOWN_LANGUAGE and name.startswith(UNKNOWN_LANGUAGE + "."):
                selected.setdefault(stage, {})[name] = value
    return selected


def shards_in_folder(shards: Mapping[str, int], folder: str) -> Dict[str, int]:
    """The number of files of each split of `folder` (a language's) among a run's
    (SHARDS_FIELD), by split."""
    prefix = folder + "/"
    return {name[len(prefix):]: count for name, count in shards.items()
            if name.startswith(prefix)}


def write_stats(stats: Stats, variant: str, output_dir: str,
                language: Optional[str] = None, progress: Optional[dict] = None,
                error: Optional[str] = None, shards: Optional[Mapping[str, int]] = None) -> str:
    """Writes stats.json: the stages' counters, and the input files with a problem
    (`file_problems`, each with what happened and the pages read); `progress`: what a job in
    parts has done so far, while it runs; `error`: why the run failed (a run that read no
    input writes its counters and this, and no dataset); `shards`: a finished run's shards
    (SHARDS_FIELD)."""
    path = FileSystems.join(output_dir, STATS_FILE)
    record = {"variant": variant, **({"language": language} if language else {}),
              **({"progress": progress} if progress else {}),
              **({"error": error} if error else {}), "stages": stage_counters(stats),
              "file_problems": file_problems(stats),
              **({SHARDS_FIELD: dict(sorted(shards.items()))} if shards is not None else {})}
    # Whole or not at all: a run rewrites it as it goes, and a person or a tool may be reading.
    write_atomically(path, json.dumps(record, indent=2).encode("utf-8"))
    return path
