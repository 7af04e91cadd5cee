"""Who may talk to awm-serve: its own origin only. No cross-site WebSocket, no DNS rebinding.

A browser lets any web page open a WebSocket to `ws://127.0.0.1:8000/ws`, sending the page's `Origin`. And a
page on a name the attacker rebinds to 127.0.0.1 reaches `/mcp/...` with its own name in `Host`. So every HTTP
request and WebSocket upgrade, on every route, is checked before it reaches a route:

- `Host` must be an IP literal (rebinding needs a name), `localhost` (or `*.localhost`), or the host of an
  origin given with `--allow-origin`;
- `Origin`, when present (browsers send it; scripts and SDK clients do not), must be the server's own origin
  (`http(s)://` + the request's `Host`) or one given with `--allow-origin`.

`--allow-origin '*'` turns both checks off. A refused WebSocket gets HTTP 403 before the upgrade; a refused
request gets 403 (a foreign origin) or 421 (a foreign host), with one line saying which flag opens it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send


def _hostname(netloc: str) -> str:
    """`host` from `host:port`, `[v6]:port` or `host`, lowercased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1:].split("]", 1)[0]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def normalize_origin(origin: str) -> str:
    """`scheme://host[:port]`, lowercased, without a path or trailing slash; "*" stays "*"."""
    origin = origin.strip()
    if origin == "*":
        return origin
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{origin!r} is not an origin (scheme://host[:port], e.g. http://localhost:3000)")
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The server's own origin, plus the origins opened deliberately (`--allow-origin`)."""

    allowed: tuple[str, ...] = ()

    @classmethod
    def of(cls, origins: Iterable[str]) -> OriginPolicy:
        return cls(tuple(normalize_origin(o) for o in origins))

    def refusal(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """(status, why) when a request with these headers is refused; None when it may go on."""
        if "*" in self.allowed:
            return None
        extra_hosts = {_hostname(urlsplit(o).netloc) for o in self.allowed}
        if host is not None:
            name = _hostname(host)
            if not (_is_ip(name) or name == "localhost" or name.endswith(".localhost") or name in extra_hosts):
                return 421, f"Host {host!r} is not this server's; start awm-serve with --allow-origin to serve it"
        if origin is None:
            return None
        seen = origin.strip().lower().rstrip("/")
        if seen in self.allowed:
            return None
        if host is not None and seen in (f"http://{host.strip().lower()}", f"https://{host.strip().lower()}"):
            return None
        return 403, f"Origin {origin!r} is not this server's; start awm-serve with --allow-origin {origin} to allow it"


class OriginGuard:
    """ASGI middleware: refuse requests and WebSocket upgrades `policy` refuses, on every route."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        for name, value in scope.get("headers", ()):
            if name == b"host" and host is None:
                host = value.decode("latin-1")
            elif name == b"origin" and origin is None:
                origin = value.decode("latin-1")
        refused = self.policy.refusal(host, origin)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, why = refused
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})  # the server answers 403
            return
        await PlainTextResponse(why, status_code=status)(scope, receive, send)
