"""The one HTTP policy shared by every client of a remote service (the LLM gateway in
:mod:`testleak.llm`, the GitHub code-search backend in :mod:`testleak.verify.github`).

It sits below both and imports nothing from testleak but :mod:`testleak.errors`. Pieces:
:class:`RateLimiter` (sliding windows plus server-imposed pauses), :func:`retry_after`,
:class:`RetryPolicy` (backoff with jitter, total deadline, one stderr line per retry),
:class:`JsonCache` / :func:`canonical_key` (SQLite cache keyed by the sha256 of everything that
changes the answer), :class:`CallLog` (metadata only, never prompt text or secrets),
:func:`mask_url` / :func:`mask_urls_in_text` (for every message a human reads),
:func:`url_problem` / :func:`check_url` / :func:`canonical_url` (endpoint shape; one spelling per
endpoint for cache keys) and :func:`remote_excerpt` (a server's error text, short and masked).
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
