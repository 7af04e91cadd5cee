"""The live view during a run: progress and ETA, results so far, tokens and cost, endpoint load."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from awm_runtime._printable import printable
from awm_runtime.scheduler import RunProgress


def _tokens(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def _cost(totals: dict[str, Any]) -> str:
    """Dollars so far, or `cost unknown` once a call had no price (never $0 for an unknown price)."""
    if not totals.get("cost_known", True):
        return "cost unknown (no price)"
    return f"${totals['cost_usd']:.4f}"


def stats_line(p: RunProgress) -> str:
    t = p.totals()
    scored = t["scored"]
    done = f"{t['complete'] / scored:.1%} of {scored}" if scored else "-"
    line = (f"complete {done} · format errors {t['format_errors']} · expert calls {t['expert_calls']} · "
            f"tokens {_tokens(t['tokens'])} · {_cost(t)} · infra errors {t['errors']} · "
            f"in flight {p.in_flight}")
    if p.where:
        line += f" · {p.where}"
    elif p.shards > 1:
        line += f" · {p.shards} shards"
    if p.lost:
        line += f" · lost {p.lost}"
    return line


def endpoint_table(p: RunProgress) -> Table | None:
    endpoints = p.endpoints()
    if not endpoints:
        return None
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
    for col, justify in (("endpoint", "left"), ("roles", "left"), ("in flight", "right"), ("in backoff", "right"),
                         ("calls", "right"), ("errors", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for e in endpoints:
        table.add_row(Text(printable(e.endpoint, one_line=True)), Text(printable(",".join(e.roles), one_line=True)),
                      f"{e.in_flight}/{e.limit}",
                      f"[yellow]{e.in_backoff}[/]" if e.in_backoff else "0", str(e.calls),
                      f"[red]{e.errors}[/]" if e.errors else "0")
    return table


class LiveView:
    """Reads a RunProgress a few times a second; the run never waits for it."""

    def __init__(self, console: Console, progress: RunProgress) -> None:
        self.state = progress
        self.console = console
        self.bar = Progress(TextColumn("[bold]episodes"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("eta"), TimeRemainingColumn(), console=console, speed_estimate_period=120)
        self._task: TaskID | None = None
        self.notice = ""
        self._live = Live(self, console=console, refresh_per_second=4, transient=False, redirect_stdout=False,
                          redirect_stderr=False)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        p = self.state
        if self._task is None and p.planned:
            self._task = self.bar.add_task("run", total=p.planned, completed=p.finished)
        if self._task is not None:
            self.bar.update(self._task, completed=p.finished)
        parts: list[Any] = [self.bar.get_renderable(), Text(stats_line(p), style="dim")]
        table = endpoint_table(p)
        if table is not None:
            parts.append(table)
        notice = self.notice or p.last_warning
        if notice:
            parts.append(Text(printable(notice, one_line=True), style="yellow"))
        yield Group(*parts)

    def start(self) -> None:
        self._live.start()

    def stop(self) -> None:
        self._live.stop()
        if not self.console.is_terminal:  # off a terminal, rich leaves the last frame without its newline
            self.console.line()
