"""Ablation scores against the full pipeline (paper Sec. 6.2 "Ablation studies", Table 4).

The reference set is the confirmed leaks of the full pipeline (variant ``none``); a variant's
confirmed set is compared by key (attribute, value_hash):
TP = |variant & reference|, FN = |reference - variant|, FP = |variant - reference|,
precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = harmonic mean. Empty cases give
0.0 (a variant with no confirmed leak has precision 0.0; an empty reference gives recall 0.0;
F1 is 0.0 when precision + recall = 0). These are pooled scores of one run's sets
(:func:`prf`); the paper's Table 4 averages per-model scores (see reports/paper_comparison.md,
"Paper arithmetic"). Reject rate = the variant's refusal rate
(:func:`testleak.metrics.steps.refusal_rate`).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .rates import ratio
from .records import confirmed_only, key_of


def confirmed_keys(confirmed: Iterable[Mapping]) -> set[tuple[str, str]]:
    """Distinct (attribute, value_hash) keys of the confirmed records."""
    return {key_of(r) for r in confirmed_only(confirmed)}


def prf(tp: float, fn: float, fp: float) -> dict:
    """Precision TP/(TP+FP), recall TP/(TP+FN), F1 (fractions; 0.0 for empty cases)."""
    p, r = ratio(tp, tp + fp), ratio(tp, tp + fn)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f1}


def ablation_scores(reference: Iterable, variant: Iterable, reject_rate: float | None = None) -> dict:
    ref = {tuple(k) for k in reference}
    var = {tuple(k) for k in variant}
    tp, fn, fp = len(var & ref), len(ref - var), len(var - ref)
    return {"tp": tp, "fn": fn, "fp": fp, **prf(tp, fn, fp), "reject_rate": reject_rate}
