"""The live view renders what the run has done so far, including per-endpoint load."""

from __future__ import annotations

import io

from rich.console import Console

from awm_runtime.cli._live import LiveView, stats_line
from awm_runtime.models import EndpointStats
from awm_runtime.scheduler import RunProgress


def record(outcome: str, task_idx: int = 0, **extra: object) -> dict[str, object]:
    return {"arm": "main", "scenario": "s", "task_idx": task_idx, "repeat": 0,
            "policy": {"alias": "p"}, "outcome": outcome, "verdict": outcome,
            "format_errors": {"invalid_json": 1}, "expert_calls": 2,
            "usage": {"policy": {"prompt_tokens": 1500, "completion_tokens": 500, "cost_usd": 0.25}}, **extra}


def test_live_view_shows_progress_results_tokens_cost_and_endpoints() -> None:
    endpoints = [EndpointStats("http://gpu-box:8000/v1", ("policy",), 64, 61, 3, 1200, 4)]
    progress = RunProgress(planned=10, already_done=2, in_flight=5, endpoints=lambda: endpoints)
    for i, outcome in enumerate(("complete", "complete", "incomplete", "error")):
        progress.stats.add(record(outcome, task_idx=i))
    progress.recorded = 4
    console = Console(file=io.StringIO(), width=140, force_terminal=False)
    view = LiveView(console, progress)
    console.print(view)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "6/10" in text and "eta" in text
    assert "complete 66.7% of 3" in text and "format errors 4" in text and "expert calls 8" in text
    assert "tokens 8.0k" in text and "$1.0000" in text and "in flight 5" in text and "infra errors 1" in text
    assert "http://gpu-box:8000/v1" in text and "61/64" in text and "3" in text and "1200" in text


def test_stats_line_before_any_episode_and_with_shards() -> None:
    progress = RunProgress(planned=5, shards=2, endpoints=lambda: [])
    assert stats_line(progress).startswith("complete - ·") and "2 shards" in stats_line(progress)


def test_last_frame_ends_its_line_off_a_terminal() -> None:
    console = Console(file=io.StringIO(), width=100, force_terminal=False)
    view = LiveView(console, RunProgress(planned=1, endpoints=lambda: []))
    view.start()
    view.stop()
    assert console.file.getvalue().endswith("\n")  # type: ignore[attr-defined]


def test_the_latest_kind_of_warning_shows_under_the_bar_and_a_signal_notice_first() -> None:
    progress = RunProgress(planned=1, endpoints=lambda: [])
    progress.warn({"event": "world_disk_small", "note": "Raise it to 300"})
    console = Console(file=io.StringIO(), width=140, force_terminal=False)
    view = LiveView(console, progress)
    console.print(view)
    assert "world_disk_small: Raise it to 300" in console.file.getvalue()  # type: ignore[attr-defined]
    view.notice = "SIGINT: no new episodes"
    console.print(view)
    assert console.file.getvalue().endswith("SIGINT: no new episodes\n")  # type: ignore[attr-defined]


def test_an_unpriced_call_makes_the_live_cost_unknown_never_zero_dollars() -> None:
    progress = RunProgress(planned=2, endpoints=lambda: [])
    progress.stats.add(record("complete", usage={"policy": {"calls": 2, "prompt_tokens": 10, "cost_usd": 0.0,
                                                            "cost_known": False}}))
    line = stats_line(progress)
    assert "cost unknown" in line and "$0.0000" not in line
