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
  values masked, for every message a human reads;
- :func:`url_problem` / :func:`check_url`: the shape of an endpoint URL (scheme, host, port, no
  user-info in params), checked at composition; :func:`canonical_url`: one spelling per
  endpoint for cache keys;
- :func:`remote_excerpt`: what of a server's error text may be shown (short, masked).
"""

from .cache import JsonCache, canonical_key
from .calllog import CallLog
from .ratelimit import RateLimiter
from .retry import (Deadline, GiveUp, Retryable, RetryPolicy, backoff_delay, connection_refused, retry_after,
                    transport_error)
from .remote import remote_excerpt
from .urls import canonical_url, check_url, mask_url, mask_urls_in_text, url_problem

__all__ = ["CallLog", "Deadline", "GiveUp", "JsonCache", "RateLimiter", "RetryPolicy", "Retryable",
           "backoff_delay", "canonical_key", "canonical_url", "check_url", "connection_refused", "mask_url",
           "mask_urls_in_text", "remote_excerpt", "retry_after", "transport_error", "url_problem"]
