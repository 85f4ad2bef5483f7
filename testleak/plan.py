"""`testleak plan`: the LLM calls, tokens, GitHub searches, time and cost of an experiment, before it runs.

Counts come from the stages' own code run against a :class:`DryRunGateway`: the real gateway with
the network replaced. Cached requests are answered from the cache (the plan says how many calls
are already paid for); others are recorded and answered synthetically so that the stage goes on (a
code answer uses every attribute, so every question gets a test turn: an upper bound; under
``match_ours`` a baseline plans with ours' tokens, :mod:`testleak.equalcost`). Judge calls depend on
what the model writes and are **estimated** from the call log's judge calls per response, else one
per test case; GitHub searches are bounded by ``max_pages`` per judged candidate, wall time by
``requests_per_minute`` per token. Tokens: cached answers at their recorded usage, else prompt
tokens estimated from the text and completion tokens the call log's mean for the same model and
purpose (else ``max_tokens``), capped at ``max_tokens``. Every row says what its numbers rest on.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from contextlib import closing
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import methods, pipeline
from .config import run_model, run_spec, typed
from .equalcost import MATCH_OURS, ResponseBudget
from .elicit import generate_questions
from .elicit.questions import generic_questions, question_prompt
from .elicit.responses import ElicitSettings
from .library import load_library
from .llm.budget import cost_usd, estimate_prompt_tokens
from .llm.gateway import Gateway
from .llm.records import Completion
from .paths import Paths
from .settings import Verifier
from .taxonomy import Taxonomy
from .verify.judge import build_prompt, load_fragments, pick_examples

STANDIN_VALUE = "x" * 20            # judge prompts: a candidate value of typical length
RESPONSE_PURPOSES = ("test turn", "codexleaks prompts", "codebreaker prompts")


class History:
    """Earlier runs' calls (the call log): tokens per answer by model and purpose, and counts
    per stage, run and purpose; every request (key) counted once, failed calls left out."""

    def __init__(self, path: str | os.PathLike | None):
        self.tokens: dict[tuple[str, str], dict[str, tuple[int, int]]] = defaultdict(dict)
        self.keys: dict[tuple[str, str | None, str], set[str]] = defaultdict(set)
        p = Path(path) if path else None
        if p is None or not p.is_file():
            return
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(r, dict) or r.get("status") != "ok" or not r.get("purpose") or "model" not in r:
                continue
            self.tokens[(r["model"], r["purpose"])][r.get("key")] = (int(r.get("prompt_tokens") or 0),
                                                                      int(r.get("completion_tokens") or 0))
            self.keys[(r.get("stage"), r.get("run"), r["purpose"])].add(r.get("key"))

    def completion(self, model: str, purpose: str | None, max_tokens: int | None) -> tuple[int, str]:
        """(completion tokens per answer, what the figure rests on)."""
        own = list(self.tokens.get((model, purpose), {}).values())
        other = [t for (m, p), d in self.tokens.items() if p == purpose and m != model for t in d.values()]
        if own:
            n, basis = sum(c for _, c in own) / len(own), f"mean of {len(own)} answers in the call log"
        elif other:
            n, basis = sum(c for _, c in other) / len(other), f"mean of {len(other)} answers of other models in the call log"
        elif max_tokens:
            return int(max_tokens), "max_tokens (no call log): upper bound"
        else:
            return 512, "no call log and no max_tokens: assumed 512"
        return (min(int(round(n)), int(max_tokens)) if max_tokens else int(round(n))), basis

    def count(self, stage: str, purpose: str | Sequence, run: str | None = None) -> int:
        purposes = (purpose,) if isinstance(purpose, str) else tuple(purpose)
        return len(set().union(*[k for (s, r, p), k in self.keys.items()
                                 if s == stage and p in purposes and (run is None or r == run)] or [set()]))

    def ratio(self, num: tuple[str, str | Sequence], den: tuple[str, str | Sequence], run: str | None) -> tuple[float, str] | None:
        """calls of ``num`` per call of ``den`` (stage, purpose) for ``run`` if logged, else over all runs."""
        for r, where in ((run, f"run {run}"), (None, "all runs")):
            d = self.count(den[0], den[1], r)
            if d:
                n = self.count(num[0], num[1], r)
                return n / d, f"{n} per {d} in the call log ({where})"
        return None


class DryRunGateway(Gateway):
    """The real gateway with the network replaced (see the module docstring): cached requests are
    answered from the response cache, the others recorded and answered by ``synth``."""

    def __init__(self, model_cfg, cache_dir, history: History,
                 synth: Callable[[list, str | None, int], str]):
        super().__init__(model_cfg, cache_dir=cache_dir, log_path=None, show_progress=False)
        self.concurrency = 1
        self.history, self.synth = history, synth
        self.calls: list[dict] = []

    def _one(self, key, messages, params, purpose=None, accept=None):
        hit = self.cache.get(key)
        if hit is not None:
            c = Completion(**hit)
            c.cached = True
            self.calls.append({"purpose": purpose, "cached": True, **c.usage, "basis": "cached answers"})
            return c
        comp, basis = self.history.completion(self.name, purpose, params.get("max_tokens"))
        usage = {"prompt_tokens": estimate_prompt_tokens(messages), "completion_tokens": comp}
        self.calls.append({"purpose": purpose, "cached": False, **usage, "basis": basis})
        return Completion(text=self.synth(messages, purpose, comp), usage=usage, model=self.name, finish_reason="stop")


def _rows(stage: str, run: str | None, gw: DryRunGateway) -> list[dict]:
    by: dict[str, dict] = {}
    for c in gw.calls:
        r = by.setdefault(c["purpose"] or "-", {"stage": stage, "run": run, "model": gw.name, "purpose": c["purpose"],
                                                "calls": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                "basis": set()})
        r["calls"] += 1
        r["cached"] += int(c["cached"])
        r["prompt_tokens"] += c["prompt_tokens"]
        r["completion_tokens"] += c["completion_tokens"]
        r["basis"].add(c["basis"])
    for r in by.values():
        r["basis"] = "; ".join(sorted(r["basis"]))
    return list(by.values())


def _code_answer(attrs: list[str], taxonomy: Taxonomy, tokens: int) -> str:
    """A synthetic code answer: one function over the question's attributes (so G(c) selects it),
    padded with comment lines to about ``tokens`` tokens."""
    names = []
    for a in attrs:
        n = taxonomy.attribute(a).lexicon[0]
        if n.isidentifier() and n not in names:
            names.append(n)
    head = f"```python\ndef handle_record({', '.join(names)}):\n"
    body = f"    return {{{', '.join(repr(n) + ': ' + n for n in names)}}}\n"
    pad = max(0, tokens * 4 - len(head) - len(body) - 4)
    lines = "".join("    # step of the task\n" for _ in range(pad // 21))
    return head + lines + body + "```"


SAMPLE_RESPONSES = 200   # a match_ours baseline whose reference has not run: responses dry-run, then scaled


class _Planner:
    """One plan being built: its rows (per stage, run and purpose) and notes in the order the
    stages run, and what the runs share (the questions, a judge call's tokens). It holds the
    composed params: it runs the stages' own functions (:func:`testleak.pipeline.responses`) on
    them, as the stages do."""

    def __init__(self, params: Mapping, paths: Paths):
        self.params, self.paths = params, paths
        self.tax = Taxonomy.from_config(params)
        self.scenarios = typed(params, "experiment.scenarios")
        self.runs = list(params["experiment"].get("runs") or {})     # the run names (config.run_spec: each entry)
        self.history = History(paths.logs / "llm_calls.jsonl")
        self.cache = paths.llm_cache
        self.rows: list[dict] = []
        self.notes: list[str] = []
        self.questions: list[dict] = []              # set by plan_questions
        self.attrs_of: dict[str, list[str]] = {}     # question text -> its attributes (for synth)
        self.judge_prompt, self.judge_comp, self.judge_basis = 0.0, 0, ""  # by estimate_judge

    def plan_questions(self) -> None:
        """The questions stage (once per experiment); a question not yet generated is stood in for by
        the generic task text of its scenario, so the code-turn prompts have their size."""
        tax = self.tax
        n = typed(self.params, "experiment.questions_per_scenario")
        standins = {s: generic_questions(tax, [s], n) for s in self.scenarios}
        lists = {question_prompt(tax.scenario(s), n): "\n".join(f"{i + 1}. {q['text']}" for i, q in enumerate(qs))
                 for s, qs in standins.items()}
        with closing(DryRunGateway(self.params["questioner"], self.cache, self.history,
                                   lambda m, p, k: lists.get(m[-1]["content"], "1. task"))) as gw:
            self.questions, _ = generate_questions(tax, self.scenarios, n, gw)
        self.rows += _rows("questions", None, gw)
        if any(not c["cached"] for c in gw.calls):
            self.notes.append("questions not yet generated are stood in for by the generic task texts (ablation "
                              "no_cgq) to size the code-turn prompts")
        self.attrs_of = {" ".join(q["text"].split()): list(q["attributes"]) for q in self.questions}
        self.attrs_of.update({" ".join(q["text"].split()): list(q["attributes"])
                              for qs in standins.values() for q in qs})

    def synth(self, messages, purpose, tokens) -> str:
        """The synthetic answer of an uncached responses request (see the module docstring)."""
        if purpose == "code turn":
            content = str(messages[-1].get("content", ""))
            attrs = next((a for t, a in self.attrs_of.items() if t in content), list(self.tax.attributes)[:2])
            return _code_answer(attrs, self.tax, tokens)
        return "x" * (tokens * 4)

    def estimate_judge(self) -> None:
        """One judge call's tokens: the mean prompt over the experiment's attributes (few-shot
        examples from the prior library, as the judged stage picks them) and the completion from
        the call log."""
        params, tax = self.params, self.tax
        jcfg, seed = typed(params, "verifier.judge"), typed(params, "seed")
        fragments = load_fragments(self.paths.library(typed(params, "library.prior")))
        with closing(Gateway(params["judge"], cache_dir=self.cache, log_path=None)) as jgw:
            judge_max = jgw.sampling(jcfg.sampling.model_dump(exclude_unset=True)).get("max_tokens")
        attrs = sorted({a for s in self.scenarios for a in tax.scenario(s).attributes})
        self.judge_prompt = sum(estimate_prompt_tokens(build_prompt(
            STANDIN_VALUE, a, tax.attribute(a).label, tax.attribute(a).description,
            pick_examples(fragments, a, jcfg.examples, seed))) for a in attrs) / len(attrs)
        self.judge_comp, self.judge_basis = self.history.completion(typed(params, "judge.name"), "judge", judge_max)

    def plan_run(self, run: str) -> int:
        """The rows of one run (responses, then judge calls); returns its judge calls."""
        settings = ElicitSettings.from_params(self.params, run)
        m = methods.get(settings.method)
        recs, scale = self.plan_responses(run, settings, m, self.library(run, settings, m))
        return self.plan_judge(run, settings, recs, scale)

    def library(self, run: str, settings, m):
        """The run's input library when its method reads one (the prior while it does not exist yet)."""
        if not m.wants_library(settings):
            return None
        lp = self.paths.library(settings.library)
        if not lp.exists():
            self.notes.append(f"responses@{run}: its library {settings.library} does not exist yet: hints sized "
                              f"from the prior library")
            lp = self.paths.library(typed(self.params, "library.prior"))
        return load_library(lp)

    def budget(self, run: str, settings) -> tuple[Any, float]:
        """A baseline's budget (:func:`testleak.pipeline.run_budget`) and the factor its planned rows
        are scaled by.

        Under match_ours, before its reference has run, the target is the completion tokens planned
        for the reference above (its runs come first in the protocol); the responses needed are
        estimated as target / completion tokens per answer of the baseline (call log, else max_tokens:
        then a lower bound on calls), at most ``max_responses``; the stage's code is dry-run for at most
        ``SAMPLE_RESPONSES`` of them and the rows scaled (the plan of ``experiment=paper`` would
        otherwise dry-run tens of thousands of responses)."""
        params, paths = self.params, self.paths
        b = run_spec(params, run).get("budget") or {}
        if b.get("kind") != MATCH_OURS or (paths.root / b["reads"]).exists():
            return pipeline.run_budget(params, run, paths.root), 1.0
        planned = sum(r["completion_tokens"] for r in self.rows if r["stage"] == "responses" and r["run"] == b["reference"])
        method = settings.method
        max_tokens = typed(params, f"baselines.{method}.sampling.max_tokens")
        per, basis = self.history.completion(run_model(params, run)["name"], f"{method} prompts", max_tokens)
        need = min(int(b["max_responses"]), max(1, math.ceil(planned / max(1, per))))
        sample = min(need, SAMPLE_RESPONSES)
        self.notes.append(f"responses@{run}: matches the completion tokens of {b['reference']}, which has not run yet: "
                          f"{planned} planned / {per:.0f} per answer ({basis}) = {need} responses (an estimate; "
                          f"cap {b['max_responses']}){f', dry-run for {sample} and scaled' if sample < need else ''}")
        return ResponseBudget(responses=sample), need / sample

    def plan_responses(self, run: str, settings, m, library) -> tuple[list[dict], float]:
        """responses@RUN: the stage's code dry-run; returns its records and the factor a match_ours
        baseline's sample is scaled by (see :meth:`budget`)."""
        budget, scale = self.budget(run, settings)
        with closing(DryRunGateway(run_model(self.params, run), self.cache, self.history, self.synth)) as gw:
            recs, _ = pipeline.responses(self.params, run, gw, self.questions if m.wants_questions(settings) else None,
                                         library, budget)
        run_rows = _rows("responses", run, gw)
        if scale != 1.0:       # a match_ours baseline sized from a sample (see budget)
            for r in run_rows:
                r.update({k: round(r[k] * scale) for k in ("calls", "prompt_tokens", "completion_tokens")})
                r["basis"] += f"; scaled x{scale:.2f} from a dry-run sample (equal completion tokens of ours)"
        for r in run_rows:
            if r["purpose"] == "test turn":
                self._expected_test_turns(r, run)
        self.rows += run_rows
        return recs, scale

    def _expected_test_turns(self, r: dict, run: str) -> None:
        """Scale a test-turn row's uncached calls by the call log's test turns per code turn
        (every synthetic code answer gets a test turn: an upper bound)."""
        share = self.history.ratio(("responses", "test turn"), ("responses", "code turn"), run)
        if share is not None and r["calls"] > r["cached"]:
            f = min(1.0, share[0])
            todo = r["calls"] - r["cached"]
            keep = r["cached"] + round(todo * f)
            r["prompt_tokens"] = round(r["prompt_tokens"] * keep / r["calls"])
            r["completion_tokens"] = round(r["completion_tokens"] * keep / r["calls"])
            r["calls_max"], r["calls"] = r["calls"], keep
            r["basis"] += f"; test turns per code turn: {share[1]} (estimate; at most {r['calls_max']})"

    def plan_judge(self, run: str, settings, recs: list[dict], scale: float) -> int:
        """judged@RUN: one call per (rule-passing) candidate, which depends on the model's output, so
        estimated; none for a baseline verified as published (its own filter, no judge:
        testleak/baselines/published.py), whose in-window candidates the automatic reviewer of
        confirmed@RUN judges instead under review policy auto. Returns the judge calls."""
        params, total = self.params, 0
        responses_n = round(sum(r["status"] == "ok" for r in recs) * scale)   # scale: see budget
        if pipeline.review_asks_judge(params, run):
            per = self.history.ratio(("confirmed", "judge"), ("responses", RESPONSE_PURPOSES), run)
            calls, basis = ((round(responses_n * per[0]), f"estimate: review judge calls per response {per[1]}")
                            if per is not None else
                            (responses_n, "estimate without call log: one in-window candidate per answered response"))
            total += calls
            self.rows.append(self._judge_row("confirmed", run, calls, basis))
        if not pipeline.judged_asks_judge(params, run):
            return total
        per = self.history.ratio(("judged", "judge"), ("responses", RESPONSE_PURPOSES), run)
        if per is not None:
            calls, basis = round(responses_n * per[0]), f"estimate: judge calls per response {per[1]}"
        else:
            k = settings.tests_per_function if settings.method == "ours" else 1
            calls, basis = responses_n * k, f"estimate without call log: one per requested test case ({k} per response)"
        self.rows.append(self._judge_row("judged", run, calls, basis))
        return total + calls

    def prices(self) -> dict[str, Mapping | None]:
        """Model name -> its ``price``: the questioner, model and judge, and each run's model under test."""
        prices = {typed(self.params, f"{role}.name"): self.params[role].get("price")
                  for role in ("questioner", "model", "judge")}
        for run in self.runs:     # each run's model under test (experiment.models)
            rm = run_model(self.params, run)
            prices.setdefault(rm["name"], rm.get("price"))
        return prices

    def _judge_row(self, stage: str, run: str, calls: int, basis: str) -> dict:
        return {"stage": stage, "run": run, "model": typed(self.params, "judge.name"), "purpose": "judge",
                "calls": calls, "cached": 0, "prompt_tokens": round(calls * self.judge_prompt),
                "completion_tokens": calls * self.judge_comp, "basis": f"{basis}; completion: {self.judge_basis}"}


def _model_costs(prices: Mapping[str, Mapping | None], rows: list[dict]) -> dict[str, dict]:
    """Each row's cost (``usd``, set on the row) at its model's price (``prices``: model name ->
    price), and the totals per model."""
    models: dict[str, dict] = {}
    for r in rows:
        price = prices.get(r["model"])
        r["usd"] = cost_usd(price, r["prompt_tokens"], r["completion_tokens"])
        t = models.setdefault(r["model"], {"calls": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                           "usd": 0.0, "price": price})
        for k in ("calls", "cached", "prompt_tokens", "completion_tokens"):
            t[k] += r[k]
        t["usd"] = None if r["usd"] is None or t["usd"] is None else t["usd"] + r["usd"]
    return models


def _search_plan(verifier: Verifier, judged_total: int, env: Mapping[str, str]) -> dict:
    """GitHub search requests (an upper bound) and their minimum wall time at the rate limit
    (``verifier.github``)."""
    backend = verifier.backend
    search = {"backend": backend, "requests": 0}
    if backend == "github":
        gh = verifier.github
        tokens = sum(1 for e in gh.token_envs if env.get(e))
        rpm, pages = gh.requests_per_minute, gh.max_pages
        req = judged_total * pages
        search.update({"requests": req, "tokens": max(1, tokens), "requests_per_minute_per_token": rpm,
                       "min_wall_minutes": round(req / (rpm * max(1, tokens)), 1),
                       "basis": f"upper bound: every judged candidate kept and searched, {pages} page(s) each; cached "
                                f"searches are not sent" + ("" if tokens else f"; no token set in "
                                f"{', '.join(gh.token_envs)}: 1 assumed")})
    return search


def _total(rows: list[dict], models: Mapping[str, dict]) -> dict:
    return {"calls": sum(r["calls"] for r in rows), "cached": sum(r["cached"] for r in rows),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "usd": None if any(m["usd"] is None for m in models.values()) else sum(m["usd"] for m in models.values())}


def plan(params: Mapping, paths: Paths | None = None, env: Mapping[str, str] | None = None) -> dict:
    """The plan of the composed experiment ``params`` (a plain dict). See the module docstring."""
    paths = paths or Paths()
    env = os.environ if env is None else env
    p = _Planner(params, paths)
    p.plan_questions()
    p.estimate_judge()
    judged_total = sum(p.plan_run(run) for run in p.runs)
    models = _model_costs(p.prices(), p.rows)
    search = _search_plan(typed(params, "verifier"), judged_total, env)
    return {"experiment": typed(params, "experiment.name"), "runs": p.runs, "rows": p.rows, "models": models,
            "search": search, "total": _total(p.rows, models), "budget": typed(params, "budget").model_dump(),
            "notes": p.notes}


def _usd(v) -> str:
    return "n/a (no price)" if v is None else f"${v:,.2f}" if v >= 1 else f"${v:.4f}"


def format_plan(p: Mapping) -> str:
    """The plan as text tables (what `testleak plan` prints)."""
    out = [f"plan of experiment {p['experiment']} ({len(p['runs'])} runs: {', '.join(p['runs'])})", ""]
    head = ["stage", "run", "model", "purpose", "calls", "cached", "prompt tok", "completion tok", "USD"]
    table = [[r["stage"], r["run"] or "-", r["model"], r["purpose"] or "-", f"{r['calls']:,}", f"{r['cached']:,}",
              f"{r['prompt_tokens']:,}", f"{r['completion_tokens']:,}", _usd(r["usd"])] for r in p["rows"]]
    table += [["total", "", "", "", f"{p['total']['calls']:,}", f"{p['total']['cached']:,}",
               f"{p['total']['prompt_tokens']:,}", f"{p['total']['completion_tokens']:,}", _usd(p["total"]["usd"])]]
    w = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    line = lambda cells: "  ".join(str(c).rjust(w[i]) if i >= 4 else str(c).ljust(w[i]) for i, c in enumerate(cells))  # noqa: E731
    out += [line(head), line(["-" * x for x in w])] + [line(t) for t in table[:-1]] + [line(["-" * x for x in w]), line(table[-1])]
    out += ["", "per model:"]
    for name, m in p["models"].items():
        pr = m["price"]
        price = (f"${pr['prompt_usd_per_1m']:g} / ${pr['completion_usd_per_1m']:g} per 1M prompt / completion tokens"
                 f" (as of {pr.get('as_of') or '-'})") if pr else "no price (set price in its model config)"
        out.append(f"  {name}: {m['calls']:,} calls ({m['cached']:,} cached), {m['prompt_tokens']:,} prompt + "
                   f"{m['completion_tokens']:,} completion tokens, {_usd(m['usd'])}; {price}")
    s = p["search"]
    if s.get("backend") == "github":
        out.append(f"GitHub search: <= {s['requests']:,} requests, at {s['requests_per_minute_per_token']:g}/min x "
                   f"{s['tokens']} token(s): >= {s['min_wall_minutes']:,} min ({s['basis']})")
    else:
        out.append(f"corpus search: {s.get('backend')} (local, no requests)")
    b = p.get("budget") or {}
    if b.get("usd") is not None or b.get("completion_tokens") is not None:
        out.append(f"budget: usd={b.get('usd')}, completion_tokens={b.get('completion_tokens')}")
    out += ["", "what the numbers rest on:"] + [f"  {r['stage']}{'@' + r['run'] if r['run'] else ''} {r['purpose']}: "
                                               f"{r['basis']}" for r in p["rows"]]
    out += [f"note: {n}" for n in p["notes"]]
    return "\n".join(out)


__all__ = ["History", "DryRunGateway", "plan", "format_plan"]
