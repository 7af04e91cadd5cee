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
