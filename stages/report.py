"""Stage ``report``: Tables 2-4, Figure 1 and the paper comparison (paper Sec. 6) under reports/.

    python -m stages.report

Reads, for exactly the runs of ``params.experiment.runs``, data/metrics/RUN.json and
metrics/plots/RUN_confirmed_vs_responses.csv (declared outputs of ``metrics@RUN``; a run
without them, or whose metrics belong to another experiment, is reported as "not run":
:func:`testleak.report.load_inputs`). Inputs are masked; so are the outputs.
"""

from __future__ import annotations

import sys

from testleak.paths import Paths
from testleak.report import build_reports, load_inputs
from testleak.stage import entry, load_stage_params
from testleak.taxonomy import Taxonomy


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m stages.report", file=sys.stderr)
        return 2
    p = load_stage_params()
    paths = Paths()
    if not p["experiment"]["runs"]:
        # experiment=canary runs its calibration runs inside canary_report: no metrics@RUN. The deps
        # data/metrics and metrics/plots still exist (kept in git: tests/test_stage_deps_exist.py).
        print(f"report: experiment {p['experiment']['name']!r} has no per-run stages (experiment.runs is empty); "
              "the tables below are empty", file=sys.stderr)
    metrics, curves = load_inputs(p, paths)
    files = build_reports(p, metrics, curves, Taxonomy.from_config(p), paths.reports)
    missing = [r for r, m in metrics.items() if m is None]
    print(f"report: wrote {len(files)} files under {paths.reports}" + (f"; not run: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    entry(main)
