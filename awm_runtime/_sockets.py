"""A bound TCP socket for the loopback servers we run (the fake model server, the human expert desk)."""

from __future__ import annotations

import socket


def bound_tcp_socket(host: str, port: int = 0) -> socket.socket:
    """Bind `host:port` (0: any free port) before uvicorn serves it, so the caller knows the port at once.

    IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without it
    a kept-alive connection waits ~40 ms (Nagle against delayed ACK) for every response body.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock
