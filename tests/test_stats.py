"""Intervals and paired tests (testleak/metrics/stats.py) on inputs whose answers are known."""

from __future__ import annotations

import math

import pytest

from testleak.metrics.stats import bootstrap_ci, mcnemar_exact, wilson_ci


def test_mcnemar_exact_matches_the_binomial_by_hand():
    units = [f"c{i}" for i in range(20)]
    a = units[:9]                      # A recovers c0..c8
    b = units[:2] + units[9:10]        # B recovers c0, c1 and c9
    t = mcnemar_exact(a, b, units)
    assert (t["both"], t["only_a"], t["only_b"], t["neither"], t["n"]) == (2, 7, 1, 10, 20)
    # two-sided exact p = 2 * P(X <= 1), X ~ Binomial(8, 1/2) = 2 * 9/256
    assert t["p"] == pytest.approx(18 / 256)
    assert mcnemar_exact(b, a, units)["p"] == pytest.approx(18 / 256)       # symmetric
    assert mcnemar_exact(a, a, units)["p"] == 1.0                           # no discordant unit
    with pytest.raises(ValueError, match="not among the units"):
        mcnemar_exact(["x"], [], units)


def test_bootstrap_interval_covers_the_mean_and_narrows_with_more_units():
    small = [1.0] * 3 + [0.0] * 7
    low, high = bootstrap_ci(small)
    assert 0.0 <= low < 0.3 < high <= 0.8
    big_low, big_high = bootstrap_ci([1.0] * 30 + [0.0] * 70)
    assert big_low < 0.3 < big_high and (big_high - big_low) < (high - low)
    assert bootstrap_ci(small) == (low, high)                               # seeded: reproducible
    assert bootstrap_ci([0.0] * 5) == (0.0, 0.0)
    assert all(math.isnan(x) for x in bootstrap_ci([]))


def test_wilson_interval_known_value():
    low, high = wilson_ci(3, 10)
    # Wilson score interval for 3/10 at 95 %: [0.1078, 0.6032]
    assert (round(low, 4), round(high, 4)) == (0.1078, 0.6032)
    assert wilson_ci(0, 50)[0] == 0.0 and 0.0 < wilson_ci(0, 50)[1] < 0.08


def test_canary_report_prints_intervals_and_paired_tests(tmp_path):
    from testleak.canary.report import build_report

    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org"} for i in range(10)]

    def result(run, model, recovered):
        return {"run": run, "model": model, "key": run, "method": run, "variant": "none", "seconds": 1.0,
                "recall": {"responses": 4, "responses_ok": 4, "candidates": 5, "planted": 10,
                           "recovered": recovered, "recall": len(recovered) / 10, "confirmed_ids": [],
                           "confirmed_recall": 0.0, "confirmed_non_canary": 0, "confirmed_non_canary_in_corpus": 0,
                           "by_attribute": {}, "curve": [{"responses": 4, "recall": len(recovered) / 10}]}}

    results = [result("ours", "tuned", [f"c{i}" for i in range(8)]), result("codebreaker", "tuned", ["c0"]),
               result("ours", "control", [])]
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json")
    text = (tmp_path / "canary/canary.md").read_text(encoding="utf-8")
    assert "| tuned | ours | codebreaker | 1 | 7 | 0 | 2 | 0.01562 |" in text       # 2 * 1/128
    ours = next(s for s in rep["summary"] if s["run"] == "ours" and s["model"] == "tuned")
    assert ours["recall_ci_low"] < 0.8 < ours["recall_ci_high"]
    assert "user0@example.org" not in text
    # a tuned and a control run of the same name stay apart in the per-level table
    assert "| ours | tuned | 8/10 80% [" in text and "| ours | control | 0/10 0% [0%, 0%] |" in text
