"""Which failed actor starts `awm-run --ray` goes on without (its node is gone) and which end the run."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from awm_runtime.scheduler._ray import node_gone  # noqa: E402


def test_an_actor_whose_node_is_gone_is_lost_and_any_other_failure_is_the_run_s() -> None:
    """A node killed just before a run can still be listed alive (its death is noticed after missed health
    checks), and the actor pinned to it is then unschedulable: CI saw `--resume` end with "an episode actor
    failed to start: The actor is not schedulable" right after `test_killing_the_worker_node_loses_nothing_after_
    resume` killed the worker node. That is the node's end, as an actor that died with its node is."""
    unschedulable = ray.exceptions.ActorUnschedulableError(
        "The node specified via NodeAffinitySchedulingStrategy doesn't exist any more or is infeasible, and "
        "soft=False was specified.")
    assert node_gone(ray, unschedulable)
    assert node_gone(ray, ray.exceptions.RayActorError())
    assert not node_gone(ray, ray.exceptions.RayTaskError("ready", "Traceback…", ValueError("bad config")))
    assert not node_gone(ray, ValueError("bad config"))
    assert not node_gone(ray, {"ip": "127.0.0.2", "pid": 1})  # a started actor's reply
