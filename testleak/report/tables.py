"""Tables 2-4 of the paper (Sec. 6.2) from masked run metrics.

Inputs are the dicts the metrics stage writes (``data/metrics/RUN.json``; ``None`` for a
run of ``params.experiment.runs`` that has no metrics yet). A run without metrics appears as
"not run"; nothing crashes on a missing run. The runs are described once, as a pandas frame
(:func:`runs_frame`: run, method, variant, round, policy, verifier, label); every table selects
from it by method and variant. Each table function returns ``(headers, rows)`` with display
strings, for Markdown and CSV alike.

"Which round is ours": the final round of method ``ours`` with variant ``none`` is labelled
``ours`` (the paper's pipeline after its library rounds); earlier rounds ``ours (round k)``,
ablation runs ``ours [variant]``.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from ..config import MODEL_SEP
from ..metrics import ablation_scores, family_means
from .markdown import NOT_RUN, frac_pm, num, pct, pm, review_label

METHOD_ORDER = ("codebreaker", "codexleaks", "ours")
STEP_COLS = (("test_cases", "test cases"), ("accepted", "accepted"), ("judge", "judge LLM"),
             ("in_window", "in window"), ("confirmed", "confirmed"), ("confirmed_instances", "confirmed instances"))
LEVELS = (("lp1", "LP>=1"), ("lp2", "LP>=2"), ("lp3", "LP>=3"), ("il2", "IL>=2"), ("il3", "IL>=3"))
VARIANT_ORDER = ("no_cgq", "no_fl", "no_tg", "tg_only", "none")


MEAN = "mean over families"


def family_label(family: str) -> str:
    return f"mean of family {family}"


def runs_frame(runs: Mapping[str, Mapping], metrics: Mapping[str, Mapping | None]) -> pd.DataFrame:
    """One row per configured run, in table order (baselines, then ours by variant/round, each
    over the experiment's models): run, method, variant, round, ran (has metrics), policy,
    verifier, model, family, kind (``model``; :func:`with_means` adds ``family`` and ``mean``
    rows), label."""
    recs = []
    for r, spec in runs.items():
        m = metrics.get(r)
        own = spec.get("ablation") or {}
        # the run's model config when the caller resolved it (report.build), else its name
        mcfg = spec.get("model") if isinstance(spec.get("model"), Mapping) else {"name": spec.get("model")}
        variant = m.get("variant") if m else (own.get("name") or "none") if spec["method"] == "ours" else "none"
        recs.append({"run": r, "method": spec["method"], "variant": variant or "none", "round": int(spec["round"]),
                     "ran": m is not None, "policy": m.get("policy") if m else None,
                     "protocol": (m.get("protocol") or ("shared" if spec["method"] == "ours" else None)) if m else None,
                     "verifier": m.get("verifier") if m else None,
                     "model": (m or {}).get("model") or mcfg.get("name") or "?",
                     "family": (m or {}).get("family") or mcfg.get("family") or "?", "kind": "model"})
    cols = ["run", "method", "variant", "round", "ran", "policy", "protocol", "verifier", "model", "family", "kind"]
    return _ordered(pd.DataFrame(recs, columns=cols))


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df.assign(label=pd.Series(dtype=str))
    df = df.drop(columns=["label"], errors="ignore")
    df["m_order"] = df["method"].map(lambda x: METHOD_ORDER.index(x) if x in METHOD_ORDER else len(METHOD_ORDER))
    df["v_order"] = df["variant"].map(lambda x: 0 if x == "none" else 1)
    df = df.sort_values(["m_order", "v_order", "round"], kind="stable").drop(columns=["m_order", "v_order"])
    full = df[(df["method"] == "ours") & (df["variant"] == "none")]
    last = int(full["round"].max()) if not full.empty else None
    df["label"] = [
        row.run if row.method != "ours" else
        "ours" if row.variant == "none" and row.round == last else
        f"ours (round {row.round})" if row.variant == "none" else f"ours [{row.variant}]"
        for row in df.itertuples()]
    return df.reset_index(drop=True)


def multi_model(frame: pd.DataFrame) -> bool:
    """Whether the experiment's runs span several test models."""
    return frame[frame["kind"] == "model"]["model"].nunique() > 1


def with_means(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None]) -> tuple[pd.DataFrame, dict]:
    """With several test models: after the runs of each (method, variant, round), one row per
    family (the mean over its models) and one for the mean over the families
    (:func:`testleak.metrics.family_means`), with their metrics; a mean whose runs did not all
    run is "not run". One model: unchanged."""
    metrics = dict(metrics)
    if not multi_model(frame):
        return frame, metrics
    rows = []
    for _, g in frame.groupby(["method", "variant", "round"], sort=False):
        rows += g.to_dict("records")
        first = g.iloc[0]
        base = str(first["run"]).split(MODEL_SEP)[0]
        ran = bool(g["ran"].all())
        fams, overall = family_means({r.model: metrics[r.run] for r in g.itertuples()},
                                     dict(zip(g["model"], g["family"]))) if ran else ({}, None)
        for fam in dict.fromkeys(g["family"]):
            name = f"{base}{MODEL_SEP}mean-{fam}"
            metrics[name] = fams.get(fam)
            rows.append({**first.to_dict(), "run": name, "ran": ran, "model": family_label(fam), "family": fam,
                         "kind": "family"})
        name = f"{base}{MODEL_SEP}mean"
        metrics[name] = overall
        rows.append({**first.to_dict(), "run": name, "ran": ran, "model": MEAN, "family": "all", "kind": "mean"})
    return _ordered(pd.DataFrame(rows, columns=list(frame.columns))), metrics


def final_ours(df: pd.DataFrame) -> str | None:
    """The run reported as "ours": the highest round of method ours, variant none (with several
    models: its mean over the families)."""
    full = df[(df["method"] == "ours") & (df["variant"] == "none")]
    if full.empty:
        full = df[df["method"] == "ours"]
    if full.empty:
        return None
    last = full[full["round"] == full["round"].max()]
    mean = last[last["kind"] == "mean"]
    return str((mean if not mean.empty else last).iloc[0]["run"])


def runs_of(runs: Mapping[str, Mapping], method: str) -> list[str]:
    return [r for r, spec in runs.items() if spec["method"] == method]


def table2(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None], taxonomy):
    """Step-wise counts per attribute for every full-pipeline run of our method (Table 2); with
    several models, for each model, each family's mean and the mean over the families."""
    ours = frame[(frame["method"] == "ours") & (frame["variant"] == "none")]
    multi = multi_model(frame)
    headers = ["Category", "Attribute"]
    for lab, model in zip(ours["label"], ours["model"]):
        lab = f"{lab} / {model}" if multi else lab
        headers += [f"{lab}: {h}" for _, h in STEP_COLS] + [f"{lab}: permille"]
    rows = []

    def cells(row):
        if row is None:
            return [NOT_RUN] * (len(STEP_COLS) + 1)
        return [num(row[k]) for k, _ in STEP_COLS] + [pm(row["permille"], 1)]

    def line(first, pick):
        out = list(first)
        for r in ours["run"]:
            m = metrics.get(r)
            out += cells(pick(m["steps"]) if m else None)
        return out

    for cat, members in taxonomy.by_category().items():
        for a in members:
            rows.append(line([cat, taxonomy.attribute(a).label], lambda s, a=a: s["attributes"].get(a)))
        rows.append(line([cat, "(category)"], lambda s, cat=cat: s["categories"].get(cat)))
    rows.append(line(["Total", ""], lambda s: s["total"]))
    for label, key in (("Refusal rate", "refusal_rate"), ("No-code rate", "no_code_rate"),
                       ("Truncated rate", "truncated_rate")):
        line_ = [label, ""]
        for r in ours["run"]:
            m = metrics.get(r)
            v = (m or {}).get("responses", {}).get(key)
            line_ += [pct(v) if v is not None else (NOT_RUN if m is None else "-")] + [""] * len(STEP_COLS)
        rows.append(line_)
    return headers, rows


TABLE8_COLS = (("test_cases", "prompts / test cases"), ("judge", "after filter"), ("in_window", "in window"),
               ("confirmed", "confirmed"))


def table8(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None], taxonomy, protocols: Mapping[str, str],
           paper8: Mapping | None = None):
    """Step-wise counts per attribute for every baseline run (paper Table 8), beside the paper's
    values: prompts / test cases (responses targeting the attribute; a baseline response is one
    test case), candidates after the run's filter (``published``: the baseline's own filter,
    every candidate kept by the pass-through judged stage; ``shared``: our rules + judge),
    in window (1 <= k <= 100), confirmed (distinct attribute-value pairs). ``protocols``: run ->
    ``published`` | ``shared``; ``paper8``: the ``table8`` block of paper_results.yaml."""
    base = frame[frame["method"].isin(("codebreaker", "codexleaks")) & frame["run"].isin(list(protocols))]
    multi = multi_model(frame)
    paper_methods = (paper8 or {}).get("methods") or {}
    headers = ["Category", "Attribute"]
    for row in base.itertuples():
        lab = f"{row.run} ({protocols[row.run]})" + (f" / {row.model}" if multi else "")
        headers += [f"{lab}: {h}" for _, h in TABLE8_COLS]
    shown = [m for m in ("codebreaker", "codexleaks") if m in set(base["method"])]
    headers += [f"paper {m}: {h}" for m in shown for _, h in TABLE8_COLS]

    def paper_cells(m, key):
        vals = ((paper_methods.get(m) or {}).get(key) or {}) if key else {}
        return [num(vals[k]) if vals.get(k) is not None else "n/a" for k, _ in TABLE8_COLS]

    def line(first, pick, key):
        out = list(first)
        for r in base["run"]:
            m = metrics.get(r)
            row = pick(m["steps"]) if m else None
            out += [num(row[k]) for k, _ in TABLE8_COLS] if row else [NOT_RUN] * len(TABLE8_COLS)
        for meth in shown:
            out += paper_cells(meth, key)
        return out

    rows = []
    for cat, members in taxonomy.by_category().items():
        for a in members:
            rows.append(line([cat, taxonomy.attribute(a).label], lambda s, a=a: s["attributes"].get(a), a))
    rows.append(line(["Total", ""], lambda s: s["total"], "total"))
    return headers, rows


#: The budget a run spent (its responses stage against the model under test; testleak.metrics.cost),
#: stated in every "ours vs baselines" table, so that methods are compared at equal cost.
BUDGET_COLS = (("responses", "responses"), ("test_cases", "test cases"), ("completion_tokens", "completion tokens"),
               ("tokens", "prompt + completion tokens"), ("usd", "USD"))
EFFICIENCY_COLS = (("per_1k_completion_tokens", "confirmed / 1k completion tokens"),
                   ("per_100_calls", "confirmed / 100 calls"))


def budget_headers() -> list[str]:
    return [f"Budget: {h}" for _, h in BUDGET_COLS] + ["Budget rule"]


def budget_rule(m: Mapping | None) -> str:
    """How the run's budget was set: ``own`` (ours), N responses, or ours' tokens matched (target, ratio)."""
    if m is None:
        return NOT_RUN
    eff = m.get("efficiency") or {}
    b = eff.get("budget") or {}
    spec = (m.get("sizes") or {}).get("budget") or {}
    kind = b.get("kind") or spec.get("kind")
    if kind == "match_ours":
        unit = (b.get("unit") or spec.get("unit") or "completion_tokens").replace("_", " ")
        tgt = b.get("target", b.get("target_completion_tokens"))
        if tgt is None:
            return f"match {spec.get('reference') or b.get('reference')} in {unit}"
        ratio = b.get("ratio")
        return (f"match {b.get('reference')} in {unit}: {num(tgt, 4)} {unit}"
                + (f" (x{ratio:.3f}, stop: {b.get('stop')})" if isinstance(ratio, (int, float)) else ""))
    if kind == "responses":
        return f"{num(b.get('responses') or spec.get('responses'))} responses"
    if kind == "own":
        return "own (questions x tests)"
    return "-"


def budget_cells(m: Mapping | None) -> list[str]:
    """Calls, prompt and completion tokens of a run's elicitation, and its budget rule."""
    if m is None:
        return [NOT_RUN] * (len(BUDGET_COLS) + 1)
    eff = m.get("efficiency")
    if not eff:
        return ["-"] * len(BUDGET_COLS) + [budget_rule(m)]
    resp = m.get("responses") or {}
    fall = {"responses": resp.get("responses"), "test_cases": resp.get("test_cases")}
    return [_usd(eff.get(k)) if k == "usd" else num(eff.get(k, fall.get(k))) for k, _ in BUDGET_COLS] + [budget_rule(m)]


def _usd(x) -> str:
    """USD at the model's price ('-' without one)."""
    return "-" if x is None else f"{float(x):.4f}"


def efficiency_cells(m: Mapping | None) -> list[str]:
    if m is None:
        return [NOT_RUN] * len(EFFICIENCY_COLS)
    eff = m.get("efficiency") or {}
    return [num(eff.get(k), 3) for k, _ in EFFICIENCY_COLS]


def provenance_cells(m: Mapping | None) -> list[str]:
    """How a run's numbers were obtained: its verification protocol (``published``: the
    baseline's own filter; ``shared``: our rules + judge) and its review (the same for every
    method: the reviewers' labels, or ``auto``, the automatic reviewer)."""
    if m is None:
        return [NOT_RUN, NOT_RUN]
    proto = m.get("protocol") or ("shared" if m.get("method") == "ours" else "-")
    return [proto, review_label(m.get("policy"))]


PROVENANCE_HEADERS = ["Protocol (filter)", "Review"]


def table3(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None], taxonomy):
    """LP-L / IL-L per run and category, in permille (Table 3 layout), over test cases, with the
    budget each run spent (calls, prompt and completion tokens, how it was set), its confirmed
    leaks per 1,000 completion tokens and per 100 calls (the same on each category row), and the
    protocol and review its numbers were obtained under."""
    multi = multi_model(frame)
    headers = ["Method", "Run"] + (["Model", "Family"] if multi else []) + ["Category", "Test cases"] \
        + [h for _, h in LEVELS] + budget_headers() + [h for _, h in EFFICIENCY_COLS] + PROVENANCE_HEADERS
    rows = []
    for row in frame.itertuples():
        m = metrics.get(row.run)
        first = [row.label, row.run] + ([row.model, row.family] if multi else [])
        tail = budget_cells(m) + efficiency_cells(m) + provenance_cells(m)
        for cat in list(taxonomy.categories) + ["all"]:
            if m is None:
                rows.append(first + [cat, NOT_RUN] + [NOT_RUN] * len(LEVELS) + tail)
            else:
                lv = m["leakage"][cat]
                rows.append(first + [cat, num(m["leakage"]["test_cases"][cat])] + [frac_pm(lv[k]) for k, _ in LEVELS]
                            + tail)
    return headers, rows


def confirmed_table(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None]):
    """Every distinct confirmed value of every run (masked), with the corpus evidence a reader
    judges it by: hit count k, the repositories and the first files that matched."""
    multi = multi_model(frame)
    headers = ["Method", "Run"] + (["Model"] if multi else []) + ["Protocol (filter)", "Review", "Attribute",
                                                                  "Value (masked)", "Instances", "k",
                                                                  "Repositories", "Files matched"]
    rows = []
    for row in frame[frame["kind"] == "model"].itertuples():
        m = metrics.get(row.run)
        if not m:
            continue
        first = [row.label, row.run] + ([row.model] if multi else []) + provenance_cells(m)
        for v in m.get("confirmed_values") or []:
            rows.append(first + [v["attribute"], v["value"], num(v["instances"]), num(v.get("k")),
                                 ", ".join(v.get("repos") or []) or "-", ", ".join(v.get("paths") or []) or "-"])
    return headers, rows


#: Where the judged step left the candidates (testleak.metrics.steps.judged_outcome): kept, then
#: each rejection reason, echo first (a value its own prompt gave the model, testleak/echo.py).
REJECTION_COLS = (("kept", "kept"), ("echo", "echo of its prompt"), ("generic", "taxonomy word"),
                  ("placeholder", "placeholder"),
                  ("format", "format rule"), ("judge_rejected", "judge: implausible"),
                  ("judge_unparsable", "judge: unparsable"), ("judge_error", "judge: call failed"))


def rejections_table(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None]):
    """Per run: its candidates and where the judged step left them (kept, or the rejection
    reason: echo, taxonomy word, placeholder, format rule, judge implausible / unparsable / call failed); the
    reasons and kept sum to the candidates. Metrics written before the breakdown existed: n/a."""
    multi = multi_model(frame)
    headers = ["Method", "Run"] + (["Model"] if multi else []) + ["candidates"] + [h for _, h in REJECTION_COLS]
    rows = []
    for row in frame.itertuples():
        m = metrics.get(row.run)
        first = [row.label, row.run] + ([row.model] if multi else [])
        if m is None:
            rows.append(first + [NOT_RUN] * (1 + len(REJECTION_COLS)))
            continue
        tot = (m.get("rejections") or {}).get("total")
        rows.append(first + [num(m["steps"]["total"]["candidates"])]
                    + ([num(tot.get(k, 0)) for k, _ in REJECTION_COLS] if tot else ["n/a"] * len(REJECTION_COLS)))
    return headers, rows


def ablation_reference(frame: pd.DataFrame) -> str | None:
    """Table 4's reference: the variant-none run of ours at the round of the ablation runs
    (they share its library; round 0 in every shipped experiment), else the final ours."""
    ours = frame[frame["method"] == "ours"]
    abl = ours[ours["variant"] != "none"]
    full = ours[ours["variant"] == "none"]
    if not abl.empty:
        same = full[full["round"] == int(abl["round"].min())]
        if not same.empty:
            return str(same.iloc[0]["run"])
    return final_ours(frame)


def _ablation_one(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None]) -> dict[str, dict | None]:
    """Scores per variant of one model's runs against its reference run's confirmed keys."""
    ref_run = ablation_reference(frame)
    ref = metrics.get(ref_run) if ref_run else None
    ours = frame[(frame["method"] == "ours") & frame["ran"]]
    by_variant: dict[str, str] = {}
    for row in ours.itertuples():
        if row.variant == "none":
            continue
        by_variant.setdefault(row.variant, row.run)
    out: dict[str, dict | None] = {}
    for v in list(VARIANT_ORDER) + sorted(set(by_variant) - set(VARIANT_ORDER)):
        if v == "none":
            out[v] = None if ref is None else {
                "tp": None, "fn": None, "fp": None, "precision": None, "recall": None, "f1": None,
                "reject_rate": ref["responses"]["refusal_rate"], "reference_size": len(ref["keys"]), "run": ref_run}
            continue
        run = by_variant.get(v)
        if run is None:
            out[v] = None
            continue
        k = metrics[run]
        if ref is None:
            out[v] = {"tp": None, "fn": None, "fp": None, "precision": None, "recall": None, "f1": None,
                      "reject_rate": k["responses"]["refusal_rate"], "note": "reference (variant none) not run", "run": run}
        else:
            out[v] = {**ablation_scores(ref["keys"], k["keys"], k["responses"]["refusal_rate"]), "run": run}
    return out


def ablation_table(frame: pd.DataFrame, metrics: Mapping[str, Mapping | None]) -> dict[str, list[tuple[str, dict | None]]]:
    """Variant -> ``[(model, scores or None), ...]``: each model's variant run against the same
    model's reference (:func:`ablation_reference`), then, with several models, each family's
    mean and the mean over the families (macro: scores of each model averaged, as the paper's
    Table 4). Runs are chosen by method ``ours`` and their variant, among the experiment's runs."""
    runs = frame[frame["kind"] == "model"]
    models = list(dict.fromkeys(runs["model"]))
    per = {m: _ablation_one(runs[runs["model"] == m], metrics) for m in models}
    variants = list(dict.fromkeys(v for m in models for v in per[m]))
    out: dict[str, list] = {}
    for v in variants:
        rows = [(m, per[m].get(v)) for m in models]
        if len(models) > 1:
            scores = dict(rows)
            family_of = dict(zip(runs["model"], runs["family"]))
            ok = all(s is not None for s in scores.values())
            fams, overall = family_means(scores, family_of) if ok else ({}, None)
            for f in dict.fromkeys(family_of[m] for m in models):
                rows.append((family_label(f), {**fams[f], "run": family_label(f)} if ok else None))
            rows.append((MEAN, {**overall, "run": MEAN} if ok else None))
        out[v] = rows
    return out


def ablation_rows(table: Mapping[str, list]) -> dict[str, dict | None]:
    """Variant -> the scores reported for the experiment (from :func:`ablation_table`): its
    model's, or with several models the mean over the families (None when not run)."""
    return {v: rows[-1][1] for v, rows in table.items()}


def table4(table: Mapping[str, list], flags: Mapping[str, Mapping]):
    """Ablation table (Table 4 layout): components, TP FN FP, precision recall F1, reject rate;
    with several models one row per model, family mean and mean over the families."""
    multi = any(len(rows) > 1 for rows in table.values())
    headers = ["Variant"] + (["Model"] if multi else []) + ["Run", "CGQ", "FL", "TG", "TP", "FN", "FP", "Precision",
                                                           "Recall", "F1", "Reject rate"]
    rows = []
    for v, entries in table.items():
        f = flags.get(v, {})
        comp = ["✓" if f.get(c) else ("✗" if c in f else "?") for c in ("cgq", "fl", "tg")]
        for model, s in entries:
            first = [v] + ([model] if multi else [])
            if s is None:
                rows.append(first + [NOT_RUN, *comp] + [NOT_RUN] * 7)
            else:
                rows.append(first + [s["run"], *comp, num(s["tp"]), num(s["fn"]), num(s["fp"]), pct(s["precision"]),
                                     pct(s["recall"]), pct(s["f1"]), pct(s["reject_rate"], 2)])
    return headers, rows
