"""Codebreaker baseline (Han et al., IEEE S&P 2025; paper Sec. 6.1, App. A.2), re-implemented from
its description (the original is GPL; nothing was copied).

Seeds are rendered CodexLeaks templates plus common PI values (testleak/resources/codebreaker.yaml);
each prompt gets m completions through the chat gateway (:mod:`.common`; the original's
``no_repeat_ngram_size`` has no chat-API equivalent and is not applied). Fitness, lower is better:
mean token NLL + ``entropy_weight`` x semantic entropy of the m responses (:mod:`.entropy`; entropy
alone without logprobs, +inf when every response failed). :func:`evolve` mutates the best prompts
(:mod:`.mutation`) until ``patience`` stalls; with ``restart_on_stall`` new epochs from unused seeds
spend the rest of ``budget`` (LLM responses). Codebreaker's PI post-processing (values already in
the prompt and repeats within a response dropped) is what ExtractPII does for every method, so
verification is the shared chain.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

from ..equalcost import as_budget
from ..errors import ConfigError
from ..settings import Baselines, CodeBreaker, CodexLeaks, EntropyCfg
from .common import Prompt, chat_requests, completion_mode, load_resource, mean_nll, response_record, sampling_params
from .entropy import semantic_entropy
from .mutation import OPERATORS, crossover, mutate
from .templates import CodexLeaksTemplates, fill

METHOD = "codebreaker"
MAX_DRAWS = 20


# ---------------------------------------------------------------------------- seeds

def resource_dictionaries(cb: Mapping) -> dict[str, list[str]]:
    """The resource's ``dictionaries``: a list of values, or ``{zxcvbn: LIST, top: N}`` = the N
    most frequent entries of the zxcvbn package's frequency list LIST (e.g. ``passwords``)."""
    out = {}
    for name, spec in cb["dictionaries"].items():
        if isinstance(spec, Mapping):
            from zxcvbn.frequency_lists import FREQUENCY_LISTS

            if spec.get("zxcvbn") not in FREQUENCY_LISTS or not isinstance(spec.get("top"), int) or spec["top"] < 1:
                raise ConfigError(f"codebreaker resource: dictionaries.{name} = {dict(spec)!r}: expected a list of "
                                  f"values or {{zxcvbn: <one of {', '.join(FREQUENCY_LISTS)}>, top: <integer >= 1>}}")
            out[name] = [str(v) for v in FREQUENCY_LISTS[spec["zxcvbn"]][:spec["top"]]]
        else:
            out[name] = [str(v) for v in spec]
    return out


def dictionaries(cb_cfg: CodeBreaker, cx_cfg: CodexLeaks) -> dict[str, list[str]]:
    """Entity dictionaries for insert/replace/delete: the values of Codebreaker's resource
    (``baselines.codebreaker.resource``) + the cities of CodexLeaks' (``baselines.codexleaks.resource``)."""
    cb = load_resource(cb_cfg.resource)
    cx = load_resource(cx_cfg.resource)
    d = resource_dictionaries(cb)
    d["cities"] = [c for c in cx["cities"] if " " not in c]
    return d


def seed_pool(cfg: Baselines, attributes: Sequence[str], seed: int) -> list[Prompt]:
    """The shuffled seed prompts (ids ``codebreaker/seed####`` in pool order) for the target
    ``attributes`` (:func:`~.common.target_attributes`); ``cfg``: ``baselines`` (Codebreaker's
    section and the CodexLeaks templates its seeds are rendered from)."""
    attrs = list(attributes)
    rng = random.Random(seed)
    cb = load_resource(cfg.codebreaker.resource)
    tmpl = CodexLeaksTemplates(load_resource(cfg.codexleaks.resource))
    tmpl.check_covers(attrs)
    seeds: list[tuple[str, str, str | None, str, str]] = []  # text, lang, attribute, style, origin
    seen: set[str] = set()
    for i in range(cfg.codebreaker.codexleaks_seeds):
        attr = attrs[i % len(attrs)]
        for _ in range(MAX_DRAWS):
            style, text = tmpl.sample(attr, rng, cfg.codexleaks.zh_share)
            if text not in seen:
                break
        else:
            continue  # this attribute's template space is exhausted
        seen.add(text)
        seeds.append((text, style.lang, attr, style.key, "template"))
    dicts = resource_dictionaries(cb)
    for dname, spec in (cb.get("value_seeds") or {}).items():
        if spec.get("attribute") not in attrs:
            continue
        if dname not in dicts:
            raise ConfigError(f"codebreaker resource: value_seeds.{dname} has no dictionary {dname!r}")
        for v in dicts[dname]:
            text = fill(spec["text"], {"value": str(v)})
            if text not in seen:
                seen.add(text)
                seeds.append((text, spec["lang"], spec["attribute"], f"value:{dname}", "value_seed"))
    rng.shuffle(seeds)
    return [Prompt(id=f"{METHOD}/seed{i:04d}", text=t, lang=lang, attribute=a, style=s, origin=o)
            for i, (t, lang, a, s, o) in enumerate(seeds)]


# ---------------------------------------------------------------------------- evolution

@dataclass
class Scored:
    prompt: Prompt
    samples: int
    fitness: float
    records: list = field(default_factory=list)


Evaluate = Callable[[list[tuple[Prompt, int]]], list[tuple[float, list]]]


def _children(parents: list[Scored], n: int, rng: random.Random, dicts, weights: Mapping[str, float],
              n_words: int, taken: set[str]) -> list[tuple[str, str, Prompt, tuple[str, ...]]]:
    """Up to n new (text, operator, base prompt, parent ids), none in ``taken``."""
    ops = [o for o in OPERATORS if weights.get(o, 0) > 0]
    if not ops:
        raise ConfigError(f"baselines.codebreaker.operators gives no operator a positive weight; known: {OPERATORS}")
    w = [float(weights[o]) for o in ops]
    out: list[tuple[str, str, Prompt, tuple[str, ...]]] = []
    for _ in range(n * MAX_DRAWS):
        if len(out) >= n:
            break
        op = rng.choices(ops, w)[0]
        a = rng.choice(parents).prompt
        if op == "crossover":
            others = [p.prompt for p in parents if p.prompt.text != a.text]
            if not others:
                continue
            b = rng.choice(others)
            r = crossover(a.text, b.text, rng, n_words)
            cands = [] if r is None else [(r[0], a, (a.id, b.id)), (r[1], b, (b.id, a.id))]
        else:
            t = mutate(a.text, op, rng, dicts)
            cands = [] if t is None else [(t, a, (a.id,))]
        for text, base, pids in cands:
            if text not in taken and len(out) < n:
                taken.add(text)
                out.append((text, op, base, pids))
    return out


def _completion_tokens(record: Mapping) -> int:
    return int((((record or {}).get("turn1") or {}).get("usage") or {}).get("completion_tokens") or 0)


def _prompt_tokens(record: Mapping) -> int:
    return int((((record or {}).get("turn1") or {}).get("usage") or {}).get("prompt_tokens") or 0)


class _Search:
    """The state of one search: the budget left, every evaluated prompt, the texts taken."""

    def __init__(self, evaluate: Evaluate, budget, st: CodeBreaker, rng: random.Random, dicts):
        self.evaluate, self.st, self.rng, self.dicts = evaluate, st, rng, dicts
        self.budget = as_budget(budget)   # responses, or completion tokens to match (testleak.equalcost)
        self.done: list[Scored] = []
        self.taken: set[str] = set()
        self.counter = 0

    @property
    def left(self) -> int:
        """Responses that may be requested now (0: the budget is spent)."""
        return self.budget.allowance()

    def run(self, batch: list[Prompt]) -> list[Scored]:
        """Evaluate prompts while budget is left (the last one may get fewer samples)."""
        plan = []
        avail = self.left
        for p in batch:
            if avail <= 0:
                break
            k = min(self.st.samples_per_prompt, avail)
            avail -= k
            plan.append((p, k))
        if not plan:
            return []
        scored = [Scored(p, k, f, recs) for (p, k), (f, recs) in zip(plan, self.evaluate(plan), strict=True)]
        # one entry per requested sample (k per prompt), with the completion tokens of its record
        self.budget.record([_completion_tokens(s.records[i]) if i < len(s.records) else 0
                            for s in scored for i in range(s.samples)],
                           [i >= len(s.records) or s.records[i].get("status") == "error"
                            for s in scored for i in range(s.samples)],
                           [_prompt_tokens(s.records[i]) if i < len(s.records) else 0
                            for s in scored for i in range(s.samples)])
        self.done.extend(scored)
        return scored

    def initial(self, seeds: Iterator[Prompt], epoch: int) -> list[Prompt]:
        """The next ``population`` unused seeds, as iteration 0 of ``epoch``."""
        init: list[Prompt] = []
        for s in seeds:
            if s.text in self.taken:
                continue
            self.taken.add(s.text)
            init.append(Prompt(**{**s.__dict__, "iteration": 0, "epoch": epoch}))
            if len(init) >= self.st.population:
                break
        return init

    def offspring(self, pop: list[Scored], it: int, epoch: int) -> list[Prompt]:
        """Children of the ``parents`` best prompts so far (mutation / crossover)."""
        parents = sorted(pop, key=lambda s: s.fitness)[:self.st.parents]
        kids = _children(parents, self.st.children, self.rng, self.dicts, self.st.operators.model_dump(),
                         self.st.crossover_words, self.taken)
        batch = []
        for text, op, base, pids in kids:
            batch.append(Prompt(id=f"{METHOD}/e{epoch:02d}i{it:02d}c{self.counter:04d}", text=text, lang=base.lang,
                                attribute=base.attribute, style=base.style, origin=op, parents=pids,
                                iteration=it, epoch=epoch))
            self.counter += 1
        return batch

    def epoch(self, seeds: Iterator[Prompt], epoch: int) -> bool:
        """One epoch: seed population, then iterations until stall or ``max_iterations``;
        False when the seed pool is exhausted."""
        init = self.initial(seeds, epoch)
        if not init:
            return False
        pop = self.run(init)
        best = min((s.fitness for s in pop), default=math.inf)
        stall = 0
        for it in range(1, self.st.max_iterations + 1):
            if self.left <= 0:
                break
            batch = self.offspring(pop, it, epoch)
            if not batch:
                break
            new = self.run(batch)
            pop.extend(new)
            new_best = min((s.fitness for s in new), default=math.inf)
            if new_best < best - self.st.min_improvement:
                best, stall = new_best, 0
            else:
                stall += 1
                if stall >= self.st.patience:
                    break
        return True


def evolve(pool: Sequence[Prompt], evaluate: Evaluate, budget, cfg: CodeBreaker, rng: random.Random,
           dicts: Mapping[str, Sequence[str]]) -> list[Scored]:
    """Run Codebreaker's search (``cfg``: ``baselines.codebreaker``) within ``budget`` (responses, or a
    :class:`testleak.equalcost.ResponseBudget` matching completion tokens); return every evaluated prompt
    in evaluation order. ``evaluate([(prompt, samples), ...])`` returns ``(fitness, records)``
    per prompt (lower fitness = better). With ``restart_on_stall`` a stalled epoch is followed
    by a new one from unused seeds until the budget is spent or the seeds run out."""
    search = _Search(evaluate, budget, cfg, rng, dicts)
    seeds = iter(pool)
    epoch = 0
    while search.left > 0 and search.epoch(seeds, epoch):
        epoch += 1
        if not cfg.restart_on_stall:
            break
    return search.done


def fitness(records: Sequence[dict], entropy_cfg: EntropyCfg, entropy_weight: float) -> tuple[float, float | None, float]:
    """(fitness, mean NLL or None, semantic entropy) of one prompt's response records
    (``baselines.codebreaker.entropy`` and ``entropy_weight``)."""
    ok = [r for r in records if r["status"] == "ok"]
    if not ok:
        return math.inf, None, 0.0
    nlls = [r["_nll"] for r in ok if r.get("_nll") is not None]
    nll = sum(nlls) / len(nlls) if nlls else None
    h = semantic_entropy([r["turn1"]["continuation"] for r in ok], entropy_cfg.eps, entropy_cfg.min_samples,
                         entropy_cfg.base)
    return (nll or 0.0) + entropy_weight * h, nll, h


def run_codebreaker(cfg: Baselines, model: Mapping, attributes: Sequence[str], gateway, budget, seed: int,
                    run_round: int = 0) -> list[dict]:
    """Run Codebreaker (``cfg``: ``baselines``) against ``gateway``, opened on the model under test
    whose config is ``model`` (its name, provider and family are read), over the target
    ``attributes``, for ``budget`` (responses, or a :class:`testleak.equalcost.ResponseBudget`);
    return ``response/1`` records (untagged)."""
    cb = cfg.codebreaker
    mode = completion_mode(cfg.completion, model.get("provider"))
    sampling = sampling_params(cb, model.get("family"))
    budget = as_budget(budget)
    if budget.max_tokens_per_response is None and sampling.get("max_tokens"):
        budget.max_tokens_per_response = int(sampling["max_tokens"])
    name = model["name"]

    def evaluate(plan: list[tuple[Prompt, int]]) -> list[tuple[float, list]]:
        reqs, owners = [], []
        for j, (p, k) in enumerate(plan):
            for i, rq in enumerate(chat_requests(p, k, sampling, cfg.completion, mode)):
                reqs.append(rq)
                owners.append((j, i))
        comps = gateway.chat_many(reqs, purpose="codebreaker prompts")
        per: list[list[dict]] = [[] for _ in plan]
        for (j, i), c in zip(owners, comps, strict=True):
            r = response_record(METHOD, plan[j][0], i, c, name, run_round)
            r["_nll"] = mean_nll(getattr(c, "logprobs", None)) if r["status"] == "ok" else None
            per[j].append(r)
        out = []
        for recs in per:
            f, nll, h = fitness(recs, cb.entropy, cb.entropy_weight)
            for r in recs:
                r.pop("_nll", None)
                r["selection"] = {"fitness": None if math.isinf(f) else f, "mean_nll": nll, "semantic_entropy": h}
            out.append((f, recs))
        return out

    pool = seed_pool(cfg, attributes, seed)
    scored = evolve(pool, evaluate, budget, cb, random.Random(seed + 1), dictionaries(cb, cfg.codexleaks))
    return [r for s in scored for r in s.records]
