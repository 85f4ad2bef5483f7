"""Intervals and paired tests for comparing methods on the same units (beyond the paper, which
reports point estimates only).

:func:`bootstrap_ci` (percentile bootstrap of a mean, fixed seed), :func:`wilson_ci` (a proportion
k/n), :func:`mcnemar_exact` (exact binomial McNemar on the discordant units),
:func:`cluster_bootstrap_ci` (units x seeds resampled independently, so both the canary and the
seed sample vary; optionally several matrices with shared resamples, for curve bands),
:func:`paired_permutation_test` (exact sign-flip test of the per-unit seed-mean differences,
enumerated; with one seed it is exact McNemar) and :func:`holm_adjust` (Holm's step-down
family-wise correction, for ours vs each baseline).
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


def cluster_bootstrap_ci(values, level: float = 0.95, n_resamples: int = 9999,
                         seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the mean of ``values`` (shape ``(..., units, seeds)``) under the
    two-way bootstrap: each resample draws ``units`` units and ``seeds`` seeds with replacement,
    independently, and takes the mean over the drawn cells (a unit drawn twice counts twice).
    Leading axes (e.g. points of a curve) share the same resamples, so a quantity monotone
    along them in every resample (recall after more tokens) has monotone bounds. Returns
    ``(low, high)`` with the leading shape; a constant matrix has the degenerate interval
    [v, v]; no units or no seeds gives nan. One seed: the canary bootstrap."""
    x = np.asarray(values, dtype=float)
    if x.ndim < 2:
        raise ValueError("cluster_bootstrap_ci needs an array of shape (..., units, seeds)")
    lead = x.shape[:-2]
    n_u, n_s = x.shape[-2:]
    if n_u == 0 or n_s == 0:
        return np.full(lead, np.nan), np.full(lead, np.nan)
    rng = np.random.default_rng(seed)
    flat = x.reshape((-1, n_u, n_s))
    lows, highs = [], []
    # weights: how often each unit / seed is drawn in a resample (multinomial counts)
    wu = rng.multinomial(n_u, np.full(n_u, 1.0 / n_u), size=n_resamples).astype(float)
    ws = rng.multinomial(n_s, np.full(n_s, 1.0 / n_s), size=n_resamples).astype(float)
    means = np.einsum("ru,gus,rs->gr", wu, flat, ws, optimize=True) / (n_u * n_s)
    alpha = (1 - level) / 2
    for g in range(flat.shape[0]):
        if np.all(flat[g] == flat[g].flat[0]):
            lows.append(float(flat[g].flat[0]))
            highs.append(float(flat[g].flat[0]))
            continue
        lo, hi = np.quantile(means[g], [alpha, 1 - alpha])
        lows.append(float(lo))
        highs.append(float(hi))
    return np.array(lows).reshape(lead), np.array(highs).reshape(lead)


def paired_permutation_test(a, b) -> dict:
    """Exact paired sign-flip test of methods A and B on the same units: ``a`` and ``b`` are
    0/1 matrices (units x seeds, the same seeds for both). Per unit d = sum over seeds of
    (a - b); the statistic T = sum of d; under H0 every d flips sign with probability 1/2
    independently, and p = P(|T*| >= |T|) is computed exactly by convolution (two-sided).
    Returns ``{"units", "seeds", "a", "b", "discordant_units", "t", "p"}`` (``a`` / ``b``: cells
    recovered). With one seed this is the exact McNemar test (:func:`mcnemar_exact`)."""
    xa, xb = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    if xa.shape != xb.shape or xa.ndim != 2:
        raise ValueError(f"paired_permutation_test needs two matrices of the same shape (units x seeds), "
                         f"got {xa.shape} and {xb.shape}")
    d = (xa - xb).sum(axis=1)
    t = int(d.sum())
    dist = {0: 1}                         # exact null distribution of T: sum -> number of sign patterns
    for v in (abs(int(x)) for x in d if x != 0):
        nxt: dict[int, int] = {}
        for s, c in dist.items():
            nxt[s + v] = nxt.get(s + v, 0) + c
            nxt[s - v] = nxt.get(s - v, 0) + c
        dist = nxt
    total = sum(dist.values())
    p = sum(c for s, c in dist.items() if abs(s) >= abs(t)) / total
    return {"units": int(xa.shape[0]), "seeds": int(xa.shape[1]), "a": int(xa.sum()), "b": int(xb.sum()),
            "discordant_units": int(np.count_nonzero(d)), "t": t, "p": min(1.0, float(p))}


def holm_adjust(pvalues: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values, in the input order: sort ascending, multiply the
    i-th smallest (0-based) by (m - i), take the running maximum, cap at 1. A test is rejected at
    level alpha when its adjusted p is below alpha (family-wise error rate <= alpha)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        out[i] = running
    return out


__all__ = ["bootstrap_ci", "cluster_bootstrap_ci", "holm_adjust", "mcnemar_exact", "paired_permutation_test",
           "wilson_ci"]
