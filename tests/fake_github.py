"""A real local HTTP server speaking GitHub's REST code-search protocol (``GET /search/code``).

Stands in for api.github.com in tests (no network here). It answers from an in-memory
index ``{query string: [(repo_id, full_name, path), ...]}`` in GitHub's JSON shape
(``total_count``, ``incomplete_results``, ``items[].path``, ``items[].repository.id /
full_name``) with pagination (``per_page``, ``page``) and GitHub's rate-limit headers
(``x-ratelimit-limit/remaining/reset``). Scripted steps (popped one per request) make it
answer 403/429 with ``retry-after`` or ``x-ratelimit-reset``, or any status/body (``raw``: a
text body that is not JSON, ``{q}`` replaced by the query); with
``echo_error`` set to a status it answers every search with that status and a message quoting
the query. Every request is recorded (time, query, page, authorization header).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

from tests.loopback import LoopbackServer


class FakeGitHub(LoopbackServer):
    def __init__(self, index: dict[str, list[tuple[int, str, str]]] | None = None, tokens: set[str] | None = None):
        self.index = dict(index or {})
        self.tokens = tokens            # None: any token accepted; else 401 for others
        self.script: list[dict] = []
        self.echo_error: int | None = None   # answer this status with a message quoting the query
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, status: int, body, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)

            def _send_raw(self, status: int, text: str):
                data = text.encode()
                self.send_response(status)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                u = urlparse(self.path)
                qs = parse_qs(u.query)
                auth = self.headers.get("authorization", "")
                q = qs.get("q", [""])[0]
                page = int(qs.get("page", ["1"])[0])
                per_page = min(100, int(qs.get("per_page", ["30"])[0]))
                with outer._lock:
                    outer.requests.append({"t": time.monotonic(), "wall": time.time(), "path": u.path, "q": q, "page": page,
                                           "per_page": per_page, "auth": auth})
                    step = outer.script.pop(0) if outer.script else None
                reset = int(time.time()) + 60
                rl = {"x-ratelimit-limit": 10, "x-ratelimit-remaining": 9, "x-ratelimit-reset": reset,
                      "x-ratelimit-resource": "code_search"}
                if u.path != "/search/code":
                    return self._send(404, {"message": "Not Found"})
                if outer.tokens is not None and auth.removeprefix("Bearer ") not in outer.tokens:
                    return self._send(401, {"message": "Bad credentials"})
                if step is not None:
                    hdr = dict(rl)
                    hdr.update(step.get("headers") or {})
                    if "raw" in step:      # a body that is not JSON (an HTML page of a proxy)
                        return self._send_raw(step.get("status", 200), step["raw"].replace("{q}", q))
                    return self._send(step.get("status", 200), step.get("body", {"message": "scripted"}), hdr)
                if outer.echo_error is not None:
                    return self._send(outer.echo_error, {"message": f"Validation Failed: cannot search for {q}"}, rl)
                if len(q) > 256:
                    return self._send(422, {"message": "Validation Failed", "errors": [{"message": "query too long"}]}, rl)
                hits = outer.index.get(q, [])
                chunk = hits[(page - 1) * per_page: page * per_page]
                items = [{"name": p.rsplit("/", 1)[-1], "path": p, "sha": "0" * 40,
                          "repository": {"id": rid, "full_name": name, "name": name.split("/")[-1],
                                         "private": False}, "score": 1.0} for rid, name, p in chunk]
                return self._send(200, {"total_count": len(hits), "incomplete_results": False, "items": items}, rl)

        self._serve(Handler)

    @property
    def url(self) -> str:
        return self.origin
