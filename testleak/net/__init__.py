"""The one HTTP policy shared by every client of a remote service (the LLM gateway in
:mod:`testleak.llm`, the GitHub code-search backend in :mod:`testleak.verify.github`).

It sits below both: it imports nothing from testleak but :mod:`testleak.errors`.

- :class:`RateLimiter`: requests and tokens per sliding window, plus server-imposed pauses;
- :func:`retry_after`: the wait a server asks for (``retry-after-ms``, ``retry-after`` in
  seconds or as an HTTP date, ``x-ratelimit-reset`` in epoch seconds);
- :class:`RetryPolicy`: exponential backoff with jitter, a total deadline per request
  across retries, a refused connection given up after two quick attempts, and one line on
  stderr per retry (endpoint with credentials masked, error kind, attempt, wait);
- :class:`JsonCache` and :func:`canonical_key`: an on-disk SQLite cache of JSON answers
  keyed by the sha256 of a canonical JSON of everything that changes the answer;
- :class:`CallLog`: a JSONL log of calls (metadata only: never prompt text or secrets);
- :func:`mask_url` / :func:`mask_urls_in_text`: URLs with user-info and secret query
  values masked, for every message a human reads.
"""

from .cache import JsonCache, canonical_key
from .calllog import CallLog
from .ratelimit import RateLimiter
from .retry import (Deadline, GiveUp, Retryable, RetryPolicy, backoff_delay, connection_refused, retry_after,
                    transport_error)
from .urls import mask_url, mask_urls_in_text

__all__ = ["CallLog", "Deadline", "GiveUp", "JsonCache", "RateLimiter", "RetryPolicy", "Retryable",
           "backoff_delay", "canonical_key", "connection_refused", "mask_url", "mask_urls_in_text",
           "retry_after", "transport_error"]
