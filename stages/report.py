"""Stage ``report``: Tables 2-4, Figure 1 and the paper comparison (paper Sec. 6) under reports/.

    python -m stages.report

Reads, for exactly the runs of ``params.experiment.runs``, data/metrics/RUN.json and
metrics/plots/RUN_confirmed_vs_responses.csv (declared outputs of ``metrics@RUN``; a run
without them, or whose metrics belong to another experiment, is reported as "not run").
Inputs are masked; so are the outputs.
"""

from __future__ import annotations

import csv
import json
import sys

from testleak.errors import DataError
from testleak.paths import Paths
from testleak.report import build_reports
from testleak.stage import entry, load_stage_params
from testleak.taxonomy import Taxonomy


def _read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path} is not valid JSON ({e.msg}): rerun `python -m stages.metrics RUN`") from None


def load_inputs(params, paths: Paths):
    metrics, curves = {}, {}
    name = params["experiment"]["name"]
    for run in params["experiment"]["runs"]:
        mp, cp = paths.run_metrics(run), paths.metrics_plot(run)
        m = _read_json(mp) if mp.exists() else None
        if m is not None and m.get("experiment") not in (None, name):
            print(f"report: {mp} is from experiment {m.get('experiment')!r}, not {name!r}: reported as not run "
                  f"(rerun `dvc repro metrics@{run}`)", file=sys.stderr)
            m = None
        metrics[run] = m
        if m is not None and cp.exists():
            with cp.open(encoding="utf-8") as f:
                curves[run] = list(csv.DictReader(f))
        else:
            curves[run] = None
    return metrics, curves


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m stages.report", file=sys.stderr)
        return 2
    p = load_stage_params()
    paths = Paths()
    metrics, curves = load_inputs(p, paths)
    files = build_reports(p, metrics, curves, Taxonomy.from_config(p), paths.reports)
    missing = [r for r, m in metrics.items() if m is None]
    print(f"report: wrote {len(files)} files under {paths.reports}" + (f"; not run: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    entry(main)
