"""Units of work shared by the scheduler and GRPO groups: a unit, its finaliser, and a staged planner."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from awm_runtime._types import EpisodeKey, EpisodeRecord, EpisodeSpec

Finalize = Callable[[list[EpisodeRecord]], list[EpisodeRecord]]
EpisodeRunner = Callable[[EpisodeSpec], Awaitable[EpisodeRecord]]
Play = Callable[[list[EpisodeSpec], EpisodeRunner], Awaitable[list[EpisodeRecord]]]


@dataclass(slots=True)
class Unit:
    """Episodes that finish together: one episode, or a GRPO group whose records are finalised
    (e.g. advantages written) before any of them is appended to episodes.jsonl.

    `play` decides how the unit's episodes run (default: all at once, see scheduler/_episode_pool.py); a group
    uses it to re-run a member that failed for infrastructure reasons. Each run of a spec opens a
    fresh world.
    """

    specs: list[EpisodeSpec]
    finalize: Finalize | None = None
    play: Play | None = None

    @property
    def keys(self) -> list[EpisodeKey]:
        return [s.key for s in self.specs]


class Planner(Protocol):
    """Plans a run in stages: stage k+1 is drawn only after stage k has finished (adaptive groups)."""

    @property
    def planned(self) -> int:
        """How many episodes the plan holds so far (grows as stages are drawn)."""
        ...

    def observe(self, record: dict[str, Any]) -> None:
        """A record already in the run directory (resume)."""

    def stages(self) -> Iterator[Iterable[Unit]]:
        """The plan's stages in order; the next is drawn only after the previous one's episodes finished."""
        ...

    def summary(self) -> dict[str, Any]:
        """What the plan adds to summary.json (e.g. groups drawn and why they stopped)."""
        ...
