"""Stage ``canary_report``: calibration runs against the tuned and the control model, recall report (issue 8).

    python -m stages.canary_report            # execute the runs, then report
    python -m stages.canary_report --report   # only recompute the report from existing runs

Reads params: experiment (calibration_runs; a run may carry ``ablation: <conf/ablation name>``;
baseline_budget, baseline_max_responses), canary (models, seeds, judge_mode, exposure.bands), model,
questioner, judge, verifier, taxonomy, library, baselines.
Reads data/canary/{ground_truth.jsonl,corpus/,original/,model/model.json,memorization.jsonl}
and metrics/canary_finetune.json. Writes
data/canary/index.sqlite, data/canary/questions.jsonl, data/canary/runs/canary_<model>_<run>_s<seed>/*,
reports/canary/{canary.md,recall.csv,methods.csv,by_attribute.csv,by_duplication.csv,by_exposure.csv,
curves.csv,recall_vs_tokens.csv,paired_tests.csv,control.csv,recall_vs_tokens.png} and
metrics/canary.json. Exits 1 when the control model recovered a canary (a bug).
"""

from __future__ import annotations

import sys

from testleak.canary import report_calibration, run_calibration
from testleak.errors import ConfigError
from testleak.paths import Paths
from testleak.stage import entry, load_stage_params


def main(argv: list[str] | None = None) -> int:
    argv = list(argv or [])
    if argv not in ([], ["--report"]):
        raise ConfigError("usage: python -m stages.canary_report [--report]")
    params = load_stage_params()
    paths = Paths()
    summaries = None if argv else run_calibration(params, paths)
    rep = report_calibration(params, paths, summaries)
    for s in rep["summary"]:
        print(f"canary_report: {s['run']}: recall {s['recall']:.1%} ({s['recovered']}/{s['planted']}) "
              f"in {s['responses']} responses, {s['completion_tokens']} completion tokens ({s['stop']})", file=sys.stderr)
    print(f"canary_report: {rep['answer']}", file=sys.stderr)
    if rep["bugs"]:
        print(f"canary_report: BUG: the control model recovered {len(rep['bugs'])} canaries; see reports/canary/canary.md",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    entry(main)
