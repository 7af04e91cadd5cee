"""Tools from OpenAPI: fastapi-mcp names and flat schemas, argument splitting, result texts."""

from __future__ import annotations

from typing import Any

from awm_runtime import ToolCall
from awm_runtime.worlds._tools import result_text
from tests.conftest import task_of


async def test_tool_listing_is_flat_and_named_by_operation_id(tiny_world: Any) -> None:
    session = await tiny_world.open(task_of(tiny_world, 0), episode_id="tools")
    try:
        tools = {t.name: t for t in session.tools}
        assert set(tools) == {"list_notes", "get_note", "create_note", "delete_note"}
        create = tools["create_note"].input_schema
        assert create["required"] == ["title"] and set(create["properties"]) == {"title", "body"}
        assert tools["get_note"].input_schema["required"] == ["note_id"]
        assert tools["list_notes"].description.startswith("List notes\n\n")
    finally:
        await session.close()


async def test_calls_route_path_query_and_body(tiny_world: Any) -> None:
    session = await tiny_world.open(task_of(tiny_world, 0), episode_id="calls")
    try:
        made = await session.call_tool(ToolCall(id="1", name="create_note", arguments={"title": "A", "body": "b"}))
        assert not made.is_error and '"title": "A"' in made.text
        found = await session.call_tool(ToolCall(id="2", name="list_notes", arguments={"title": "A"}))
        assert '"title": "A"' in found.text and "Todo" not in found.text
        missing = await session.call_tool(ToolCall(id="3", name="get_note", arguments={"note_id": 999}))
        assert missing.is_error and missing.text.startswith("Error calling get_note. Status code: 500.")
        invalid = await session.call_tool(ToolCall(id="4", name="get_note", arguments={"note_id": "x"}))
        assert invalid.status == 422 and "Status code: 422" in invalid.text
    finally:
        await session.close()


async def test_episodes_do_not_share_state(tiny_world: Any) -> None:
    a = await tiny_world.open(task_of(tiny_world, 0), episode_id="a")
    b = await tiny_world.open(task_of(tiny_world, 0), episode_id="b")
    try:
        await a.call_tool(ToolCall(id="1", name="create_note", arguments={"title": "only-a"}))
        seen_by_b = await b.call_tool(ToolCall(id="2", name="list_notes", arguments={"title": "only-a"}))
        assert '"notes": []' in seen_by_b.text
    finally:
        await a.close()
        await b.close()


def test_result_text_matches_fastapi_mcp() -> None:
    assert result_text("t", 200, b'{"a":1}') == ('{\n  "a": 1\n}', False)
    assert result_text("t", 404, b"nope") == ("Error calling t. Status code: 404. Response: nope", True)
