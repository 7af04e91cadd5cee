"""Embed the episode loop in your own asyncio app: one episode, your loop, your sinks, a clean shutdown.

awm_runtime's log lines go to stderr (unless your program configures structlog); stdout stays yours.

    python examples/embed_episode.py
"""

from __future__ import annotations

import asyncio

import awm_runtime
from awm_runtime import EpisodeSpec, Event


class PrintSink:
    """Any object with `emit(event)` is a Sink."""

    def emit(self, event: Event) -> None:
        print(f"  event: {event.name}")


async def main() -> None:
    world = awm_runtime.load_worlds("builtin")
    task = world.tasks()[0]
    harness = awm_runtime.build_harness("sim/novice", "sim/oracle", world=world, reward="try-first")
    session = await world.open(task, episode_id="example")
    try:
        record = await awm_runtime.run_episode(
            EpisodeSpec(scenario=task.scenario, task_idx=task.task_idx, seed=7), task, session, harness,
            sinks=[PrintSink()])
    finally:
        await session.close()
        world.close()
        # Close what the model layer holds open in this loop (HTTP sessions, model-call processes, local
        # model servers); without it, asyncio warns about unclosed client sessions at exit.
        await awm_runtime.shutdown()
    print(f"task: {task.text}")
    print(f"outcome={record.outcome} verdict={record.verdict} reward={record.reward} "
          f"turns={record.turns} expert_calls={record.expert_calls} format_errors={record.format_errors}")


if __name__ == "__main__":
    asyncio.run(main())
