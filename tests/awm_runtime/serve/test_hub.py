"""The session hub over the real AgentWorldModel-1K extract: only scenarios that can run are offered."""

from __future__ import annotations

from pathlib import Path

from awm_runtime.serve import ServeOptions, SessionHub
from awm_runtime.worlds import load_local_worlds

SAMPLES = Path(__file__).parents[2] / "fixtures" / "awm1k_samples"


def test_the_listing_and_resets_offer_only_runnable_scenarios() -> None:
    world = load_local_worlds(SAMPLES)
    try:
        hub = SessionHub(world, ServeOptions())
        runnable = [sc.id for sc in world.dataset.scenarios.values() if sc.runnable]
        lacking = [sc.id for sc in world.dataset.scenarios.values() if not sc.runnable]
        assert runnable and lacking  # the extract has both kinds
        assert [entry["name"] for entry in hub.listing()] == runnable
        assert all(hub.scenario(sid) is None for sid in lacking)
        assert hub.scenario(runnable[0]) is world.dataset.scenarios[runnable[0]]
    finally:
        world.close()
