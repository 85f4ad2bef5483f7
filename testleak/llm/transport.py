"""Sending one chat completion of a gateway: the `openai` client's errors mapped to retries, failed
:class:`Completion` records or configuration errors; the response read into a :class:`Completion`;
and the circuit breaker over an endpoint's failed calls in a row."""

from __future__ import annotations

import threading
import time
from typing import Mapping

from ..errors import AuthError, LLMError
from .budget import estimate_prompt_tokens
from .records import Completion
from ..net import GiveUp, Retryable, mask_urls_in_text, remote_excerpt, retry_after, transport_error


def send_chat(gw, messages: list, params: dict) -> Completion:
    """One chat completion of gateway ``gw`` (the body of :meth:`Gateway._call`): sent under its retry
    policy and rate limiter, a temporary failure retried, any other one a failed :class:`Completion`."""
    import openai

    client = gw._ensure_client()
    kwargs = _request_kwargs(gw, params)
    want_logprobs = bool(kwargs.get("logprobs"))
    est = estimate_prompt_tokens(messages) + int(kwargs.get("max_tokens") or 0)
    attempts = 0
    t0 = time.monotonic()

    def send(timeout: float):
        nonlocal attempts
        gw.limiter.acquire(est)
        attempts += 1
        gw._count("requests")
        if attempts > 1:
            gw._count("retries")
        return _create(gw, client, messages, kwargs, timeout)

    def error(kind: str, message: str) -> Completion:
        return Completion(status="error", error_kind=kind, model=gw.name, attempts=attempts,
                          latency_s=time.monotonic() - t0, error=mask_urls_in_text(message))

    try:
        resp = gw.policy.call(gw.endpoint, send)
    except GiveUp as g:
        return error(g.kind, str(g))
    except LLMError:
        raise
    except openai.APIStatusError as e:  # 400, 409, 422, ...: not temporary; the body may echo the prompt
        sent = [m.get("content") for m in messages if isinstance(m, Mapping)]
        return error("bad_request", f"HTTP {e.status_code}: {remote_excerpt(_error_message(e), sent)}")
    except Exception as e:  # malformed JSON, unexpected shapes
        return error("malformed", f"unparsable response: {type(e).__name__}")
    try:
        c = parse_response(resp, want_logprobs)
    except Exception as e:
        return error("malformed", f"unparsable response: {type(e).__name__}")
    c.latency_s = time.monotonic() - t0
    c.attempts = attempts
    c.model = gw.name
    gw.limiter.adjust(est, sum(c.usage.values()))
    return c


def _request_kwargs(gw, params: dict) -> dict:
    """The client's keyword arguments: the sampling ``params``, and for a llama.cpp pool prompt
    caching as its server is configured (the gateway's typed ``server`` settings)."""
    kwargs = dict(params)
    if gw._pool is not None:
        kwargs["extra_body"] = {**(kwargs.get("extra_body") or {}), "cache_prompt": gw.server.cache_prompt}
    return kwargs


def _create(gw, client, messages: list, kwargs: dict, timeout: float):
    """One request to the endpoint (or to a free server of the pool), the client's errors mapped:
    401 / 403 / 404 to configuration errors, 429, 5xx and transport failures to :class:`Retryable`
    (with the server's retry-after); any other error passes through."""
    import openai

    try:
        if gw._pool is None:
            return client.chat.completions.create(model=gw.cfg.get("api_model"), messages=messages,
                                                  timeout=timeout, **kwargs)
        with gw._pool.checkout() as i:     # a free server of the pool; any gives the same answer
            return gw._clients[i].chat.completions.create(
                model=gw.cfg.get("api_model"), messages=messages, timeout=timeout, **kwargs)
    except openai.AuthenticationError:
        raise AuthError(f"model {gw.name!r}: HTTP 401 unauthorized; check the API key in {_key_var(gw)}",
                        status=401) from None
    except openai.PermissionDeniedError:
        raise AuthError(f"model {gw.name!r}: HTTP 403 forbidden; the key in {_key_var(gw)} "
                        f"has no access to {gw.cfg.get('api_model')!r}", status=403) from None
    except openai.NotFoundError:
        raise LLMError(
            f"model {gw.name!r}: HTTP 404; the endpoint {gw.endpoint} has no model "
            f"{gw.cfg.get('api_model')!r} (fix api_model / base_url in conf/model/{gw.name}.yaml)",
            status=404) from None
    except openai.RateLimitError as e:
        raise Retryable("http_429", "HTTP 429", wait=retry_after(e.response.headers)) from None
    except openai.InternalServerError as e:
        raise Retryable("http_5xx", f"HTTP {e.status_code}", wait=retry_after(e.response.headers)) from None
    except openai.APIConnectionError as e:  # APITimeoutError included
        raise transport_error(e, isinstance(e, openai.APITimeoutError), timeout) from None


def _key_var(gw) -> str:
    """The API key's environment variable as a message names it: ``$VAR``, or that the model
    config names none (``api_key_env``)."""
    env = gw.cfg.get("api_key_env")
    return f"${env}" if env else "(no api_key_env in the model config)"


def parse_response(resp, want_logprobs: bool) -> Completion:
    """The :class:`Completion` of an endpoint's chat-completions response (raises on a malformed one)."""
    if isinstance(resp, str):
        raise ValueError("response body is not a JSON object")
    choices = getattr(resp, "choices", None)
    if not choices:
        raise ValueError("response has no choices")
    ch = choices[0]
    msg = getattr(ch, "message", None)
    text = getattr(msg, "content", None) or ""
    usage = getattr(resp, "usage", None)
    u = {"prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
         "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    lps = None
    if want_logprobs and getattr(ch, "logprobs", None) is not None and ch.logprobs.content:
        lps = [float(t.logprob) for t in ch.logprobs.content]
    return Completion(text=text, status="ok", finish_reason=getattr(ch, "finish_reason", None), usage=u,
                      logprobs=lps, prompt_cached_tokens=None if cached is None else int(cached))


def _error_message(e) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the client's message."""
    body = getattr(e, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
        if inner.get("message"):
            return str(inner["message"])
    return str(getattr(e, "message", "") or "")


class CircuitBreaker:
    """Opens after ``limit`` failed calls in a row of one endpoint (:attr:`reason` then says
    why, one line); a success in between closes the count again. Thread-safe."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self.in_row = 0
        self.reason: str | None = None
        self._lock = threading.Lock()

    def success(self) -> None:
        with self._lock:
            if self.reason is None:
                self.in_row = 0

    def failure(self, endpoint: str, c: Completion) -> None:
        with self._lock:
            self.in_row += 1
            if self.reason is None and self.in_row >= self.limit:
                self.reason = (f"{self.limit} calls in a row to {endpoint} failed (last: {c.error_kind}; "
                               f"limits.max_consecutive_failures={self.limit})")
