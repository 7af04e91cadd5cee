"""Start-up detection of what the kernel offers, the statement of it, and the refusal without it."""

from __future__ import annotations

import pytest

from awm_runtime import ConfigError
from awm_runtime.isolation import _containment
from awm_runtime.isolation._containment import UNSAFE_FLAG, Containment, probe, require


def test_this_machine_confines_dataset_code() -> None:
    found = probe()
    assert found.landlock_abi >= 1 and found.seccomp and not found.error and not found.missing
    assert found.statement.startswith(f"landlock v{found.landlock_abi}")
    assert "seccomp" in found.statement and "no capabilities" in found.statement and "rlimits" in found.statement
    assert require() == found


@pytest.mark.parametrize(("found", "why"), [
    (Containment(landlock_abi=0, seccomp=True), "no Landlock"),
    (Containment(landlock_abi=5, seccomp=False), "no seccomp"),
    (Containment(landlock_abi=5, seccomp=True, error="the confined probe process was not confined: x"),
     "was not confined"),
])
def test_without_a_required_part_dataset_code_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                      found: Containment, why: str) -> None:
    monkeypatch.setattr(_containment, "probe", lambda: found)
    with pytest.raises(ConfigError) as info:
        require()
    message = str(info.value)
    assert "\n" not in message and why in message and UNSAFE_FLAG in message
    assert require(unsafe=True).unsafe  # the flag accepts the risk, and says so


def test_the_unsafe_statement_says_what_is_at_risk() -> None:
    statement = Containment(unsafe=True).statement
    assert statement.startswith("NONE (--unsafe-no-sandbox)") and "network" in statement
    assert Containment(unsafe=True).to_dict()["unsafe"] is True
    assert "(no TCP rules)" in Containment(landlock_abi=3, seccomp=True, namespaces="user, net, ipc", uid=0).statement
