"""Baselines of paper Sec. 6.1 / App. A.2, re-implemented from their descriptions:
CodexLeaks (Niu et al. 2023, :mod:`.codexleaks`) and Codebreaker (Han et al. 2025,
:mod:`.codebreaker`). Both return ``response/1`` records (method ``codexleaks`` |
``codebreaker``) that the unchanged ExtractPII -> judge -> corpus search -> review chain
consumes; ``tests_text`` = prompt + continuation, ``prompt_text`` = the prompt.

The responses stage dispatches with :func:`run_baseline`::

    from testleak.baselines import run_baseline
    recs = run_baseline(run["method"], params, gw, taxonomy,
                        budget=params.experiment.baseline_budget, seed=params.seed,
                        run_round=run["round"])
    write_jsonl(paths.responses(run_name), recs, kind="response")
"""

from __future__ import annotations

from typing import Mapping

from ..config import select
from .codebreaker import group_pi, run_codebreaker
from .codexleaks import run_codexleaks
from .common import METHODS, perplexity

RUNNERS = {"codexleaks": run_codexleaks, "codebreaker": run_codebreaker}


def run_baseline(method: str, params: Mapping, gateway, taxonomy, budget: int, seed: int, run_round: int = 0) -> list[dict]:
    """Run baseline ``method`` (codexleaks | codebreaker) for ``budget`` LLM responses."""
    select(params, method, list(RUNNERS), "baseline method")
    return RUNNERS[method](params, gateway, taxonomy, budget, seed, run_round=run_round)


def summarize(records: list[dict]) -> dict:
    """Counts of a baseline run's responses by status (for logs and metrics; no raw values)."""
    out = {"responses": len(records), "ok": 0, "refused": 0, "error": 0}
    for r in records:
        out[r["status"]] = out.get(r["status"], 0) + 1
    out["prompts"] = len({r["prompt_id"] for r in records})
    return out


__all__ = ["METHODS", "RUNNERS", "run_baseline", "run_codexleaks", "run_codebreaker", "group_pi",
           "perplexity", "summarize"]
