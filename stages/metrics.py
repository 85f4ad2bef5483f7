"""Stage ``metrics@RUN``: counts and rates of one run (paper Sec. 6, Tables 2-4, Fig. 1).

    python -m stages.metrics RUN

Reads data/runs/RUN/{responses,candidates,judged,verified,confirmed}.jsonl (and
data/questions/questions.jsonl when present, for the attributes of each question) and writes
masked outputs only (counts, rates, value hashes):

- data/metrics/RUN.json                       (all metrics + confirmed keys + LLM cost and cost per
                                              confirmed leak + efficiency: the elicitation budget and
                                              confirmed per 1,000 completion tokens / per 100 calls;
                                              input of the report)
- metrics/RUN.json                                 (headline numbers, in git: DVC metrics)
- metrics/plots/RUN_confirmed_vs_responses.csv     (DVC plots: cumulative confirmed per category and
                                                   completion tokens spent)
"""

from __future__ import annotations


from testleak.llm.budget import run_cost
from testleak.metrics import efficiency, headline, run_curve, run_meta, run_metrics, with_tests_written, write_curve
from testleak.paths import Paths
from testleak.stage import entry, load_stage_params, run_argument
from testleak.config import run_model
from testleak.records import read_json, read_jsonl, write_json
from testleak.taxonomy import Taxonomy


def main(argv: list[str]) -> int:
    params = load_stage_params()
    paths = Paths()
    run = run_argument(argv, params, "metrics")
    tax = Taxonomy.from_config(params)
    responses = read_jsonl(paths.responses(run))
    meta = run_meta(params, run, responses)
    questions = {q["id"]: q for q in read_jsonl(paths.questions)} if paths.questions.exists() else None
    candidates = read_jsonl(paths.candidates(run))
    judged = read_jsonl(paths.judged(run))
    verified = read_jsonl(paths.verified(run))
    confirmed = read_jsonl(paths.confirmed(run))
    ours = meta["method"] == "ours"
    m = run_metrics(
        responses, candidates, judged, verified, confirmed, tax,
        run=run, meta=meta, questions=questions,
        default_tests=params["experiment"]["tests_per_function"] if ours else 1, per_test=ours,
        policy=params["review"]["policy"],
    )
    stats = {s: read_json(paths.stats(s, run)) for s in ("responses", "judged") if paths.stats(s, run).exists()}
    # LLM cost of the run (responses + judge, at the models' prices) and cost per confirmed leak
    m["cost"] = run_cost(list(stats.values()), m["steps"]["total"]["confirmed"])
    # the elicitation budget (calls, tokens) and confirmed per 1,000 completion tokens / per 100 calls
    price = (run_model(params, run) or {}).get("price")
    m["efficiency"] = efficiency(m["steps"]["total"]["confirmed"], stats.get("responses"), m["responses"]["responses"],
                                 m["responses"]["test_cases"], price)
    write_json(paths.run_metrics(run), m)
    write_json(paths.metrics(run), headline(m, tax.categories))
    curve_responses = with_tests_written(responses, tax) if ours else responses   # test cases as the metrics count them
    write_curve(paths.metrics_plot(run), run_curve(curve_responses, confirmed, tax, candidates, price,
                                                   params["experiment"]["tests_per_function"] if ours else 1),
                tax.categories)
    t = m["steps"]["total"]
    print(f"metrics {run}: {m['responses']['responses']} responses, refusal {m['responses']['refusal_rate']:.3f}, "
          f"confirmed {t['confirmed']} distinct ({t['confirmed_instances']} instances) / {t['test_cases']} test cases "
          f"({t['permille']:.1f} permille), policy {m['policy']}")
    return 0


if __name__ == "__main__":
    entry(main)
