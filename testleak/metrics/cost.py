"""Leakage per unit of cost: confirmed leaks per 1,000 completion tokens and
per 100 LLM calls, and the budget a run spent, so that methods are compared at equal cost.

The cost of a run here is its *elicitation* spend: the calls, prompt and completion tokens of
its responses stage against the model under test (``llm`` of ``responses_stats.json``: every
answer used, also one served from the cache, counted at the tokens the endpoint reported;
:mod:`testleak.llm.budget`). That is what ``experiment.baseline_budget: match_ours`` equalises
(:mod:`testleak.equalcost`); the judge's calls, which depend on how many candidates a method
produced, are in the run's ``cost`` (:func:`testleak.llm.budget.run_cost`), not here.
"""

from __future__ import annotations

from typing import Mapping

from ..equalcost import response_completion_tokens  # noqa: F401  (re-exported: one home, testleak.equalcost)
from ..llm.budget import cost_usd
from .rates import ratio

PER_TOKENS = 1000   # confirmed per 1,000 completion tokens
PER_CALLS = 100     # confirmed per 100 calls


def spend_of(stats: Mapping | None) -> dict:
    """Calls, prompt and completion tokens of a stage from its stats (zeros when it recorded none)."""
    llm = (stats or {}).get("llm") or {}
    return {k: int(llm.get(k) or 0) for k in ("calls", "prompt_tokens", "completion_tokens")}


def efficiency(confirmed: int, responses_stats: Mapping | None, responses: int | None = None,
               test_cases: int | None = None, price: Mapping | None = None) -> dict:
    """The run's elicitation budget in every unit (:data:`testleak.metrics.curves.UNITS`:
    responses, test cases, completion tokens, prompt + completion ``tokens``, ``usd`` at the
    model's price, None without one) and its confirmed leaks (distinct) per 1,000 completion
    tokens and per 100 calls (None when it spent nothing). ``budget``: what the run was allowed
    (the responses stats' ``budget``: a baseline's target and why it stopped), when recorded.
    ``usd``: the stats' own, else the tokens at ``price`` (the run's model's)."""
    s = spend_of(responses_stats)
    llm = (responses_stats or {}).get("llm") or {}
    usd = llm.get("usd")
    if usd is None and price:
        usd = round(cost_usd(price, s["prompt_tokens"], s["completion_tokens"]), 6)
    s.update({"responses": responses if responses is not None else (responses_stats or {}).get("responses"),
              "test_cases": test_cases, "tokens": s["prompt_tokens"] + s["completion_tokens"], "usd": usd})
    out = {**s, "confirmed": int(confirmed),
           "per_1k_completion_tokens": _per(confirmed, s["completion_tokens"], PER_TOKENS),
           "per_100_calls": _per(confirmed, s["calls"], PER_CALLS)}
    b = (responses_stats or {}).get("budget")
    if b:
        out["budget"] = dict(b)
    return out


def _per(n: int, spent: int, unit: int) -> float | None:
    r = ratio(n, spent)
    return None if not spent or r is None else round(r * unit, 6)


__all__ = ["PER_TOKENS", "PER_CALLS", "spend_of", "efficiency", "response_completion_tokens"]
