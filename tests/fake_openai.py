"""A real local HTTP server that speaks the OpenAI chat-completions protocol.

Stands in for hosted APIs (OpenAI, DeepSeek) that cannot be reached here. Each request
pops the next scripted behaviour; with the script empty it answers normally: ``answer(body)``
when set (the text for a request's JSON body, or a whole response body from
:func:`completion_body`), else ``default_text``. Requests are
counted and recorded (path, headers, JSON body) for assertions.

Fault modes (``mode``, for the requests ``fault_when(body)`` selects; all when it is None)
answer HTTP 200 with something that is not an answer, or an error that echoes the request:
:data:`MODES`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer


#: ``mode`` -> what the server answers: empty content, whitespace only, a judge answer without a
#: verdict, a lone surrogate in the text (the JSON escape ``\\ud800``), 1.1 MB of text (a server
#: that ignores max_tokens), a cut answer (finish_reason length), HTTP 500, and HTTP 400 whose body
#: quotes every message of the request.
MODES = ("empty", "whitespace", "non_verdict", "surrogate", "oversized", "truncated", "error_500", "echo_error")
OVERSIZED_LINE = 'assert send_mail("lena.voigt@mailbox.org")\n'


def model_config(base_url: str | None, *, name: str = "fake", key_env: str | None = "FAKE_OPENAI_KEY",
                 sampling: dict | None = None, limits: dict | None = None, check: bool = True, **fields) -> dict:
    """A complete config of a hosted model at ``base_url`` (this fake endpoint), as a composed
    config gives it to the gateway: ``sampling`` and ``limits`` update those sections, other
    keywords replace fields. Checked against the schema (:class:`testleak.settings.LLM`) unless
    ``check`` is false (a test of the gateway's own checks)."""
    from testleak.settings import LLM

    cfg = {"name": name, "family": "gpt", "provider": "openai", "api_model": "fake-model", "base_url": base_url,
           "base_url_env": None, "api_key_env": key_env, "gguf": None, "server": None,
           "sampling": {"temperature": 0.5, "max_tokens": 16, "extra_body": {}, **(sampling or {})},
           "limits": {"concurrency": 1, "requests_per_minute": None, "tokens_per_minute": None, "timeout": 5,
                      "max_retries": 0, "deadline": 600, **(limits or {})},
           "price": None, **fields}
    if check:
        LLM.model_validate(cfg, strict=True)
    return cfg


def completion_body(text: str, model: str = "fake-model", prompt_tokens: int = 7, completion_tokens: int = 3,
                    logprobs: list[float] | None = None, finish_reason: str = "stop") -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
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
        self.mode: str | None = None     # a fault of MODES
        self.fault_when = None  # callable(request JSON body) -> bool: the requests the mode applies to (None: all)
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
                if step is None and outer.mode is not None and (outer.fault_when is None or outer.fault_when(body)):
                    step = outer.fault(outer.mode, body)
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

    @staticmethod
    def fault(mode: str, body) -> dict:
        """The scripted step of fault ``mode`` (:data:`MODES`) for a request's JSON body."""
        if mode == "error_500":
            return {"status": 500, "body": {"error": {"message": "upstream exploded"}}}
        if mode == "echo_error":
            said = " ".join(str(m.get("content")) for m in (body or {}).get("messages") or [])
            return {"status": 400, "body": {"error": {"message": f"cannot process request: {said}",
                                                      "type": "invalid_request_error"}}}
        text = {"empty": "", "whitespace": " \n\t \n", "non_verdict": "Sorry, I cannot evaluate this.",
                "surrogate": "```python\nname = 'x\ud800'\n```", "oversized": OVERSIZED_LINE * 24_000,
                "truncated": '{"plausible": tr'}.get(mode)
        if text is None:
            raise ValueError(f"unknown fault mode {mode!r}; known: {', '.join(MODES)}")
        return {"status": 200, "body": completion_body(text, finish_reason="length" if mode == "truncated" else "stop")}

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"
