"""The live view during a run: a rich progress bar with completion and expert use so far."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from awm_runtime._events import EpisodeEnded, Event


class ProgressSink:
    """Advances on every finished episode; shows completion, format errors and expert calls."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("[bold]episodes"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False,
        )
        self._task: TaskID | None = None
        self.finished = self.complete = self.errors = self.format_errors = self.expert_calls = 0

    def start(self, total: int, done: int) -> None:
        self._task = self.progress.add_task("run", total=total, completed=done, stats="")
        self.progress.start()

    def emit(self, event: Event) -> None:
        if not isinstance(event, EpisodeEnded) or event.record is None or self._task is None:
            return
        r = event.record
        self.finished += 1
        self.complete += r.outcome == "complete"
        self.errors += r.outcome == "error"
        self.format_errors += r.format_error_count
        self.expert_calls += r.expert_calls
        scored = max(self.finished - self.errors, 1)
        stats = (f"complete {self.complete / scored:.0%} · format err {self.format_errors} · "
                 f"expert {self.expert_calls} · errors {self.errors}")
        self.progress.update(self._task, advance=1, stats=stats)

    def stop(self) -> None:
        self.progress.stop()
