"""A threaded HTTP server on 127.0.0.1 (free port) for the fake hosted APIs of the tests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # listen backlog: 64 clients connecting at once are not reset (default 5)


class LoopbackServer:
    """Serves ``handler`` on 127.0.0.1 while used as a context manager."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _Server(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port() -> int:
    """A loopback port with nothing listening (connections to it are refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
