"""The report's figures, drawn with matplotlib's object API (no pyplot state) and returned as PNG bytes.

Only the HTML report imports this module: matplotlib is the `report` extra, never a cost of
`import awm_runtime`.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from awm_runtime.report._collect import NEXT_ACTIONS, Series
from awm_runtime.report._intervals import Interval

DPI = 100
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
ACTION_COLOURS = {"asked the expert": "#9467bd", "tool call": "#2ca02c", "tool error": "#d62728",
                  "format error": "#ff7f0e", "final answer": "#1f77b4", "episode ended": "#bbbbbb"}


@dataclass(frozen=True, slots=True)
class ForestRow:
    """One line of a forest plot: a difference b - a with its interval (None: no interval)."""

    label: str
    diff: float | None
    ci: tuple[float, float] | None
    overall: bool = False
    note: str = ""


P = ParamSpec("P")


def plain_text(draw: Callable[P, bytes]) -> Callable[P, bytes]:
    """Draw with mathtext off: arm, run and scenario names are data, and `$...$` in one must not be parsed."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> bytes:
        with rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return wrapper


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return buf.getvalue()


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="x", alpha=0.25)


@plain_text
def completion(rows: Sequence[tuple[str, Interval, Interval]]) -> bytes:
    """Accountable and strict completion per series, each with its 95% interval."""
    fig = Figure(figsize=(7.5, 0.55 * len(rows) + 1.4))
    ax = fig.subplots()
    labels = [r[0] for r in rows]
    for offset, index, name, colour in ((-0.15, 1, "accountable (infra errors left out)", "#1f77b4"),
                                        (0.15, 2, "strict (infra errors count as failures)", "#7f7f7f")):
        ys, xs, lo, hi = [], [], [], []
        for i, row in enumerate(rows):
            iv: Interval = row[index]  # type: ignore[assignment]
            if iv.empty or iv.rate is None or iv.low is None or iv.high is None:
                continue
            ys.append(i + offset)
            xs.append(iv.rate * 100)
            lo.append((iv.rate - iv.low) * 100)
            hi.append((iv.high - iv.rate) * 100)
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", color=colour, capsize=4, label=name)
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{x:.1f}%", (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8, color=colour)
    ax.set_yticks(range(len(rows)), labels)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(-2, 102)
    ax.set_xlabel("completion (%), 95% interval")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    _style(ax)
    return png(fig)


FOREST_WIDTH_IN = 10.2  # at 100 dpi the image is about 1,030 px wide: the report's column, at 100% zoom
LABEL_CHARS = 34


def _wrap(label: str) -> str:
    import textwrap

    indent = label[: len(label) - len(label.lstrip())]
    return "\n".join(textwrap.wrap(label.strip(), LABEL_CHARS, initial_indent=indent, subsequent_indent=indent + "  ",
                                    break_on_hyphens=False)) or label


@plain_text
def forest(panels: Sequence[tuple[str, Sequence[ForestRow]]]) -> bytes:
    """Paired differences (b - a), one panel per measure, rows shared: subgroups thin, overall as a diamond.

    The width is fixed so the image fits the page at 100% zoom; each overall row's p-value is written
    under it inside its panel, and the method belongs in the caption, never in the figure."""
    from matplotlib.transforms import blended_transform_factory

    rows = panels[0][1]
    ys: list[float] = []
    y = 0.0
    for i, row in enumerate(rows):
        ys.append(y)
        lines = _wrap(row.label).count("\n") + 1
        noted = row.overall and any(p[1][i].note for p in panels)
        y += 0.55 + 0.45 * lines + (0.75 if noted else 0.0)
    fig = Figure(figsize=(FOREST_WIDTH_IN, 0.3 * y + 1.3), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (measure, panel) in zip(axes, panels, strict=True):
        ax.axvline(0, color="#444444", lw=0.8)
        text_at = blended_transform_factory(ax.transAxes, ax.transData)
        for i, row in enumerate(panel[:-1]):
            if row.overall and not panel[i + 1].overall:  # a rule between one comparison's rows and the next
                ax.axhline((ys[i] + ys[i + 1]) / 2 + 0.3, color="#cccccc", lw=0.8)
        for i, row in enumerate(panel):
            if row.overall and row.note:
                ax.text(0.02, ys[i] + 0.75, row.note, transform=text_at, fontsize=9, va="center",
                        color="#222222", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
            if row.diff is None:
                continue
            colour = "#000000" if row.overall else "#1f77b4"
            if row.ci is not None:
                ax.hlines(ys[i], row.ci[0], row.ci[1], color=colour, lw=2.2 if row.overall else 1.2)
            ax.plot([row.diff], [ys[i]], marker="D" if row.overall else "s", color=colour,
                    markersize=8 if row.overall else 5)
        ax.set_title(measure, fontsize=11)
        ax.tick_params(axis="x", labelsize=10)
        _style(ax)
    axes[0].set_yticks(ys, [_wrap(r.label) for r in rows], fontsize=10)
    for tick, row in zip(axes[0].get_yticklabels(), rows, strict=True):
        tick.set_fontweight("bold" if row.overall else "normal")
    axes[0].set_ylim(y - 0.2, -0.7)
    return png(fig)


Cell = tuple[int, int] | None  # (complete, accountable) of one scenario in one series


@plain_text
def heatmap(columns: Sequence[str], scenarios: Sequence[str], cells: Sequence[Sequence[Cell]]) -> bytes:
    """Completion (complete / accountable) by scenario (rows) and series (columns), each cell labelled k/n."""
    import numpy as np

    values = np.full((len(scenarios), len(columns)), np.nan)
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if cell is not None and cell[1]:
                values[i, j] = cell[0] / cell[1]
    fig = Figure(figsize=(1.3 * len(columns) + 3.8, 0.38 * len(scenarios) + 1.6))
    ax = fig.subplots()
    image = ax.imshow(values, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            text = "–" if cell is None or not cell[1] else f"{cell[0]}/{cell[1]}"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(columns)), columns, rotation=20, ha="right")
    ax.set_yticks(range(len(scenarios)), scenarios, fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="completion")
    return png(fig)


def _hist_turns(ax: Any, series: Sequence[Series], values: Sequence[list[int]], what: str) -> None:
    top = max((max(v) for v in values if v), default=1)
    bins = [x - 0.5 for x in range(0, top + 2)]
    drawn = False
    for i, (s, v) in enumerate(zip(series, values, strict=True)):
        if v:
            ax.hist(v, bins=bins, histtype="step", lw=1.8, color=_colour(i), label=f"{s.label} ({len(v)})")
            drawn = True
    if drawn:
        ax.legend(fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes, color="#777777")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("turn of the episode")
    ax.set_ylabel("count")
    ax.set_title(f"when: {what}", fontsize=10)
    _style(ax)


@plain_text
def expert_timing(series: Sequence[Series]) -> bytes:
    """At which turn expert calls and nudges happened, per series."""
    fig = Figure(figsize=(10, 3.4))
    left, right = fig.subplots(1, 2)
    _hist_turns(left, series, [s.expert_turns for s in series], "expert calls")
    _hist_turns(right, series, [s.nudge_turns for s in series], "nudges")
    return png(fig)


@plain_text
def followed_by(series: Sequence[Series]) -> bytes:
    """What the policy did right after a nudge and right after an expert answer, as shares per series."""
    fig = Figure(figsize=(10, 0.45 * len(series) + 1.9))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (what, counts) in zip(axes, (("after a nudge", [s.after_nudge for s in series]),
                                         ("after an expert answer", [s.after_expert for s in series])), strict=True):
        for i, c in enumerate(counts):
            total = sum(c.values())
            left = 0.0
            for action in NEXT_ACTIONS:
                share = c.get(action, 0) / total if total else 0.0
                if share:
                    ax.barh(i, share * 100, left=left, color=ACTION_COLOURS[action],
                            label=action if i == 0 or action not in ax.get_legend_handles_labels()[1] else None)
                    if share >= 0.08:
                        ax.text(left + share * 50, i, f"{c[action]}", ha="center", va="center", fontsize=8,
                                color="white")
                    left += share * 100
            if not total:
                ax.text(1, i, "none", va="center", fontsize=8, color="#777777")
        ax.set_title(what, fontsize=10)
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of the policy's next action (%)")
        _style(ax)
    axes[0].set_yticks(range(len(series)), [s.label for s in series])
    axes[0].invert_yaxis()
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    ordered = [a for a in NEXT_ACTIONS if a in handles]
    fig.legend([handles[a] for a in ordered], ordered, loc="lower center", ncol=len(ordered), fontsize=8,
               frameon=False, bbox_to_anchor=(0.5, 1.0))
    return png(fig)


@plain_text
def distributions(series: Sequence[Series]) -> bytes:
    """Turns per episode and reward per episode, per series."""
    import numpy as np

    fig = Figure(figsize=(10, 3.4))
    left, right = fig.subplots(1, 2)
    top = max((max(s.turns) for s in series if s.turns), default=1)
    bins = [x - 0.5 for x in range(0, top + 2)]
    for i, s in enumerate(series):
        left.hist(s.turns, bins=bins, histtype="step", lw=1.8, color=_colour(i), label=s.label)
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("turns (policy replies)")
    left.set_ylabel("episodes")
    left.set_title("turns", fontsize=10)
    values = sorted({round(r, 4) for s in series for r in s.rewards})  # accountable episodes: no infra errors
    if len(values) <= 12:  # a reward table: few distinct values, shown as grouped bars
        width = 0.8 / max(len(series), 1)
        for i, s in enumerate(series):
            counts = [sum(1 for r in s.rewards if round(r, 4) == v) for v in values]
            left_edges = np.arange(len(values)) - 0.4 + width * (i + 0.5)
            right.bar(left_edges, counts, width=width, color=_colour(i), label=s.label)
        right.set_xticks(range(len(values)), [f"{v:g}" for v in values])
    else:
        all_rewards = [r for s in series for r in s.rewards]
        edges = np.histogram_bin_edges(all_rewards, bins=20)
        for i, s in enumerate(series):
            right.hist(s.rewards, bins=edges, histtype="step", lw=1.8, color=_colour(i), label=s.label)
    right.set_xlabel("reward (infrastructure errors left out)")
    right.set_ylabel("episodes")
    right.set_title("reward", fontsize=10)
    for ax in (left, right):
        ax.legend(fontsize=8, frameon=False)
        _style(ax)
    return png(fig)


@plain_text
def format_errors(series: Sequence[Series], kinds: Sequence[str]) -> bytes:
    """Format errors by kind, per 100 episodes of each series (arms of different sizes compare)."""
    import numpy as np

    fig = Figure(figsize=(8, 0.5 * len(kinds) * max(1, len(series) / 2) + 1.5))
    ax = fig.subplots()
    height = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        per100 = [100 * s.format_errors.get(k, 0) / max(s.total.episodes, 1) for k in kinds]
        ys = np.arange(len(kinds)) - 0.4 + height * (i + 0.5)
        bars = ax.barh(ys, per100, height=height, color=_colour(i), label=s.label)
        for bar, kind in zip(bars, kinds, strict=True):
            if s.format_errors.get(kind):
                ax.annotate(str(s.format_errors[kind]), (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                            textcoords="offset points", xytext=(3, 0), va="center", fontsize=7)
    ax.set_yticks(range(len(kinds)), kinds)
    ax.invert_yaxis()
    ax.set_xlabel("format errors per 100 episodes (labels: counts)")
    ax.legend(fontsize=8, frameon=False)
    _style(ax)
    return png(fig)


@plain_text
def group_steps(series: Sequence[Series]) -> bytes:
    """GRPO group runs: mean reward and completion by step, for expert and solo members; phases on the axis."""
    fig = Figure(figsize=(10, 3.8))
    reward_ax, completion_ax = fig.subplots(1, 2, sharex=True)
    phases: dict[int, str] = {}
    for i, s in enumerate(s for s in series if s.steps):
        for kind, style in (("all", "-"), ("expert", "--"), ("solo", ":")):
            points: dict[int, list[float]] = {}
            for (step, phase, member), t in s.steps.items():
                phases[step] = phase
                if kind in ("all", member):
                    acc = points.setdefault(step, [0.0, 0.0, 0.0, 0.0])
                    acc[0] += t.reward_sum
                    acc[1] += t.episodes
                    acc[2] += t.complete
                    acc[3] += t.accountable
            steps = sorted(points)
            label = f"{s.label}: {kind} members" if kind != "all" else f"{s.label}: all"
            reward_ax.plot(steps, [points[k][0] / points[k][1] for k in steps], style, marker="o",
                           color=_colour(i), label=label, alpha=1 if kind == "all" else 0.75)
            completion_ax.plot(steps, [100 * points[k][2] / points[k][3] if points[k][3] else float("nan")
                                       for k in steps], style, marker="o", color=_colour(i), label=label,
                               alpha=1 if kind == "all" else 0.75)
    ticks = sorted(phases)[::max(1, len(phases) // 15)]  # at most ~15 labelled steps
    for ax, title, unit in ((reward_ax, "mean reward by step", "reward"),
                            (completion_ax, "completion by step", "completion (%)")):
        ax.set_xticks(ticks, [f"{k}\n{phases[k]}" for k in ticks])
        ax.set_xlabel("step / curriculum phase")
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.25)
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
    completion_ax.set_ylim(-3, 103)
    completion_ax.legend(fontsize=7, frameon=False, loc="best")
    return png(fig)


def _log_hist(ax: Any, series: Sequence[Series], values: Sequence[list[float]], what: str) -> None:
    import numpy as np

    every = [v for vs in values for v in vs if v > 0]
    if not every:
        ax.text(0.5, 0.5, f"no {what} recorded", ha="center", va="center", transform=ax.transAxes, color="#777777")
    else:
        edges = np.geomspace(max(min(every) * 0.9, 1e-4), max(every) * 1.1 + 1e-4, 30)
        for i, (s, v) in enumerate(zip(series, values, strict=True)):
            kept = [x for x in v if x > 0]
            if kept:
                ax.hist(kept, bins=edges, histtype="step", lw=1.8, color=_colour(i), label=f"{s.label} ({len(kept)})")
        ax.set_xscale("log")
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        decades = math.log10(edges[-1] / edges[0])
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades < 1.5 else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))  # mathtext is off: plain numbers
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=9, frameon=False)
    ax.set_xlabel(f"{what} (s, log scale)")
    ax.set_ylabel("count")
    ax.set_title(what, fontsize=11)
    _style(ax)


@plain_text
def economics(series: Sequence[Series], usd_per_task: Sequence[float | None], notes: Sequence[str]) -> bytes:
    """Cost per completed task (bars; an unknown price says so), policy model-call latency and
    episode wall time distributions per series."""
    from matplotlib.transforms import blended_transform_factory

    fig = Figure(figsize=(FOREST_WIDTH_IN, 3.6), layout="constrained")
    cost_ax, call_ax, wall_ax = fig.subplots(1, 3)
    for i, (value, why) in enumerate(zip(usd_per_task, notes, strict=True)):
        if value is not None:
            cost_ax.barh(i, value, height=0.5, color=_colour(i))
            cost_ax.annotate(f"${value:.3g}", (value, i), textcoords="offset points", xytext=(3, 0), va="center",
                             fontsize=9)
        else:
            cost_ax.text(0.02, i, why, va="center", fontsize=9, color="#a33",
                         transform=blended_transform_factory(cost_ax.transAxes, cost_ax.transData))
    cost_ax.set_yticks(range(len(series)), [_wrap(s.label) for s in series], fontsize=10)
    cost_ax.set_ylim(len(series) - 0.5, -0.5)
    cost_ax.set_xlabel("USD per completed task")
    cost_ax.set_title("cost per completed task", fontsize=11)
    known = [v for v in usd_per_task if v is not None]
    if known:
        cost_ax.set_xlim(0, max(known) * 1.45 or 1.0)  # room for the value written after each bar
        cost_ax.xaxis.set_major_locator(MaxNLocator(3))
    else:
        cost_ax.set_xticks([])
    _style(cost_ax)
    _log_hist(call_ax, series, [s.call_latency.get("policy", []) for s in series], "policy model-call latency")
    _log_hist(wall_ax, series, [s.wall_s for s in series], "episode wall time")
    return png(fig)
