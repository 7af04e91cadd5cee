"""The MCP Inspector CLI (npm, as its users run it) lists and calls tools on `awm-serve --mcp` over HTTP, at the
`/<scenario>/mcp` URL it recognises as streamable HTTP; the MCP SDK's client reaches the same endpoint."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.e2e.mcp_tools import npm_tool
from tests.e2e.test_serve import serving


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serving("--mcp") as url:
        yield url


def inspector(*args: str) -> dict:
    proc = subprocess.run([str(npm_tool("mcp-inspector")), "--cli", *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return json.loads(proc.stdout)


def test_the_inspector_cli_lists_and_calls_tools_over_http(served: str) -> None:
    url = f"{served}/shopfront_commerce/mcp"
    listed = inspector(url, "--method", "tools/list")
    names = {t["name"] for t in listed["tools"]}
    assert "list_coupons" in names and "create_coupon" in names and not {"verify", "done"} & names
    called = inspector(url, "--method", "tools/call", "--tool-name", "list_products")
    assert called.get("isError") in (None, False)
    products = json.loads(called["content"][0]["text"])
    assert products  # the scenario's seeded catalogue
    bad = inspector(url, "--method", "tools/call", "--tool-name", "get_product", "--tool-arg", "product_id=x")
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("Input validation error: ")


def test_the_sdk_client_reaches_the_same_url(served: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> set[str]:
        async with streamable_http_client(f"{served}/shopfront_commerce/mcp") as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return {t.name for t in (await session.list_tools()).tools}

    assert "list_coupons" in asyncio.run(go())
