"""The report's inputs: the config keys it reads (:class:`ReportSettings`, the report stage's
declared params, typed) and, for exactly the runs of ``experiment.runs``, the metrics
(``data/metrics/RUN.json``) and curves (``metrics/plots/RUN_confirmed_vs_responses.csv``)
that ``metrics@RUN`` wrote. A run without them, or whose metrics belong to another
experiment, is ``None`` ("not run"); files of runs the experiment does not declare are
never read."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..config import run_protocol, typed
from ..metrics import read_curve
from ..records import read_json
from ..settings import LLM, Verifier


@dataclass(frozen=True)
class ReportSettings:
    """What the report reads of the config (the report stage's declared params), typed: the
    experiment's name, runs and sizes, the verifier, the judge's name, the review policy and
    each run's protocol. ``runs``: the entries of ``experiment.runs`` as the run lookups read
    them (:func:`testleak.config.run_spec`; a hand-built run may carry its model config);
    ``models``: ``experiment.models`` (id -> model config)."""
    experiment: str
    runs: Mapping[str, Mapping]
    models: Mapping[str, LLM]
    scenarios: tuple[str, ...]
    questions_per_scenario: int
    tests_per_function: int
    functions_per_response: int | str
    baseline_budget: int | str
    baseline_max_responses: int | None
    verifier: Verifier
    judge: str
    policy: str
    protocols: Mapping[str, str]

    @classmethod
    def from_params(cls, params: Mapping) -> "ReportSettings":
        """The view of the composed ``params`` (the report stage's boundary)."""
        runs = {r: dict(spec or {}) for r, spec in (params["experiment"]["runs"] or {}).items()}
        return cls(
            experiment=typed(params, "experiment.name"), runs=runs,
            models=typed(params, "experiment.models"),
            scenarios=tuple(typed(params, "experiment.scenarios")),
            questions_per_scenario=typed(params, "experiment.questions_per_scenario"),
            tests_per_function=typed(params, "experiment.tests_per_function"),
            functions_per_response=typed(params, "experiment.functions_per_response"),
            baseline_budget=typed(params, "experiment.baseline_budget"),
            baseline_max_responses=typed(params, "experiment.baseline_max_responses"),
            verifier=typed(params, "verifier"), judge=typed(params, "judge.name"), policy=typed(params, "review.policy"),
            protocols={r: run_protocol(params, r) for r in runs})


def _read_json(path):
    return read_json(path, f"rerun `dvc repro metrics@{path.stem}`")


def load_inputs(name: str, runs: Iterable[str], paths) -> tuple[dict, dict]:
    """``(metrics, curves)``: run -> metrics dict / curve rows, or None when not run, for the
    ``runs`` of experiment ``name``. ``paths``: a :class:`testleak.paths.Paths` (run_metrics,
    metrics_plot)."""
    metrics, curves = {}, {}
    for run in runs:
        mp, cp = paths.run_metrics(run), paths.metrics_plot(run)
        m = _read_json(mp) if mp.exists() else None
        if m is not None and m.get("experiment") not in (None, name):
            print(f"report: {mp} is from experiment {m.get('experiment')!r}, not {name!r}: reported as not run "
                  f"(rerun `dvc repro metrics@{run}`)", file=sys.stderr)
            m = None
        metrics[run] = m
        curves[run] = read_curve(cp) if m is not None and cp.exists() else None
    return metrics, curves
