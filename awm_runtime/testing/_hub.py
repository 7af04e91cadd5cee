"""FakeHub: a loopback server that serves a directory as a Hugging Face dataset repo, as the Hub does.

It answers what huggingface_hub's `snapshot_download` and `hf_hub_download` ask (read from
huggingface_hub 1.x `_snapshot_download.py`, `file_download.py` and `hf_api.py`):
- `GET /api/datasets/{repo}/revision/{rev}`: the repo info (`sha` is the commit; `siblings` for 0.x);
- `GET /api/datasets/{repo}/tree/{rev}`: the file listing (`type`, `path`, `size`, `oid`);
- `HEAD|GET /datasets/{repo}/resolve/{rev}/{file}`: the file, with `X-Repo-Commit`, `ETag` (the git
  blob id) and `Content-Length`; a missing file is 404 `X-Error-Code: EntryNotFound`, an unknown
  repo 401 `X-Error-Code: RepoNotFound`, as the Hub answers anonymous callers.
Every request is counted, so a test can show what touched the network. It binds 127.0.0.1 only and
stops by itself after `lifetime_s`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Serve `root`'s files as dataset `repo_id` at one commit. Use as a context manager."""

    def __init__(self, root: Path, repo_id: str, *, commit: str = "0123456789abcdef0123456789abcdef01234567",
                 lifetime_s: float = 120.0) -> None:
        self.root = Path(root)
        self.repo_id = repo_id
        self.commit = commit
        self.lifetime_s = lifetime_s
        self.requests: Counter[str] = Counter()  # "METHOD path" -> count
        self.files = {p.name: p for p in sorted(self.root.iterdir()) if p.is_file()}
        self._server: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def file_requests(self) -> int:
        """How many requests fetched or probed a file (HEAD or GET on resolve)."""
        return sum(n for key, n in self.requests.items() if "/resolve/" in key)

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_HEAD(self) -> None:
                hub._answer(self, head=True)

            def do_GET(self) -> None:
                hub._answer(self, head=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._timer = threading.Timer(self.lifetime_s, self._server.shutdown)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _revision_ok(self, rev: str) -> bool:
        return rev in ("main", self.commit)

    def _answer(self, req: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = unquote(urlsplit(req.path).path)
        self.requests[f"{req.command} {path}"] += 1
        api = f"/api/datasets/{self.repo_id}/"
        resolve = f"/datasets/{self.repo_id}/resolve/"
        if path.startswith(api + "revision/"):
            rev = path[len(api + "revision/"):]
            if not self._revision_ok(rev):
                return self._error(req, 404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return self._json(req, {"id": self.repo_id, "sha": self.commit, "private": False, "disabled": False,
                                    "siblings": [{"rfilename": name} for name in self.files]}, head)
        if path.startswith(api + "tree/"):
            rev = path[len(api + "tree/"):].split("/", 1)[0]
            if not self._revision_ok(rev):
                return self._error(req, 404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return self._json(req, [{"type": "file", "path": name, "size": p.stat().st_size,
                                     "oid": git_blob_id(p.read_bytes())} for name, p in self.files.items()], head)
        if path.startswith(resolve):
            rev, _, name = path[len(resolve):].partition("/")
            if not self._revision_ok(rev):
                return self._error(req, 404, "RevisionNotFound", f"Invalid rev id: {rev}")
            if name not in self.files:
                return self._error(req, 404, "EntryNotFound", f"{name} does not exist", commit=True)
            data = self.files[name].read_bytes()
            req.send_response(200)
            req.send_header("Content-Type", "application/octet-stream")
            req.send_header("Content-Length", str(len(data)))
            req.send_header("ETag", f'"{git_blob_id(data)}"')
            req.send_header("X-Repo-Commit", self.commit)
            req.send_header("Accept-Ranges", "bytes")
            req.end_headers()
            if not head:
                req.wfile.write(data)
            return None
        return self._error(req, 401, "RepoNotFound", "Repository not found")

    def _json(self, req: BaseHTTPRequestHandler, body: Any, head: bool) -> None:
        data = json.dumps(body).encode()
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        if not head:
            req.wfile.write(data)

    def _error(self, req: BaseHTTPRequestHandler, status: int, code: str, message: str, *,
               commit: bool = False) -> None:
        data = json.dumps({"error": message}).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.send_header("X-Error-Code", code)
        req.send_header("X-Error-Message", message)
        if commit:
            req.send_header("X-Repo-Commit", self.commit)
        req.end_headers()
        if req.command != "HEAD":
            req.wfile.write(data)
