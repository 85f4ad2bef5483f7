"""Intervals and paired tests for comparing methods (beyond the paper, which reports point
estimates only): one home for the statistics that rank methods on the same units.

- :func:`bootstrap_ci`: percentile bootstrap interval of a mean over units (canaries, or
  canary x seed pairs), via ``scipy.stats.bootstrap`` with a fixed seed (reproducible).
- :func:`wilson_ci`: the Wilson score interval of a proportion k/n (``scipy.stats.binomtest``),
  for rates over many test cases (permille).
- :func:`mcnemar_exact`: the exact (binomial) McNemar test of two methods on the same units:
  only the discordant units count (recovered by one method and not the other); two-sided
  p = P(X <= min(b, c)) * 2 under Binomial(b + c, 1/2), capped at 1.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from scipy import stats as _st


def bootstrap_ci(values: Sequence[float], level: float = 0.95, n_resamples: int = 9999,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one value per unit). A
    constant sample (e.g. nothing recovered) has the degenerate interval [v, v]; an empty
    sample has no interval (nan, nan)."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    res = _st.bootstrap((x,), np.mean, confidence_level=level, n_resamples=n_resamples, method="percentile",
                        random_state=np.random.default_rng(seed))
    ci = res.confidence_interval
    return float(ci.low), float(ci.high)


def wilson_ci(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion k/n; (nan, nan) when n == 0."""
    if n == 0:
        return float("nan"), float("nan")
    ci = _st.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def mcnemar_exact(a: Iterable, b: Iterable, units: Iterable) -> dict:
    """Exact McNemar test of methods A and B on the same ``units``: ``a`` and ``b`` are the
    units each recovered. Returns ``{"n", "both", "only_a", "only_b", "neither", "p"}``."""
    units, a, b = set(units), set(a), set(b)
    stray = (a | b) - units
    if stray:
        raise ValueError(f"{len(stray)} recovered unit(s) are not among the units compared")
    only_a, only_b = len(a - b), len(b - a)
    d = only_a + only_b
    p = 1.0 if d == 0 else min(1.0, float(_st.binomtest(min(only_a, only_b), d, 0.5).pvalue))
    return {"n": len(units), "both": len(a & b), "only_a": only_a, "only_b": only_b,
            "neither": len(units - a - b), "p": p}


__all__ = ["bootstrap_ci", "mcnemar_exact", "wilson_ci"]
