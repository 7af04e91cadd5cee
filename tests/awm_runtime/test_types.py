"""Types at the plug points: the format-error kinds the docs list, model roles, the episode key, typed plug-ins."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from awm_runtime._errors import FormatError
from awm_runtime._plugins import register, resolve
from awm_runtime._types import FORMAT_ERROR_KINDS, MODEL_ROLES, EpisodeSpec, FormatErrorKind, ModelRole
from awm_runtime.models import ROLES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _documented_kinds() -> list[str]:
    """The first column of the table under `### Format-error kinds` in docs/policies.md."""
    text = (DOCS / "policies.md").read_text(encoding="utf-8")
    section = text.split("### Format-error kinds", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)


def test_the_docs_table_lists_exactly_the_format_error_kinds() -> None:
    documented = _documented_kinds()
    assert len(documented) == len(set(documented))
    assert set(documented) == set(typing.get_args(FormatErrorKind)) == set(FORMAT_ERROR_KINDS)


def test_a_format_error_carries_its_kind() -> None:
    assert FormatError("cut off", kind="truncated").kind == "truncated"


def test_model_roles_are_the_registry_roles() -> None:
    assert MODEL_ROLES == typing.get_args(ModelRole) == ROLES == ("policy", "expert", "judge")


def test_the_episode_key_is_arm_scenario_task_repeat() -> None:
    spec = EpisodeSpec(arm="a", scenario="s", task_idx=3, repeat=1)
    assert spec.key == ("a", "s", 3, 1)


def test_a_registered_plugin_resolves_to_its_factory() -> None:
    def factory(arg: str) -> typing.Any:
        return ("shaper", arg)

    register("rewards", "test_types_shaper", factory)
    assert resolve("rewards", "test_types_shaper") is factory


def test_a_role_s_unknown_cost_is_null_in_records_and_reads_back() -> None:
    """Issue 47: a role with an unpriced call writes cost_usd null (never a partial $); the record reads back, and
    adding usage keeps it unknown."""
    from awm_runtime._types import Usage

    priced = Usage(calls=1, cost_usd=0.25, cost_known=True)
    assert priced.model_dump()["cost_usd"] == 0.25
    unpriced = Usage(calls=1, cost_usd=0.0, cost_known=False)
    dumped = unpriced.model_dump()
    assert dumped["cost_usd"] is None and dumped["cost_known"] is False
    assert '"cost_usd":null' in unpriced.model_dump_json()
    back = Usage(**dumped)
    assert back.cost_usd == 0.0 and back.cost_known is False
    total = Usage()
    total.add(priced)
    total.add(back)
    assert total.model_dump()["cost_usd"] is None and total.cost_known is False
