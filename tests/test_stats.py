"""Intervals and paired tests (testleak/metrics/stats.py) on inputs whose answers are known."""

from __future__ import annotations

import math

import pytest

import itertools

import numpy as np

from testleak.metrics.stats import (bootstrap_ci, cluster_bootstrap_ci, mcnemar_exact, paired_permutation_test,
                                    wilson_ci)


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


def test_cluster_bootstrap_degenerate_single_seed_and_shared_resamples():
    # a constant matrix: the degenerate interval, whatever the resamples
    assert cluster_bootstrap_ci(np.ones((6, 3))) == (1.0, 1.0)
    assert cluster_bootstrap_ci(np.zeros((6, 1))) == (0.0, 0.0)
    low, high = cluster_bootstrap_ci(np.zeros((0, 3)))
    assert math.isnan(low) and math.isnan(high)
    # one seed: the canary bootstrap; 1 of 4 recovered -> resample means in {0, .25, .5, .75, 1}:
    # P(mean = 1) = 1/256 < 2.5 % <= P(mean >= .75) = 13/256, and P(mean = 0) = 81/256 > 2.5 %
    assert cluster_bootstrap_ci(np.array([[1], [0], [0], [0]])) == (0.0, 0.75)
    # variation between seeds widens the interval: same canary-level recall, but a seed that found nothing
    steady = np.array([[1, 1, 1]] * 5 + [[0, 0, 0]] * 5)
    shaky = np.array([[1, 1, 0]] * 5 + [[0, 0, 0]] * 5) * 1.5      # mean .5 as well, seed 3 recovers nothing
    lo_s, hi_s = cluster_bootstrap_ci(steady)
    lo_k, hi_k = cluster_bootstrap_ci(shaky)
    assert lo_s < 0.5 < hi_s and lo_k < 0.5 < hi_k and (hi_k - lo_k) > (hi_s - lo_s)
    # a stack along a curve shares the resamples: nested 0/1 matrices give monotone bounds
    rng = np.random.default_rng(1)
    first = rng.integers(0, 100, size=(12, 3))
    stack = np.stack([(first <= x).astype(float) for x in (0, 20, 40, 60, 80, 100)])
    lo, hi = cluster_bootstrap_ci(stack)
    assert lo.shape == hi.shape == (6,)
    assert all(np.diff(lo) >= 0) and all(np.diff(hi) >= 0) and all(lo <= stack.mean(axis=(1, 2)) + 1e-12)
    assert tuple(cluster_bootstrap_ci(stack)[0]) == tuple(lo)                        # seeded: reproducible


def test_paired_permutation_test_equals_mcnemar_for_one_seed_and_brute_force_for_more():
    units = [f"c{i}" for i in range(20)]
    a, b = units[:9], units[:2] + units[9:10]
    ma = np.array([[u in a] for u in units], dtype=int)
    mb = np.array([[u in b] for u in units], dtype=int)
    t = paired_permutation_test(ma, mb)
    assert t["p"] == pytest.approx(mcnemar_exact(a, b, units)["p"]) == pytest.approx(18 / 256)
    assert (t["units"], t["seeds"], t["a"], t["b"], t["discordant_units"], t["t"]) == (20, 1, 9, 3, 8, 6)
    # 3 units, 2 seeds: per-unit differences 2, 1, 1 -> T = 4; the 8 sign patterns give sums
    # 4, 2, 2, 0, 0, -2, -2, -4: P(|T*| >= 4) = 2/8
    xa = np.array([[1, 1], [1, 0], [0, 1], [0, 0]])
    xb = np.zeros((4, 2), dtype=int)
    assert paired_permutation_test(xa, xb)["p"] == pytest.approx(0.25)
    assert paired_permutation_test(xa, xa)["p"] == 1.0
    # against brute-force enumeration on a random case with 3 seeds
    rng = np.random.default_rng(3)
    ra, rb = rng.integers(0, 2, size=(9, 3)), rng.integers(0, 2, size=(9, 3))
    d = (ra - rb).sum(axis=1)
    sums = [sum(s * x for s, x in zip(signs, d)) for signs in itertools.product((1, -1), repeat=len(d))]
    want = sum(abs(x) >= abs(d.sum()) for x in sums) / len(sums)
    assert paired_permutation_test(ra, rb)["p"] == pytest.approx(want)
    with pytest.raises(ValueError, match="same shape"):
        paired_permutation_test(ra, rb[:, :2])


def _result(key, model, seed, recovered, tokens, spent, reference=False):
    """One calibration run's result as testleak.canary.pipeline.report_calibration builds it: the
    i-th recovered canary came with response i + 1 (3 test cases each), at ``tokens`` completion
    tokens (+ 900 prompt tokens); the run spent one response more than its last recovery."""
    n = len(recovered)
    by_unit = {"completion_tokens": dict(zip(recovered, tokens)),
               "responses": {c: i + 1 for i, c in enumerate(recovered)},
               "test_cases": {c: 3 * (i + 1) for i, c in enumerate(recovered)},
               "tokens": {c: t + 900 for c, t in zip(recovered, tokens)}}
    total = {"completion_tokens": spent, "responses": n + 1, "test_cases": 3 * (n + 1), "tokens": spent + 900}
    return {"run": f"canary_{model}_{key}_s{seed}", "model": model, "key": key, "seed": seed,
            "method": "ours" if key == "ours" else key, "variant": "none", "reference": reference,
            "spend": {"calls": 4, "prompt_tokens": 900, "completion_tokens": spent},
            "budget": None if reference else {"stop": "target reached", "target_completion_tokens": 1000},
            "recall": {"responses": 4, "responses_ok": 4, "candidates": 5, "planted": 10, "completion_tokens": spent,
                       "spent": total, "recovered": {c: 0 for c in recovered},
                       "recovered_tokens": by_unit["completion_tokens"], "recovered_spend": by_unit,
                       "recall": len(recovered) / 10, "confirmed_ids": [], "confirmed_recall": 0.0,
                       "confirmed_non_canary": 0, "confirmed_non_canary_in_corpus": 0, "by_attribute": {},
                       "curve": [{"responses": 4, "recall": len(recovered) / 10}]}}


def test_canary_report_answer_intervals_paired_tests_curves_and_control(tmp_path):
    import csv
    import json

    from testleak.canary.report import build_report

    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org", "duplication": 1 + (i % 2)}
             for i in range(10)]
    c = [f"c{i}" for i in range(10)]
    results = [_result("ours", "tuned", 0, c[:8], range(100, 900, 100), 1000, reference=True),
               _result("codebreaker", "tuned", 0, c[:1], [50], 1010),
               _result("ours", "tuned", 1, c[:6], range(150, 1050, 150), 1200, reference=True),
               _result("codebreaker", "tuned", 1, [c[0], c[9]], [70, 1200], 1250),
               _result("ours", "control", 0, [], [], 900, reference=True),
               _result("codebreaker", "control", 0, [], [], 950),
               _result("ours", "control", 1, [], [], 800, reference=True),
               _result("codebreaker", "control", 1, [c[3]], [300], 820)]
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", bands=[2, 5, 8])
    md = (tmp_path / "canary/canary.md").read_text(encoding="utf-8")
    # ours: 8 + 6 of 20 cells; codebreaker: 1 + 2. Per canary (sum over seeds) ours - codebreaker:
    # c1..c5 +2, c6, c7 +1, c9 -1 -> T = 11, p by brute force; McNemar on any seed: only ours 7
    # (c1..c7), only codebreaker 1 (c9) -> 2 * 9/256
    d = [2] * 5 + [1, 1, -1]
    sums = [sum(s * x for s, x in zip(signs, d)) for signs in itertools.product((1, -1), repeat=len(d))]
    p = sum(abs(x) >= 11 for x in sums) / len(sums)
    t = next(q for q in rep["tests"] if q["model"] == "tuned")
    assert (t["cells_a"], t["cells_b"], t["t"], t["discordant_canaries"]) == (14, 3, 11, 8)
    assert t["p"] == pytest.approx(p, abs=1e-6) and t["p_mcnemar_any_seed"] == pytest.approx(18 / 256, abs=1e-6)
    assert f"| tuned | ours | codebreaker | 2 | 70.0% | 15.0% | 8 | 11 | {t['p']:.4g} | 1 / 7 / 1 / 1 | 0.07031 |" in md
    ours = next(m for m in rep["methods"] if m["model"] == "tuned" and m["method"] == "ours")
    cb = next(m for m in rep["methods"] if m["model"] == "tuned" and m["method"] == "codebreaker")
    assert (ours["recovered_cells"], ours["cells"], ours["recall"], ours["recovered_any_seed"]) == (14, 20, 0.7, 8)
    assert ours["recall_ci_low"] < 0.7 < ours["recall_ci_high"] and cb["recall_ci_low"] < 0.15 < cb["recall_ci_high"]
    assert (cb["tokens_vs_reference_min"], cb["tokens_vs_reference_max"]) == (1.01, round(1250 / 1200, 4))
    # the answer: one sentence from the tables, first in the report
    want = (f"**Answer.** At equal completion tokens (Codebreaker spent 101%-104% of ours' per seed), ours recovers "
            f"70% [{ours['recall_ci_low']:.0%}, {ours['recall_ci_high']:.0%}] of the planted canaries vs Codebreaker "
            f"15% [{cb['recall_ci_low']:.0%}, {cb['recall_ci_high']:.0%}] (10 canaries x 2 seeds, tuned model), "
            f"p = {t['p']:.3g} (exact paired sign-flip test over canaries).")
    assert want in md and md.index(want) < md.index("## Methods")
    # beside it, every other unit at ours' spend per seed (issue 26 item 4): codebreaker's runs spent
    # fewer responses and test cases than ours (short: a lower bound there), more tokens
    units = (" In every budget unit, recall within ours' spend: responses (ours 8 per seed): ours 70% vs Codebreaker "
             "15% (short); test cases (ours 24 per seed): ours 70% vs Codebreaker 15% (short); completion tokens "
             "(ours 1100 per seed): ours 70% vs Codebreaker 15%; total tokens (ours 2000 per seed): ours 70% vs "
             "Codebreaker 15%.")
    assert rep["answer"] == want.removeprefix("**Answer.** ") + units
    assert "What would change it:" in md and any("control model recovered 1 (canary, seed) cells (must be 0)" in x
                                                  for x in rep["change"])
    # control: the false recovery of codebreaker's seed 1 is counted and flagged
    assert "| codebreaker | 2 | 1/20 | 1 | 5.0% [" in md and "| ours | 2 | 0/20 | 0 | 0.0% [0.0%, 0.0%] |" in md
    assert "BUG" in md and "user3@example.org" not in md
    # recall vs tokens: monotone, bands around the curve, ending at the method's recall
    rows = [r for r in csv.DictReader((tmp_path / "canary/recall_vs_budget.csv").open())
            if r["model"] == "tuned" and r["method"] == "ours" and r["unit"] == "completion_tokens"]
    rec = [float(r["recall"]) for r in rows]
    lo, hi = [float(r["recall_ci_low"]) for r in rows], [float(r["recall_ci_high"]) for r in rows]
    assert rec[0] == 0.0 and rec[-1] == 0.7 and rec == sorted(rec) and lo == sorted(lo) and hi == sorted(hi)
    assert all(a <= v <= b for a, v, b in zip(lo, rec, hi))
    xs = [int(r["spent"]) for r in rows]
    assert xs[0] == 0 and xs[-1] == 1250 and len(xs) == 25      # grid up to the largest spend of the model's runs
    for x, v in zip(xs, rec):       # seed 0 recovered c0..c7 at 100, 200, ..; seed 1 c0..c5 at 150, 300, ..
        assert v == pytest.approx((sum(t <= x for t in range(100, 900, 100)) + sum(t <= x for t in range(150, 1050, 150)))
                                  / 20, abs=1e-4)
    assert {"recall_vs_budget.png", "methods.csv", "control.csv", "paired_tests.csv"} <= set(rep["files"])
    # the responses curve counts responses: seed 0 recovered c0..c7 with responses 1..8, seed 1 c0..c5
    resp = {int(r["spent"]): float(r["recall"]) for r in csv.DictReader((tmp_path / "canary/recall_vs_budget.csv").open())
            if (r["model"], r["method"], r["unit"]) == ("tuned", "ours", "responses")}
    assert resp[0] == 0.0 and resp[max(resp)] == 0.7 and max(resp) == 9    # the largest spend of the model's runs
    at = {(r["method"], r["unit"]): r for r in csv.DictReader((tmp_path / "canary/recall_at_ours_spend.csv").open())}
    assert at[("codebreaker", "responses")]["covers"] == "False" and at[("codebreaker", "tokens")]["covers"] == "True"
    assert float(at[("codebreaker", "completion_tokens")]["recall"]) == 0.15   # c9 at 1200 <= ours' 1200 (seed 1)
    m = json.loads((tmp_path / "canary.json").read_text())
    assert m["seeds"] == [0, 1] and m["methods"]["tuned/ours"]["recall"] == 0.7
    assert m["tests"]["tuned/ours~codebreaker"]["p"] == t["p"]
    # the per-duplication table aggregates the method over seeds: odd canaries planted twice
    dup = {(r["method"], r["model"], r["duplication"]): r for r in csv.DictReader((tmp_path / "canary/by_duplication.csv").open())}
    assert (dup["ours", "tuned", "1"]["recovered"], dup["ours", "tuned", "1"]["cells"]) == ("7", "10")   # c0,2,4,6 + c0,2,4


def test_canary_answer_says_when_the_difference_is_not_significant(tmp_path):
    from testleak.canary.report import build_report

    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org"} for i in range(10)]
    results = [_result("ours", "tuned", 0, ["c0", "c1"], [10, 20], 1000, reference=True),
               _result("codexleaks", "tuned", 0, ["c1", "c2"], [10, 20], 700)]
    results[1]["budget"]["stop"] = "max_responses"
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", bands=[2, 5, 8])
    assert rep["answer"].startswith("At UNEQUAL completion tokens (CodexLeaks spent 70%-70% of ours' per seed)")
    assert "p = 1 (exact" in rep["answer"]
    assert any("not significant at 5%" in x and "one more cell for either side breaks the tie" in x for x in rep["change"])
    assert any("baseline_max_responses" in x and "codexleaks (max_responses x1)" in x for x in rep["change"])


def test_holm_adjust_known_values():
    from testleak.metrics.stats import holm_adjust

    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01 = 0.03, 2 x 0.03 = 0.06, max(0.06, 1 x 0.04) = 0.06
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjust([0.6, 0.9]) == pytest.approx([1.0, 1.0]) and holm_adjust([0.2]) == pytest.approx([0.2])


def test_canary_answer_names_every_baseline_with_holm_adjusted_p(tmp_path):
    """The one-sentence answer compares ours with each baseline that ran (a sentence that named
    only one would hide the other), with raw and Holm-adjusted p-values."""
    from testleak.canary.report import build_report

    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org", "duplication": 1}
             for i in range(10)]
    c = [f"c{i}" for i in range(10)]
    results = [_result("ours", "tuned", 0, c[:1], [100], 1000, reference=True),
               _result("codexleaks", "tuned", 0, c[:9], range(100, 1000, 100), 1000),
               _result("codebreaker", "tuned", 0, c[:2], [50, 60], 1010),
               _result("ours", "control", 0, [], [], 900, reference=True),
               _result("codexleaks", "control", 0, [], [], 900),
               _result("codebreaker", "control", 0, [], [], 950)]
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", bands=[2, 5, 8])
    t = {q["method_b"] if q["method_a"] == "ours" else q["method_a"]: q for q in rep["tests"]
         if q["model"] == "tuned" and "ours" in (q["method_a"], q["method_b"])}
    # one seed: the sign-flip test is exact McNemar; codexleaks 8 discordant canaries all its way
    assert t["codexleaks"]["p"] == pytest.approx(2 / 256, abs=1e-5) and t["codebreaker"]["p"] == pytest.approx(1.0)
    a = rep["answer"]
    assert a.startswith("At equal completion tokens (spent: CodexLeaks 100%-100%, Codebreaker 101%-101% of ours' per seed)")
    assert f"vs CodexLeaks 90% [" in a and f"(p = {2 / 256:.3g}, Holm {4 / 256:.3g})" in a
    assert "and Codebreaker 20% [" in a and "(p = 1, Holm 1)" in a and "Holm-adjusted over the 2 baselines" in a
    assert any(x.startswith("Ours vs CodexLeaks: the difference (-8 cells of 10) is significant at 5% after Holm")
               for x in rep["change"])
    assert any(x.startswith("Ours vs Codebreaker: the difference (-1 cells of 10) is not significant") for x in rep["change"])
