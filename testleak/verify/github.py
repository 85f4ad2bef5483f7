"""GitHub code search backend (REST ``GET /search/code``), the paper's corpus proxy (Sec. 3.2, 4.3).

The REST endpoint runs GitHub's legacy engine, which ignores punctuation, caps queries at 256
characters and counts files in ``total_count``, so :func:`github_query` replaces punctuation by
spaces (as CodexLeaks does) and quotes the result as a phrase cut at a word boundary. A token is
required (env var names in config, rotated round-robin); 10 requests per minute per token are
enforced client-side, and 403/429 pause that token for ``retry-after`` / ``x-ratelimit-reset``.
Pages are followed up to ``max_hits``, keeping repository ids (for IL-L); answers are cached on
disk keyed by API URL and query. The raw value never enters the cache, the call log, a retry line
or the record (only its mask), and GitHub's error bodies are shown as masked excerpts. The HTTP
policy is :mod:`testleak.net`'s; NOTES.md has the operational rules.
"""

from __future__ import annotations

import os
import re
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

import requests

from ..errors import ConfigError
from ..net import (CallLog, GiveUp, JsonCache, RateLimiter, Retryable, RetryPolicy, canonical_key, mask_url,
                   mask_urls_in_text, remote_excerpt, retry_after, transport_error)
from ..privacy import mask
from ..settings import GitHubSearch as GitHubSettings

ENGINE = "github-rest-legacy"
QUERY_LIMIT = 256
# punctuation the legacy engine ignores (NOTES.md), plus whitespace-like separators
_PUNCT = re.compile(r"""[.,:;/\\'"=*!?#$&+^|~<>(){}\[\]@`%\s]+""")


def github_query(value: str, limit: int = QUERY_LIMIT) -> str | None:
    """The phrase query for ``value``: punctuation -> spaces, quoted, at most ``limit``
    characters (cut at a token boundary). None when nothing searchable is left."""
    norm = _PUNCT.sub(" ", value).strip()
    if not norm:
        return None
    room = limit - 2
    if len(norm) > room:
        cut = norm[:room]
        if norm[room] != " " and " " in cut:
            cut = cut.rsplit(" ", 1)[0]
        norm = cut.rstrip()
    return f'"{norm}"'


class GitHubSearch:
    """``search(value) -> {k, repo_ids, repos, paths, outcome, query, engine, searched_at}``."""

    engine = ENGINE

    def __init__(self, cfg: GitHubSettings, cache_dir: str | os.PathLike, *, min_query_chars: int,
                 env: Mapping[str, str] | None = None, session: requests.Session | None = None,
                 log_path: str | os.PathLike | None = None, echo: Callable[[str], None] | None = None):
        """``cfg``: ``verifier.github``; ``min_query_chars``: ``verifier.min_query_chars``."""
        env = os.environ if env is None else env
        self.api_url = cfg.api_url.rstrip("/")
        names = list(cfg.token_envs)
        self.tokens = [env[n] for n in names if env.get(n)]
        if not self.tokens:
            raise ConfigError(f"GitHub code search needs a token: set the environment variable "
                              f"{' or '.join(names)} (verifier.github.token_envs), or use verifier=local")
        rpm, window = cfg.requests_per_minute, cfg.window_seconds
        try:
            self.limiters = [RateLimiter(int(rpm), None, float(window)) for _ in self.tokens]
        except (ConfigError, ValueError, TypeError):
            raise ConfigError(f"verifier.github.requests_per_minute = {rpm!r}, window_seconds = {window!r}: expected "
                              f"an integer >= 1 and a number of seconds > 0") from None
        # deadline null: 900 s (RetryPolicy's fallback; conf/ sets it)
        self.policy = RetryPolicy.from_config(cfg.model_dump(), "verifier.github", timeout=cfg.timeout, deadline=900.0,
                                              max_retries=cfg.max_retries, echo=echo)
        self.per_page, self.max_hits, self.max_pages = cfg.per_page, cfg.max_hits, cfg.max_pages
        self.min_chars = min_query_chars
        self.cache = JsonCache(Path(cache_dir) / "github" / "searches.sqlite", table="searches")
        self.calls = CallLog(log_path)
        self.session = session or requests.Session()
        self._next = 0
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "cache_hits": 0, "rate_limited": 0, "errors": 0}

    @property
    def endpoint(self) -> str:
        """The search URL with credentials masked (no query: it holds the raw value)."""
        return mask_url(f"{self.api_url}/search/code")

    def _cache_key(self, query: str) -> str:
        return canonical_key([self.engine, self.api_url, query, self.per_page, self.max_pages, self.max_hits])

    def _token(self) -> tuple[int, str]:
        """Round-robin over tokens, preferring one that is free now."""
        with self._lock:
            order = [(self._next + i) % len(self.tokens) for i in range(len(self.tokens))]
            waits = [(self.limiters[i].wait_time(), n, i) for n, i in enumerate(order)]
            _, _, i = min(waits)
            self._next = (i + 1) % len(self.tokens)
        return i, self.tokens[i]

    def _get(self, query: str, page: int) -> dict:
        """One page of results, or ``{"_error": reason}``; ``_attempts`` says how many were made."""
        attempts = 0

        def send(timeout: float) -> dict:
            nonlocal attempts
            i, tok = self._token()
            self.limiters[i].acquire()
            attempts += 1
            self.stats["requests"] += 1
            try:
                r = self.session.get(f"{self.api_url}/search/code",
                                     params={"q": query, "per_page": self.per_page, "page": page},
                                     headers={"Authorization": f"Bearer {tok}",
                                              "Accept": "application/vnd.github+json",
                                              "X-GitHub-Api-Version": "2022-11-28"},
                                     timeout=timeout)
            except requests.RequestException as e:
                raise transport_error(e, isinstance(e, requests.Timeout), timeout) from None
            if r.status_code == 200:
                try:
                    data = r.json()
                except ValueError:     # an HTML page of a proxy, a cut body: its text is never shown
                    data = None
                if not isinstance(data, dict) or not isinstance(data.get("items", []), list):
                    return {"_error": "HTTP 200: unparsable response (not a code-search result)", "_kind": "malformed"}
                return data
            if r.status_code == 401:
                raise ConfigError("GitHub rejected the token (401): check the variables named in "
                                  "verifier.github.token_envs")
            if r.status_code in (403, 429):
                self.stats["rate_limited"] += 1
                wait = retry_after(r.headers)
                if wait is not None:  # pause this token only; another one may go on
                    self.limiters[i].block(wait)
                raise Retryable("rate_limited", f"HTTP {r.status_code}", wait=wait, deferred=wait is not None)
            if r.status_code == 422:
                return {"_error": f"HTTP 422 query rejected: {_msg(r, query)}"}
            if r.status_code >= 500:
                raise Retryable("http_5xx", f"HTTP {r.status_code}", wait=retry_after(r.headers))
            return {"_error": f"HTTP {r.status_code}: {_msg(r, query)}"}

        try:
            data = self.policy.call(self.endpoint, send)
        except GiveUp as g:
            data = {"_error": str(g), "_kind": g.kind}
        return {**data, "_attempts": attempts}

    def search(self, value: str) -> dict:
        # searched_at: the date of the (cached) answer; None when nothing was answered, so a
        # rerun of the stage over the same cache writes the same records.
        base = {"query": mask(value), "engine": self.engine, "searched_at": None}
        q = github_query(value) if isinstance(value, str) else None
        if q is None or len(q) - 2 < self.min_chars:
            return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "unverifiable",
                    "reason": "nothing searchable after removing punctuation GitHub ignores"
                    if q is None else f"query shorter than {self.min_chars} characters"}
        key = self._cache_key(q)
        hit = self.cache.get(key)
        if hit is not None:
            self.stats["cache_hits"] += 1
            self.calls.write(backend="github", key=key[:16], status="ok", cached=True, attempts=0, latency_s=0.0)
            return {**hit, "cached": True}
        t0 = time.monotonic()
        attempts = 0
        items: list[dict] = []
        total = incomplete = None
        for page in range(1, self.max_pages + 1):
            data = self._get(q, page)
            attempts += data.pop("_attempts")
            if "_error" in data:
                self.stats["errors"] += 1
                self.calls.write(backend="github", key=key[:16], status="error", error_kind=data.get("_kind", "http"),
                                 cached=False, attempts=attempts, latency_s=round(time.monotonic() - t0, 3))
                return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "error",
                        "reason": mask_urls_in_text(data["_error"])[:300]}
            total = int(data.get("total_count", 0)) if total is None else total
            incomplete = bool(data.get("incomplete_results")) or bool(incomplete)
            got = data.get("items") or []
            items.extend(got)
            if not got or len(items) >= min(total, self.max_hits):
                break
        items = items[: self.max_hits]
        repo_ids = sorted({it["repository"]["id"] for it in items})
        names = {it["repository"]["id"]: it["repository"].get("full_name", "") for it in items}
        rec = {**base, "searched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "k": total, "repo_ids": repo_ids, "repos": [names[r] for r in repo_ids],
               "paths": [f'{it["repository"].get("full_name", "")}/{it.get("path", "")}' for it in items],
               "outcome": "searched", "incomplete_results": incomplete}
        self.cache.put(key, rec)
        self.calls.write(backend="github", key=key[:16], status="ok", cached=False, attempts=attempts,
                         latency_s=round(time.monotonic() - t0, 3))
        return {**rec, "cached": False}

    def close(self) -> None:
        self.cache.close()


def _msg(r, query: str) -> str:
    """A masked excerpt of GitHub's error message (:func:`testleak.net.remote_excerpt`): the body
    may quote the query, which holds the value searched for."""
    try:
        body = r.json()
        text = body.get("message", "") if isinstance(body, dict) else body
    except ValueError:
        text = r.text
    return remote_excerpt(text, [query])
