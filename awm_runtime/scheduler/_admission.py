"""Admission: never start more episodes on an endpoint than it can serve in time.

An episode that starts while its policy's endpoint is saturated spends its time in our own
endpoint queue, and its `--episode-timeout` runs all the while. So the pool gates episodes per
policy endpoint: at most `EPISODES_PER_SLOT` episodes in flight per slot of the endpoint's limit
(`max_concurrency`, shared by every arm that calls the endpoint with the same key). Two per slot keeps
every slot busy while an episode runs its tools or its verifier, and bounds a call's wait for a
slot to about one call. Simulated models are not gated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from awm_runtime.episode import Harness
from awm_runtime.models import ModelClient

EPISODES_PER_SLOT = 2


@dataclass(frozen=True, slots=True)
class EndpointGate:
    """The episodes in flight allowed on one policy endpoint, and the arms that use it."""

    endpoint: str
    slots: int
    episodes: int
    arms: tuple[str, ...]


def endpoint_gates(harnesses: Mapping[str, Harness], concurrency: int) -> dict[str, EndpointGate]:
    """The gate of each arm whose policy calls a real endpoint that cannot serve `concurrency` episodes
    at once (arms that share an endpoint and key share one gate)."""
    by_limiter: dict[int, tuple[str, int, list[str]]] = {}
    for arm, harness in harnesses.items():
        client = getattr(harness.policy, "client", None)
        if not isinstance(client, ModelClient) or client.config.simulated:
            continue
        limiter = client.limiter
        entry = by_limiter.setdefault(id(limiter), (limiter.endpoint, limiter.max_limit, []))
        entry[2].append(arm)
    gates: dict[str, EndpointGate] = {}
    for endpoint, slots, arms in by_limiter.values():
        episodes = slots * EPISODES_PER_SLOT
        if episodes >= concurrency:
            continue
        gate = EndpointGate(endpoint, slots, episodes, tuple(sorted(arms)))
        gates.update(dict.fromkeys(arms, gate))
    return gates


def gate_notes(gates: Mapping[str, EndpointGate], concurrency: int) -> list[str]:
    """One line per gated endpoint, for the user: why fewer episodes than --concurrency run at once."""
    seen: dict[str, EndpointGate] = {g.endpoint: g for g in gates.values()}
    return [f"at most {g.episodes} episodes of arm{'s' if len(g.arms) > 1 else ''} {', '.join(g.arms)} in flight "
            f"(not --concurrency {concurrency}): endpoint {g.endpoint} serves {g.slots} call"
            f"{'s' if g.slots > 1 else ''} at a time (max_concurrency); the other episodes wait to start, "
            f"so their deadlines do not run while they queue" for g in seen.values()]


def gate_semaphores(gates: Mapping[str, EndpointGate]) -> dict[str, asyncio.Semaphore]:
    """One semaphore per gated endpoint, keyed by arm."""
    shared: dict[int, asyncio.Semaphore] = {}
    return {arm: shared.setdefault(id(gate), asyncio.Semaphore(gate.episodes)) for arm, gate in gates.items()}
