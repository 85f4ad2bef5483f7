"""Tables 2-4 of the paper (Sec. 6.2) from masked run metrics.

Inputs are the dicts the metrics stage writes (``metrics/RUN.json``, ``None`` for a run that
has no metrics yet) and the confirmed-key files (``metrics/keys/VARIANT/RUN.json``). A run
without metrics appears as "not run"; nothing crashes on a missing run.
Each function returns ``(headers, rows)`` with display strings, for Markdown and CSV alike.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..metrics import ablation_scores
from .markdown import NOT_RUN, frac_pm, num, pct, pm

METHOD_ORDER = ("codebreaker", "codexleaks", "ours")
STEP_COLS = (("test_cases", "test cases"), ("accepted", "accepted"), ("judge", "judge LLM"),
             ("in_window", "in window"), ("confirmed", "confirmed"))
LEVELS = (("lp1", "LP>=1"), ("lp2", "LP>=2"), ("lp3", "LP>=3"), ("il2", "IL>=2"), ("il3", "IL>=3"))
VARIANT_ORDER = ("no_cgq", "no_fl", "no_tg", "tg_only", "none")


def runs_of(runs: Mapping[str, Mapping], method: str) -> list[str]:
    return [r for r, spec in runs.items() if spec["method"] == method]


def ordered_runs(runs: Mapping[str, Mapping]) -> list[str]:
    out = [r for m in METHOD_ORDER for r in runs_of(runs, m)]
    return out + [r for r in runs if r not in out]


def _label(run: str, m: Mapping | None) -> str:
    return f"{run} ({m['model']})" if m else run


def table2(runs: Mapping[str, Mapping], metrics: Mapping[str, Mapping | None], taxonomy):
    """Step-wise counts per attribute for every run of our method (Table 2 layout)."""
    ours = runs_of(runs, "ours")
    headers = ["Category", "Attribute"]
    for r in ours:
        lab = _label(r, metrics.get(r))
        headers += [f"{lab}: {h}" for _, h in STEP_COLS] + [f"{lab}: permille"]
    rows = []

    def cells(r, row):
        if row is None:
            return [NOT_RUN] * (len(STEP_COLS) + 1)
        return [num(row[k]) for k, _ in STEP_COLS] + [pm(row["permille"], 1)]

    for cat, members in taxonomy.by_category().items():
        for a in members:
            line = [cat, taxonomy.attribute(a).label]
            for r in ours:
                m = metrics.get(r)
                line += cells(r, m["steps"]["attributes"].get(a) if m else None)
            rows.append(line)
        line = [cat, "(category)"]
        for r in ours:
            m = metrics.get(r)
            line += cells(r, m["steps"]["categories"].get(cat) if m else None)
        rows.append(line)
    line = ["Total", ""]
    for r in ours:
        m = metrics.get(r)
        line += cells(r, m["steps"]["total"] if m else None)
    rows.append(line)
    line = ["Refusal rate", ""]
    for r in ours:
        m = metrics.get(r)
        line += [pct(m["responses"]["refusal_rate"]) if m else NOT_RUN] + [""] * len(STEP_COLS)
    rows.append(line)
    return headers, rows


def table3(runs: Mapping[str, Mapping], metrics: Mapping[str, Mapping | None], taxonomy):
    """LP-L / IL-L per run (method) and category, in permille (Table 3 layout)."""
    headers = ["Method", "Run", "Category", "Responses"] + [h for _, h in LEVELS]
    rows = []
    for r in ordered_runs(runs):
        m = metrics.get(r)
        for cat in list(taxonomy.categories) + ["all"]:
            if m is None:
                rows.append([runs[r]["method"], r, cat, NOT_RUN] + [NOT_RUN] * len(LEVELS))
            else:
                lv = m["leakage"][cat]
                rows.append([runs[r]["method"], r, cat, m["leakage"]["responses"]] + [frac_pm(lv[k]) for k, _ in LEVELS])
    return headers, rows


def ablation_rows(key_files: Sequence[Mapping], reference_run: str, model: str | None = None) -> dict[str, dict | None]:
    """Scores per variant of ``reference_run`` against its variant ``none`` (None when the
    variant, or the reference, was not run)."""
    mine = [k for k in key_files if k.get("run") == reference_run and k.get("method") == "ours"
            and (model is None or k.get("model") == model)]
    by_variant = {k["variant"]: k for k in mine}
    ref = by_variant.get("none")
    out: dict[str, dict | None] = {}
    for v in list(VARIANT_ORDER) + sorted(set(by_variant) - set(VARIANT_ORDER)):
        k = by_variant.get(v)
        if k is None:
            out[v] = None
        elif v == "none":
            out[v] = {"tp": None, "fn": None, "fp": None, "precision": None, "recall": None, "f1": None,
                      "reject_rate": k.get("reject_rate"), "reference_size": len(k["keys"])}
        elif ref is None:
            out[v] = {"tp": None, "fn": None, "fp": None, "precision": None, "recall": None, "f1": None,
                      "reject_rate": k.get("reject_rate"), "note": "reference (variant none) not run"}
        else:
            out[v] = ablation_scores(ref["keys"], k["keys"], k.get("reject_rate"))
    return out


def table4(scores: Mapping[str, dict | None], flags: Mapping[str, Mapping]):
    """Ablation table (Table 4 layout): components, TP FN FP, precision recall F1, reject rate."""
    headers = ["Variant", "CGQ", "FL", "TG", "TP", "FN", "FP", "Precision", "Recall", "F1", "Reject rate"]
    rows = []
    for v, s in scores.items():
        f = flags.get(v, {})
        comp = ["✓" if f.get(c) else ("✗" if c in f else "?") for c in ("cgq", "fl", "tg")]
        if s is None:
            rows.append([v, *comp] + [NOT_RUN] * 7)
        else:
            rows.append([v, *comp, num(s["tp"]), num(s["fn"]), num(s["fp"]), pct(s["precision"]),
                         pct(s["recall"]), pct(s["f1"]), pct(s["reject_rate"], 2)])
    return headers, rows
