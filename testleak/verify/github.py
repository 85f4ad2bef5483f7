"""GitHub code search backend (REST ``GET /search/code``), the paper's corpus proxy (Sec. 3.2, 4.3).

Paper: "we query the GitHub code search API using either the full string or a
discriminative substring. Let k denote the number of search hits". The REST endpoint runs
GitHub's legacy engine, which ignores punctuation (so ``a.b@c.com`` is searched as the
token sequence ``a b c com``), caps queries at 256 characters and counts files in
``total_count``. :func:`github_query` therefore replaces punctuation by spaces (as
CodexLeaks does) and quotes the result as a phrase, cut at a word boundary to fit.

Operational rules (NOTES.md): a token is required (names of environment variables in
config, rotated round-robin); 10 requests per minute per token, enforced client-side by a
sliding-window limiter; 403/429 answers wait for ``retry-after`` or ``x-ratelimit-reset``
and retry; pages are followed until up to ``max_hits`` hits are collected, keeping the
repository ids (needed for the IL-L metric); every answer is cached on disk under
``.cache/search/github`` keyed by API URL and query, with the engine and search date.
The raw value never enters the cache files or the returned record (only its mask).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

import requests

from ..errors import ConfigError, SearchError
from ..privacy import mask

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


class SlidingWindowLimiter:
    """At most ``n`` events per ``window`` seconds (per key), blocking until allowed."""

    def __init__(self, n: int, window: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if n < 1 or window <= 0:
            raise ConfigError("verifier.github.requests_per_minute must be >= 1 and window_seconds > 0")
        self.n, self.window, self.clock, self.sleep = n, window, clock, sleep
        self.events: dict[str, deque] = {}
        self.blocked_until: dict[str, float] = {}
        self.lock = threading.Lock()

    def wait_time(self, key: str) -> float:
        now = self.clock()
        q = self.events.setdefault(key, deque())
        while q and now - q[0] >= self.window:
            q.popleft()
        w = 0.0 if len(q) < self.n else self.window - (now - q[0])
        return max(w, self.blocked_until.get(key, 0.0) - now, 0.0)

    def acquire(self, key: str) -> float:
        waited = 0.0
        while True:
            with self.lock:
                w = self.wait_time(key)
                if w <= 0:
                    self.events[key].append(self.clock())
                    return waited
            self.sleep(w + 0.005)
            waited += w

    def block(self, key: str, seconds: float) -> None:
        with self.lock:
            self.blocked_until[key] = max(self.blocked_until.get(key, 0.0), self.clock() + seconds)


class GitHubSearch:
    """``search(value) -> {k, repo_ids, repos, paths, outcome, query, engine, searched_at}``."""

    engine = ENGINE

    def __init__(self, cfg: Mapping, cache_dir: str | os.PathLike, env: Mapping[str, str] | None = None,
                 session: requests.Session | None = None):
        env = os.environ if env is None else env
        self.api_url = str(cfg.get("api_url") or "https://api.github.com").rstrip("/")
        names = list(cfg.get("token_envs") or ["GITHUB_TOKEN"])
        self.tokens = [env[n] for n in names if env.get(n)]
        if not self.tokens:
            raise ConfigError(f"GitHub code search needs a token: set the environment variable "
                              f"{' or '.join(names)} (verifier.github.token_envs), or use verifier=local")
        rpm = int(cfg.get("requests_per_minute") or 10)
        self.limiter = SlidingWindowLimiter(rpm, float(cfg.get("window_seconds") or 60.0))
        self.per_page = min(100, int(cfg.get("per_page") or 100))
        self.max_hits = int(cfg.get("max_hits") or 100)
        self.max_pages = int(cfg.get("max_pages") or 1)
        self.timeout = float(cfg.get("timeout") or 30)
        self.max_retries = int(cfg.get("max_retries") if cfg.get("max_retries") is not None else 5)
        self.max_wait = float(cfg.get("max_wait_seconds") or 3600)
        self.min_chars = int(cfg.get("min_query_chars") or 3)
        self.cache_dir = Path(cache_dir) / "github"
        self.session = session or requests.Session()
        self._next = 0
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "cache_hits": 0, "rate_limited": 0, "errors": 0}

    # -- cache ------------------------------------------------------------------------
    def _cache_path(self, query: str) -> Path:
        key = json.dumps([self.engine, self.api_url, query, self.per_page, self.max_pages, self.max_hits])
        return self.cache_dir / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    def _token(self) -> tuple[int, str]:
        """Round-robin over tokens, preferring one that is free now."""
        with self._lock:
            order = [(self._next + i) % len(self.tokens) for i in range(len(self.tokens))]
            waits = [(self.limiter.wait_time(str(i)), n, i) for n, i in enumerate(order)]
            _, _, i = min(waits)
            self._next = (i + 1) % len(self.tokens)
        return i, self.tokens[i]

    def _get(self, query: str, page: int) -> dict:
        last = ""
        for attempt in range(self.max_retries + 1):
            i, tok = self._token()
            self.limiter.acquire(str(i))
            self.stats["requests"] += 1
            try:
                r = self.session.get(f"{self.api_url}/search/code",
                                     params={"q": query, "per_page": self.per_page, "page": page},
                                     headers={"Authorization": f"Bearer {tok}",
                                              "Accept": "application/vnd.github+json",
                                              "X-GitHub-Api-Version": "2022-11-28"},
                                     timeout=self.timeout)
            except requests.RequestException as e:
                last = f"{type(e).__name__}"
                self.limiter.block(str(i), min(2 ** attempt, 30))
                continue
            if r.status_code == 200:
                return r.json()
            if r.status_code == 401:
                raise ConfigError("GitHub rejected the token (401): check the variables named in "
                                  "verifier.github.token_envs")
            if r.status_code in (403, 429):
                self.stats["rate_limited"] += 1
                wait = _limit_wait(r.headers, attempt)
                if wait > self.max_wait:
                    raise SearchError(f"GitHub asks to wait {wait:.0f}s (> max_wait_seconds); rerun later")
                self.limiter.block(str(i), wait)
                last = f"HTTP {r.status_code} (rate limited)"
                continue
            if r.status_code == 422:
                return {"_error": f"HTTP 422 query rejected: {_msg(r)}"}
            if r.status_code >= 500:
                last = f"HTTP {r.status_code}"
                self.limiter.block(str(i), min(2 ** attempt, 30))
                continue
            return {"_error": f"HTTP {r.status_code}: {_msg(r)}"}
        return {"_error": f"gave up after {self.max_retries + 1} attempts ({last})"}

    def search(self, value: str) -> dict:
        # searched_at: the date of the (cached) answer; None when nothing was answered, so a
        # rerun of the stage over the same cache writes the same records.
        base = {"query": mask(value), "engine": self.engine, "searched_at": None}
        q = github_query(value) if isinstance(value, str) else None
        if q is None or len(q) - 2 < self.min_chars:
            return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "unverifiable",
                    "reason": "nothing searchable after removing punctuation GitHub ignores"
                    if q is None else f"query shorter than {self.min_chars} characters"}
        cp = self._cache_path(q)
        if cp.exists():
            self.stats["cache_hits"] += 1
            return {**json.loads(cp.read_text(encoding="utf-8")), "cached": True}
        items: list[dict] = []
        total = incomplete = None
        for page in range(1, self.max_pages + 1):
            data = self._get(q, page)
            if "_error" in data:
                self.stats["errors"] += 1
                return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "error",
                        "reason": data["_error"][:300]}
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
        cp.parent.mkdir(parents=True, exist_ok=True)
        tmp = cp.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec), encoding="utf-8")
        os.replace(tmp, cp)
        return {**rec, "cached": False}


def _msg(r) -> str:
    try:
        return str(r.json().get("message", ""))[:200]
    except ValueError:
        return r.text[:200]


def _limit_wait(headers: Mapping[str, str], attempt: int) -> float:
    """Seconds to wait after a 403/429: ``retry-after``, else ``x-ratelimit-reset`` (epoch
    seconds), else exponential backoff."""
    ra = headers.get("retry-after")
    if ra:
        try:
            return max(0.0, float(ra))
        except ValueError:
            pass
    reset = headers.get("x-ratelimit-reset")
    if reset and headers.get("x-ratelimit-remaining", "0") == "0":
        try:
            return max(0.0, float(reset) - time.time()) + 0.05
        except ValueError:
            pass
    return float(min(60, 2 ** attempt))
