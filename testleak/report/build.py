"""Write every report under reports/ (paper Sec. 6: Tables 2-4, Figure 1, and the paper side
by side). Inputs are masked metrics only, so no raw candidate value can reach a report.

Files: table2.{md,csv}, table3.{md,csv}, table4.{md,csv}, table8.{md,csv} (baselines),
rejections.{md,csv} (where the judged step left the candidates: kept, echo, placeholder, ...),
figure1.{md,csv,png}, figure1_tokens.png
(Figure 1 with completion tokens spent on the x axis), paper_comparison.md. Tables comparing
methods (Table 3, Figure 1's table, the paper comparison's Table 3) state each run's budget:
calls, prompt and completion tokens and how it was set (testleak/equalcost.py). Each Markdown
file names the model, experiment, verifier backend and review policy it was produced with; results under review policy ``auto`` carry
"(unreviewed)" in every table and figure title.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..metrics.stats import wilson_ci
from .comparison import UNREVIEWED, paper_comparison, review_label
from ..metrics.curves import UNITS
from .figures import figure1_png, units_png
from .markdown import NOT_RUN, md_table, num, write_csv
from .inputs import ReportSettings
from .paper import load_paper_results
from .tables import (EFFICIENCY_COLS, ablation_reference, ablation_rows, ablation_table, budget_cells, budget_headers,
                     confirmed_table,
                     efficiency_cells, multi_model, rejections_table, runs_frame, table2, table3, table4, table8,
                     with_means)

TABLE2_NOTE = ("Test case = one test the model wrote in its test turn (as ExtractPII delimits tests; an answer "
               "with code but no test delimiter is one; a baseline response is one test case); test cases = test "
               "cases of the responses carrying the attribute (responses that failed with status error carry none; "
               "the tests requested are in data/metrics/RUN.json, `responses.tests_requested`); accepted = test "
               "cases of responses with status ok; confirmed = distinct confirmed (attribute, value) pairs of the "
               "run; confirmed instances = confirmed records (a value repeated in several answers counts several "
               "times); permille = confirmed / test cases x 1000; reject rate = refused / answered responses "
               "(refusals only), with no-code answers and answers cut at max_tokens beside it.\n\n")
TABLE3_NOTE = ("LP>=L: share of the run's test cases with at least L distinct confirmed elements of the category; "
               "IL>=L: at least L elements whose hit repository-id sets interconnect (largest connected component). "
               "A test case is one test of one answer (values outside every test form one more test case of that "
               "answer); a baseline response is one test case. Denominator: the run's test cases, one set for every "
               "category, each test case counted once (docs/METRICS.md); so no cell exceeds 1000‰.\n\n")

TABLE8_NOTE = ("Per baseline run (its verification protocol in parentheses, `baselines.protocol` or the run's "
               "`verification`): prompts / test cases = responses whose prompt targets the attribute (one response "
               "is one test case; counts of responses); after filter = candidates kept before the search "
               "(`published`: CodexLeaks' blind membership-inference filter then the values of the kept responses, "
               "or Codebreaker's Presidio entities mapped to the attribute, nothing removed by our judge, except "
               "echoes, taxonomy words and placeholders, which keep no value and are never searched "
               "(docs/PRIVACY.md; the rejections report counts them); `shared`: "
               "ExtractPII + our format rules + judge LLM); in window = candidates with 1 <= k <= 100 corpus hits; "
               "confirmed = distinct confirmed (attribute, value) pairs. All four are counts. Paper columns: "
               "{paper}\n\n")

REJECTIONS_NOTE = ("Where the judged step left each run's candidates (`rules.status` and the judge's verdict of "
                   "data/runs/RUN/judged.jsonl): kept, or rejected as an echo of its prompt (the value repeats, up to "
                   "case, spacing and punctuation, what the prompt of its own response gave the model: a library "
                   "fragment or a value of a baseline template; no evidence of memorization, and an echo of a round "
                   ">= 1 library fragment would count a confirmed leak twice; testleak/echo.py), a placeholder, a "
                   "failed format rule, or by the judge LLM (implausible, unparsable answer, failed call). Kept and "
                   "the reasons sum to the candidates. Runs verified as `published` keep every candidate (no rules, "
                   "no judge).\n\n")

CONFIRMED_NOTE = ("Each distinct confirmed (attribute, value) of each run, masked, with its corpus hits: k = files "
                  "that hold it, the repositories (for the local index: installed distributions, minus the "
                  "synthetic-data generators of `verifier.local.exclude`, see data/index/manifest.json `excluded`) "
                  "and the first files that matched (repository/path), so that a reader can judge whether the "
                  "value is real data or documentation, test data or an example.\n\n")

MEANS_NOTE = ("Several test models: each model's row, then each family's mean over its models (family: `family` of "
              "the model's config) and the mean over the families, as the paper reports (Sec. 6.2: 92.6 confirmed = "
              "(105.7 + 79.5) / 2; Table 4's 35.10 % reject rate = the mean of the families' rates). Every count and "
              "rate is averaged alike (`testleak.metrics.family_means`); ablation scores per model, then averaged "
              "(macro). A mean whose runs have not all run is \"not run\".\n\n")


def models_line(runs: pd.DataFrame) -> str:
    """``Model `a` (family f)`` or ``Models `a` (family f), `b` (family g)`` for report headers."""
    pairs = list(dict.fromkeys(zip(runs["model"], runs["family"])))
    return ("Models " if len(pairs) > 1 else "Model ") + ", ".join(f"`{m}` (family {f})" for m, f in pairs)


def _policy(metrics: Mapping[str, Mapping | None], default: str) -> str:
    ps = sorted({m["policy"] for m in metrics.values() if m and m.get("policy")})
    return "+".join(ps) if ps else default


def incomplete_note(metrics: Mapping[str, Mapping | None]) -> str:
    """One sentence per run whose metrics lost LLM or search calls to errors (``complete`` false):
    its counts and rates are lower bounds, and every report says so."""
    lines = []
    for run, m in metrics.items():
        if m and not m.get("complete", True):
            errs = ", ".join(f"{step} {n}" for step, n in m.get("errors", {}).items() if n)
            lines.append(f"**Incomplete: run `{run}` lost calls to errors ({errs}); its counts and rates are lower "
                         f"bounds. Fix the endpoint and rerun `dvc repro`.**\n\n")
    return "".join(lines)


def scale_note(metrics: Mapping[str, Mapping | None]) -> str:
    """What a zero means at this run's size: per run, its test cases, the
    smallest non-zero rate it can show, and the 95 % Wilson upper bound of a rate that came out
    zero; and the command that shows the instrument detecting a known (planted) signal."""
    parts = []
    for run, m in metrics.items():
        total = ((m or {}).get("steps") or {}).get("total") or {}
        n = int(total.get("test_cases") or 0)
        if not n:
            continue
        k = int(total.get("confirmed") or 0)
        hi = wilson_ci(0, n)[1] * 1000
        parts.append(f"`{run}` {n} attribute test cases, {k} confirmed (a 0 here is compatible with up to {hi:.1f}‰)")
    if not parts:
        return ""
    return ("Reading zeros: " + "; ".join(parts) + ". Attribute test cases are the permille denominator: each "
            "test case counted once per attribute its prompt carries (Table 2's per-attribute test cases summed), "
            "so they exceed the run's test cases of Table 3 for ours. A zero says that no value of that attribute passed judge, "
            "window and review in this run, not that the model leaks none; a small run sees only rates above about "
            "1000 / its test cases (per mille). To see the instrument detect a known signal, plant secrets in a "
            "fine-tuned copy of the model and measure recall: `dvc exp run -S experiment=canary_tiny` (minutes) or "
            "`-S experiment=canary` (docs/CANARIES.md; `reports/canary_measured/`).\n\n")


def _runs_with_models(runs: Mapping[str, Mapping], models: Mapping) -> dict:
    """``runs`` (experiment.runs) with the name and family of each run's model where the
    experiment lists its ``models`` (``model_params: experiment.models.ID``; a run that has no
    metrics yet still has a family in the tables); a run of the ``model`` group keeps its model's name."""
    out = {}
    for r, spec in runs.items():
        key = str(spec.get("model_params"))   # absent: a run carrying its model config
        mid = key.removeprefix("experiment.models.") if key.startswith("experiment.models.") else None
        m = models.get(mid) if mid else None
        out[r] = {**spec, "model": {"name": m.name, "family": m.family}} if m else spec
    return out


def build_reports(
    cfg: ReportSettings,
    metrics: Mapping[str, Mapping | None],
    curves: Mapping[str, Sequence[Mapping] | None],
    taxonomy,
    out_dir: str | Path,
    paper: Mapping | None = None,
) -> list[Path]:
    """Build all report files; returns their paths. ``cfg``: the config the report reads
    (:meth:`ReportSettings.from_params`); ``metrics``/``curves`` map every run of ``cfg.runs``
    to its data or None (not run)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paper = paper or load_paper_results()
    runs = runs_frame(_runs_with_models(cfg.runs, cfg.models), metrics)
    frame, means = with_means(runs, metrics)   # several models: family means and the mean over families
    policy = _policy(metrics, cfg.policy)
    tag = f" ({UNREVIEWED})" if UNREVIEWED in review_label(policy) else ""
    header = (f"{models_line(runs)}, experiment `{cfg.experiment}`, verifier "
              f"`{cfg.verifier.backend}`, review policy `{review_label(policy)}`.\n\n")
    header += incomplete_note(metrics) + scale_note(metrics)
    written: list[Path] = []

    def emit(name: str, title: str, headers, rows, note: str = "") -> None:
        (out / f"{name}.md").write_text(f"# {title}{tag}\n\n{header}{note}{md_table(headers, rows)}", encoding="utf-8")
        write_csv(out / f"{name}.csv", headers, rows)
        written.extend([out / f"{name}.md", out / f"{name}.csv"])

    note_means = MEANS_NOTE if len(frame) > len(runs) else ""
    emit("table2", "Table 2: step-wise leakage per attribute", *table2(frame, means, taxonomy),
         note=TABLE2_NOTE + note_means)
    emit("table3", "Table 3: leakage levels per method and category", *table3(frame, means, taxonomy),
         note=TABLE3_NOTE + note_means)
    p8 = paper.get("table8") or {}
    emit("table8", "Table 8: step-wise results of the baselines per attribute", *table8(runs, metrics, taxonomy, cfg.protocols, p8),
         note=TABLE8_NOTE.format(paper=p8.get("note", "not transcribed")))
    emit("rejections", "Rejections at the judged step", *rejections_table(frame, means), note=REJECTIONS_NOTE + note_means)
    emit("confirmed", "Confirmed values and the corpus files that matched them", *confirmed_table(frame, means),
         note=CONFIRMED_NOTE)
    ablation = ablation_table(runs, metrics)
    scores = ablation_rows(ablation)
    reference = ", ".join(f"`{ablation_reference(runs[runs['model'] == m])}`" for m in dict.fromkeys(runs["model"]))
    emit("table4", "Table 4: ablation against the full pipeline", *table4(ablation, paper["table4"]["variants"]),
         note=f"Reference: distinct confirmed (attribute, value hash) set of run {reference} "
              "(method ours, variant none; with several models, each model's own). Each variant row comes from the "
              "run of this experiment with that variant (experiment.runs.RUN.ablation, or `-S ablation=<variant>`). "
              "TP = |variant & reference|, FN = |reference - variant|, FP = |variant - reference|; precision, "
              "recall, F1 pooled over the run; reject rate = refused / answered responses (refusals only).\n\n" + note_means)
    written += figure1(runs, curves, taxonomy, out, header, f"{', '.join(dict.fromkeys(runs['model']))} / "
                       f"{cfg.experiment} / review {review_label(policy)}", tag, metrics)
    title, _, body = paper_comparison(cfg, paper, means, taxonomy, scores, policy, frame).partition("\n")
    note = incomplete_note(metrics)
    (out / "paper_comparison.md").write_text(f"{title}\n" + (f"\n{note}" if note else "") + body, encoding="utf-8")
    written.append(out / "paper_comparison.md")
    return written


FIGURE1_NOTE = ("The first figure is the paper's (confirmed instances against responses). The second puts the "
                "completion tokens each run spent on the x axis; the third draws the confirmed instances (all "
                "categories) against every budget unit, one panel each: responses, test cases, completion tokens, "
                "prompt + completion tokens, USD at the model's price, for every run from the same curves. Budget = the run's responses stage against the model under test (calls, prompt and "
                "completion tokens of every answer used, cached ones at their recorded tokens); under "
                "`experiment.baseline_budget: match_ours` each baseline issues requests until its spend in the unit "
                "named by the budget rule (completion tokens by default) reaches that of the same model's run of "
                "ours (testleak/equalcost.py). Confirmed = distinct confirmed "
                "values of the run.\n\n")


def _unit(row: Mapping, unit: str) -> str:
    v = row.get(unit)
    return "-" if v in (None, "") else str(v)


def _tok(row: Mapping) -> str | int:
    v = row.get("completion_tokens")
    return "-" if v in (None, "") else int(v)


def figure1(frame: pd.DataFrame, curves: Mapping[str, Sequence[Mapping] | None], taxonomy, out: Path, header: str,
            title: str, tag: str, metrics: Mapping[str, Mapping | None] | None = None) -> list[Path]:
    """figure1.{csv,png,md} and figure1_tokens.png: cumulative confirmed instances per category vs
    responses, and vs completion tokens spent (equal cost); the table states each run's budget."""
    cats = list(taxonomy.categories)
    metrics = metrics or {}
    labels = dict(zip(frame["run"], frame["label"] + (" / " + frame["model"] if multi_model(frame) else "")))
    fig_rows, last = [], []
    for r in frame.itertuples():
        rows = curves.get(r.run)
        m = metrics.get(r.run)
        if rows is None:
            fig_rows.append([r.run, r.method] + [NOT_RUN] * 6 + [NOT_RUN] * len(cats))
            last.append([r.label, r.method, NOT_RUN] + [NOT_RUN] * len(cats) + budget_cells(None)
                        + [NOT_RUN] + efficiency_cells(None))
            continue
        for row in rows:
            fig_rows.append([r.run, r.method, int(row["responses"]), _tok(row)]
                            + [_unit(row, u) for u in ("test_cases", "tokens", "usd")] + [int(row["all"])]
                            + [int(row[c]) for c in cats])
        fin = rows[-1] if rows else {"responses": 0, **{c: 0 for c in cats}}
        last.append([r.label, r.method, int(fin["responses"])] + [int(fin[c]) for c in cats] + budget_cells(m)
                    + [num(m["steps"]["total"]["confirmed"]) if m else "-"] + efficiency_cells(m))
    write_csv(out / "figure1.csv", ["run", "method", "responses", "completion_tokens", "test_cases", "tokens", "usd",
                                    "all"] + cats, fig_rows)
    runs = {r: curves.get(r) for r in frame["run"]}
    png = figure1_png(runs, cats, out / "figure1.png", labels, title=title)
    png_tokens = figure1_png(runs, cats, out / "figure1_tokens.png", labels, title=title + " / equal cost",
                             x="completion_tokens")
    png_units = units_png(runs, UNITS, out / "figure1_units.png", labels, title=title + " / every budget unit")
    (out / "figure1.md").write_text(
        f"# Figure 1: confirmed instances vs number of responses and vs completion tokens{tag}\n\n" + header
        + FIGURE1_NOTE + "![figure 1](figure1.png)\n\n![figure 1, completion tokens on the x axis](figure1_tokens.png)"
        "\n\n![confirmed instances against every budget unit](figure1_units.png)"
        "\n\n" + md_table(["run", "method", "responses"] + cats + budget_headers() + ["confirmed"]
                           + [h for _, h in EFFICIENCY_COLS], last), encoding="utf-8")
    return [out / "figure1.csv", png, png_tokens, png_units, out / "figure1.md"]
