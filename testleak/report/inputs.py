"""The report's inputs: for exactly the runs of ``params.experiment.runs``, the metrics
(``data/metrics/RUN.json``) and curves (``metrics/plots/RUN_confirmed_vs_responses.csv``)
that ``metrics@RUN`` wrote. A run without them, or whose metrics belong to another
experiment, is ``None`` ("not run"); files of runs the experiment does not declare are
never read."""

from __future__ import annotations

import sys
from typing import Mapping

from ..metrics import read_curve
from ..records import read_json


def _read_json(path):
    return read_json(path, f"rerun `dvc repro metrics@{path.stem}`")


def load_inputs(params: Mapping, paths) -> tuple[dict, dict]:
    """``(metrics, curves)``: run -> metrics dict / curve rows, or None when not run.
    ``paths``: a :class:`testleak.paths.Paths` (run_metrics, metrics_plot)."""
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
        curves[run] = read_curve(cp) if m is not None and cp.exists() else None
    return metrics, curves
