"""The per-run chain: responses -> candidates -> judged -> verified -> confirmed (paper Fig. 2).

One library function per stage, the stage boundary: each takes the composed params (params.yaml,
or the canary calibration's in-memory params), the run name and the records of the stages before,
and returns ``(records, stats)``; stats hold counts only, never raw values. Config is read typed,
key by key (:func:`testleak.config.typed`), and passed down as schema models; the mapping itself
goes only to the run lookups and typed views. The DVC stages (``stages/<stage>.py``) wrap exactly
one function each; :func:`run_chain` chains them in memory for the canary calibration. File inputs
are read by :func:`method_inputs`, :func:`judge_fragments` and :func:`review_labels`, so that both
callers read them alike; :func:`write_artifact` writes records and stats where ``Paths`` says.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from . import methods
from .baselines.published import PUBLISHED, passthrough_verdicts, run_protocol
from .config import BASELINE_METHODS, run_model, run_spec, typed
from .echo import mark_echoes
from .equalcost import MATCH_OURS, ResponseBudget, as_budget, response_budget
from .errors import ConfigError, DataError
from .elicit.responses import ElicitSettings
from .extract import candidates_from_responses
from .extract.core import response_text
from .library import load_library, pin_torch_threads
from .library.clustering import get_encoder
from .library.division import get_scorer
from .library.figures import division_scores_figure, embedding_figure
from .library.rounds import build_round, leak_instances
from .llm import open_gateway
from .llm.budget import budget_settings
from .paths import RUN_STAGES, Paths
from .records import read_jsonl, write_json, write_jsonl
from .settings import RunBudget
from .taxonomy import Taxonomy
from .verify.judge import judge_candidates, load_fragments, summarize as summarize_verdicts
from .verify.review import agreement, confirm, read_labels, summarize_confirmed
from .verify.rules import withhold
from .verify.search import open_backend, summarize_hits, verify_candidates

# ------------------------------------------------------------------------------- artifacts

def write_artifact(paths: Paths, stage: str, run: str, records: Iterable[dict], stats: Mapping | None = None) -> int:
    """Write a per-run stage's records (schema-tagged, atomic) and, when given, its stats."""
    n = write_jsonl(paths.records(stage, run), records, kind=RUN_STAGES[stage])
    if stats is not None:
        write_json(paths.stats(stage, run), dict(stats))
    return n


def read_artifact(paths: Paths, stage: str, run: str) -> list[dict]:
    """A per-run stage's records, checked against their schema."""
    return read_jsonl(paths.records(stage, run), kind=RUN_STAGES[stage])


def write_library(paths: Paths, params: Mapping, run: str, doc: dict, divisions: list[dict], stats: Mapping) -> dict:
    """The library stage's artifacts: data/library/RUN.json (raw values: data/ only), its
    division records and stats (counts only), and the division/embedding figures (no strings
    drawn). Returns the public stats."""
    write_json(paths.library(run), doc)
    write_jsonl(paths.library_divisions(run), divisions, kind="library")
    pub = {k: v for k, v in stats.items() if not k.startswith("_")}
    write_json(paths.library_stats(run), pub)
    division_scores_figure(divisions, paths.figures / f"{run}_division_scores.png")
    proj = typed(params, "library.figures.projection")
    for kind in ("fragments", "templates"):
        cl = stats["_clusters"].get(kind) or {}
        items = cl.get("items") or []
        embedding_figure(cl.get("embeddings"), [i["attribute"] for i in items], paths.figures / f"{run}_embeddings_{kind}.png",
                         f"{run}: {kind} (Λ{'frag' if kind == 'fragments' else 'tmp'}) by attribute", proj)
    return pub


# ------------------------------------------------------------------------------- inputs

def method_inputs(params: Mapping, paths: Paths, run: str,
                  questions_path=None) -> tuple[list[dict] | None, dict | None]:
    """(questions, library) of a run, read only when its method uses them; the questions from
    ``questions_path`` (default: the questions stage's output)."""
    settings = ElicitSettings.from_params(params, run)
    m = methods.get(settings.method)
    questions = (read_jsonl(questions_path or paths.questions, kind="question")
                 if m.wants_questions(settings) else None)
    library = load_library(paths.library(settings.library)) if m.wants_library(settings) else None
    return questions, library


def judge_fragments(params: Mapping, paths: Paths) -> dict:
    """The judge's few-shot examples: fragments of the prior library (``library.prior``)."""
    return load_fragments(paths.library(typed(params, "library.prior")))


def review_labels(params: Mapping, paths: Paths) -> list[dict]:
    """The reviewers' labels (``review.labels_file``; none yet = empty). The file must lie in
    labels/, the directory the confirmed stages depend on (dvc.yaml), so a new label reruns them."""
    name = typed(params, "review.labels_file")
    p = paths.root / name
    if not p.resolve().is_relative_to(paths.labels_dir.resolve()):
        raise ConfigError(f"review.labels_file={name!r} is outside {paths.labels_dir.name}/, the directory the "
                          f"confirmed stages depend on: put the labels file under {paths.labels_dir.name}/")
    return read_labels(p)


def judge_mode(params: Mapping) -> str:
    """``verifier.judge_mode`` (rules | judge | both, :func:`testleak.verify.judge.judge_candidates`):
    the one read of the mode; whether a stage asks the judge LLM (:func:`judged_asks_judge`,
    :func:`review_asks_judge`, also for `testleak plan`) and how it judges follow from it."""
    return typed(params, "verifier.judge_mode")


def judged_asks_judge(params: Mapping, run: str | None) -> bool:
    """Whether the judged stage of ``run`` asks the judge LLM: the judge mode is not ``rules`` and
    the run is not a baseline verified as published (its own filter)."""
    return judge_mode(params) != "rules" and not (run is not None and run_protocol(params, run) == "published")


@contextmanager
def judge_gateway(params: Mapping, paths: Paths, run: str | None = None, stage: str = "judged") -> Iterator[Any]:
    """The judge LLM's gateway (its calls logged for ``stage`` of ``run``), or None when the
    stage asks no judge: at ``judged``, unless :func:`judged_asks_judge`; at ``confirmed``,
    unless :func:`review_asks_judge`."""
    if stage == "confirmed":
        asks = run is not None and review_asks_judge(params, run)
    else:
        asks = judged_asks_judge(params, run)
    if not asks:
        with nullcontext(None) as gw:
            yield gw
    else:
        with open_gateway(params["judge"], paths=paths, attribution={"stage": stage, "run": run},
                          budget=budget_settings(typed(params, "budget"), typed(params, "experiment.name")),
                          answers=typed(params, "answers")) as gw:
            yield gw


def run_budget(params: Mapping, run: str, root: str | Path, max_tokens_per_response: int | None = None,
               usd=None) -> ResponseBudget | None:
    """What ``run`` may spend in its responses stage (:func:`testleak.equalcost.response_budget`):
    its entry's ``budget`` (resolved at composition) and ``max_error_share``; the reference run's
    stats are read under ``root``. A hand-written run without a budget (tests) spends
    ``experiment.baseline_budget`` responses (a baseline; None for ours)."""
    spec = run_spec(params, run)
    b = spec.get("budget")
    if not b:
        n = typed(params, "experiment.baseline_budget")
        if n == MATCH_OURS:
            raise ConfigError(f"experiment.runs.{run}.budget is missing: recompose params.yaml with `testleak params`")
        return None if spec.get("method") == "ours" else as_budget(int(n or 0))
    budget = RunBudget.model_validate(dict(b), strict=True)
    if budget.kind == "own":
        return None
    return response_budget(run, budget, typed(params, "max_error_share"), root, max_tokens_per_response, usd)


def review_judges_here(params: Mapping, run: str) -> bool:
    """Whether the confirmed stage applies the automatic reviewer itself: ``review.policy: auto``
    for a run whose judged stage did not (a baseline verified as published)."""
    return typed(params, "review.policy") == "auto" and run_protocol(params, run) == "published"


def review_asks_judge(params: Mapping, run: str) -> bool:
    """Whether the confirmed stage asks the judge LLM (:func:`review_judges_here`, and
    ``verifier.judge_mode`` is not ``rules``)."""
    return review_judges_here(params, run) and judge_mode(params) != "rules"


# ------------------------------------------------------------------------------- the stages

def responses(params: Mapping, run: str, gateway, questions: list[dict] | None = None,
              library: Mapping | None = None, budget=None) -> tuple[list[dict], dict]:
    """The run's method (looked up in :mod:`testleak.methods`) against the run's model under
    test (``gateway``, opened on :func:`testleak.config.run_model`), given its typed inputs
    (:class:`testleak.methods.RunInputs`). ``budget``: a baseline's
    :class:`testleak.equalcost.ResponseBudget` (:func:`run_budget`; None: the experiment's
    integer ``baseline_budget``); its summary goes to the stats (``budget``)."""
    settings = ElicitSettings.from_params(params, run)
    m = methods.get(settings.method)
    baseline = m.name in BASELINE_METHODS
    inp = methods.RunInputs(settings, Taxonomy.from_config(params), gateway, questions, library,
                            _experiment_budget(params, run) if baseline and budget is None else budget,
                            model=run_model(params, run), baselines=typed(params, "baselines") if baseline else None)
    recs = methods.with_tests_written(m.elicit(inp), inp.taxonomy)   # counted once, here: metrics read it
    stats = {"run": run, "method": m.name, "variant": settings.variant, **methods.summarize(recs, inp.taxonomy),
             **gateway_spend(gateway)}
    if budget is not None:
        stats["budget"] = budget.summary()
    return recs, stats


def _experiment_budget(params: Mapping, run: str) -> int:
    """The responses of a baseline run given no budget: ``experiment.baseline_budget``, an integer."""
    n = typed(params, "experiment.baseline_budget")
    if n == MATCH_OURS:
        raise ConfigError(f"run {run!r}: experiment.baseline_budget is {MATCH_OURS}, which needs the "
                          f"reference run's spend (testleak.pipeline.run_budget): pass it as the budget")
    return int(n)


def gateway_spend(gateway) -> dict:
    """Tokens and cost of the answers a stage used, ``partial`` when a spending cap stopped it, and
    its failed calls by error kind (``failed_calls``: HTTP failures, answers that are not answers,
    requests not sent)."""
    meter = getattr(gateway, "meter", None)
    if meter is None:
        return {}
    return {**meter.summary(), "failed_calls": gateway.failure_counts()}


def candidates(params: Mapping, run: str, responses: Iterable[dict], models_dir=None) -> tuple[list[dict], dict]:
    """The run's candidate values: ExtractPII over the responses, or under ``baselines.protocol:
    published`` the baseline's own filter (``PUBLISHED`` of :mod:`testleak.baselines.published`);
    ``models_dir`` is where CodexLeaks' reference model is assembled (default ``Paths().models``).
    Echoes of the response's own prompt or hints are marked (:mod:`testleak.echo`) for the rules to
    reject. Echoes, taxonomy words and placeholders keep only ``value_hash`` and ``masked``
    (:func:`testleak.verify.rules.withhold`; ``withheld``), under ``published`` too; placeholders are
    not withheld under ``verifier.judge_mode: judge``. At most ``answers.max_candidates_per_response``
    per response (:func:`cap_candidates`), so one bad answer cannot buy thousands of judge calls."""
    proto = run_protocol(params, run)
    own = PUBLISHED.get(methods.get(run_spec(params, run).get("method")).name)
    responses = list(responses)
    if proto == "published" and own is not None:
        cands, stats = own(params, responses, models_dir or Paths().models)
    else:
        cands, stats = candidates_from_responses(responses, Taxonomy.from_config(params))
    limit = typed(params, "answers.max_candidates_per_response")
    cands, cap = cap_candidates(cands, limit)
    if cap["responses"]:     # the counts by attribute and pattern are of the candidates kept
        stats = {**stats, "candidates": len(cands), "by_attribute": _counts(c["attribute"] for c in cands)}
        if "by_pattern" in stats:
            stats["by_pattern"] = _counts(c["evidence"]["pattern"].split(":")[0] for c in cands)
    cands, echoes = mark_echoes(cands, responses)
    # published: no value is kept that we would not keep (its pass-through does not search them);
    # ours and shared: under judge-only no placeholder rule runs
    published = proto == "published" and own is not None
    cands, withheld = withhold(cands, Taxonomy.from_config(params),
                               placeholders=published or judge_mode(params) != "judge")
    return cands, {"run": run, "protocol": proto, **stats, "cap": cap, **echoes, **withheld}


def cap_candidates(cands: list[dict], limit: int) -> tuple[list[dict], dict]:
    """The first ``limit`` candidates of each response (in order), and what the cap dropped:
    ``{max_per_response, responses (capped), dropped}``."""
    seen: dict = {}
    kept, capped = [], set()
    for c in cands:
        n = seen[c["response_id"]] = seen.get(c["response_id"], 0) + 1
        if n <= limit:
            kept.append(c)
        else:
            capped.add(c["response_id"])
    return kept, {"max_per_response": limit, "responses": len(capped), "dropped": len(cands) - len(kept)}


def _counts(keys: Iterable[str]) -> dict:
    out: dict = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def judged(params: Mapping, run: str, candidates: Iterable[dict], gateway, fragments: Mapping) -> tuple[list[dict], dict]:
    """Format rules and/or the judge LLM (``verifier.judge_mode``: rules | judge | both); a
    baseline under ``baselines.protocol: published`` passes every candidate through (its own
    filter ran at the candidates stage; ``gateway`` may be None)."""
    if run_protocol(params, run) == "published":
        verdicts = passthrough_verdicts(candidates, run)
        return verdicts, {"run": run, "mode": "published", "judge_model": None, **summarize_verdicts(verdicts)}
    verdicts, mode = _judge(params, run, candidates, gateway, fragments)
    stats = {"run": run, "mode": mode, "judge_model": typed(params, "judge.name"), **summarize_verdicts(verdicts),
             **gateway_spend(gateway)}
    return verdicts, stats


def _judge(params: Mapping, run: str, candidates: Iterable[dict], gateway, fragments: Mapping) -> tuple[list[dict], str]:
    """Format rules and/or the judge LLM as ``verifier`` configures them: the judged step of the
    shared chain and the automatic reviewer of every method (:func:`confirmed`)."""
    mode, jcfg = judge_mode(params), typed(params, "verifier.judge")
    verdicts = judge_candidates(candidates, Taxonomy.from_config(params), mode=mode, gateway=gateway,
                                fragments=fragments, n_examples=jcfg.examples, seed=typed(params, "seed"),
                                sampling=jcfg.sampling.model_dump(exclude_unset=True), run=run)
    return verdicts, mode


def verified(params: Mapping, run: str, verdicts: Iterable[dict], candidates: Iterable[dict],
             backend) -> tuple[list[dict], dict]:
    """Corpus search of the judge-kept candidates and the hit window (``verifier.window``)."""
    window, name = typed(params, "verifier.window"), typed(params, "verifier.backend")
    hits = verify_candidates(verdicts, candidates, backend, window, name)
    stats = {"run": run, "backend": name, "engine": backend.engine, "window": window.model_dump(), **summarize_hits(hits)}
    if hasattr(backend, "stats"):
        stats["search_stats"] = dict(backend.stats)
    return hits, stats


def confirmed(params: Mapping, run: str, hits: list[dict], verdicts: Iterable[dict],
              labels: list[dict], candidates: Iterable[dict] = (), gateway=None,
              fragments: Mapping | None = None) -> tuple[list[dict], dict]:
    """The review policy (``review.policy``: auto | both_yes | yes_or_likely) over the hits, the
    same review for every method whatever its protocol: the reviewers' labels, or under ``auto``
    the automatic reviewer (format rules + judge as ``verifier`` configures them, and in window).
    A run whose judged stage applied that reviewer (ours, a baseline under ``shared``) reuses its
    verdicts; for a baseline under ``published`` (whose judged stage is its own filter) the
    in-window candidates are judged here (``candidates``, ``gateway``: :func:`judge_gateway` with
    ``stage="confirmed"``, ``fragments``)."""
    rev = typed(params, "review")
    policy, reviewers = rev.policy, list(rev.reviewers)
    verdicts = list(verdicts)
    review, asked = None, 0
    if policy == "auto":
        window = {h["candidate_id"] for h in hits if h["outcome"] == "in_window"}
        todo = [v["candidate_id"] for v in verdicts if v.get("mode") == "published" and v["candidate_id"] in window]
        if todo:
            cands = {c["id"]: c for c in candidates}
            missing = [cid for cid in todo if cid not in cands]
            if missing:
                raise DataError(f"confirmed@{run}: {len(missing)} in-window candidates of a run verified as published "
                                f"are missing from candidates.jsonl (first {missing[0]!r}): rerun the candidates stage")
            rv, _ = _judge(params, run, [cands[cid] for cid in todo], gateway, fragments or {})
            review, asked = {v["candidate_id"]: v for v in rv}, len(todo)
    recs = confirm(hits, verdicts, labels, policy, reviewers, review=review)
    stats = {"run": run, **summarize_confirmed(recs), "policy": policy, "reviewers": reviewers,
             "protocol": run_protocol(params, run), "reviewed_here": asked, **gateway_spend(gateway)}
    if len(reviewers) == 2:
        ids = {h["candidate_id"] for h in hits}
        stats["agreement"] = agreement([lb for lb in labels if lb["candidate_id"] in ids], reviewers)
    return recs, stats


# ------------------------------------------------------------------------------- next round

class _Lazy:
    """Load the scorer / encoder only when there is something to score (model loads are slow)."""

    def __init__(self, factory, name="?"):
        self._f, self._o, self.name = factory, None, name

    def __getattr__(self, k):
        if self._o is None:
            self._o = self._f()
        return getattr(self._o, k)


def library_round(params: Mapping, run: str, base: Mapping, confirmed: list[dict], candidates: Iterable[dict],
                  responses: Iterable[dict], models_dir) -> tuple[dict, list[dict], dict]:
    """The privacy feature library of the next round (paper Sec. 5): division and clustering of
    the run's confirmed leaks, merged into ``base``. Returns (library document, division
    records incl. the instances that could not be divided, stats); the stats' ``_clusters``
    hold the embeddings for the figures (not written)."""
    lib = typed(params, "library")
    div = lib.division
    slots = {a.key: a.slot for a in Taxonomy.from_config(params).attributes.values()}
    cands = {c["id"]: c for c in candidates}
    resps = {r["id"]: r for r in responses}
    inst, counts = leak_instances(confirmed, cands, resps, response_text, div.context_lines, div.max_chars)
    others: dict = {}  # other confirmed values of the same response, slotted out of its context
    for c in confirmed:
        cand = cands.get(c.get("candidate_id")) or {}
        if c.get("status") == "confirmed" and cand.get("value"):
            others.setdefault(cand.get("response_id"), []).append((cand["value"], slots.get(cand["attribute"], "<VALUE>")))
    def pinned(load):          # torch threads fixed before a model loads (only when one is needed)
        def go():
            pin_torch_threads(lib.torch_threads)
            return load()
        return go

    scorer = _Lazy(pinned(lambda: get_scorer(div, models_dir)), div.scorer)
    encoder = _Lazy(pinned(lambda: get_encoder(lib.clustering, div.mlm_path)))
    doc, divisions, stats = build_round(inst, base, scorer, encoder, slots, div, lib.clustering, run, others)
    divisions = [*divisions, *[i for i in inst if i["status"] != "ok"]]
    stats = {**stats, "instances_by_status": dict(counts)}
    return doc, divisions, stats


# ------------------------------------------------------------------------------- the chain

def run_chain(params: Mapping, paths: Paths, run: str, backend, questions: list[dict] | None = None,
              library: Mapping | None = None, labels: list[dict] | None = None, budget=None) -> dict:
    """Every per-run stage for ``run`` in order, writing each stage's artifact as the DVC stage
    would; ``backend`` is the open search backend; ``budget``: the run's
    :class:`testleak.equalcost.ResponseBudget` (None: as :func:`responses`). The model under test
    is asked with the run's elicitation seed (``experiment.runs.RUN.elicitation_seed``, default 0;
    the gateway's ``seed``). Returns the stats of every stage."""
    spec = run_spec(params, run)
    out: dict[str, dict] = {}
    with open_gateway(run_model(params, run), paths=paths, attribution={"stage": "responses", "run": run},
                      seed=int(spec.get("elicitation_seed") or 0), answers=typed(params, "answers")) as gw:
        resps, out["responses"] = responses(params, run, gw, questions, library, budget)
    write_artifact(paths, "responses", run, resps, out["responses"])
    cands, out["candidates"] = candidates(params, run, resps, paths.models)
    write_artifact(paths, "candidates", run, cands, out["candidates"])
    with judge_gateway(params, paths, run) as jgw:
        verdicts, out["judged"] = judged(params, run, cands, jgw, judge_fragments(params, paths))
    write_artifact(paths, "judged", run, verdicts, out["judged"])
    hits, out["verified"] = verified(params, run, verdicts, cands, backend)
    write_artifact(paths, "verified", run, hits, out["verified"])
    with judge_gateway(params, paths, run, stage="confirmed") as rgw:
        recs, out["confirmed"] = confirmed(params, run, hits, verdicts, labels if labels is not None else [], cands, rgw,
                                           judge_fragments(params, paths))
    write_artifact(paths, "confirmed", run, recs, out["confirmed"])
    return out


__all__ = ["write_artifact", "read_artifact", "run_budget", "method_inputs", "judge_fragments", "review_labels", "judge_gateway", "review_asks_judge", "review_judges_here",
           "gateway_spend", "open_backend", "responses", "candidates", "judged", "verified", "confirmed", "run_chain"]
