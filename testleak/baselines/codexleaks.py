"""CodexLeaks baseline (Niu et al., USENIX Security 2023; paper Sec. 6.1, App. A.2), re-implemented
from its description (no original code used).

Prompts are hand-made templates per privacy attribute (code, JSON, SQL and comment styles; slots
from testleak/resources/codexleaks.yaml, :mod:`.templates`), attributes visited round-robin so a
small budget still covers them, choices seeded by ``random.Random(seed)``. Sampling as published
(n = 5 per prompt, temperature 0.9, 100 tokens; ``baselines.codexleaks.sampling``) through the chat
gateway as completion (:mod:`.common`); exactly ``budget`` responses are requested. Every response
is kept (the LP denominators count them all) and ranked by perplexity when the endpoint returns
logprobs (``perplexity``, ``ppl_rank``, ``ppl_rank_attribute``: 1 = lowest, None without logprobs).
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping, Sequence

from ..equalcost import as_budget, completion_tokens_of
from ..settings import Baselines, CodexLeaks
from .common import (Prompt, chat_requests, check_budget, completion_mode, load_resource, response_record,
                     sampling_params)
from .templates import CodexLeaksTemplates

METHOD = "codexleaks"
MAX_REDRAWS = 50


def plan_prompts(cfg: CodexLeaks, attributes: Sequence[str], budget: int, seed: int) -> list[tuple[Prompt, int]]:
    """The prompts and their sample counts for ``budget`` responses (pure, seeded): ``cfg`` is
    ``baselines.codexleaks``, ``attributes`` the target attributes
    (:func:`~.common.target_attributes`)."""
    budget = check_budget(budget)
    n = cfg.samples_per_prompt
    attrs = list(attributes)
    tmpl = CodexLeaksTemplates(load_resource(cfg.resource))
    tmpl.check_covers(attrs)
    rng = random.Random(seed)
    zh_share = cfg.zh_share
    seen: set[str] = set()
    plan: list[tuple[Prompt, int]] = []
    left = budget
    for i in range(math.ceil(budget / n)):
        attr = attrs[i % len(attrs)]
        for _ in range(MAX_REDRAWS):
            style, text = tmpl.sample(attr, rng, zh_share)
            if text not in seen:
                break
        seen.add(text)
        k = min(n, left)
        left -= k
        plan.append((Prompt(id=f"{METHOD}/p{i:04d}", text=text, lang=style.lang, attribute=attr,
                            style=style.key), k))
    return plan


def rank_by_perplexity(records: list[dict]) -> list[dict]:
    """Set ``ppl_rank`` (over all records) and ``ppl_rank_attribute`` (per attribute):
    1 = lowest perplexity; records without perplexity get None. Order is unchanged; ties
    keep generation order."""
    scored = [r for r in records if r.get("perplexity") is not None]
    for r in records:
        r["ppl_rank"] = None
        r["ppl_rank_attribute"] = None
    for i, r in enumerate(sorted(scored, key=lambda r: r["perplexity"]), 1):
        r["ppl_rank"] = i
    by_attr: dict[Any, list[dict]] = {}
    for r in scored:
        by_attr.setdefault(r.get("attribute"), []).append(r)
    for rs in by_attr.values():
        for i, r in enumerate(sorted(rs, key=lambda r: r["perplexity"]), 1):
            r["ppl_rank_attribute"] = i
    return records


def run_codexleaks(cfg: Baselines, model: Mapping, attributes: Sequence[str], gateway, budget, seed: int,
                   run_round: int = 0) -> list[dict]:
    """Run CodexLeaks (``cfg``: ``baselines``) against ``gateway``, opened on the model under test
    whose config is ``model`` (its name, provider and family are read), over the target
    ``attributes``, for ``budget``: an integer (LLM responses) or a
    :class:`testleak.equalcost.ResponseBudget` (``match_ours``: requests in the order of the prompt
    plan for its cap, issued in batches until the completion tokens reach the target); return
    ``response/1`` records (untagged), one per response issued."""
    mode = completion_mode(cfg.completion, model.get("provider"))
    sampling = sampling_params(cfg.codexleaks, model.get("family"))
    budget = as_budget(budget)
    if budget.max_tokens_per_response is None and sampling.get("max_tokens"):
        budget.max_tokens_per_response = int(sampling["max_tokens"])
    plan = plan_prompts(cfg.codexleaks, attributes, budget.cap, seed)
    reqs, owners = [], []
    for prompt, k in plan:
        for i, rq in enumerate(chat_requests(prompt, k, sampling, cfg.completion, mode)):
            reqs.append(rq)
            owners.append((prompt, i))
    completions: list = []
    while len(completions) < len(reqs):
        n = budget.take(len(reqs) - len(completions))
        if n <= 0:
            break
        got = gateway.chat_many(reqs[len(completions):len(completions) + n], purpose="codexleaks prompts")
        budget.record([completion_tokens_of(c) for c in got], [c.status != "ok" for c in got],
                      [int((getattr(c, "usage", None) or {}).get("prompt_tokens") or 0) for c in got])
        completions += got
    records = [response_record(METHOD, p, i, c, model["name"], run_round)
               for (p, i), c in zip(owners[:len(completions)], completions, strict=True)]
    return rank_by_perplexity(records)
