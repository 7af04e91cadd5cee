"""awm-serve answers its own origin only: a web page's WebSocket and a DNS-rebinding request are refused,
on a real socket, unless `--allow-origin` opens them; SDK clients (no Origin header) are unaffected."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from awm_runtime.serve import Listen, ServeOptions, SessionHub, create_app, serve
from awm_runtime.serve._origin import OriginPolicy, normalize_origin
from tests.awm_runtime.serve.conftest import running


@pytest.mark.parametrize(("host", "origin", "allowed", "status"), [
    ("127.0.0.1:8000", None, (), None),
    ("localhost:8000", "http://localhost:8000", (), None),
    ("[::1]:8000", "http://[::1]:8000", (), None),
    ("10.1.2.3:8000", "https://10.1.2.3:8000", (), None),
    ("127.0.0.1:8000", "https://evil.example", (), 403),
    ("127.0.0.1:8000", "null", (), 403),
    ("127.0.0.1:8000", "http://127.0.0.1:9999", (), 403),
    ("evil.example:8000", "http://evil.example:8000", (), 421),
    ("evil.example:8000", None, (), 421),
    ("app.internal:8000", "http://app.internal:8000", ("http://app.internal:8000",), None),
    ("127.0.0.1:8000", "http://localhost:3000", ("http://localhost:3000/",), None),
    ("evil.example", "https://evil.example", ("*",), None),
])
def test_the_rule(host: str, origin: str | None, allowed: tuple[str, ...], status: int | None) -> None:
    refused = OriginPolicy.of(allowed).refusal(host, origin)
    assert (refused[0] if refused else None) == status, refused


def test_an_origin_flag_must_be_an_origin() -> None:
    with pytest.raises(ValueError, match="not an origin"):
        normalize_origin("evil.example")


async def _ws_list(url: str, origin: str | None) -> Any:
    headers = {"Origin": origin} if origin else None
    async with websockets.connect(url, additional_headers=headers, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "__list_scenarios__",
                                                           "arguments": {}}}))
        return json.loads(await ws.recv())


async def test_a_web_pages_websocket_and_a_rebinding_request_are_refused(builtin_world: Any) -> None:
    async with running(builtin_world, mcp=True) as served:
        assert (await _ws_list(served.ws_url, None))["type"]  # an SDK client sends no Origin
        assert (await _ws_list(served.ws_url, served.url))["type"]  # the server's own origin
        with pytest.raises(InvalidStatus) as refused:
            await _ws_list(served.ws_url, "https://evil.example")
        assert refused.value.response.status_code == 403
        assert served.hub.world.pool.started == 0  # nothing ran for the page
        port = served.url.rsplit(":", 1)[1]
        async with httpx.AsyncClient() as client:
            rebound = await client.post(f"{served.url}/mcp/shopfront_commerce", json={},
                                        headers={"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"})
            assert rebound.status_code == 421 and "--allow-origin" in rebound.text
            foreign = await client.post(f"{served.url}/mcp/shopfront_commerce", json={},
                                        headers={"Origin": "https://evil.example"})
            assert foreign.status_code == 403
            health = await client.get(f"{served.url}/health")
            assert health.status_code == 200


async def test_allow_origin_opens_it_deliberately(builtin_world: Any) -> None:
    import asyncio

    hub = SessionHub(builtin_world, ServeOptions())
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    app = create_app(hub, allow_origins=("https://tool.example",))
    task = asyncio.create_task(serve(app, Listen(host="127.0.0.1", port=0, max_lifetime_s=60), ready.set_result,
                                     stop=stop))
    try:
        url = await asyncio.wait_for(asyncio.shield(ready), 30)
        ws_url = url.replace("http", "ws", 1) + "/ws"
        assert (await _ws_list(ws_url, "https://tool.example"))["type"]
        with pytest.raises(InvalidStatus):
            await _ws_list(ws_url, "https://evil.example")
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
