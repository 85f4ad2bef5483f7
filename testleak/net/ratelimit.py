"""Client-side limits: requests and tokens per sliding window, shared by a client's threads."""

from __future__ import annotations

import collections
import threading
import time

from ..errors import ConfigError


class RateLimiter:
    """Blocks until a request of ``tokens`` fits in both per-window budgets.

    ``requests`` and ``tokens`` are budgets per ``window`` seconds (60 for per-minute
    limits); None disables that budget. :meth:`block` adds a pause the server asked for
    (after a 429, or a 403 with ``x-ratelimit-reset``). The clock and sleep are injectable
    for tests.
    """

    def __init__(self, requests: int | None = None, tokens: int | None = None, window: float = 60.0,
                 clock=time.monotonic, sleep=time.sleep):
        for name, v in (("requests", requests), ("tokens", tokens)):
            if v is not None and int(v) < 1:
                raise ConfigError(f"rate limit: {name} per window must be >= 1 or null (no limit), got {v!r}")
        if float(window) <= 0:
            raise ConfigError(f"rate limit: the window must be > 0 seconds, got {window!r}")
        self.requests = None if requests is None else int(requests)
        self.tokens = None if tokens is None else int(tokens)
        self.window = float(window)
        self.clock = clock
        self.sleep = sleep
        self._events: collections.deque[tuple[float, int]] = collections.deque()
        self._blocked_until = 0.0
        self._lock = threading.Lock()

    def _trim(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.window:
            self._events.popleft()

    def _wait(self, now: float, tokens: int) -> float:
        """Seconds until a request of ``tokens`` may start (0: now). Call under the lock."""
        self._trim(now)
        n = len(self._events)
        wait = max(0.0, self._blocked_until - now)
        if self.requests is not None and n >= self.requests:
            wait = max(wait, self._events[n - self.requests][0] + self.window - now)
        # a single request larger than the token budget is let through alone
        if self.tokens is not None and n and sum(t for _, t in self._events) + tokens > self.tokens:
            wait = max(wait, self._events[0][0] + self.window - now)
        return wait

    def wait_time(self, tokens: int = 0) -> float:
        """Seconds a request of ``tokens`` would wait now."""
        with self._lock:
            return self._wait(self.clock(), tokens)

    def acquire(self, tokens: int = 0) -> float:
        """Reserve one request of ``tokens`` tokens; return the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock()
                delay = self._wait(now, tokens)
                if delay <= 0:
                    if self.requests is not None or self.tokens is not None:
                        self._events.append((now, tokens))
                    return waited
            delay = max(0.005, delay)
            self.sleep(delay)
            waited += delay

    def adjust(self, estimated: int, actual: int) -> None:
        """Replace the newest reservation of ``estimated`` tokens by the actual usage."""
        with self._lock:
            for i in range(len(self._events) - 1, -1, -1):
                t, tok = self._events[i]
                if tok == estimated:
                    self._events[i] = (t, actual)
                    return

    def block(self, seconds: float) -> None:
        """Start no request for ``seconds`` from now (a pause the server asked for)."""
        with self._lock:
            self._blocked_until = max(self._blocked_until, self.clock() + max(0.0, seconds))
