"""Nudge rules (`on_error`, `on_stall:N`), registered as entry points like third-party rules."""

from awm_runtime.nudges._rules import OnError, OnStall, on_error, on_stall

__all__ = ["OnError", "OnStall", "on_error", "on_stall"]
