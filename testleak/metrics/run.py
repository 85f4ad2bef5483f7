"""All metrics of one run (method x variant x round): the full masked dict (Tables 2-4,
Fig. 1 inputs; ``data/metrics/RUN.json``) and its headline subset tracked in git
(``metrics/RUN.json``, compared by ``dvc metrics diff`` / ``dvc exp show``).

Only counts, rates, hashes and names leave here; no raw value is ever read (confirmed and
candidate records are used through attribute, ids and ``value_hash``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .ablation import confirmed_keys
from .curves import cumulative_confirmed
from .leakage import leakage_levels
from .records import confirmed_only, policies_of
from .steps import judged_outcomes, refusal_stats, step_counts, with_tests_written


def run_meta(spec: Mapping, model: Mapping, responses: Iterable[Mapping], *, experiment: str, judge: str,
             verifier: str, protocol: str, ablation: str, scenarios: int, questions_per_scenario: int,
             tests_per_function: int) -> dict:
    """What a run is (written beside its metrics, read by the report): experiment (its name), method,
    round, library, variant (the variants its responses carry, else for ours its ablation: its
    entry's flags, else the ``ablation`` group's name ``ablation``), model and family (``model``: the
    run's model config), judge (its name), verifier (the backend), the run's protocol and the
    experiment's sizes. ``spec``: the run's entry of ``experiment.runs``."""
    method = spec["method"]
    variants = sorted({r.get("variant") for r in responses if r.get("variant")})
    own = spec["ablation"]["name"] if spec.get("ablation") else ablation
    variant = "+".join(variants) if variants else (own if method == "ours" else "none")
    return {
        "experiment": experiment,
        "method": method,
        "round": int(spec["round"]),
        "library": spec.get("library"),
        "variant": variant,
        "model": model["name"],
        "family": model.get("family"),
        "judge": judge,
        "verifier": verifier,
        "protocol": protocol,   # the run's filter; its review is the same for every method
        "sizes": {
            "scenarios": scenarios,
            "questions_per_scenario": questions_per_scenario,
            "tests_per_function": tests_per_function,
            "budget": spec.get("budget"),   # the run's budget (testleak/equalcost.py)
        },
    }


def run_metrics(
    responses: Iterable[Mapping],
    candidates: Iterable[Mapping],
    judged: Iterable[Mapping],
    verified: Iterable[Mapping],
    confirmed: Iterable[Mapping],
    taxonomy,
    *,
    run: str,
    meta: Mapping | None = None,
    questions: Mapping[str, Mapping] | None = None,
    default_tests: int = 1,
    per_test: bool = True,
    policy: str | None = None,
) -> dict:
    """Metrics dict: ``errors`` (failed calls per step), ``complete`` (false when any step
    lost calls to errors: its rates are lower bounds), ``run``, ``meta`` (method, variant, model, ...),
    ``policy``, ``responses`` (status counts, test cases, tokens, refusal_rate), ``steps`` (Table 2
    rows), ``rejections`` (where the judged step left each candidate: kept, or echo / placeholder /
    format / judge rejected / unparsable / error, per attribute and in total), ``leakage`` (Table 3 LP/IL fractions over test cases), ``confirmed_unique`` and ``keys``
    (sorted distinct confirmed [attribute, value_hash], for Table 4).
    ``per_test``: test cases are the tests of an answer (ours) or the response (baselines)."""
    responses, candidates, judged, verified = list(responses), list(candidates), list(judged), list(verified)
    if per_test:      # test cases = the tests the model wrote in its test turn (requested kept beside)
        responses = with_tests_written(responses, taxonomy)
    confirmed = list(confirmed)
    errors = error_counts(responses, judged, verified, confirmed)
    confirmed = confirmed_only(confirmed)
    keys = confirmed_keys(confirmed)
    return {
        # failed LLM / search calls per step: a rate over a step that lost calls is incomplete
        "errors": errors,
        "complete": not any(errors.values()),
        "run": run,
        **dict(meta or {}),
        "policy": policies_of(confirmed, policy),
        "responses": refusal_stats(responses, default_tests),
        "steps": step_counts(responses, candidates, judged, verified, confirmed, taxonomy, questions, default_tests),
        "rejections": judged_outcomes(judged, candidates, taxonomy),
        "leakage": leakage_levels(responses, confirmed, taxonomy, verified, candidates, questions, default_tests,
                                  per_test),
        "confirmed_unique": len(keys),
        "keys": [list(k) for k in sorted(keys)],
        "confirmed_values": confirmed_values(confirmed, candidates, verified),
    }


def confirmed_values(confirmed: Iterable[Mapping], candidates: Iterable[Mapping], verified: Iterable[Mapping],
                     listed: int = 3) -> list[dict]:
    """Every distinct confirmed (attribute, value) with what a reader needs to judge it, masked:
    ``{attribute, value (masked), value_hash, instances, k, repos, paths}``; repos and the first
    ``listed`` corpus files that matched come from the search hits (repository/path)."""
    from ..privacy import mask

    # the value masked here, or the mask a candidate that withheld its value kept
    shown = {c.get("id"): mask(c["value"]) if c.get("value") else str(c.get("masked") or "") for c in candidates}
    hits = {h.get("candidate_id"): h for h in verified}
    out: dict[tuple, dict] = {}
    for rec in confirmed:
        k = (rec["attribute"], rec["value_hash"])
        h = hits.get(rec.get("candidate_id")) or {}
        row = out.setdefault(k, {"attribute": k[0], "value": shown.get(rec.get("candidate_id"), ""),
                                 "value_hash": k[1], "instances": 0, "k": h.get("k"), "repos": [], "paths": []})
        row["instances"] += 1
        for key, src in (("repos", h.get("repos") or []), ("paths", h.get("paths") or [])):
            row[key] = list(dict.fromkeys(row[key] + list(src)))[:listed]
    return [out[k] for k in sorted(out)]


def headline(m: Mapping) -> dict:
    """The four numbers per run declared as DVC metrics (in git, a column each in `dvc exp show`):
    confirmed distinct (attribute, value) pairs, permille (confirmed / test cases x 1000, rounded
    to 4 decimals so diffs show real changes), responses and tokens. Everything else (per-category
    permille, LP / IL, refusal rate, instances, budget, cost) is a step statistic: a plain output,
    data/metrics/RUN.json."""
    steps, resp = m["steps"], m["responses"]
    return {
        "confirmed": steps["total"]["confirmed"],
        "permille": round(steps["total"]["permille"], 4),
        "responses": resp["responses"],
        "tokens": resp["tokens"],
    }


def error_counts(responses, judged, verified, confirmed) -> dict[str, int]:
    """Records whose LLM or search call failed, per step (``testleak.records.call_errors``)."""
    from ..records import call_errors

    return {step: sum(bool(call_errors(kind, r)[1]) for r in recs)
            for step, kind, recs in (("responses", "response", responses), ("judged", "verdict", judged),
                                     ("verified", "hit", verified), ("confirmed", "confirmed", confirmed))}


def run_curve(responses: Iterable[Mapping], confirmed: Iterable[Mapping], taxonomy,
              candidates: Iterable[Mapping] = (), price: Mapping | None = None, default_tests: int = 1) -> list[dict]:
    return cumulative_confirmed(responses, confirmed, taxonomy, candidates, price, default_tests)
