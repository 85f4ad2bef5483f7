"""Canary calibration report: recall per method and attribute, control check, curves.

Writes reports/canary/ (canary.md, CSV tables, recall_vs_budget.png) and metrics/canary.json; the
tables are computed in :mod:`.tables`. The prefix probe (method ``prefix``) is the ceiling: every
row carries ``ceiling_recall``, its recall on the same model and group. A *method* is one
calibration run key on one model, run once per elicitation seed; its recall is the share of
(canary, seed) cells recovered, with a 95 % two-way bootstrap interval (canaries and seeds
resampled independently, :func:`testleak.metrics.stats.cluster_bootstrap_ci`). Methods are compared
by the exact paired sign-flip test over canaries (the unit, since the seeds of one canary are not
independent; :func:`testleak.metrics.stats.paired_permutation_test`), exact McNemar beside it.
Exposure bands use the exposure under the model the run probed. Any control-model recovery is
flagged as a BUG. canary.md opens with a computed answer (:mod:`.answer`), nothing written by hand;
canary values appear only through ``testleak.privacy.mask``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping, Sequence

from ..records import write_json
from .answer import _pct, headline
from .figure import budget_png
from .probe import PREFIX
from .tables import (attribute_rows, context_rows, control_rows, duplication_rows, exposure_rows, method_rows,
                     method_tests, recall_at_reference, run_rows, budget_curves, with_ceiling)
from .tables import CURVE_POINTS, methods_of, recovered_matrix, seeds_of  # noqa: F401 (re-exported: one home, .tables)

def _csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        if not rows:
            f.write("")
            return
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def build_report(results: Sequence[Mapping], truth: Sequence[Mapping], out_dir, metrics_path,
                 finetune: Mapping | None = None, memorization: Sequence[Mapping] | None = None, *,
                 bands: Sequence[float]) -> dict:
    """``results``: [{run, model, key, seed, method, variant, recall: run_recall(...), spend, budget,
    reference}] (one per run, i.e. per method and seed); ``memorization``: the finetune stage's rows
    (canary_id, exposure, exposure_control, memorized); ``bands``: exposure band edges in bits (``canary.exposure.bands``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("recall_curves.png", "recall_vs_tokens.png", "recall_vs_tokens.csv"):   # replaced by recall_vs_budget.*
        (out / stale).unlink(missing_ok=True)
    summary, attr_rows, curve_rows, bugs = run_rows(results, truth)
    methods = with_ceiling(method_rows(results, truth))
    tests = method_tests(results, truth)
    tok_rows = budget_curves(results, truth)
    readings = recall_at_reference(results, truth)
    control = control_rows(results, truth)
    for name, rows in (("recall.csv", summary), ("methods.csv", methods), ("by_attribute.csv", attr_rows),
                       ("curves.csv", curve_rows), ("recall_vs_budget.csv", tok_rows), ("paired_tests.csv", tests),
                       ("control.csv", control), ("recall_at_ours_spend.csv", readings)):
        _csv(out / name, rows)
    budget_png(tok_rows, out / "recall_vs_budget.png")
    mem = {m["canary_id"]: m for m in memorization or []}
    sentence, change = headline(methods, tests, control, _memorized_by_level(truth, mem), readings)
    dup_rows = duplication_rows(results, truth, mem)
    exp_rows = exposure_rows(results, truth, mem, bands)
    groups = {"attribute": attribute_rows(results, truth), "context_kind": context_rows(results, truth),
              "duplication": dup_rows, "exposure_band": exp_rows}
    for name, rows in (("by_duplication.csv", dup_rows), ("by_exposure.csv", exp_rows),
                       ("by_attribute_method.csv", groups["attribute"]), ("by_context.csv", groups["context_kind"])):
        _csv(out / name, rows)
    lines = (_answer_lines(sentence, change) + _control_check_lines(bugs) + _finetune_lines(finetune)
             + _methods_table(methods) + _ceiling_sections(groups) + _tests_table(tests) + _control_table(control)
             + _runs_table(summary)
             + _group_sections(dup_rows, exp_rows, truth, mem, memorization) + list(_NOTES))
    (out / "canary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics = {"answer": sentence, "methods": _method_groups(methods, groups),
               "ceiling": {m["model"]: m["recall"] for m in methods if m["method"] == PREFIX},
               "recall_at_ours_spend": {f"{r['method']}/{r['unit']}": r["recall"] for r in readings},
               "runs": {s["run"]: {k: v for k, v in s.items() if k != "run"} for s in summary},
               "tests": {f"{q['model']}/{q['method_a']}~{q['method_b']}": {"p": q["p"],
                                                                            "p_mcnemar_any_seed": q["p_mcnemar_any_seed"]}
                         for q in tests},
               "control_bugs": len(bugs), "planted": len(truth),
               "seeds": sorted({r.get("seed", 0) for r in results})}
    write_json(metrics_path, metrics)
    return {"summary": summary, "methods": methods, "tests": tests, "control": control, "answer": sentence,
            "change": change, "bugs": bugs, "files": sorted(p.name for p in out.iterdir())}


def _dup_levels(truth: Sequence[Mapping]) -> list:
    """The duplication levels of the ground truth (unset: 1), ascending."""
    return sorted({t.get("duplication", 1) for t in truth})


def _memorized_by_level(truth: Sequence[Mapping], mem: Mapping[str, Mapping]) -> dict | None:
    """{level: share of its canaries memorized}, None without memorization rows."""
    if not mem:
        return None
    return {str(k): sum(1 for t in truth if t.get("duplication", 1) == k and (mem.get(t["id"]) or {}).get("memorized"))
            / max(1, sum(1 for t in truth if t.get("duplication", 1) == k)) for k in _dup_levels(truth)}


def _answer_lines(sentence: str, change: Sequence[str]) -> list[str]:
    return ["# Canary calibration: recall against planted ground truth", "", f"**Answer.** {sentence}", "",
            "What would change it:", ""] + [f"- {c}" for c in change] + [""]


def _control_check_lines(bugs: Sequence[Mapping]) -> list[str]:
    """The control check: passed, or a BUG paragraph listing every false recovery (masked)."""
    if not bugs:
        return ["Control check passed: the untuned model recovered no canary.", ""]
    return (["**BUG: the untuned control model 'recovered' canaries it never saw.** The planted values "
             "are supposed to be absent from everything the base model was trained on; check the matcher, "
             "the caches (a tuned answer served for the control?) and the ground truth.", ""]
            + [f"- {b['run']}: {b['canary_id']} ({b['attribute']}) {b['value']}" for b in bugs] + [""])


def _finetune_lines(finetune: Mapping | None) -> list[str]:
    if not finetune:
        return []
    return [f"Fine-tune: {finetune.get('canaries')} canaries, {finetune.get('steps')} steps, memorized "
            f"(greedy completion from own prefix) before {finetune.get('memorized_before', 0):.0%}, "
            f"after {finetune.get('memorized_after', 0):.0%}.", ""]


def _methods_table(methods: Sequence[Mapping]) -> list[str]:
    """Markdown: one row per model and method (recall over canaries x seeds, spend, stop)."""
    lines = ["## Methods (recall over canaries x seeds, 95 % two-way bootstrap interval)", "",
             "| model | method | variant | seeds | recovered cells | recall [95 % CI] | canaries recovered in any seed | "
             "ceiling (prefix, same model) | mean calls / prompt / completion tokens per seed | "
             "completion tokens vs ours (min-max over seeds) | stop | ok / refused / no code / error / cut |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in methods:
        shares = " / ".join(_pct(m.get(f"{k}_share")) for k in ("ok", "refused", "no_code", "error", "truncated"))
        spend = " / ".join("-" if m[f"mean_{k}"] is None else f"{m[f'mean_{k}']:g}"
                           for k in ("calls", "prompt_tokens", "completion_tokens"))
        ratio = ("-" if m["tokens_vs_reference_min"] is None else
                 f"{m['tokens_vs_reference_min']:.0%}-{m['tokens_vs_reference_max']:.0%}")
        lines.append(f"| {m['model']} | {m['method']} | {m['variant']} | {m['seeds']} | {m['recovered_cells']}/{m['cells']} | "
                     f"{m['recall']:.1%} [{m['recall_ci_low']:.1%}, {m['recall_ci_high']:.1%}] | "
                     f"{m['recovered_any_seed']}/{m['planted']} | {_pct(m['ceiling_recall'])} | {spend} | {ratio} | "
                     f"{m['stop']} | {shares} |")
    return lines


def _tests_table(tests: Sequence[Mapping]) -> list[str]:
    """Markdown: the paired tests of every pair of methods on the same model (none: no lines)."""
    if not tests:
        return []
    return ["", "## Paired tests (same canaries and seeds)", "",
            "p: exact paired sign-flip test over canaries (statistic: sum over canaries of cells recovered by A "
            "minus by B); p McNemar: exact McNemar on recovered in any seed (only canaries recovered by exactly "
            "one of the two count). Two-sided.", "",
            "| model | method A | method B | seeds | recall A | recall B | discordant canaries | T | p | "
            "any seed: both / only A / only B / neither | p McNemar |",
            "|---|---|---|---|---|---|---|---|---|---|---|"] + [
        f"| {q['model']} | {q['method_a']} | {q['method_b']} | {q['seeds']} | {q['recall_a']:.1%} | "
        f"{q['recall_b']:.1%} | {q['discordant_canaries']} | {q['t']} | {q['p']:.4g} | {q['any_both']} / "
        f"{q['any_only_a']} / {q['any_only_b']} / {q['any_neither']} | {q['p_mcnemar_any_seed']:.4g} |"
        for q in tests]


def _control_table(control: Sequence[Mapping]) -> list[str]:
    """Markdown: false recoveries per method on the control model (no control runs: no lines)."""
    if not control:
        return []
    return ["", "## False recoveries on the control model (untuned: every recovery is false)", "",
            "| method | seeds | false (canary, seed) cells | canaries | rate [95 % CI] |", "|---|---|---|---|---|"] + [
        f"| {c['method']} | {c['seeds']} | {c['false_recoveries']}/{c['cells']} | {c['canaries']} | "
        f"{c['rate']:.1%} [{c['rate_ci_low']:.1%}, {c['rate_ci_high']:.1%}] |" for c in control]


def _runs_table(summary: Sequence[Mapping]) -> list[str]:
    """Markdown: one row per run (method and seed)."""
    lines = ["", "## Runs (one per method and seed)", "",
             "| run | model | method | seed | responses | calls / prompt / completion tokens | target tokens | stop | "
             "candidates | recovered | recall [95 % CI] | confirmed | confirmed non-canary (of them in the untouched corpus) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        budget = " / ".join("-" if s[k] is None else str(s[k]) for k in ("calls", "prompt_tokens", "completion_tokens"))
        lines.append(f"| {s['run']} | {s['model']} | {s['method']} | {s['seed']} | {s['responses']} | {budget} | "
                     f"{'-' if s['target_completion_tokens'] is None else s['target_completion_tokens']} | {s['stop']} | "
                     f"{_dash(s['candidates'])} | {s['recovered']}/{s['planted']} | {s['recall']:.1%} "
                     f"[{s['recall_ci_low']:.1%}, {s['recall_ci_high']:.1%}] | {_dash(s['confirmed'])} | "
                     f"{_dash(s['confirmed_non_canary'])} ({_dash(s['confirmed_non_canary_in_corpus'])}) |")
    return lines


def _dash(x) -> str:
    return "-" if x is None else str(x)


def _group_sections(dup_rows: Sequence[Mapping], exp_rows: Sequence[Mapping], truth: Sequence[Mapping],
                    mem: Mapping[str, Mapping], memorization: Sequence[Mapping] | None) -> list[str]:
    """Markdown: recall per duplication level and, with memorization rows, per exposure band and
    the mean exposure per duplication level."""
    lines = ["", "Recall per duplication level (copies of each canary in the corpus; recovered/planted (canary, seed) "
             "cells, recall [95 % CI]; memorized = greedy completion from the canary's own prefix after fine-tuning, "
             "canaries):", ""]
    lines += _group_table(dup_rows, "duplication", extra="memorized")
    if not mem:
        return lines
    lines += ["", f"Recall per exposure band (bits; exposure under the model the run probed, "
              f"{_exposure_note(memorization)}):", ""]
    lines += _group_table(exp_rows, "exposure_band")
    lines += ["", "Exposure per duplication level (mean bits, tuned vs control model):", "",
              "| duplication | canaries | exposure tuned | exposure control |", "|---|---|---|---|"]
    for k in _dup_levels(truth):
        ms = [mem[t["id"]] for t in truth if t.get("duplication", 1) == k and t["id"] in mem]
        lines.append(f"| {k} | {len(ms)} | {_avg(m['exposure'] for m in ms)} | "
                     f"{_avg(m['exposure_control'] for m in ms)} |")
    return lines


_NOTES = (
    "", "Recall vs every budget unit (responses, test cases, completion tokens, total tokens; per seed) with "
    "95 % bands: `recall_vs_budget.csv`, `recall_vs_budget.png`; every method's recall within ours' spend "
    "per unit: `recall_at_ours_spend.csv`; "
    "per run and attribute: `by_attribute.csv`; per method and attribute, context kind, duplication level, exposure "
    "band beside the ceiling: `by_attribute_method.csv`, `by_context.csv`, `by_duplication.csv`, `by_exposure.csv`; "
    "recall after i responses per run: `curves.csv`.",
    "Intervals: 95 % percentile two-way bootstrap, canaries and seeds resampled independently (9,999 "
    "resamples, seed 0; testleak/metrics/stats.py); per-run rows: canaries only.",
    "Equal tokens: per model and seed, every run but ours matches ours' completion tokens "
    "(experiment.baseline_budget: match_ours, testleak/equalcost.py), capped at baseline_max_responses.",
    "Recall: a candidate equal to or containing the canary (also after removing spaces, dashes, dots and "
    "parentheses); confirmed: that candidate passed judge, local-index window and review (auto). Prefix probe "
    "(ceiling): the exact value in the continuation of the canary's own context prefix (no extraction, "
    "judge or search; greedy unless canary.prefix_probe says otherwise), one request per canary.",
    "Confirmed non-canary: confirmed values that match no canary, e.g. other synthetic fields of a planted "
    "snippet (memorized with it) or real values of the untouched corpus (counted in parentheses).")


def _method_groups(methods: Sequence[Mapping], groups: Mapping[str, Sequence[Mapping]]) -> dict:
    """metrics/canary.json's methods: each method row keyed model/method, with its recall per group of
    ``groups`` (column -> group rows: ``recall_by_<column>``, e.g. per duplication level)."""
    out: dict = {}
    for m in methods:
        out[f"{m['model']}/{m['method']}"] = {
            **{c: v for c, v in m.items() if c not in ("model", "method")},
            **{f"recall_by_{col}": {str(r[col]): r["recall"] for r in rows
                                    if r["model"] == m["model"] and r["method"] == m["method"]}
               for col, rows in groups.items()}}
    return out


def _ceiling_sections(groups: Mapping[str, Sequence[Mapping]], model: str = "tuned") -> list[str]:
    """Markdown: recall per attribute and per context kind on ``model``, one row per group, the
    ceiling (prefix probe) first, then every method (recovered/cells and recall)."""
    lines = []
    for col, title in (("attribute", "attribute"), ("context_kind", "context kind")):
        rows = [r for r in groups[col] if r["model"] == model]
        if not rows:
            continue
        ms = list(dict.fromkeys(r["method"] for r in rows))
        ms = [m for m in ms if m == PREFIX] + [m for m in ms if m != PREFIX]
        cell = {(r["method"], r[col]): r for r in rows}
        lines += ["", f"## Recall per {title} beside the ceiling ({model} model; ceiling: the prefix probe)", "",
                  f"| {title} | canaries | " + " | ".join("ceiling (prefix)" if m == PREFIX else m for m in ms) + " |",
                  "|---|---|" + "---|" * len(ms)]
        for g in dict.fromkeys(r[col] for r in rows):
            cs = [cell.get((m, g)) for m in ms]
            first = next(c for c in cs if c is not None)
            lines.append(f"| {g} | {first['planted']} | " + " | ".join(
                "" if c is None else f"{c['recovered']}/{c['cells']} {c['recall']:.0%}" for c in cs) + " |")
    return lines


def _group_table(rows: Sequence[Mapping], column: str, extra: str | None = None) -> list[str]:
    """Markdown: one row per method, one column per group value."""
    groups = list(dict.fromkeys(r[column] for r in rows))
    ms = list(dict.fromkeys((r["method"], r["model"]) for r in rows))
    cell = {(r["method"], r["model"], r[column]): r for r in rows}
    out = ["| method | model | " + " | ".join(f"{column} {g}" for g in groups) + " |",
           "|---|---|" + "---|" * len(groups)]
    for key, model in ms:
        cells = []
        for g in groups:
            c = cell.get((key, model, g))
            cells.append("" if c is None else f"{c['recovered']}/{c['cells']} {c['recall']:.0%} "
                         f"[{c['recall_ci_low']:.0%}, {c['recall_ci_high']:.0%}]")
        out.append(f"| {key} | {model} | " + " | ".join(cells) + " |")
    if extra and rows and rows[0].get(extra) != "":
        first = {}
        for r in rows:
            first.setdefault(r[column], r)
        out.append(f"| ({extra}) | tuned | " + " | ".join(f"{first[g][extra]}/{first[g]['planted']}" for g in groups) + " |")
    return out


def _avg(xs) -> str:
    xs = [x for x in xs if x is not None]
    return f"{sum(xs) / len(xs):.2f}" if xs else "n/a"


def _exposure_note(memorization: Sequence[Mapping]) -> str:
    n = {m.get("exposure_candidates") for m in memorization}
    n.discard(None)
    size = f"{min(n) - 1} alternatives" if n else "alternatives"
    return f"rank of the canary among {size} of the same generator, exposure = log2(candidates) - log2(rank)"
