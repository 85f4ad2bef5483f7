"""Client-side limits: requests and tokens per sliding window, shared by a model's threads."""

from __future__ import annotations

import collections
import threading
import time


class RateLimiter:
    """Blocks until a request of ``tokens`` fits in both per-window budgets.

    ``requests`` and ``tokens`` are budgets per ``window`` seconds (60 for per-minute
    limits); None disables that budget. The clock and sleep are injectable for tests.
    """

    def __init__(self, requests: int | None = None, tokens: int | None = None, window: float = 60.0,
                 clock=time.monotonic, sleep=time.sleep):
        self.requests = requests
        self.tokens = tokens
        self.window = float(window)
        self.clock = clock
        self.sleep = sleep
        self._events: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = threading.Lock()

    def _trim(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.window:
            self._events.popleft()

    def acquire(self, tokens: int = 0) -> float:
        """Reserve one request of ``tokens`` tokens; return the seconds waited."""
        if self.requests is None and self.tokens is None:
            return 0.0
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock()
                self._trim(now)
                n = len(self._events)
                used = sum(t for _, t in self._events)
                ok_r = self.requests is None or n < self.requests
                # a single request larger than the budget is let through alone
                ok_t = self.tokens is None or used + tokens <= self.tokens or n == 0
                if ok_r and ok_t:
                    self._events.append((now, tokens))
                    return waited
                delay = max(0.01, self._events[0][0] + self.window - now)
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
