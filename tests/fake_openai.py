"""A real local HTTP server that speaks the OpenAI chat-completions protocol.

Stands in for hosted APIs (OpenAI, DeepSeek) that cannot be reached here. Each request
pops the next scripted behaviour; with the script empty it answers normally: ``answer(body)``
when set (the text for a request's JSON body, or a whole response body from
:func:`completion_body`), else ``default_text``. Requests are
counted and recorded (path, headers, JSON body) for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer


def completion_body(text: str, model: str = "fake-model", prompt_tokens: int = 7, completion_tokens: int = 3,
                    logprobs: list[float] | None = None) -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": f"t{i}", "logprob": lp, "bytes": None, "top_logprobs": []}
                                          for i, lp in enumerate(logprobs)]}
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class FakeOpenAI(LoopbackServer):
    """Scripted behaviours: dicts with ``status`` (int), ``headers`` (dict), ``body``
    (dict or raw str), ``delay`` (seconds before answering)."""

    def __init__(self):
        self.script: list[dict] = []
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.default_text = "ok"
        self.answer = None      # callable(request JSON body) -> answer text
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                with outer._lock:
                    outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body})
                    outer.times.append(time.monotonic())
                    step = outer.script.pop(0) if outer.script else None
                if step is None:
                    text = outer.answer(body) if outer.answer is not None else outer.default_text
                    # answer() may return a whole body (completion_body(...), e.g. with its own usage)
                    step = {"status": 200, "body": text if isinstance(text, dict) else completion_body(text)}
                if step.get("delay"):
                    time.sleep(step["delay"])
                payload = step.get("body", {})
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(step.get("status", 200))
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in (step.get("headers") or {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._serve(Handler)

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"
