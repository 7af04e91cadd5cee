"""awm-serve's MCP adapter, driven by the MCP SDK's own client: streamable HTTP and stdio."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from awm_runtime._types import ToolCall
from tests.awm_runtime.serve.conftest import running, until


@contextlib.asynccontextmanager
async def mcp_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


async def test_each_mcp_session_is_its_own_episode(builtin_world: Any) -> None:
    task = next(t for t in builtin_world.tasks() if t.key == ("shopfront_commerce", 0))
    (tool, arguments), = builtin_world.solution(task).steps
    async with running(builtin_world, mcp=True) as served:
        url = f"{served.url}/mcp/shopfront_commerce"
        async with mcp_session(url) as first, mcp_session(url) as second:
            listed = (await first.list_tools()).tools
            local = await builtin_world.open(task, episode_id="local")
            try:
                assert [(t.name, t.description, t.inputSchema) for t in listed] == [
                    (t.name, t.description, t.input_schema) for t in local.tools]
                assert not {"verify", "done", "__list_scenarios__"} & {t.name for t in listed}
                created = await first.call_tool(tool, arguments)
                ours = await local.call_tool(ToolCall(id="1", name=tool, arguments=arguments))
                assert created.isError is False and text(created) == ours.text  # the same texts, same ids
            finally:
                await local.close()
            await second.list_tools()
            assert served.hub.active == 2
            coupons = json.loads(text(await second.call_tool("list_coupons", {})))
            assert arguments["code"] not in json.dumps(coupons)  # the second episode has its own DB
            hidden = await second.call_tool("verify", {})
            assert hidden.isError and text(hidden) == "Unknown tool: verify"
            bad = await second.call_tool("get_product", {"product_id": "x"})
            assert bad.isError and text(bad).startswith("Input validation error: ")
        assert await until(lambda: served.hub.active == 0)
        assert not list(builtin_world.episode_dbs())


async def test_the_inspector_style_url_is_the_same_endpoint(builtin_world: Any) -> None:
    """`/<scenario>/mcp`: clients that find streamable HTTP by a trailing /mcp (the MCP Inspector) reach it."""
    async with running(builtin_world, mcp=True) as served:
        async with mcp_session(f"{served.url}/shopfront_commerce/mcp") as session:
            init_tools = {t.name for t in (await session.list_tools()).tools}
            assert "list_coupons" in init_tools
            assert json.loads(text(await session.call_tool("list_coupons", {}))) is not None
            assert served.hub.active == 1
        async with httpx.AsyncClient() as http:
            reply = await http.post(f"{served.url}/atlantis/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert reply.status_code == 404
        assert await until(lambda: served.hub.active == 0)


async def test_unknown_scenarios_answer_404(builtin_world: Any) -> None:
    async with running(builtin_world, mcp=True) as served, httpx.AsyncClient() as http:
        reply = await http.post(f"{served.url}/mcp/atlantis", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert reply.status_code == 404 and reply.json() == {"error": "Scenario 'atlantis' not found"}
        without = await http.post(f"{served.url}/mcp/atlantis")
        assert without.status_code == 404


async def test_mcp_is_off_unless_asked(builtin_world: Any) -> None:
    async with running(builtin_world) as served, httpx.AsyncClient() as http:
        assert (await http.post(f"{served.url}/mcp/shopfront_commerce", json={})).status_code == 404


async def test_stdio_serves_one_episode_per_process() -> None:
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from awm_runtime.cli import serve_main; raise SystemExit(serve_main())",
        "--stdio", "HomeHub Smart Home", "--world-workers", "1"])
    with open("/dev/null", "w") as errlog:  # noqa: ASYNC230 - a test's log sink
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert "list_devices" in tools and "verify" not in tools
            result = await session.call_tool("list_devices", {})
            assert result.isError is False and json.loads(text(result))
