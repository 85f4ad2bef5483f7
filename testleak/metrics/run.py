"""All metrics of one run (method x variant x round), as the masked dict the metrics stage
writes to ``metrics/RUN.json`` (paper Sec. 6: Tables 2-4, Fig. 1).

Only counts, rates, hashes and names leave here; no raw value is ever read (confirmed and
candidate records are used through attribute, ids and ``value_hash``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .ablation import confirmed_keys
from .curves import cumulative_confirmed
from .leakage import leakage_levels
from .records import confirmed_only, policies_of
from .steps import refusal_stats, step_counts


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
    policy: str | None = None,
) -> dict:
    """Metrics dict: ``errors`` (failed calls per step), ``complete`` (false when any step
    lost calls to errors: its rates are lower bounds), ``run``, ``meta`` (method, variant, model, ...), ``policy``,
    ``responses`` (status counts, refusal_rate), ``steps`` (Table 2 rows), ``leakage``
    (Table 3 LP/IL fractions), ``confirmed_unique``."""
    responses, candidates, judged, verified = list(responses), list(candidates), list(judged), list(verified)
    confirmed = list(confirmed)
    errors = error_counts(responses, judged, verified, confirmed)
    confirmed = confirmed_only(confirmed)
    return {
        # failed LLM / search calls per step: a rate over a step that lost calls is incomplete
        "errors": errors,
        "complete": not any(errors.values()),
        "run": run,
        **dict(meta or {}),
        "policy": policies_of(confirmed, policy),
        "responses": refusal_stats(responses),
        "steps": step_counts(responses, candidates, judged, verified, confirmed, taxonomy, questions, default_tests),
        "leakage": leakage_levels(responses, confirmed, taxonomy, verified, candidates),
        "confirmed_unique": len(confirmed_keys(confirmed)),
    }


def error_counts(responses, judged, verified, confirmed) -> dict[str, int]:
    """Records whose LLM or search call failed, per step (``testleak.records.call_errors``)."""
    from ..records import call_errors

    return {step: sum(bool(call_errors(kind, r)[1]) for r in recs)
            for step, kind, recs in (("responses", "response", responses), ("judged", "verdict", judged),
                                     ("verified", "hit", verified), ("confirmed", "confirmed", confirmed))}


def run_keys(confirmed: Iterable[Mapping]) -> list[list[str]]:
    """Sorted confirmed keys [attribute, value_hash] (hashes only), for the ablation table."""
    return [list(k) for k in sorted(confirmed_keys(confirmed))]


def run_curve(responses: Iterable[Mapping], confirmed: Iterable[Mapping], taxonomy,
              candidates: Iterable[Mapping] = ()) -> list[dict]:
    return cumulative_confirmed(responses, confirmed, taxonomy, candidates)
