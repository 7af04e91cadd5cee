"""What a resumed session may change, and the model definitions manifest.json keeps (never a key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ConfigError
from awm_runtime._config import RunConfig
from awm_runtime.models import ModelConfig
from awm_runtime.scheduler._resume import REDACTED, check_resume, public_definition

LOOP = {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "api_key_env": "K", "protocol": "native",
        "params": {"temperature": 0.0}}


def manifest(config: RunConfig, models: dict[str, Any] | None = None) -> dict[str, Any]:
    stored = config.model_dump(mode="json")
    stored["models"] = models if models is not None else {"policy": {"loop": public_definition(
        ModelConfig(alias="loop", **LOOP))}}
    return {"config": stored}


def toml(tmp_path: Path, **changes: Any) -> Path:
    fields = {**LOOP, **changes}
    path = tmp_path / "awm.toml"
    path.write_text("[models.loop]\n" + "".join(
        f"{k} = {v!r}\n".replace("'", '"') for k, v in fields.items() if k != "params")
        + "params = { temperature = 0.0 }\n")
    return path


def test_settings_that_do_not_change_results_may_change(tmp_path: Path) -> None:
    first = RunConfig(policy="loop", expert="none", config_path=toml(tmp_path, max_concurrency=8))
    resumed = first.model_copy(update={"concurrency": 4, "shards": 1, "grace_s": 5.0, "tasks": "0-9",
                                       "repeats": 3, "preflight": "off", "resume": True})
    toml(tmp_path, max_concurrency=2, timeout_s=30.0, api_key_env="OTHER")  # limits and key names are not meaning
    assert check_resume(resumed, manifest(first)).models["policy"]["loop"]["model"] == "openai/m"


@pytest.mark.parametrize(("change", "shown"), [
    ({"max_turns": 5}, "max_turns 20 -> 5"), ({"reward": "try-first"}, "reward 'awm' -> 'try-first'"),
    ({"seed": 7}, "seed 0 -> 7"), ({"episode_timeout_s": 60.0}, "episode_timeout_s 900.0 -> 60.0"),
])
def test_a_setting_that_changes_an_arm_is_refused(tmp_path: Path, change: dict[str, Any], shown: str) -> None:
    first = RunConfig(policy="loop", expert="none", config_path=toml(tmp_path))
    with pytest.raises(ConfigError, match="would change what the run's arms mean") as info:
        check_resume(first.model_copy(update=change), manifest(first))
    assert shown in str(info.value) and "\n" not in str(info.value)


def test_a_redefined_alias_is_refused_field_by_field(tmp_path: Path) -> None:
    first = RunConfig(policy="loop", expert="none", config_path=toml(tmp_path))
    toml(tmp_path, protocol="hermes", transport="litellm")
    with pytest.raises(ConfigError) as info:
        check_resume(first, manifest(first))
    assert "policy 'loop' protocol 'native' -> 'hermes'" in str(info.value)
    assert "policy 'loop' transport 'auto' -> 'litellm'" in str(info.value)


def test_credentials_in_params_never_reach_the_manifest(tmp_path: Path) -> None:
    config = ModelConfig(alias="x", model="openai/m", params={
        "api_key": "sk-live-secret", "extra_headers": {"Authorization": "Bearer sk-live", "X-Trace": "1"},
        "temperature": 0.1})
    shown = public_definition(config)
    assert shown["params"] == {"api_key": REDACTED, "extra_headers": {"Authorization": REDACTED, "X-Trace": "1"},
                               "temperature": 0.1}
    first = RunConfig(policy="x", expert="none")
    with pytest.raises(ConfigError, match="redacted credential"):  # x is not defined any more: cannot run from it
        check_resume(first, manifest(first, {"policy": {"x": shown}}))


def test_an_alias_awm_toml_no_longer_defines_runs_from_its_stored_definition() -> None:
    from awm_runtime.models import load_registry
    from awm_runtime.scheduler._resume import with_stored_models

    registry = load_registry()
    table = {"policy": {"gone": {"model": "openai/gone", "api_base": "http://127.0.0.1:9/v1", "protocol": "native",
                                 "not_a_field": 1},
                        "sim/oracle": {"model": "sim/somethingelse"}}}
    restored = with_stored_models(registry, table)
    assert restored.get("gone").api_base == "http://127.0.0.1:9/v1"  # the stored fields, unknown keys left out
    assert restored.get("sim/oracle").model == registry.get("sim/oracle").model  # still defined: not replaced
    assert with_stored_models(registry, {}) is registry


def test_credentials_nested_in_lists_are_scrubbed_too() -> None:
    from awm_runtime.scheduler._resume import _scrubbed

    assert _scrubbed({"extra": [{"api_key": "sk-1", "n": 1}, "x"]}) == {"extra": [{"api_key": REDACTED, "n": 1}, "x"]}
