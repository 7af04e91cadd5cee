"""The collector a run holds: what is alive is frozen, young collections are rare, and all of it is undone after."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from awm_runtime._gc import OLDER_THRESHOLDS, YOUNG_THRESHOLD, tuned_collector


@pytest.fixture(autouse=True)
def _clean_collector():
    saved = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.set_threshold(*saved)
    gc.unfreeze()


def test_it_freezes_what_is_alive_raises_the_thresholds_and_undoes_both():
    gc.set_threshold(700, 10, 10)
    alive = [[] for _ in range(100)]  # containers, tracked by the collector
    with tuned_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
        assert gc.get_freeze_count() >= len(alive)
        assert gc.is_tracked(alive[0])
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_nested_hold_shares_the_outer_one():
    gc.set_threshold(700, 10, 10)
    with tuned_collector():
        with tuned_collector():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the inner exit restores nothing
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_holds_are_undone_by_the_last_one_out():
    """Two pools in one process: the first to end leaves the setting to the one still running."""
    gc.set_threshold(700, 10, 10)
    first, second = tuned_collector(), tuned_collector()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD and gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_objects_frozen_by_someone_else_stay_frozen():
    gc.freeze()
    before = gc.get_freeze_count()
    with tuned_collector():
        pass
    assert gc.get_freeze_count() >= before > 0


def test_cycles_made_while_it_is_held_are_still_collected():
    class Node:
        pass

    with tuned_collector():
        a, b = Node(), Node()
        a.peer, b.peer = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None


def test_an_error_inside_restores_the_collector():
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), tuned_collector():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_an_episode_pool_holds_it_while_it_runs(tmp_path):
    """The pool is where thousands of episodes live: its run() holds the tuned collector."""
    from awm_runtime.scheduler._episode_pool import EpisodePool

    seen: list[tuple[int, int, int]] = []

    from awm_runtime._slices import LoopSlices

    class Pool(EpisodePool):
        def __init__(self) -> None:  # only run() is exercised
            self.slices = LoopSlices()

        async def _run(self, next_unit, done) -> None:
            seen.append(gc.get_threshold())

    gc.set_threshold(700, 10, 10)
    asyncio.run(Pool().run(None, None))  # type: ignore[arg-type]
    assert seen == [(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)]
    assert gc.get_threshold() == (700, 10, 10)
