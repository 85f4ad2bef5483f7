"""Stage ``questions``: scenario-grounded code-generation questions (paper Sec. 4.1, Fig. 6).

    python -m stages.questions

Reads params: taxonomy, questioner, experiment.scenarios, experiment.questions_per_scenario.
Writes data/questions/questions.jsonl (question/1) and data/questions/stats.json (per
scenario: requests, tasks received and kept, shortfall, gateway errors; no raw values).
Exits 1 when a scenario got no question at all.
"""

from __future__ import annotations

import sys

from testleak.elicit import generate_questions
from testleak.llm import open_gateway
from testleak.paths import Paths
from testleak.llm.answers import answer_settings
from testleak.llm.budget import budget_settings
from testleak.stage import check_errors, check_gateways, entry, load_stage_params
from testleak.records import write_json, write_jsonl
from testleak.taxonomy import Taxonomy


def main(argv: list[str] | None = None) -> int:
    paths = Paths()
    params = load_stage_params()
    tax = Taxonomy.from_config(params)
    exp = params["experiment"]
    with open_gateway(params["questioner"], paths=paths, attribution={"stage": "questions"},
                      budget=budget_settings(params), answers=answer_settings(params)) as gw:
        questions, stats = generate_questions(tax, exp["scenarios"], int(exp["questions_per_scenario"]), gw)
    n = write_jsonl(paths.questions, questions, kind="question")
    write_json(paths.questions_stats, {"questioner": params["questioner"]["name"],
                                   "scenarios": [s.to_dict() for s in stats], "questions": n, **gw.meter.summary(),
                                   "failed_calls": gw.failure_counts()})
    for s in stats:
        msg = f"questions: {s.scenario}: {s.kept}/{s.requested} in {s.attempts} requests"
        if s.shortfall:
            msg += f" (SHORT by {s.shortfall}; {len(s.errors)} gateway errors)"
        print(msg, file=sys.stderr)
    check_gateways("questions", gw, written=f" ({n} questions)")
    empty = [s.scenario for s in stats if s.kept == 0]
    if empty:
        print(f"questions: no question for scenario(s) {', '.join(empty)}; see {paths.questions_stats}", file=sys.stderr)
        return 1
    check_errors("questions", [s.to_dict() for s in stats], "scenario_stats", params, params["questioner"])
    return 0


if __name__ == "__main__":
    entry(main)
