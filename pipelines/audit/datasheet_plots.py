"""The datasheet's plots (pipelines/audit/datasheet.py): inline SVG drawn by matplotlib with a
fixed hash salt and no date, the same bytes for the same inputs.
"""
import io
import math
import re
from typing import List

import matplotlib
from matplotlib.figure import Figure
import numpy as np

from pipelines.audit.datasheet_sample import DropReason, Sample, in_stage_order, scaled

LEVEL_COLOURS = {"page": "#d9534f", "line": "#f0ad4e", "span": "#8e6bb8"}
KEPT_COLOUR = "#4c9a2a"
# Page lengths are binned on a log scale, 4 bins a decade from 1 to 10 million characters: the
# same bins for every run, so two datasheets' histograms compare.
LENGTH_BIN_EDGES = np.logspace(0, 7, 29)


# ----------------------------------------------------------------------------------------------
# Plots: inline SVG, the same bytes for the same inputs.

_PLOT_STYLE = {"svg.fonttype": "none", "font.family": "sans-serif", "font.size": 9,
               "axes.spines.top": False, "axes.spines.right": False, "axes.titlesize": 10,
               "axes.titleweight": "bold", "axes.titlelocation": "left"}


def svg_of(figure: Figure, name: str) -> str:
    """The figure as an inline <svg>: no XML prolog, no date, and ids salted by `name` (the
    clip paths of two figures of the same layout would otherwise share ids in one page)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"pipelines.report.{name}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return _without_unreferenced_ids(text[text.index("<svg"):])


def _without_unreferenced_ids(svg: str) -> str:
    """matplotlib names each of its groups (`figure_1`, `axes_1`, `patch_2`): the same names in
    every figure, so several figures in one page would repeat them. Only the ids something
    refers to (clip paths, markers, salted) stay."""
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', svg))
    return re.sub(r' id="([^"]*)"',
                  lambda found: found.group(0) if found.group(1) in referenced else "", svg)


def drop_reason_plot(stage: str, reasons: List[DropReason]) -> str:
    """One stage's drop reasons as horizontal bars, coloured by what they count."""
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(4.6, 0.9 + 0.28 * len(reasons)), layout="constrained")
        axes = figure.add_subplot()
        positions = range(len(reasons))[::-1]
        axes.barh(list(positions), [drop.count for drop in reasons],
                  color=[LEVEL_COLOURS[drop.level] for drop in reasons], height=0.7)
        axes.set_yticks(list(positions),
                        [f"{drop.reason} ({drop.level}s)" for drop in reasons])
        largest = max(drop.count for drop in reasons)
        for position, drop in zip(positions, reasons):
            axes.text(drop.count + largest * 0.01, position, f"{drop.count:,}", va="center")
        axes.set_xlim(0, largest * 1.18)
        axes.set_title(stage)
        axes.tick_params(axis="y", length=0)
        return svg_of(figure, f"reasons.{stage}")


def month_plot(sample: Sample) -> str:
    months = sorted(set(sample.kept_by_month) | set(sample.dropped_by_month))
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(7.5, 2.8), layout="constrained")
        axes = figure.add_subplot()
        positions = np.arange(len(months))
        for offset, counts, scale, colour, label in (
                (-0.2, sample.kept_by_month, sample.kept_scale, KEPT_COLOUR, "kept"),
                (0.2, sample.dropped_by_month, sample.dropped_scale, LEVEL_COLOURS["page"],
                 "dropped (any stage)")):
            bars = axes.bar(positions + offset, [counts[m] * scale for m in months], width=0.4,
                            color=colour, label=label)
            # A bar of a few pages is flat beside hundreds: its number says it is there.
            axes.bar_label(bars, [scaled(counts[m], scale) if counts[m] else "" for m in months],
                           padding=2, fontsize=8)
        axes.margins(y=0.15)
        step = max(1, math.ceil(len(months) / 24))
        axes.set_xticks(positions[::step], months[::step], rotation=45 if step > 1 else 0)
        axes.set_ylabel("pages" if sample.exact else "pages (estimated)")
        axes.legend(frameon=False)
        axes.set_title("pages by crawl month")
        return svg_of(figure, "months")


def length_plot(sample: Sample, stage_order: List[str]) -> str:
    """Page lengths of the kept pages against each stage's dropped pages, as shares of each
    group (the shapes compare; the groups' sizes are in the legends)."""
    stages = in_stage_order(sample.dropped_chars, stage_order)
    columns = min(3, len(stages)) or 1
    rows = max(1, math.ceil(len(stages) / columns))
    kept_shares = _shares(sample.kept_chars)
    occupied = np.flatnonzero(kept_shares + sum(_shares(sample.dropped_chars[stage])
                                                for stage in stages))
    shown = ((LENGTH_BIN_EDGES[occupied[0]], LENGTH_BIN_EDGES[occupied[-1] + 1])
             if occupied.size else (LENGTH_BIN_EDGES[0], LENGTH_BIN_EDGES[-1]))
    with matplotlib.rc_context(_PLOT_STYLE):
        figure = Figure(figsize=(3.2 * columns, 2.3 * rows), layout="constrained")
        for number, stage in enumerate(stages or [None]):
            axes = figure.add_subplot(rows, columns, number + 1)
            axes.set_xscale("log")
            axes.stairs(kept_shares, LENGTH_BIN_EDGES, fill=True, color=KEPT_COLOUR, alpha=0.35,
                        label=f"kept ({scaled(len(sample.kept_chars), sample.kept_scale)})")
            if stage is not None:
                dropped = sample.dropped_chars[stage]
                axes.stairs(_shares(dropped), LENGTH_BIN_EDGES, color=LEVEL_COLOURS["page"],
                            linewidth=1.5,
                            label=f"dropped ({scaled(len(dropped), sample.dropped_scale)})")
                axes.set_title(stage)
            axes.set_xlim(*shown)
            axes.set_xlabel("characters")
            axes.legend(frameon=False, fontsize=8)
        return svg_of(figure, "lengths")


def _shares(lengths: List[int]) -> np.ndarray:
    counts, _ = np.histogram(np.clip(lengths, 1, None), bins=LENGTH_BIN_EDGES)
    return counts / max(1, len(lengths))
