"""Figures from the call log: token totals, time with k requests in flight, ideal time."""

from __future__ import annotations

import pytest

from testleak.llm.callstats import busy_profile, ideal_seconds, token_totals


def _call(end, latency, purpose="code turn", p=100, c=50, pc=None, cached=False, shared=False):
    return {"ts": end, "latency_s": latency, "purpose": purpose, "prompt_tokens": p, "completion_tokens": c,
            "prompt_cached_tokens": pc, "cached": cached, "shared": shared}


def test_busy_profile_counts_seconds_with_k_requests_in_flight():
    calls = [_call(10.0, 10.0), _call(6.0, 4.0), _call(14.0, 2.0), _call(20.0, 0.0, cached=True)]
    # [0,10] [2,6] [12,14]: 2 in flight 2..6, 1 in flight 0..2 and 6..10 and 12..14, none 10..12
    prof = busy_profile(calls)
    assert prof["seconds"] == {0: 2.0, 1: 8.0, 2: 4.0}
    assert prof["span_s"] == 14.0 and prof["busy_slot_s"] == 16.0
    assert busy_profile(calls, t0_wall=-1.0)["seconds"][0] == 3.0     # from the stage's start
    assert busy_profile([]) == {"seconds": {}, "span_s": 0.0, "busy_slot_s": 0.0}


def test_token_totals_leave_out_answers_the_endpoint_did_not_serve():
    calls = [_call(1, 1, p=100, c=50, pc=None), _call(2, 1, purpose="test turn", p=300, c=70, pc=120),
             _call(3, 0, p=100, c=50, cached=True), _call(3, 0, p=100, c=50, shared=True)]
    t = token_totals(calls)
    assert (t["calls"], t["cached"], t["prompt_tokens"], t["prompt_cached_tokens"], t["completion_tokens"]) == (
        2, 2, 400, 120, 120)
    assert t["by_purpose"]["test turn"]["prompt_cached_tokens"] == 120 and t["by_purpose"]["code turn"]["calls"] == 1


def test_ideal_time_is_prompt_plus_generation_at_the_benchmarked_rates():
    assert ideal_seconds(1000, 580, 200.0, 58.0) == pytest.approx(5.0 + 10.0)
    with pytest.raises(ValueError, match="rates must be > 0"):
        ideal_seconds(1, 1, 0.0, 58.0)
