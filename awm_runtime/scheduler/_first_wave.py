"""A batch's resets before its first request: the episodes launched at once open their worlds, then all start.

When a pool launches every episode of its run at once (a GRPO step, an eval: concurrency at least the planned
episodes), each episode would otherwise send its first model request as soon as its own world opened, while the
rest of the batch still copies templates and waits for scenario builds on the same loop. The first replies then
land while resets are still queued, and the batch's last episode starts late. Held here, the resets run back to
back before the first request, off the model's critical path, and the first requests go out together.

Only the first wave waits, and only for episodes that have begun to open: an episode whose open fails or is
cancelled counts as opened, so none can wait for one that will never come. Once released, the wave stays open
and later episodes pass at once.
"""

from __future__ import annotations

import asyncio


class FirstWave:
    """Holds each episode of the first wave between its world's open and its first turn, until no episode of the
    wave is still opening. `enabled=False`: every episode passes at once (a run that does not launch all its
    episodes together)."""

    def __init__(self, *, enabled: bool) -> None:
        self.opening = 0  # episodes of the wave between `opening_started` and `opened`
        self.held = 0  # the most that waited together (for the bench and the tests)
        self._released = not enabled
        self._event = asyncio.Event()
        self._waiting = 0
        if self._released:
            self._event.set()

    @property
    def released(self) -> bool:
        """The wave has started: episodes no longer wait."""
        return self._released

    def opening_started(self) -> bool:
        """An episode begins to open its world; True when it belongs to the wave (then call `opened` once)."""
        if self._released:
            return False
        self.opening += 1
        return True

    async def opened(self, *, wait: bool = True) -> None:
        """The episode's open ended (done, failed or cancelled: then `wait=False`). With `wait`, return once
        every episode of the wave that began to open has ended its open."""
        self.opening -= 1
        if self.opening == 0:
            # Episodes admitted in this same loop iteration have not begun to open yet: look again once they have.
            asyncio.get_running_loop().call_soon(self._release_if_idle)
        if not wait or self._released:
            return
        self._waiting += 1
        self.held = max(self.held, self._waiting)
        try:
            await self._event.wait()
        finally:
            self._waiting -= 1

    def _release_if_idle(self) -> None:
        if self.opening == 0 and not self._released:
            self._released = True
            self._event.set()


__all__ = ["FirstWave"]
