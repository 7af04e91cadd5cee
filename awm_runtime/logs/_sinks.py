"""Sinks shipped with the runtime: the structured event log."""

from __future__ import annotations

import structlog

from awm_runtime._events import Event


class EventLogSink:
    """Each loop event becomes one structlog event (and so one line of events.jsonl)."""

    def __init__(self) -> None:
        self._log = structlog.get_logger("awm_runtime.events")

    def emit(self, event: Event) -> None:
        self._log.info(event.name, **event.fields())
