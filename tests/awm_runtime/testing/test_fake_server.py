"""The loopback model server answers a kept-alive connection at once, as uvicorn on a real host does."""

from __future__ import annotations

import socket

import httpx

from awm_runtime.testing import FakeOpenAI


def test_accepted_connections_send_without_nagle() -> None:
    # Without TCP_NODELAY every response on a kept-alive connection waits ~40 ms for a delayed ACK,
    # which inflated every latency the benches measured against this server.
    with FakeOpenAI() as server, httpx.Client() as client:
        for _ in range(2):
            reply = client.post(f"{server.url}/chat/completions",
                                json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})
            assert reply.status_code == 200
        connections = list(server._server.server_state.connections)
        assert connections
        for protocol in connections:
            sock = protocol.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


async def test_the_server_counts_completions_in_flight_at_once() -> None:
    import asyncio

    from awm_runtime.testing import Reply

    with FakeOpenAI(default=Reply(content="ok", delay_s=0.2), max_lifetime_s=60) as server:
        async with httpx.AsyncClient(timeout=30) as client:
            body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
            replies = await asyncio.gather(*(client.post(f"{server.url}/chat/completions", json=body)
                                             for _ in range(5)))
        assert all(r.status_code == 200 for r in replies)
        assert server.max_in_flight == 5 and server.in_flight == 0
