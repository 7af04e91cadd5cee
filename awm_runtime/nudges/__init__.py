"""Try-first-then-ask nudge rules. Texts live in prompts/; rules run only when an expert is available."""

from __future__ import annotations

from dataclasses import dataclass

from awm_runtime._prompts import render
from awm_runtime._protocols import EpisodeView, NudgeRule


@dataclass(frozen=True, slots=True)
class OnError:
    """After a tool error (or format error), suggest asking — unless the agent just asked."""

    name: str = "on_error"

    def check(self, view: EpisodeView) -> str | None:
        if view.last_action in ("tool_error", "format_error"):
            return render("nudge_on_error.md")
        return None


@dataclass(frozen=True, slots=True)
class OnStall:
    """At turn `after` with no expert call yet, suggest asking; again every `after` turns."""

    after: int = 5
    name: str = "on_stall"

    def check(self, view: EpisodeView) -> str | None:
        if view.expert_calls == 0 and view.turn >= self.after and view.turn % self.after == 0:
            return render("nudge_on_stall.md", turns=view.turn)
        return None


def on_error(arg: str = "") -> NudgeRule:
    return OnError()


def on_stall(arg: str = "") -> NudgeRule:
    return OnStall(after=int(arg) if arg else 5)


__all__ = ["OnError", "OnStall", "on_error", "on_stall"]
