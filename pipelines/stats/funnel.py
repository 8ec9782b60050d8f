"""`funnel.svg`: the run's counters as a picture, pages kept per stage and why the rest went.

One bar per stage that counts pages, in pipeline order: its green part is the pages the stage
passed on, its red part the pages it dropped, both to one scale (the largest stage input), and
under it the drop reasons with their counts (and, for `read`, the records and files it skipped).
Where a stage counts its kept pages in more than one counter (by kind, such as the split or the
language, or dedup's `pages.passed` and `pages.passed:shortened`, disjoint), a line of their own
gives the sum drawn as stats.json's counters: `kept 1,067 = pages.passed 1,050 +
pages.passed:shortened 17`. A stage that counts per language (mC4's language, bad-words and write
stages: one counter per language and reason) lists its largest parts and sums the rest in one
part that says what it sums: `+ 96 more counters: 1,204 pages` among the kept counters,
`93 more reasons: 5,050 pages` among the drop reasons. Hand-written SVG, so any browser opens
it and no plotting library is needed.
"""
import dataclasses
from typing import Dict, List
from xml.sax.saxutils import escape, quoteattr

from apache_beam.io.filesystems import FileSystems

from pipelines import counters
from pipelines.stats.stats import Stats
from pipelines.wording import counted

FUNNEL_FILE = "funnel.svg"
_SKIPPED_PREFIXES = ("records.skipped:", "files.skipped:")
_LABEL_WIDTH = 110
_BAR_WIDTH = 520
_BAR_HEIGHT = 26
_LINE_HEIGHT = 14
_TOP = 44
_WIDTH = _LABEL_WIDTH + _BAR_WIDTH + 220
# A part of a bar with a page or more is drawn at least this wide: 3 pages beside 1,000 would
# otherwise be under a pixel, there in the numbers and not in the picture.
_MIN_PART_WIDTH = 2.0
_REASON_CHARS_PER_LINE = 110  # At 11 px, about the width right of the stage labels.
# The parts (drop reasons, kept counters) a stage lists by name; past that, the rest are summed.
_MAX_NAMED_PARTS = 8


@dataclasses.dataclass(frozen=True)
class FunnelRow:
    stage: str
    kept: int
    dropped: Dict[str, int]  # Reason -> pages.
    skipped: Dict[str, int]  # "records.skipped:<reason>" or "files.skipped:<reason>" -> count.
    # The counters whose sum is `kept`, by their stats.json names ("pages.passed",
    # "pages.passed:shortened", "pages.written:train", "pages.passed:en"): disjoint parts.
    kept_counters: Dict[str, int]


def funnel_rows(stats: Stats) -> List[FunnelRow]:
    """The stages that count pages, in the order of `stats`."""
    rows = []
    for stage, stage_counters in stats.items():
        kept_counters = {name: value for name, value in stage_counters.items()
                         if counters.is_kept(name)}
        kept = sum(kept_counters.values())
        dropped = counters.drops_at("page", stage_counters)
        if not kept and not dropped:
            continue
        skipped = {name: value for name, value in stage_counters.items()
                   if name.startswith(_SKIPPED_PREFIXES)}
        rows.append(FunnelRow(stage, kept, dropped, skipped, kept_counters))
    return rows


def _wrapped(parts: List[str], separator: str, first: str = "") -> List[str]:
    """`first` and `parts` joined by `separator`, wrapped to the picture's width."""
    lines: List[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(separator) + len(part) <= _REASON_CHARS_PER_LINE:
            lines[-1] += separator + part
        else:
            lines.append((first if not lines else "") + part)
    return lines


def _largest_parts(counts: Dict[str, int], noun: str, in_name_order: bool = False) -> List[str]:
    """`name count` of each part, largest first (or by name), the parts past _MAX_NAMED_PARTS
    summed in one part that says what it sums: `93 more <noun>s: 1,204 pages`."""
    parts = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    named, rest = ((parts, []) if len(parts) <= _MAX_NAMED_PARTS
                   else (parts[:_MAX_NAMED_PARTS - 1], parts[_MAX_NAMED_PARTS - 1:]))
    if in_name_order:
        named.sort()
    shown = [f"{name} {count:,}" for name, count in named]
    if rest:
        shown.append(f"{counted(len(rest), 'more ' + noun)}: "
                     f"{counted(sum(count for _, count in rest), 'page')}")
    return shown


def _reason_lines(row: FunnelRow) -> List[str]:
    """The drop reasons (largest first) and skip counts; then, on lines of their own, the kept
    counters that add up to the kept pages, where there are several or one names a kind."""
    lines = _wrapped(_largest_parts(row.dropped, "reason")
                     + [f"{name} {count:,}" for name, count in sorted(row.skipped.items())], " · ")
    if len(row.kept_counters) > 1 or any(":" in name for name in row.kept_counters):
        lines += _wrapped(_largest_parts(row.kept_counters, "counter", in_name_order=True),
                          " + ", first=f"kept {row.kept:,} = ")
    return lines


def _part_width(pages: int, scale: int) -> float:
    return max(_BAR_WIDTH * pages / scale, _MIN_PART_WIDTH) if pages else 0.0


def funnel_svg(stats: Stats, title: str) -> str:
    rows = funnel_rows(stats)
    scale = max([row.kept + sum(row.dropped.values()) for row in rows] + [1])
    reason_lines = [_reason_lines(row) for row in rows]
    height = _TOP + sum(_BAR_HEIGHT + _LINE_HEIGHT * len(lines) + 8 for lines in reason_lines)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
           f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="13">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="22" font-size="16" font-weight="bold">{escape(title)}</text>',
           f'<text x="{_LABEL_WIDTH}" y="38" font-size="11" fill="#555">'
           'pages kept (green) and dropped (red) per stage</text>']
    y = _TOP
    for row, lines in zip(rows, reason_lines):
        dropped = sum(row.dropped.values())
        kept_width = _part_width(row.kept, scale)
        dropped_width = _part_width(dropped, scale)
        out.append(f'<g class="stage" data-stage={quoteattr(row.stage)} '
                   f'data-kept="{row.kept}" data-dropped="{dropped}">')
        out.append(f'<text x="10" y="{y + 15}">{escape(row.stage)}</text>')
        out.append(f'<rect class="kept" x="{_LABEL_WIDTH}" y="{y + 2}" width="{kept_width:.1f}" '
                   f'height="18" fill="#4c9a2a"><title>{row.kept:,} kept</title></rect>')
        out.append(f'<rect class="dropped" x="{_LABEL_WIDTH + kept_width:.1f}" y="{y + 2}" '
                   f'width="{dropped_width:.1f}" height="18" fill="#d9534f">'
                   f'<title>{dropped:,} dropped</title></rect>')
        summary = f"{row.kept:,} kept" + (f", {dropped:,} dropped" if dropped else "")
        out.append(f'<text x="{_LABEL_WIDTH + kept_width + dropped_width + 6:.1f}" '
                   f'y="{y + 15}">{escape(summary)}</text>')
        for number, line in enumerate(lines):
            out.append(f'<text x="{_LABEL_WIDTH}" y="{y + _BAR_HEIGHT + 6 + number * _LINE_HEIGHT}"'
                       f' font-size="11" fill="#555">{escape(line)}</text>')
        out.append('</g>')
        y += _BAR_HEIGHT + _LINE_HEIGHT * len(lines) + 8
    out.append('</svg>')
    return "\n".join(out) + "\n"


def write_funnel(stats: Stats, title: str, output_dir: str) -> str:
    path = FileSystems.join(output_dir, FUNNEL_FILE)
    with FileSystems.create(path) as sink:
        sink.write(funnel_svg(stats, title).encode("utf-8"))
    return path
