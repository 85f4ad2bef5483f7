"""Canary calibration report: recall per method and attribute, control check, curves (issue 8).

Writes reports/canary/{canary.md, recall.csv, by_attribute.csv, by_duplication.csv, by_exposure.csv,
curves.csv, paired_tests.csv, recall_curves.png} and metrics/canary.json.

Recall per duplication level (each canary planted k times) and per exposure band (issue 15):
a canary falls in the band of its exposure under the model the run probed (tuned exposure for
runs against the tuned model, control exposure for control runs; testleak.canary.exposure);
every cell carries a 95 % percentile bootstrap interval over the canaries of that cell. Nothing raw leaves data/: canary values appear only through
``testleak.privacy.mask`` (the list of canaries recovered by the control model, which must be
empty: any entry there is flagged as a BUG at the top of the report).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping, Sequence

from ..metrics.stats import bootstrap_ci, mcnemar_exact
from ..privacy import mask
from .exposure import band_labels, band_of
from ..records import write_json


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
                 finetune: Mapping | None = None, memorization: Sequence[Mapping] | None = None,
                 bands: Sequence[float] = (2, 5, 8)) -> dict:
    """``results``: [{run, model, key, method, variant, seconds, recall: run_recall(...)}];
    ``memorization``: the finetune stage's rows (canary_id, exposure, exposure_control, memorized);
    ``bands``: exposure band edges in bits."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_id = {t["id"]: t for t in truth}
    summary, attr_rows, curve_rows, bugs = [], [], [], []
    for r in results:
        rc = r["recall"]
        summary.append({"run": r["run"], "model": r["model"], "method": r["method"], "variant": r["variant"],
                        "responses": rc["responses"], "responses_ok": rc["responses_ok"],
                        # the run's budget (calls, prompt and completion tokens of its responses)
                        **{k: (r.get("spend") or {}).get(k) for k in ("calls", "prompt_tokens", "completion_tokens")},
                        "candidates": rc["candidates"], "planted": rc["planted"],
                        "recovered": len(rc["recovered"]), "recall": round(rc["recall"], 4),
                        **_recall_ci(rc["recovered"], truth),
                        "confirmed": len(rc["confirmed_ids"]), "confirmed_recall": round(rc["confirmed_recall"], 4),
                        "confirmed_non_canary": rc["confirmed_non_canary"],
                        "confirmed_non_canary_in_corpus": rc["confirmed_non_canary_in_corpus"]})
        for attr, a in rc["by_attribute"].items():
            attr_rows.append({"run": r["run"], "model": r["model"], "attribute": attr, **a})
        for pt in rc["curve"]:
            curve_rows.append({"run": r["run"], "model": r["model"], **pt})
        if r["model"] == "control":
            for cid in rc["recovered"]:
                bugs.append({"run": r["run"], "canary_id": cid, "attribute": by_id[cid]["attribute"],
                             "value": mask(by_id[cid]["value"])})
    _csv(out / "recall.csv", summary)
    _csv(out / "by_attribute.csv", attr_rows)
    _csv(out / "curves.csv", curve_rows)
    png = out / "recall_curves.png"
    _plot(results, png)
    lines = ["# Canary calibration: recall against planted ground truth", ""]
    if bugs:
        lines += ["**BUG: the untuned control model 'recovered' canaries it never saw.** The planted values "
                  "are supposed to be absent from everything the base model was trained on; check the matcher, "
                  "the caches (a tuned answer served for the control?) and the ground truth.", ""]
        lines += [f"- {b['run']}: {b['canary_id']} ({b['attribute']}) {b['value']}" for b in bugs] + [""]
    else:
        lines += ["Control check passed: the untuned model recovered no canary.", ""]
    if finetune:
        lines += [f"Fine-tune: {finetune.get('canaries')} canaries, {finetune.get('steps')} steps, memorized "
                  f"(greedy completion from own prefix) before {finetune.get('memorized_before', 0):.0%}, "
                  f"after {finetune.get('memorized_after', 0):.0%}.", ""]
    lines += ["| run | model | method | variant | responses | budget: calls / prompt / completion tokens | candidates | "
              "recovered | recall [95 % CI] | confirmed | confirmed non-canary (of them in the untouched corpus) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        budget = " / ".join("-" if s[k] is None else str(s[k]) for k in ("calls", "prompt_tokens", "completion_tokens"))
        lines.append(f"| {s['run']} | {s['model']} | {s['method']} | {s['variant']} | {s['responses']} | {budget} | "
                     f"{s['candidates']} | {s['recovered']}/{s['planted']} | {s['recall']:.1%} "
                     f"[{s['recall_ci_low']:.1%}, {s['recall_ci_high']:.1%}] | {s['confirmed']} | "
                     f"{s['confirmed_non_canary']} ({s['confirmed_non_canary_in_corpus']}) |")
    mem = {m["canary_id"]: m for m in memorization or []}
    dup_rows = group_recall(results, truth, lambda r, t: t.get("duplication", 1), "duplication")
    for row in dup_rows:
        ids = [t["id"] for t in truth if t.get("duplication", 1) == row["duplication"]]
        row["memorized"] = sum(1 for i in ids if (mem.get(i) or {}).get("memorized")) if mem else ""
    _csv(out / "by_duplication.csv", dup_rows)
    exp_rows = []
    if mem:
        exp_rows = group_recall(results, truth, lambda r, t: band_of(
            (mem.get(t["id"]) or {}).get("exposure" if r["model"] == "tuned" else "exposure_control"), bands),
            "exposure_band", order=band_labels(bands) + ["n/a"])
    _csv(out / "by_exposure.csv", exp_rows)
    lines += ["", "Recall per duplication level (copies of each canary in the corpus; recovered/planted, recall "
              "[95 % CI]; memorized = greedy completion from the canary's own prefix after fine-tuning):", ""]
    lines += _group_table(dup_rows, "duplication", extra="memorized")
    if mem:
        lines += ["", f"Recall per exposure band (bits; exposure under the model the run probed, "
                  f"{_exposure_note(memorization)}):", ""]
        lines += _group_table(exp_rows, "exposure_band")
        lines += ["", "Exposure per duplication level (mean bits, tuned vs control model):", "",
                  "| duplication | canaries | exposure tuned | exposure control |", "|---|---|---|---|"]
        for k in sorted({t.get("duplication", 1) for t in truth}):
            ms = [mem[t["id"]] for t in truth if t.get("duplication", 1) == k and t["id"] in mem]
            lines.append(f"| {k} | {len(ms)} | {_avg(m['exposure'] for m in ms)} | "
                         f"{_avg(m['exposure_control'] for m in ms)} |")
    pairs = paired_tests(results, truth)
    _csv(out / "paired_tests.csv", pairs)
    if pairs:
        lines += ["", "Paired comparisons on the same canaries (exact McNemar: only canaries recovered by exactly one "
                  "of the two runs count; two-sided p):", "",
                  "| model | run A | run B | both | only A | only B | neither | p |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {q['model']} | {q['run_a']} | {q['run_b']} | {q['both']} | {q['only_a']} | {q['only_b']} | "
                  f"{q['neither']} | {q['p']:.4g} |" for q in pairs]
    lines += ["", "Per attribute: `by_attribute.csv`; recall after i responses: `curves.csv`, `recall_curves.png`.",
              "Recall interval: 95 % percentile bootstrap over the planted canaries (9,999 resamples, seed 0; "
              "testleak/metrics/stats.py). One elicitation seed: the interval covers canary sampling only.",
              "Recall: a candidate equal to or containing the canary (also after removing spaces, dashes, dots and "
              "parentheses); confirmed: that candidate passed judge, local-index window and review (auto).",
              "Confirmed non-canary: confirmed values that match no canary, e.g. other synthetic fields of a planted "
              "snippet (memorized with it) or real values of the untouched corpus (counted in parentheses)."]
    (out / "canary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for s in summary:
        s_dup = {str(r["duplication"]): r["recall"] for r in dup_rows if r["run"] == s["run"]}
        s_exp = {r["exposure_band"]: r["recall"] for r in exp_rows if r["run"] == s["run"]}
        s["_groups"] = {"recall_by_duplication": s_dup, "recall_by_exposure_band": s_exp}
    metrics = {"runs": {s["run"]: {**{k: v for k, v in s.items() if k not in ("run", "_groups")}, **s["_groups"]}
                        for s in summary},
               "control_bugs": len(bugs), "planted": len(truth)}
    write_json(metrics_path, metrics)
    return {"summary": summary, "bugs": bugs, "files": sorted(p.name for p in out.iterdir())}


def group_recall(results: Sequence[Mapping], truth: Sequence[Mapping], group_of, column: str,
                 order: Sequence | None = None) -> list[dict]:
    """Recall of every run within each group of canaries: ``group_of(result, canary)`` names the
    canary's group (it may depend on the run, e.g. the exposure under the run's model). One row
    per (run, non-empty group): planted, recovered, recall and its bootstrap interval."""
    rows = []
    for r in results:
        got = set(r["recall"]["recovered"])
        groups: dict = {}
        for t in truth:
            groups.setdefault(group_of(r, t), []).append(t)
        keys = [g for g in order if g in groups] if order is not None else sorted(groups)
        for g in keys:
            ts = groups[g]
            k = sum(1 for t in ts if t["id"] in got)
            rows.append({"run": r["run"], "model": r["model"], "method": r["method"], "variant": r["variant"],
                         column: g, "planted": len(ts), "recovered": k, "recall": round(k / len(ts), 4),
                         **_recall_ci([t["id"] for t in ts if t["id"] in got], ts)})
    return rows


def _group_table(rows: Sequence[Mapping], column: str, extra: str | None = None) -> list[str]:
    """Markdown: one row per run, one column per group value."""
    groups = list(dict.fromkeys(r[column] for r in rows))
    runs = list(dict.fromkeys((r["run"], r["model"]) for r in rows))
    cell = {(r["run"], r["model"], r[column]): r for r in rows}
    out = ["| run | model | " + " | ".join(f"{column} {g}" for g in groups) + " |",
           "|---|---|" + "---|" * len(groups)]
    for run, model in runs:
        cells = []
        for g in groups:
            c = cell.get((run, model, g))
            cells.append("" if c is None else f"{c['recovered']}/{c['planted']} {c['recall']:.0%} "
                         f"[{c['recall_ci_low']:.0%}, {c['recall_ci_high']:.0%}]")
        out.append(f"| {run} | {model} | " + " | ".join(cells) + " |")
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


def _recall_ci(recovered: Sequence[str], truth: Sequence[Mapping]) -> dict:
    got = set(recovered)
    low, high = bootstrap_ci([1.0 if t["id"] in got else 0.0 for t in truth])
    return {"recall_ci_low": round(low, 4), "recall_ci_high": round(high, 4)}


def paired_tests(results: Sequence[Mapping], truth: Sequence[Mapping]) -> list[dict]:
    """Exact McNemar test for every pair of runs on the same model, on the planted canaries."""
    ids = [t["id"] for t in truth]
    out = []
    for i, ra in enumerate(results):
        for rb in results[i + 1:]:
            if ra["model"] != rb["model"]:
                continue
            t = mcnemar_exact(ra["recall"]["recovered"], rb["recall"]["recovered"], ids)
            out.append({"model": ra["model"], "run_a": ra["run"], "run_b": rb["run"], **t, "p": round(t["p"], 6)})
    return out


def _plot(results: Sequence[Mapping], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for r in results:
        c = r["recall"]["curve"]
        if not c:
            continue
        ax.step([p["responses"] for p in c], [p["recall"] for p in c], where="post",
                linestyle="-" if r["model"] == "tuned" else ":", label=r["run"].removeprefix("canary_"))
    ax.set_xlabel("LLM responses spent")
    ax.set_ylabel("canary recall")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
