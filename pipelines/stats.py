"""The run report: every stage's counters, as `stats.json` and as a readable table."""
import json
from typing import Dict

from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter

STAGE_ORDER = ("read", "length", "url_dedup", "domains", "clean", "dedup", "language",
               "badwords", "write")
_NAMESPACE_PREFIX = "c4."

Stats = Dict[str, Dict[str, int]]


def collect_counters(result) -> Stats:
    """{stage: {counter: value}} from a finished pipeline result, stages in pipeline order."""
    stats: Stats = {}
    for counter in result.metrics().query(MetricsFilter())["counters"]:
        namespace = counter.key.metric.namespace
        if not namespace.startswith(_NAMESPACE_PREFIX):
            continue
        value = counter.committed if counter.committed is not None else counter.attempted
        stage = stats.setdefault(namespace[len(_NAMESPACE_PREFIX):], {})
        name = counter.key.metric.name
        stage[name] = stage.get(name, 0) + value
    ordered = sorted(stats, key=lambda s: (STAGE_ORDER.index(s) if s in STAGE_ORDER else 99, s))
    return {stage: dict(sorted(stats[stage].items())) for stage in ordered}


def format_table(stats: Stats) -> str:
    rows = [(stage, name, value) for stage, counters in stats.items()
            for name, value in counters.items()]
    if not rows:
        return "(no counters)"
    width = max(len(f"{stage}  {name}") for stage, name, _ in rows)
    lines = [f"{'stage  counter':<{width}}  {'value':>12}", "-" * (width + 14)]
    for stage, name, value in rows:
        lines.append(f"{stage + '  ' + name:<{width}}  {value:>12,}")
    return "\n".join(lines)


def write_stats(stats: Stats, variant: str, output_dir: str) -> str:
    path = FileSystems.join(output_dir, "stats.json")
    with FileSystems.create(path) as sink:
        sink.write(json.dumps({"variant": variant, "stages": stats}, indent=2).encode("utf-8"))
    return path
