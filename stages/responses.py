"""Stage ``responses@RUN``: the test LLM's answers for one run (paper Sec. 4.2, Fig. 7).

    python -m stages.responses RUN

The run's method (``experiment.runs.RUN.method``) is looked up in :mod:`testleak.methods`:
``ours`` asks the scenario questions (data/questions/questions.jsonl, or generic tasks when
``ablation.scenario_questions`` is false), code turn -> G(c) -> test turn with hints from the
run's library (``prior`` or a previous run's data/library/<run>.json); ``codexleaks`` and
``codebreaker`` prompt with their own templates. The model under test is the run's
(the config that ``experiment.runs.RUN.model_params`` names). Library function:
:func:`testleak.pipeline.responses`.

A baseline's budget is the run's ``budget`` (testleak/equalcost.py): a number of responses, or
under ``experiment.baseline_budget: match_ours`` what the same model's run of ours spent in
``experiment.baseline_unit`` (its test cases: the tests it wrote), read from its data/runs/<reference>/responses_stats.json (a dep of this stage).

Writes data/runs/RUN/responses.jsonl (response/1, atomically) and responses_stats.json (counts
by status, tokens and cost of the answers used, ``budget`` (what was allowed and spent, why it stopped), ``partial`` when the spending cap ``budget``
stopped it: then it exits 3); the gateway cache makes a rerun after an interruption repeat no
call. Prints counts by status (no raw values).
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.config import run_model
from testleak.equalcost import run_budget
from testleak.llm import open_gateway
from testleak.paths import Paths
from testleak.llm.answers import answer_settings
from testleak.llm.budget import budget_settings, cost_usd
from testleak.stage import check_errors, check_gateways, entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "responses")
    paths = Paths()
    questions, library = pipeline.method_inputs(params, paths, run)
    model = run_model(params, run)
    price = model.get("price")
    # a baseline's responses or ours' spend to match (experiment.baseline_unit)
    budget = run_budget(params, run, paths.root, usd=(lambda p, c: cost_usd(price, p, c)) if price else None)
    with open_gateway(model, paths=paths, attribution={"stage": "responses", "run": run},
                      budget=budget_settings(params), answers=answer_settings(params)) as gw:
        records, stats = pipeline.responses(params, run, gw, questions, library, budget)
    pipeline.write_artifact(paths, "responses", run, records, stats)
    print(f"responses@{run}: " + ", ".join(f"{k}={v}" for k, v in stats.items() if k not in ("run", "llm", "budget")),
          file=sys.stderr)
    b = stats.get("budget") or {}
    if b.get("kind") == "match_ours":
        # raising the cap helps only a run that stopped there with every call answered
        advice = (f"{stats['error']} calls failed: fix the endpoint and rerun" if stats.get("error")
                  else "raise experiment.baseline_max_responses")
        unit = str(b.get("unit") or "completion_tokens").replace("_", " ")
        print(f"responses@{run}: {b['spent']:g} {unit} for a target of {b['target']:g} (run {b['reference']}), "
              f"{b['completion_tokens']} completion tokens: ratio {b['ratio']}, stop: {b['stop']}"
              + ("" if b["within_tolerance"] else f" (NOT within 10 %: {advice})"), file=sys.stderr)
    check_gateways(f"responses@{run}", gw, written=f" ({stats['ok']} ok of {stats['responses']} responses)")
    check_errors(f"responses@{run}", records, "response", params, model)
    return 0


if __name__ == "__main__":
    entry(main)
