"""Admission: episodes per policy endpoint, at most two per slot of its max_concurrency."""

from __future__ import annotations

import pytest

from awm_runtime._build import build_shaper
from awm_runtime.episode import Harness
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.policies import ChatPolicy
from awm_runtime.scheduler._admission import endpoint_gates, gate_notes, gate_semaphores


@pytest.fixture(autouse=True)
def _fresh() -> None:
    reset_limiters()


def harness(alias: str, model: str = "openai/m", base: str | None = "http://127.0.0.1:9/v1", key: str = "K",
            slots: int = 2) -> Harness:
    config = ModelConfig(alias=alias, model=model, api_base=base, api_key_env=key, max_concurrency=slots)
    return Harness(policy=ChatPolicy(ModelClient(config, "policy")), shaper=build_shaper("awm"))


def test_an_endpoint_gets_two_episodes_per_slot_and_the_user_is_told() -> None:
    gates = endpoint_gates({"main": harness("local", slots=2)}, concurrency=20)
    assert gates["main"].episodes == 4 and gates["main"].slots == 2
    (line,) = gate_notes(gates, 20)
    assert line.startswith("at most 4 episodes of arm main in flight (not --concurrency 20): endpoint "
                           "http://127.0.0.1:9/v1 serves 2 calls at a time")


def test_no_gate_when_the_endpoint_can_serve_the_concurrency_or_the_model_is_simulated() -> None:
    assert endpoint_gates({"main": harness("local", slots=16)}, concurrency=32) == {}
    assert endpoint_gates({"main": harness("sim", model="sim/oracle", base=None, key="")}, concurrency=10**4) == {}


def test_arms_on_one_endpoint_and_key_share_one_gate() -> None:
    gates = endpoint_gates({"a": harness("x", slots=3), "b": harness("y", slots=3),
                            "c": harness("z", base="http://127.0.0.1:10/v1", slots=1)}, concurrency=100)
    assert gates["a"] is gates["b"] and gates["a"].arms == ("a", "b") and gates["a"].episodes == 6
    assert gates["c"].episodes == 2
    semaphores = gate_semaphores(gates)
    assert semaphores["a"] is semaphores["b"] and semaphores["a"] is not semaphores["c"]
    assert len(gate_notes(gates, 100)) == 2
