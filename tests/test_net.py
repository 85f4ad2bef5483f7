"""The shared HTTP policy (testleak.net): retry-after parsing, backoff, URL masking, the
cache, and that it is the only implementation of each."""

from __future__ import annotations

import email.utils
import re

import pytest

from testleak.config import ROOT
from testleak.net import (JsonCache, RateLimiter, backoff_delay, canonical_key, mask_url, mask_urls_in_text,
                          retry_after)

NOW = 1_800_000_000.0


@pytest.mark.parametrize("headers,wait", [
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after": email.utils.formatdate(NOW + 20, usegmt=True)}, 20.0),
    ({"x-ratelimit-reset": str(int(NOW + 7)), "x-ratelimit-remaining": "0"}, 7.05),
    ({"x-ratelimit-reset": str(int(NOW + 7))}, 7.05),
    ({"x-ratelimit-reset": str(int(NOW + 7)), "x-ratelimit-remaining": "4"}, None),  # not exhausted
    ({"retry-after": "soon"}, None),
    ({"retry-after": "-4"}, 0.0),
    ({}, None),
    (None, None),
])
def test_retry_after(headers, wait):
    got = retry_after(headers, now=NOW)
    assert got == (None if wait is None else pytest.approx(wait, abs=0.01))


def test_backoff_doubles_with_jitter_and_cap():
    assert backoff_delay(1, 1.0, 60, rng=lambda: 0.0) == 0.5
    assert backoff_delay(3, 1.0, 60, rng=lambda: 0.999) == pytest.approx(4.0, abs=0.01)
    assert backoff_delay(20, 1.0, 60, rng=lambda: 0.0) == 30.0


@pytest.mark.parametrize("url,shown", [
    ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ("http://alice:s3cret@10.0.0.1:8000/v1", "http://***@10.0.0.1:8000/v1"),
    ("http://tokenonly@host/v1", "http://***@host/v1"),
    ("https://host/v1?api_key=abc&model=x", "https://host/v1?api_key=***&model=x"),
    (None, ""),
])
def test_mask_url(url, shown):
    assert mask_url(url) == shown


def test_mask_urls_in_text():
    text = "failed: POST http://u:p@a.b/v1 then https://c.d/x and ftp://k@e"
    assert mask_urls_in_text(text) == "failed: POST http://***@a.b/v1 then https://c.d/x and ftp://***@e"


def test_json_cache_roundtrip_and_canonical_key(tmp_path):
    assert canonical_key({"b": 1, "a": [1, "é"]}) == canonical_key({"a": [1, "é"], "b": 1})
    assert canonical_key({"a": 1}) != canonical_key({"a": 2})
    c = JsonCache(tmp_path / "x.sqlite", table="things")
    c.put("k", {"v": [1, 2]})
    c.close()
    again = JsonCache(tmp_path / "x.sqlite", table="things")
    assert again.get("k") == {"v": [1, 2]} and again.get("other") is None and len(again) == 1
    again.close()


def test_rate_limiter_block_pauses_new_requests():
    now = [0.0]

    def sleep(d):
        now[0] += d

    rl = RateLimiter(requests=5, window=10, clock=lambda: now[0], sleep=sleep)
    rl.block(3.0)
    assert rl.wait_time() == pytest.approx(3.0)
    assert rl.acquire() == pytest.approx(3.0)
    assert rl.acquire() == 0


def test_one_implementation_of_each_policy_piece():
    """grep over testleak/: one rate limiter class, one retry-after parser, one cache class,
    all in testleak/net/."""
    found: dict[str, list[str]] = {"limiter": [], "retry-after": [], "cache": []}
    for p in sorted((ROOT / "testleak").rglob("*.py")):
        src = p.read_text(encoding="utf-8")
        rel = str(p.relative_to(ROOT))
        found["limiter"] += [rel for _ in re.findall(r"^class \w*Limiter\b", src, re.M)]
        found["retry-after"] += [rel for _ in re.findall(r"""headers\.get\(["']retry-after["']\)""", src)]
        found["cache"] += [rel for _ in re.findall(r"^class \w*Cache\b", src, re.M)]
    assert found == {"limiter": ["testleak/net/ratelimit.py"], "retry-after": ["testleak/net/retry.py"],
                     "cache": ["testleak/net/cache.py"]}
