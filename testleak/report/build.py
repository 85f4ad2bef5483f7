"""Write every report under reports/ (paper Sec. 6: Tables 2-4, Figure 1, and the paper side
by side). Inputs are masked metrics only, so no raw candidate value can reach a report.

Files: table2.{md,csv}, table3.{md,csv}, table4.{md,csv}, figure1.{md,csv,png},
paper_comparison.md. Each Markdown file names the model, experiment, verifier backend and
review policy it was produced with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from .comparison import paper_comparison
from .figures import figure1_png
from .markdown import NOT_RUN, md_table, write_csv
from .paper import load_paper_results
from .tables import ablation_rows, ordered_runs, runs_of, table2, table3, table4


def _policy(metrics: Mapping[str, Mapping | None], default: str) -> str:
    ps = sorted({m["policy"] for m in metrics.values() if m and m.get("policy")})
    return "+".join(ps) if ps else default


def build_reports(
    params: Mapping,
    metrics: Mapping[str, Mapping | None],
    curves: Mapping[str, Sequence[Mapping] | None],
    key_files: Sequence[Mapping],
    taxonomy,
    out_dir: str | Path,
    paper: Mapping | None = None,
) -> list[Path]:
    """Build all report files; returns their paths. ``metrics``/``curves`` map every run of
    ``params.experiment.runs`` to its data or None (not run)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paper = paper or load_paper_results()
    runs = params["experiment"]["runs"]
    policy = _policy(metrics, params["review"]["policy"])
    header = (f"Model `{params['model']['name']}`, experiment `{params['experiment']['name']}`, verifier "
              f"`{params['verifier']['backend']}`, review policy `{policy}`.\n\n")
    written: list[Path] = []

    def emit(name: str, title: str, headers, rows, note: str = "") -> None:
        (out / f"{name}.md").write_text(f"# {title}\n\n{header}{note}{md_table(headers, rows)}", encoding="utf-8")
        write_csv(out / f"{name}.csv", headers, rows)
        written.extend([out / f"{name}.md", out / f"{name}.csv"])

    emit("table2", "Table 2: step-wise leakage per attribute", *table2(runs, metrics, taxonomy),
         note="Test cases = tests requested over all responses carrying the attribute; accepted = of responses "
              "with status ok; permille = confirmed / test cases.\n\n")
    emit("table3", "Table 3: leakage levels per method and category", *table3(runs, metrics, taxonomy),
         note="LP>=L: share of responses with at least L confirmed elements; IL>=L: at least L elements whose hit "
              "repository-id sets interconnect (largest connected component). Denominator: responses without "
              "status error.\n\n")
    ours = runs_of(runs, "ours")
    ref_run = next((r for r in ours if int(runs[r].get("round", 0)) == 0), ours[0] if ours else "ours")
    scores = ablation_rows(key_files, ref_run, params["model"]["name"])
    emit("table4", "Table 4: ablation against the full pipeline", *table4(scores, paper["table4"]["variants"]),
         note=f"Reference: confirmed (attribute, value hash) set of run `{ref_run}` with variant `none`. Each "
              "variant comes from its own `dvc exp run -S ablation=<variant>` (metrics/keys/<variant>/).\n\n")

    order = ordered_runs(runs)
    labels = {r: r if r == runs[r]["method"] else f"{r} ({runs[r]['method']})" for r in order}
    cats = list(taxonomy.categories)
    fig_rows = []
    for r in order:
        rows = curves.get(r)
        if rows is None:
            fig_rows.append([r, runs[r]["method"], NOT_RUN, NOT_RUN] + [NOT_RUN] * len(cats))
            continue
        for row in rows:
            fig_rows.append([r, runs[r]["method"], int(row["responses"]), int(row["all"])] + [int(row[c]) for c in cats])
    fig_headers = ["run", "method", "responses", "all"] + cats
    write_csv(out / "figure1.csv", fig_headers, fig_rows)
    png = figure1_png({r: curves.get(r) for r in order}, cats, out / "figure1.png", labels,
                      title=f"{params['model']['name']} / {params['experiment']['name']} / policy {policy}")
    last = []
    for r in order:
        rows = curves.get(r)
        if rows is None:
            last.append([r, runs[r]["method"], NOT_RUN] + [NOT_RUN] * len(cats))
        else:
            fin = rows[-1] if rows else {"responses": 0, **{c: 0 for c in cats}}
            last.append([r, runs[r]["method"], int(fin["responses"])] + [int(fin[c]) for c in cats])
    (out / "figure1.md").write_text(
        "# Figure 1: confirmed instances vs number of responses\n\n" + header + "![figure 1](figure1.png)\n\n"
        + md_table(["run", "method", "responses"] + cats, last), encoding="utf-8")
    written += [out / "figure1.csv", png, out / "figure1.md"]

    (out / "paper_comparison.md").write_text(paper_comparison(params, paper, metrics, taxonomy, scores, policy), encoding="utf-8")
    written.append(out / "paper_comparison.md")
    return written
