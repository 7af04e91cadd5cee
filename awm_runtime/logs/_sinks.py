"""Sinks shipped with the runtime: the structured event log."""

from __future__ import annotations

from awm_runtime._events import Event
from awm_runtime._log import get_logger


class EventLogSink:
    """Each loop event becomes one structlog event (and so one line of events.jsonl)."""

    def __init__(self) -> None:
        self._log = get_logger("awm_runtime.events")

    def emit(self, event: Event) -> None:
        self._log.info(event.name, **event.fields())
