"""The alias registry: built-ins, awm.toml overlay, per-role routes, and one-line config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from awm_runtime import ConfigError
from awm_runtime.models import BUILTIN_ALIASES, ModelConfig, apply_routes, load_registry
from awm_runtime.models._retry import DEFAULT_RETRIES, RetryPolicy


def test_builtin_aliases_match_the_brief() -> None:
    reg = load_registry()
    assert {"qwen3-4b", "arctic-awm-4b", "gpt-5.1", "gpt-4.1-mini", "o4-mini"} <= set(BUILTIN_ALIASES)
    assert reg.get("qwen3-4b").api_base == "http://localhost:8000/v1"
    assert reg.get("gpt-5.1").api_key_env == "OPENAI_API_KEY"


def test_toml_overlays_and_adds_aliases(tmp_path: Path) -> None:
    path = tmp_path / "awm.toml"
    path.write_text('[models.qwen3-4b]\napi_base = "http://gpu:8000/v1"\n'
                    '[models.mine]\nmodel = "openai/m"\nrpm = 60\nretries = { rate_limit = 20 }\n')
    reg = load_registry(path)
    assert reg.get("qwen3-4b").api_base == "http://gpu:8000/v1" and reg.get("qwen3-4b").protocol == "hermes"
    assert reg.get("mine").rpm == 60 and RetryPolicy.of(reg.get("mine")).retries["rate_limit"] == 20


@pytest.mark.parametrize(("body", "needle"), [
    ('[models.x]\nmodel = "openai/m"\nretries = { auth = 3 }\n', "not retryable"),
    ('[models.x]\nmodel = "openai/m"\nmax_concurency = 3\n', "max_concurency"),
    ('[models.x]\nmodel = "openai/m"\napi_key = "sk-live"\n', "api_key"),
])
def test_bad_alias_fields_are_one_line_errors(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "awm.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert needle in str(info.value) and "\n" not in str(info.value) and "sk-live" not in str(info.value)


def test_unknown_alias_suggests_close_names() -> None:
    with pytest.raises(ConfigError, match=r"Did you mean gpt-4\.1-mini"):
        load_registry().get("gpt-4.1-mni")


def test_role_routes_change_only_that_role() -> None:
    reg = apply_routes(load_registry(), {"policy_base": "http://a:1/v1", "policy_key_env": "A_KEY",
                                         "expert_model": "openai/gpt-4.1"})
    policy, expert = reg.resolve("gpt-4.1-mini", "policy"), reg.resolve("gpt-4.1-mini", "expert")
    assert (policy.api_base, policy.api_key_env, policy.model) == ("http://a:1/v1", "A_KEY", "openai/gpt-4.1-mini")
    assert (expert.api_base, expert.model) == (None, "openai/gpt-4.1")
    assert reg.resolve("gpt-4.1-mini", "judge") == reg.get("gpt-4.1-mini")


def test_a_route_on_a_simulation_needs_a_model() -> None:
    reg = apply_routes(load_registry(), {"policy_base": "http://a:1/v1"})
    with pytest.raises(ConfigError, match="--policy-model"):
        reg.resolve("sim/novice", "policy")
    real = apply_routes(load_registry(), {"policy_base": "http://a:1/v1", "policy_model": "openai/m"})
    routed = real.resolve("sim/novice", "policy")
    assert not routed.simulated and routed.max_concurrency == ModelConfig.model_fields["max_concurrency"].default


def test_retry_policy_defaults_and_overrides() -> None:
    base = RetryPolicy.of(ModelConfig(model="openai/m"))
    assert dict(base.retries) == dict(DEFAULT_RETRIES) and base.deadline_s == 300
    flat = RetryPolicy.of(ModelConfig(model="openai/m", max_retries=1, retries={"rate_limit": 5}, timeout_s=400))
    assert flat.retries["server"] == 1 and flat.retries["rate_limit"] == 5 and flat.deadline_s == 800


@pytest.mark.parametrize("alias", ["mine", "my-policy", "gpt-5.2", "sim/novce", 'odd "quoted" name'])
def test_toml_table_headers_are_valid_toml_for_any_alias(alias: str) -> None:
    import tomllib

    from awm_runtime.models._registry import toml_table

    assert tomllib.loads(f"{toml_table(alias)}\nrpm = 1\n") == {"models": {alias: {"rpm": 1}}}
    assert tomllib.loads(f"{toml_table(alias, 'local_server')}\nport = 1\n") == {
        "models": {alias: {"local_server": {"port": 1}}}}
    assert toml_table("gpt-5.2") == '[models."gpt-5.2"]' and toml_table("mine") == "[models.mine]"


def test_an_unknown_alias_hint_is_a_valid_table() -> None:
    with pytest.raises(ConfigError, match=r'Define it under \[models\."gpt-5\.2"\] in awm\.toml'):
        load_registry().get("gpt-5.2")
