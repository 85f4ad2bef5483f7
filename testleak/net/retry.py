"""Retries people can see and bound: backoff with jitter, the server's requested wait, a total
deadline per request, and one stderr line per retry.

A client wraps one attempt in ``send(timeout)``, which returns the answer or raises
:class:`Retryable` (429, 5xx, timeout, lost connection); :meth:`RetryPolicy.call` runs it until it
succeeds or gives up with :class:`GiveUp`. Other exceptions pass through (401/403/404 are
configuration errors). Bounds, checked after each failure: a refused connection is tried twice
(nothing will start listening within a backoff), at most ``max_retries`` retries, a requested wait
above ``max_wait`` gives up at once, and no retry starts past ``deadline`` seconds from the first
attempt (each attempt's timeout is cut to the time left). Waiting for a rate-limit slot before the
first attempt does not count against the deadline: a queue is not a failure.
"""

from __future__ import annotations

import email.utils
import errno
import random
import sys
import time
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from ..errors import ConfigError
from .urls import mask_url, mask_urls_in_text

T = TypeVar("T")

REFUSED_ATTEMPTS = 2
REFUSED_MAX_WAIT = 1.0


def retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds the server asks to wait, or None when it does not say.

    ``retry-after-ms`` (milliseconds), ``retry-after`` (seconds or an HTTP date), else
    ``x-ratelimit-reset`` (epoch seconds; GitHub) when ``x-ratelimit-remaining`` is 0 or
    absent."""
    if not headers:
        return None
    now = time.time() if now is None else now
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra:
        try:
            return max(0.0, float(ra))
        except ValueError:
            try:
                return max(0.0, email.utils.parsedate_to_datetime(ra).timestamp() - now)
            except (TypeError, ValueError, IndexError):
                pass
    reset = headers.get("x-ratelimit-reset")
    if reset and str(headers.get("x-ratelimit-remaining", "0")).strip() == "0":
        try:
            return max(0.0, float(reset) - now) + 0.05
        except ValueError:
            pass
    return None


def backoff_delay(attempt: int, base: float = 1.0, cap: float = 60.0, rng: Callable[[], float] = random.random) -> float:
    """Exponential backoff with jitter for the wait after failed attempt ``attempt`` (1-based):
    ``base * 2**(attempt-1)``, capped at ``cap``, times a random factor in [0.5, 1)."""
    return min(cap, base * (2 ** (attempt - 1))) * (0.5 + 0.5 * rng())


def connection_refused(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a refused connection."""
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return True
        e = e.__cause__ or e.__context__
    return False


class Deadline:
    """A total time budget from creation; ``remaining()`` seconds are left."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = float(seconds)
        self.clock = clock
        self.start = clock()

    def remaining(self) -> float:
        return self.seconds - (self.clock() - self.start)


class Retryable(Exception):
    """A temporary failure of one attempt.

    ``kind``: http_429 | http_5xx | timeout | connection | connection_refused | rate_limited.
    ``wait``: seconds the server asked for (None: use the backoff). ``deferred``: the
    client's rate limiter already holds the wait (it was told with ``block``), so the
    policy does not sleep itself."""

    def __init__(self, kind: str, detail: str = "", wait: float | None = None, deferred: bool = False):
        super().__init__(detail or kind)
        self.kind = kind
        self.detail = detail
        self.wait = wait
        self.deferred = deferred


def transport_error(exc: BaseException, timed_out: bool, timeout: float) -> Retryable:
    """The :class:`Retryable` for an attempt that got no HTTP answer: a timeout, a refused
    connection, or another connection failure (named by its exception type only: transport
    messages may quote the URL)."""
    if timed_out:
        return Retryable("timeout", f"no answer within {timeout:.1f} s")
    if connection_refused(exc):
        return Retryable("connection_refused", "connection refused")
    return Retryable("connection", f"connection failed: {type(exc.__cause__ or exc).__name__}")


class GiveUp(Exception):
    """The policy stopped retrying; ``str()`` is one line naming the masked endpoint."""

    def __init__(self, message: str, kind: str, attempts: int):
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


@dataclass
class RetryPolicy:
    """How one client retries. ``timeout``: seconds per attempt; ``deadline``: seconds
    for a request across all its attempts and waits; ``max_wait``: the longest
    server-requested wait accepted; ``echo``: where the retry lines go (stderr)."""

    max_retries: int = 4
    timeout: float = 120.0
    deadline: float = 600.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    max_wait: float = 3600.0
    echo: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_config(cls, cfg: Mapping, where: str, *, timeout: float, deadline: float = 600.0,
                    max_retries: int = 4, **kwargs) -> "RetryPolicy":
        """Read ``timeout``, ``deadline``, ``max_retries`` (and ``max_wait_seconds``) from a
        config section, checking ranges; ``where`` names the section in error messages.
        A timeout or deadline of 0 is rejected, not replaced by a default."""
        def number(key: str, default, minimum: float, integral: bool = False):
            v = cfg.get(key)
            if v is None:
                return default
            try:
                x = int(v) if integral else float(v)
                ok = (x >= minimum) if integral else (x > minimum)
                if integral and float(v) != x:
                    ok = False
            except (TypeError, ValueError):
                ok = False
            if not ok:
                expect = f"an integer >= {minimum}" if integral else f"a number of seconds > {minimum:g}"
                raise ConfigError(f"{where}.{key} = {v!r}: expected {expect}; fix it in the config or "
                                  f"override {where}.{key}=...")
            return x

        t = number("timeout", timeout, 0)
        d = number("deadline", deadline, 0)
        kw = {"max_wait": number("max_wait_seconds", kwargs.pop("max_wait", 3600.0), 0)}
        kw.update(kwargs)
        return cls(max_retries=number("max_retries", max_retries, 0, integral=True), timeout=t, deadline=d, **kw)

    def _say(self, line: str) -> None:
        if self.echo is not None:
            self.echo(line)
        else:
            print(line, file=sys.stderr, flush=True)

    def call(self, endpoint: str, send: Callable[[float], T]) -> T:
        """Run ``send(timeout)`` until it returns; raise :class:`GiveUp` when a bound is hit."""
        where = mask_url(endpoint)
        deadline = Deadline(self.deadline, self.clock)
        attempt = 0
        while True:
            attempt += 1
            left = deadline.remaining()
            try:
                return send(max(0.001, min(self.timeout, left)))
            except Retryable as r:
                kind = r.kind
                detail = mask_urls_in_text(r.detail)
                what = f"{kind} ({detail})" if detail and detail != kind else kind
                refused = kind == "connection_refused"
                if refused and attempt >= REFUSED_ATTEMPTS:
                    raise GiveUp(f"{where}: connection refused after {attempt} attempts: nothing is listening "
                                 f"there; start the server or fix the URL", kind, attempt) from None
                if attempt > self.max_retries:
                    raise GiveUp(f"{where}: gave up after {attempt} attempts (last: {what})", kind, attempt) from None
                if r.wait is not None:
                    wait = r.wait
                    if wait > self.max_wait:
                        raise GiveUp(f"{where}: the server asks to wait {wait:.0f} s (more than max_wait_seconds="
                                     f"{self.max_wait:g}) after {what}; rerun later", kind, attempt) from None
                else:
                    wait = backoff_delay(attempt, self.backoff_base, self.backoff_max)
                if refused:
                    wait = min(wait, REFUSED_MAX_WAIT)
                if wait >= deadline.remaining():
                    raise GiveUp(f"{where}: deadline of {self.deadline:g} s exceeded after {attempt} attempts "
                                 f"(last: {what}; next wait {wait:.1f} s); raise the deadline in the config "
                                 f"or rerun later", "deadline", attempt) from None
                of = REFUSED_ATTEMPTS if refused else self.max_retries + 1
                self._say(f"retry: {where}: {what}, attempt {attempt}/{of} failed, waiting {wait:.1f} s")
                if not r.deferred:
                    self.sleep(wait)
