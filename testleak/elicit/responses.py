"""Model responses for a run (paper Sec. 4.2, appendix B.2, Fig. 7; ablations Sec. 6.4).

Method ``ours``: turn 1 c = LLM_test(code_prompt(q)), code blocks extracted and G(c) selected
(:mod:`.functions`); turn 2 continues with g as the assistant's code, the request for K tests and
hints from the run's library (rng seeded by ``seed`` + response id, the entries recorded).
Ablations (``params.ablation``) drop scenario questions, hints or test generation; turn 1 always
uses sample index 0, so runs that differ only in turn 2 share it through the gateway cache (a
paired comparison). The elicitation seed shifts the hint/plan rng and every request's sample index
(:data:`testleak.llm.gateway.SEED_STRIDE`); seed 0 is the run without one. Under a token budget
(:func:`elicit_budgeted`) the questions are asked round after round until the target is reached.
Every question yields one record, failures too (``error``, ``refused``, ``no_code``); answers are
cached, so a rerun of an interrupted stage sends only what was never answered. Baselines live in
:mod:`testleak.baselines`; methods are looked up in :mod:`testleak.methods`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from ..config import ablation_config, run_model, run_spec, typed
from ..equalcost import response_completion_tokens
from ..errors import ConfigError
from ..library import sample_hints
from ..llm.gateway import SEED_STRIDE
from ..taxonomy import Taxonomy
from .code import extract_code_blocks
from .functions import find_units, select_functions
from .prompts import code_prompt, prompt_text, turn2_messages, turn2_prompt
from .questions import generic_questions
from .refusal import detect_refusal

def response_id(run: str, question_id: str) -> str:
    """Stable id: ``r_`` + sha256(run, question id)[:16]."""
    return "r_" + hashlib.sha256(f"{run}\x1f{question_id}".encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ElicitSettings:
    """The config keys this module reads, resolved for one run."""
    run: str
    method: str
    round: int
    library: str
    variant: str
    model: str
    seed: int                  # rng seed of hints and baselines: params.seed + SEED_STRIDE * elicitation_seed
    tests_per_function: int
    functions_per_response: int | None  # None: all of G(c) (`functions_per_response: all`)
    n_templates: int
    n_fragments: int
    scenario_questions: bool
    library_hints: bool
    test_generation: bool
    scenarios: tuple[str, ...] = ()   # experiment.scenarios (ours: generic questions; baselines: target attributes)
    questions_per_scenario: int = 1   # experiment.questions_per_scenario
    elicitation_seed: int = 0  # experiment.runs.RUN.elicitation_seed (the gateway's seed)

    @classmethod
    def from_params(cls, params, run: str) -> "ElicitSettings":
        """The run's view, read from the keys the responses stage declares (each typed by the
        schema): the stage boundary of the elicitation methods."""
        spec = run_spec(params, run)
        method = str(spec["method"])  # checked against the registry (testleak.methods.get)
        # A run of ours carries its ablation flags (experiment.runs.R.ablation), resolved at
        # composition from the `ablation` group or a named ablation (every Table 4 variant in
        # one `dvc repro`); hand-written params without them fall back to the `ablation` group.
        abl = ablation_config(spec.get("ablation") or typed(params, "ablation").model_dump())
        hints = typed(params, "experiment.hints_per_attribute")
        # the canary calibration's in-memory runs carry a seed each; the runs of params.yaml do not
        eseed = spec["elicitation_seed"] if "elicitation_seed" in spec else 0
        if isinstance(eseed, bool) or not isinstance(eseed, int) or eseed < 0:
            raise ConfigError(f"experiment.runs.{run}.elicitation_seed = {eseed!r}: expected an integer >= 0")
        s = cls(
            run=run, method=method, round=int(spec["round"]), library=str(spec["library"]),
            variant=str(abl["name"]) if method == "ours" else "none",
            model=str(run_model(params, run)["name"]), seed=typed(params, "seed") + SEED_STRIDE * eseed,
            tests_per_function=typed(params, "experiment.tests_per_function"),
            functions_per_response=_functions_per_response(typed(params, "experiment.functions_per_response")),
            n_templates=hints.templates, n_fragments=hints.fragments,
            scenario_questions=bool(abl["scenario_questions"]), library_hints=bool(abl["library_hints"]),
            test_generation=bool(abl["test_generation"]),
            scenarios=tuple(typed(params, "experiment.scenarios")),
            questions_per_scenario=typed(params, "experiment.questions_per_scenario"), elicitation_seed=eseed,
        )
        if s.tests_per_function < 1:
            raise ConfigError(f"experiment.tests_per_function={s.tests_per_function}: must be >= 1")
        return s


def _functions_per_response(value: int | str) -> int | None:
    """``experiment.functions_per_response`` (typed by the schema: a count >= 1, or ``all``, every g
    in G(c), the paper's setting) -> None for ``all``."""
    return None if value == "all" else value


def questions_for_run(settings: ElicitSettings, questions: list[dict] | None, taxonomy: Taxonomy,
                      scenarios: Iterable[str], n: int) -> list[dict]:
    """The questions a run asks: the scenario-grounded ones, or generic tasks (ablation)."""
    if not settings.scenario_questions:
        return generic_questions(taxonomy, list(scenarios), n)
    if not questions:
        raise ConfigError("no questions: run the questions stage first (dvc repro questions)")
    return list(questions)


def sample_attribute_hints(library: Mapping | None, attributes: Iterable[str], settings: ElicitSettings,
                           rid: str) -> dict:
    """Hints for a response's attributes, with the seed and the exact entries used."""
    if not settings.library_hints or library is None:
        return {"enabled": False, "library": None, "seed": None, "by_attribute": {}, "missing": []}
    seed = settings.seed + int(rid[2:10], 16)
    rng = random.Random(seed)
    by_attr, missing = {}, []
    for a in attributes:
        if a not in library:
            missing.append(a)
            continue
        by_attr[a] = sample_hints(library, a, settings.n_templates, settings.n_fragments, rng)
    return {"enabled": True, "library": settings.library, "seed": seed, "by_attribute": by_attr, "missing": missing}


def _turn(messages: list, c) -> dict:
    d = c.to_record()
    d.pop("logprobs", None)
    return {"messages": messages, **d}


def _base_record(settings: ElicitSettings, q: dict, sample: int = 0) -> dict:
    return {
        "id": response_id(settings.run, q["id"] if not sample else f"{q['id']}#{sample}"),
        "run": settings.run,
        "question_id": q["id"],
        "scenario": q.get("scenario"),
        "attributes": list(q.get("attributes") or []),
        "question_text": q.get("text"),
        "method": settings.method,
        "variant": settings.variant,
        "model": settings.model,
        "round": settings.round,
        "sample": sample,
        "turn1": None,
        "functions": [],
        "turn2": None,
        "hints": None,
        "tests_requested": settings.tests_per_function,
        "tests_text": "",
        "prompt_text": "",
        "status": "error",
        "error": None,
    }


def _answer(q: dict, settings: ElicitSettings, taxonomy: Taxonomy, gw, library: Mapping | None,
            extra: dict, sample: int = 0) -> dict:
    """Both turns for one question (sample index ``sample`` of both requests): the response
    record (any status)."""
    rec = _base_record(settings, q, sample)
    title = taxonomy.scenario(q["scenario"]).title if settings.scenario_questions and q.get("scenario") else None
    m = [{"role": "user", "content": code_prompt(q["text"], title)}]
    c = gw.chat(m, sample, purpose="code turn", **extra)
    rec["turn1"] = _turn(m, c)
    rec["prompt_text"] = prompt_text(m)
    if c.status != "ok":
        rec["status"], rec["error"] = "error", f"turn 1: {c.error_kind or 'error'}: {c.error}"
        return rec
    blocks = extract_code_blocks(c.text)
    reason = detect_refusal(c.text, has_code=bool(blocks))
    if reason:
        rec["status"], rec["error"] = "refused", f"turn 1: {reason}"
        return rec
    if not blocks:
        rec["status"], rec["error"] = "no_code", "turn 1: no code block in the answer"
        return rec
    funcs = select_functions(blocks, taxonomy, settings.functions_per_response)
    if not funcs:
        n_units = sum(len(find_units(b, taxonomy)) for b in blocks)
        rec["status"], rec["error"] = "no_code", (
            f"turn 1: no function handles a privacy field ({len(blocks)} code blocks, {n_units} units)")
        return rec
    rec["functions"] = [f.to_record() for f in funcs]
    attrs: list[str] = []
    for f in funcs:
        attrs += [a for a in f.attributes if a not in attrs]
    rec["hints"] = sample_attribute_hints(library, attrs, settings, rec["id"])
    user2 = turn2_prompt(settings.tests_per_function, rec["hints"]["by_attribute"], taxonomy,
                         attributes=attrs, test_generation=settings.test_generation)
    m2 = turn2_messages(m, rec["functions"], user2)
    rec["prompt_text"] = prompt_text(m2)
    c = gw.chat(m2, sample, purpose="test turn", **extra)
    rec["turn2"] = _turn(m2, c)
    if c.status != "ok":
        rec["status"], rec["error"] = "error", f"turn 2: {c.error_kind or 'error'}: {c.error}"
        return rec
    rec["tests_text"] = c.text
    reason = detect_refusal(c.text)
    if reason:
        rec["status"], rec["error"] = "refused", f"turn 2: {reason}"
        return rec
    rec["status"], rec["error"] = "ok", None
    return rec


def elicit(questions: list[dict], settings: ElicitSettings, taxonomy: Taxonomy, gw, library: Mapping | None = None,
           *, params: dict | None = None, samples: list[int] | None = None) -> Iterator[dict]:
    """Run the two-turn interaction for each question; yield one response record per
    question (untagged), in question order.

    Questions are pipelined, not batched by turn: ``concurrency`` workers (the gateway's
    requests in flight) each take a question through its code turn and straight on to its test
    turn, so no server waits at a barrier between the turns of different questions. Identical
    requests in flight at once are sent once (the gateway's single flight); the response cache
    makes a rerun free."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    conc = int(getattr(gw, "concurrency", 1) or 1)
    extra = dict(params or {})
    ex = ThreadPoolExecutor(max_workers=conc, thread_name_prefix=f"elicit-{settings.run}")
    samples = list(samples) if samples is not None else [0] * len(questions)
    futures = [ex.submit(_answer, q, settings, taxonomy, gw, library, extra, k)
               for q, k in zip(questions, samples, strict=True)]
    bar = tqdm(total=len(futures), desc=f"{settings.run}: questions", unit="q", leave=False,
               disable=getattr(gw, "show_progress", None) is False)
    try:
        for f in futures:
            yield f.result()
            bar.update(1)
    finally:
        bar.close()
        ex.shutdown(wait=True, cancel_futures=True)


def elicit_budgeted(questions: list[dict], settings: ElicitSettings, taxonomy: Taxonomy, gw, budget,
                    library: Mapping | None = None) -> Iterator[dict]:
    """:func:`elicit` under a :class:`testleak.equalcost.ResponseBudget` (a token target): the
    questions in order, then again with sample index 1, 2, ... (other samples of the same
    requests), in batches of the budget's allowance, until it says stop. Every response issued is
    yielded; a response's tokens are those of both turns (:func:`testleak.equalcost.response_completion_tokens`)."""
    if not questions:
        return
    if budget.max_tokens_per_response is None:
        mt = (gw.sampling() or {}).get("max_tokens") if hasattr(gw, "sampling") else None
        if mt:
            budget.max_tokens_per_response = 2 * int(mt)      # two turns per response
    i = 0
    while True:
        n = budget.allowance()
        if n <= 0:
            return
        batch = [(questions[(i + j) % len(questions)], (i + j) // len(questions)) for j in range(n)]
        i += n
        recs = list(elicit([q for q, _ in batch], settings, taxonomy, gw, library, samples=[k for _, k in batch]))
        budget.record([response_completion_tokens(r) for r in recs], [r["status"] == "error" for r in recs])
        yield from recs
