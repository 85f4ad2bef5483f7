"""The canary report's tables, computed from the calibration runs: per run (with the control
model's false recoveries), per method (recall and its two-way bootstrap interval, spend, response
shares), paired tests, recall vs budget in every unit (and within ours' spend), control false
recoveries and recall per group of canaries (duplication level, exposure band, attribute, context
kind), every method row and group row beside the ceiling:
the prefix probe's recall on the same model and group (:func:`with_ceiling`; :mod:`.probe`)
(:mod:`.report` writes them out)."""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from ..metrics.curves import COUNT_UNITS
from ..metrics.stats import cluster_bootstrap_ci, mcnemar_exact, paired_permutation_test
from ..privacy import mask
from .contexts import KINDS, OTHER
from .exposure import band_labels, band_of
from .probe import PREFIX

CURVE_POINTS = 25       # points of the recall vs budget curves (0 .. the largest spend of the model's runs)


def _key(r: Mapping) -> str:
    return r.get("key") or r["run"]


def methods_of(results: Sequence[Mapping]) -> list[tuple[str, str]]:
    """[(model, key)] in first-seen order."""
    return list(dict.fromkeys((r["model"], _key(r)) for r in results))


def seeds_of(results: Sequence[Mapping], model: str, key: str) -> list:
    return [r.get("seed", 0) for r in results if r["model"] == model and _key(r) == key]


def recovered_matrix(results: Sequence[Mapping], truth: Sequence[Mapping], model: str, key: str) -> np.ndarray:
    """0/1 matrix canaries x seeds (truth order x run order) of the method's recovered canaries."""
    runs = [r for r in results if r["model"] == model and _key(r) == key]
    cols = [[1 if t["id"] in set(r["recall"]["recovered"]) else 0 for t in truth] for r in runs]
    return np.array(cols, dtype=int).T.reshape(len(truth), len(runs))


def _ci(matrix) -> dict:
    low, high = cluster_bootstrap_ci(matrix)
    return {"recall_ci_low": round(float(low), 4), "recall_ci_high": round(float(high), 4)}


def method_rows(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """Per method (model, key): seeds, recall over (canary, seed) cells with its two-way bootstrap
    interval, canaries recovered in any seed, the spend per seed (mean) and the budget's stop reasons."""
    rows = []
    ref_tokens = {(r["model"], r.get("seed", 0)): (r.get("spend") or {}).get("completion_tokens")
                  for r in results if r.get("reference")}
    for model, key in methods_of(results):
        runs = [r for r in results if r["model"] == model and _key(r) == key]
        m = recovered_matrix(results, truth, model, key)
        cells = m.size
        spends = [r.get("spend") or {} for r in runs]
        ratios = []
        for r in runs:
            ref = ref_tokens.get((model, r.get("seed", 0)))
            ct = (r.get("spend") or {}).get("completion_tokens")
            if ref and ct is not None:
                ratios.append(ct / ref)
        stops = Counter(((r.get("budget") or {}).get("stop") or ("reference" if r.get("reference") else "own size"))
                        for r in runs)
        rows.append({"model": model, "method": key, "kind": runs[0].get("method"), "variant": runs[0].get("variant"),
                     "seeds": len(runs), "planted": len(truth), "cells": cells, "recovered_cells": int(m.sum()),
                     "recall": round(float(m.mean()), 4) if cells else 0.0, **_ci(m),
                     "recovered_any_seed": int((m.sum(axis=1) > 0).sum()) if cells else 0,
                     **{f"mean_{k}": _mean([s.get(k) for s in spends])
                        for k in ("calls", "prompt_tokens", "completion_tokens")},
                     "tokens_vs_reference_min": round(min(ratios), 4) if ratios else None,
                     "tokens_vs_reference_max": round(max(ratios), 4) if ratios else None,
                     "stop": "; ".join(f"{k} x{v}" for k, v in stops.items()),
                     **_shares(runs),
                     "budget_unit": next(((r.get("budget") or {}).get("unit") for r in runs
                                          if (r.get("budget") or {}).get("unit")), None)})
    return rows


SHARES = ("ok", "refused", "no_code", "error", "truncated")


def _shares(runs: Sequence[Mapping]) -> dict:
    """Over the method's runs: the share of responses per status and cut at max_tokens
    (``<status>_share``, ``truncated_share``; None for results that do not count them)."""
    n = sum(r["recall"]["responses"] for r in runs)
    out = {}
    for k in SHARES:
        got = [(r["recall"].get("status") or {}).get(k) if k != "truncated" else r["recall"].get("truncated")
               for r in runs]
        out[f"{k}_share"] = round(sum(got) / n, 4) if n and None not in got else None
    return out


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(sum(xs) / len(xs), 1) if xs else None


def method_tests(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """Every pair of methods on the same model with the same seeds: the exact paired sign-flip test
    over canaries (p) and the exact McNemar test on recovered-in-any-seed (p_mcnemar_any_seed)."""
    ids = [t["id"] for t in truth]
    out = []
    ms = methods_of(results)
    for i, (model, ka) in enumerate(ms):
        for model_b, kb in ms[i + 1:]:
            if model_b != model or seeds_of(results, model, ka) != seeds_of(results, model, kb):
                continue
            a, b = recovered_matrix(results, truth, model, ka), recovered_matrix(results, truth, model, kb)
            perm = paired_permutation_test(a, b)
            anya = [c for c, row in zip(ids, a) if row.any()]
            anyb = [c for c, row in zip(ids, b) if row.any()]
            mc = mcnemar_exact(anya, anyb, ids)
            out.append({"model": model, "method_a": ka, "method_b": kb, "seeds": perm["seeds"],
                        "recall_a": round(float(a.mean()), 4) if a.size else 0.0,
                        "recall_b": round(float(b.mean()), 4) if b.size else 0.0,
                        "cells_a": perm["a"], "cells_b": perm["b"], "discordant_canaries": perm["discordant_units"],
                        "t": perm["t"], "p": round(perm["p"], 6),
                        "any_both": mc["both"], "any_only_a": mc["only_a"], "any_only_b": mc["only_b"],
                        "any_neither": mc["neither"], "p_mcnemar_any_seed": round(mc["p"], 6)})
    return out


def budget_curves(results: Sequence[Mapping], truth: Sequence[Mapping], points: int = CURVE_POINTS,
                  units: Sequence[str] = COUNT_UNITS) -> list[dict]:
    """Recall vs budget per method and unit (:data:`testleak.metrics.curves.COUNT_UNITS`): on a grid
    of ``points`` amounts from 0 to the largest spend of the model's runs in that unit, the share
    of (canary, seed) cells recovered within x and its two-way bootstrap band (shared resamples:
    the curve and its bounds never decrease). Rows {model, method, unit, spent, recall, recall_ci_*}."""
    rows = []
    for unit in units:
        for model, key in methods_of(results):
            top = max([_spent(r, unit) for r in results if r["model"] == model] + [0])
            grid = np.unique(np.linspace(0, top, points).round().astype(int))
            stack = (_first_spend(results, truth, model, key, unit)[None, :, :] <= grid[:, None, None]).astype(float)
            low, high = cluster_bootstrap_ci(stack)
            for x, v, lo, hi in zip(grid, stack.mean(axis=(1, 2)) if stack.size else [0.0] * len(grid), low, high):
                rows.append({"model": model, "method": key, "unit": unit, "spent": int(x), "recall": round(float(v), 4),
                             "recall_ci_low": round(float(lo), 4), "recall_ci_high": round(float(hi), 4)})
    return rows


def _spent(r: Mapping, unit: str) -> int:
    """What run ``r`` spent in ``unit`` (0 when its recall summary predates the units)."""
    return int(((r["recall"].get("spent") or {}).get(unit)) or 0)


def _first_spend(results: Sequence[Mapping], truth: Sequence[Mapping], model: str, key: str, unit: str) -> np.ndarray:
    """canaries x seeds: the spend in ``unit`` at which the method's run of that seed first
    recovered the canary (inf: never)."""
    runs = [r for r in results if r["model"] == model and _key(r) == key]
    first = np.full((len(truth), len(runs)), np.inf)
    for j, r in enumerate(runs):
        spend = (r["recall"].get("recovered_spend") or {}).get(unit) or {}
        for i, t in enumerate(truth):
            if t["id"] in r["recall"]["recovered"]:
                first[i, j] = spend.get(t["id"], 0)
    return first


def recall_at_reference(results: Sequence[Mapping], truth: Sequence[Mapping], model: str = "tuned",
                        units: Sequence[str] = COUNT_UNITS) -> list[dict]:
    """Per unit, every method's recall within what the reference run of ours spent in that unit
    (per seed: the reference's spend at the same seed), and whether the method's runs got that far
    in every seed (``covers``: else its recall there is a lower bound). Empty without a reference."""
    refs = {r.get("seed", 0): r for r in results if r["model"] == model and r.get("reference")}
    if not refs:
        return []
    rows = []
    for unit in units:
        for m, key in methods_of(results):
            if m != model:
                continue
            runs = [r for r in results if r["model"] == model and _key(r) == key]
            x = np.array([_spent(refs[r.get("seed", 0)], unit) if r.get("seed", 0) in refs else np.inf for r in runs])
            hit = _first_spend(results, truth, model, key, unit) <= x[None, :]
            covers = all(_spent(r, unit) >= xi for r, xi in zip(runs, x))
            rows.append({"model": model, "method": key, "unit": unit,
                         "reference_mean": round(float(np.mean(x[np.isfinite(x)])), 1) if np.isfinite(x).any() else None,
                         "recall": round(float(hit.mean()), 4) if hit.size else 0.0,
                         "mean_spent": round(float(np.mean([_spent(r, unit) for r in runs])), 1) if runs else None,
                         "covers": covers})
    return rows


def control_rows(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """False recoveries per method on the untuned control model: (canary, seed) cells and canaries."""
    rows = []
    for model, key in methods_of(results):
        if model != "control":
            continue
        m = recovered_matrix(results, truth, model, key)
        rows.append({"method": key, "seeds": m.shape[1], "cells": m.size, "false_recoveries": int(m.sum()),
                     "canaries": int((m.sum(axis=1) > 0).sum()), "rate": round(float(m.mean()), 4) if m.size else 0.0,
                     **{k.replace("recall", "rate"): v for k, v in _ci(m).items()}})
    return rows


def group_recall(results: Sequence[Mapping], truth: Sequence[Mapping], group_of, column: str,
                 order: Sequence | None = None) -> list[dict]:
    """Recall of every method (model, key; over its seeds) within each group of canaries:
    ``group_of(result, canary)`` names the canary's group (it may depend on the model, e.g. the
    exposure under the run's model). One row per (method, non-empty group): planted canaries,
    recovered and total (canary, seed) cells, recall and its two-way bootstrap interval."""
    rows = []
    for model, key in methods_of(results):
        runs = [r for r in results if r["model"] == model and _key(r) == key]
        m = recovered_matrix(results, truth, model, key)
        groups: dict = {}
        for i, t in enumerate(truth):
            groups.setdefault(group_of(runs[0], t), []).append(i)
        keys = [g for g in order if g in groups] if order is not None else sorted(groups)
        for g in keys:
            sub = m[groups[g], :]
            rows.append({"model": model, "method": key, "variant": runs[0]["variant"], column: g,
                         "planted": len(groups[g]), "seeds": sub.shape[1], "cells": sub.size,
                         "recovered": int(sub.sum()), "recall": round(float(sub.mean()), 4), **_ci(sub)})
    return rows


def run_rows(results: Sequence[Mapping], truth: Sequence[Mapping]) -> tuple[list, list, list, list]:
    """Per run: its summary row (recall.csv), its per-attribute and recall-curve rows, and, on the
    control model, every canary it "recovered" (a bug; the value masked)."""
    by_id = {t["id"]: t for t in truth}
    summary, attr_rows, curve_rows, bugs = [], [], [], []
    for r in results:
        rc = r["recall"]
        summary.append(_summary_row(r, truth))
        for attr, a in rc["by_attribute"].items():
            attr_rows.append({"run": r["run"], "model": r["model"], "attribute": attr, **a})
        for pt in rc["curve"]:
            curve_rows.append({"run": r["run"], "model": r["model"], **pt})
        if r["model"] == "control":
            for cid in rc["recovered"]:
                bugs.append({"run": r["run"], "canary_id": cid, "attribute": by_id[cid]["attribute"],
                             "value": mask(by_id[cid]["value"])})
    return summary, attr_rows, curve_rows, bugs


def _summary_row(r: Mapping, truth: Sequence[Mapping]) -> dict:
    """One run's row: responses, budget and stop reason, recall with its canary-bootstrap interval,
    confirmed leaks."""
    rc = r["recall"]
    b = r.get("budget") or {}
    return {"run": r["run"], "model": r["model"], "method": _key(r), "seed": r.get("seed", 0),
            "kind": r["method"], "variant": r["variant"],
            "responses": rc["responses"], "responses_ok": rc["responses_ok"],
            # the run's budget (calls, prompt and completion tokens of its responses) and why it stopped
            **{k: (r.get("spend") or {}).get(k) for k in ("calls", "prompt_tokens", "completion_tokens")},
            "target_completion_tokens": b.get("target_completion_tokens"),
            "stop": b.get("stop") or ("reference" if r.get("reference") else "own size"),
            "candidates": rc["candidates"], "planted": rc["planted"],
            "recovered": len(rc["recovered"]), "recall": round(rc["recall"], 4),
            **_ci(np.array([[1 if t["id"] in rc["recovered"] else 0] for t in truth]).reshape(len(truth), 1)),
            **_confirmed_columns(rc)}


def _confirmed_columns(rc: Mapping) -> dict:
    """A run's confirmed leaks; None for a run that verifies nothing (the prefix probe)."""
    verified = rc.get("verified", True)
    return {"confirmed": len(rc["confirmed_ids"]) if verified else None,
            "confirmed_recall": round(rc["confirmed_recall"], 4) if verified else None,
            **{k: rc[k] if verified else None for k in ("confirmed_non_canary", "confirmed_non_canary_in_corpus")}}


def duplication_rows(results: Sequence[Mapping], truth: Sequence[Mapping], mem: Mapping[str, Mapping]) -> list[dict]:
    """Recall per method and duplication level, with the canaries of the level memorized (``mem``:
    canary id -> memorization row; "" without memorization rows)."""
    dup_rows = group_recall(results, truth, lambda r, t: t.get("duplication", 1), "duplication")
    for row in dup_rows:
        ids = [t["id"] for t in truth if t.get("duplication", 1) == row["duplication"]]
        row["memorized"] = sum(1 for i in ids if (mem.get(i) or {}).get("memorized")) if mem else ""
    return with_ceiling(dup_rows, "duplication")


def exposure_rows(results: Sequence[Mapping], truth: Sequence[Mapping], mem: Mapping[str, Mapping],
                  bands: Sequence[float]) -> list[dict]:
    """Recall per method and exposure band, the exposure taken under the model the run probed
    (none without memorization rows)."""
    if not mem:
        return []
    return with_ceiling(group_recall(results, truth, lambda r, t: band_of(
        (mem.get(t["id"]) or {}).get("exposure" if r["model"] == "tuned" else "exposure_control"), bands),
        "exposure_band", order=band_labels(bands) + ["n/a"]), "exposure_band")


def with_ceiling(rows: list[dict], column: str | None = None) -> list[dict]:
    """``rows`` (method rows, or group rows of ``column``), each with ``ceiling_recall``: the recall of
    the prefix probe (method ``prefix``) on the same model and in the same group; None without a
    probe run of that model."""
    ceiling = {(r["model"], r[column] if column else None): r["recall"] for r in rows if r["method"] == PREFIX}
    for r in rows:
        r["ceiling_recall"] = ceiling.get((r["model"], r[column] if column else None))
    return rows


def attribute_rows(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """Recall per method and attribute (attributes in ground-truth order), beside the ceiling."""
    order = list(dict.fromkeys(t["attribute"] for t in truth))
    return with_ceiling(group_recall(results, truth, lambda r, t: t["attribute"], "attribute", order=order),
                        "attribute")


def context_rows(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """Recall per method and context kind (:data:`testleak.canary.contexts.KINDS`, then ``other``, also
    the group of a hand-built canary without a kind), beside the ceiling."""
    return with_ceiling(group_recall(results, truth, lambda r, t: t.get("context_kind") or OTHER, "context_kind",
                                     order=[*KINDS, OTHER]), "context_kind")
