"""Figures from the gateway's call log (``llm_calls.jsonl``): token totals by purpose, the
time with k requests in flight, and a stage's ideal time at benchmarked rates
(``benchmarks/bench_responses.py``).

A call-log line holds ``ts`` (wall clock when the answer came back), ``latency_s``,
``prompt_tokens``, ``completion_tokens``, ``prompt_cached_tokens`` (of the prompt tokens,
those the server took from its prompt cache; null when not reported), ``cached`` (answered
from the gateway's response cache) and ``shared`` (the answer of an identical request).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping


def _sent(c: Mapping) -> bool:
    """A call the endpoint answered (not the response cache, not a shared answer)."""
    return not c.get("cached") and not c.get("shared")


def token_totals(calls: Iterable[Mapping]) -> dict:
    """Tokens of the calls the endpoint answered, in total and by purpose."""
    tot = {"calls": 0, "cached": 0, "prompt_tokens": 0, "prompt_cached_tokens": 0, "completion_tokens": 0,
           "latency_s": 0.0, "by_purpose": {}}
    for c in calls:
        if not _sent(c):
            tot["cached"] += 1
            continue
        p = tot["by_purpose"].setdefault(c.get("purpose") or "-", {"calls": 0, "prompt_tokens": 0,
                                                                    "prompt_cached_tokens": 0,
                                                                    "completion_tokens": 0, "latency_s": 0.0})
        for d in (tot, p):
            d["calls"] += 1
            d["prompt_tokens"] += int(c.get("prompt_tokens") or 0)
            d["prompt_cached_tokens"] += int(c.get("prompt_cached_tokens") or 0)
            d["completion_tokens"] += int(c.get("completion_tokens") or 0)
            d["latency_s"] += float(c.get("latency_s") or 0.0)
    return tot


def ideal_seconds(prompt_tokens: int, completion_tokens: int, prompt_rate: float, generation_rate: float) -> float:
    """A stage's ideal time: its prompt tokens at the benchmarked prompt rate plus its
    completion tokens at the benchmarked aggregate generation rate (tokens/s, all slots busy)."""
    if prompt_rate <= 0 or generation_rate <= 0:
        raise ValueError(f"rates must be > 0 (prompt {prompt_rate}, generation {generation_rate})")
    return prompt_tokens / prompt_rate + completion_tokens / generation_rate


def busy_profile(calls: Iterable[Mapping], t0_wall: float | None = None) -> dict:
    """Seconds with k requests in flight (k = 0 only between calls), from the calls the
    endpoint answered: each spans [ts - latency_s, ts]. ``t0_wall``: count from there (the
    stage's start) instead of from the first call's start."""
    spans = [(float(c["ts"]) - float(c.get("latency_s") or 0.0), float(c["ts"])) for c in calls
             if _sent(c) and "ts" in c]
    if not spans:
        return {"seconds": {}, "span_s": 0.0, "busy_slot_s": 0.0}
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    start = min(s for s, _ in spans) if t0_wall is None else float(t0_wall)
    seconds: Counter = Counter()
    k, t = 0, start
    for when, d in events:
        if when > t:
            seconds[k] += when - t
            t = when
        k += d
    return {"seconds": {n: round(seconds[n], 3) for n in sorted(seconds)}, "span_s": round(t - start, 3),
            "busy_slot_s": round(sum(e - s for s, e in spans), 3)}
