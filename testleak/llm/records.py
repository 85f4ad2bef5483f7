"""The records of one chat call: the request (:class:`ChatRequest`), the answer
(:class:`Completion`) and the cache key an answer is stored under."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

from ..net import canonical_key


@dataclass
class ChatRequest:
    messages: list
    sample: int = 0
    params: dict = field(default_factory=dict)
    purpose: str | None = None  # what the call is for (call log, answer policy; not part of the cache key)
    # the purpose's reader: why a text is not an answer (None: it is one); not part of the cache key
    accept: Callable[[str], str | None] | None = None


@dataclass
class Completion:
    text: str = ""
    status: str = "ok"  # ok | error
    error: str | None = None
    # http_429 | http_5xx | timeout | connection | connection_refused | deadline | malformed | bad_request, or
    # an answer that is not one (.answers: encoding | empty | oversized | truncated | invalid), or not sent
    # (budget | circuit_open)
    error_kind: str | None = None
    finish_reason: str | None = None
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    latency_s: float = 0.0
    cached: bool = False
    model: str = ""
    logprobs: list | None = None
    attempts: int = 0
    # prompt tokens the server took from its prompt cache (KV of an earlier request's prefix), as
    # it reports them (usage.prompt_tokens_details.cached_tokens); None: not reported
    prompt_cached_tokens: int | None = None

    def to_record(self) -> dict:
        """The answer as artifacts keep it: no call state (latency, attempts, whether it came from
        the cache, the server's prompt cache), which the call log holds, so that a stage rerun,
        resumed or served from the cache writes the same bytes."""
        d = asdict(self)
        if d["logprobs"] is None:
            d.pop("logprobs")
        for k in ("prompt_cached_tokens", "latency_s", "attempts", "cached"):
            d.pop(k)
        return d


def cache_key(identity: dict, messages: list, params: dict, sample: int) -> str:
    """The cache key of one chat request: model identity, messages, sampling, sample index."""
    return canonical_key({"model": identity, "messages": messages, "params": params, "sample": sample})
