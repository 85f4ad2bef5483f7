"""The baselines' own verification (``baselines.protocol: published``, paper App. A.2, Table 8).

Under ``published`` a baseline's responses go through its authors' filter, then the shared corpus
search (1 <= k <= 100) and review, without our format rules or judge (:func:`passthrough_verdicts`);
under ``shared`` every method uses ExtractPII + rules + judge. Ours always uses the shared chain; a
run's ``verification`` overrides the protocol (:func:`run_protocol`).
CodexLeaks (:func:`codexleaks_filter`): ``blind_mi_diff`` (default) is the Blind-MI-Diff rule their
code runs (Hui et al., NDSS 2021; read from niuliang42/CodexLeaks, no code taken) on the mean token
log-probability, with a seeded order (:func:`blind_mi_split`); the members grow from the middle
band, so memorised outliers can end as non-members. ``nonmembers: generated`` (:func:`blind_mi_generated`)
and ``rank`` (against zlib or a reference model) are the alternatives; MMD is in :mod:`.blindmi`.
Responses without logprobs are ``unranked``, kept or dropped per ``unranked``. Codebreaker
(:func:`codebreaker_candidates`): Presidio NER mapped by ``presidio.entities``; unmapped types,
values in the prompt and repeats within a response are counted, not candidates.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from typing import Iterable, Mapping

from ..config import BASELINE_PROTOCOLS as PROTOCOLS, run_protocol, typed
from ..errors import ConfigError
from ..privacy import value_hash
from ..settings import CodexLeaksFilter, Division
from ..verify.rules import withheld_verdict
from .blindmi import blind_mi_generated, blind_mi_split, perturb
from .blindmi import band_split, kernel_matrix, mmd  # noqa: F401 (re-exported: one home, .blindmi)
from .common import mean_nll

REFERENCE_ZLIB = "zlib"
RULE_BLIND_MI, RULE_RANK = "blind_mi_diff", "rank"


# ---------------------------------------------------------------------------- CodexLeaks

def zlib_entropy(text: str) -> int:
    """Bits of the zlib-compressed UTF-8 text (level 9)."""
    return 8 * len(zlib.compress(text.encode("utf-8"), 9))


def continuation(rec: Mapping) -> str:
    """The text the model generated for a baseline response (its continuation)."""
    t1 = rec.get("turn1") or {}
    c = t1.get("continuation") if isinstance(t1, Mapping) else None
    if isinstance(c, str):
        return c
    tt, pt = rec.get("tests_text") or "", rec.get("prompt_text") or ""
    return tt[len(pt):] if tt.startswith(pt) else tt


def scorer_need(cfg: CodexLeaksFilter) -> tuple[str, str] | None:
    """``(key, field)`` of the causal scorer the filter ``cfg`` (``baselines.codexleaks.filter``)
    scores with, or None: under ``rule: rank`` the reference model ``filter.reference`` (None for
    ``zlib``); under ``rule: blind_mi_diff`` with ``nonmembers: generated`` the target model's own
    weights ``filter.blind_mi.scorer`` (keys of the scorer models, ``library.division.models_file``)."""
    if cfg.rule == RULE_RANK:
        return None if cfg.reference == REFERENCE_ZLIB else (cfg.reference, "reference")
    if cfg.blind_mi.nonmembers != "generated":
        return None
    if not cfg.blind_mi.scorer:
        raise ConfigError("baselines.codexleaks.filter.blind_mi.scorer = None: expected a key of "
                          "the scorer models (library.division.models_file) (nonmembers: generated scores with it)")
    return cfg.blind_mi.scorer, "blind_mi.scorer"


def filter_scorer(cfg: CodexLeaksFilter, division: Division, torch_threads: int, models_dir):
    """The causal scorer the filter ``cfg`` needs (:func:`scorer_need`), or None: the scorer model
    of ``library.division`` (its ``models_file``) by key, loaded from ``models_dir`` with
    ``library.torch_threads`` torch threads."""
    need = scorer_need(cfg)
    if need is None:
        return None
    from ..library import pin_torch_threads
    from ..library.division import get_scorer, scorer_models

    key, field = need
    models = scorer_models(division)
    if key not in models:
        raise ConfigError(f"baselines.codexleaks.filter.{field} = {key!r}: expected a key of the scorer models "
                          f"(the scorer models (library.division.models_file)_file: {', '.join(models) or 'none'})")
    pin_torch_threads(torch_threads)
    return get_scorer(division.model_copy(update={"scorer": "causal_surprisal", "model": key, "batch_size": 8}),
                      models_dir, models)


def _mean_nll(t) -> float | None:
    return sum(t.scores) / len(t.scores) if t.scores else None


def membership_scores(records: list[Mapping], reference: str = REFERENCE_ZLIB, scorer=None) -> list[float | None]:
    """The ``rank`` rule's score of every record (lower = more likely memorised), None without
    logprobs (``perplexity`` is None) or without text."""
    out: list[float | None] = []
    todo: list[int] = []
    for i, r in enumerate(records):
        ppl = r.get("perplexity")
        text = continuation(r)
        if ppl is None or not text.strip() or r.get("status", "ok") != "ok":
            out.append(None)
            continue
        out.append(math.log(float(ppl)))
        todo.append(i)
    if reference == REFERENCE_ZLIB:
        for i in todo:
            out[i] = out[i] / zlib_entropy(continuation(records[i]))
    elif todo:
        if scorer is None:
            raise ConfigError(f"baselines.codexleaks.filter.reference = {reference!r} needs its model scorer")
        ts = scorer.score([continuation(records[i]) for i in todo])
        for i, t in zip(todo, ts):
            ref_nll = _mean_nll(t)
            out[i] = None if not ref_nll else out[i] / ref_nll
    return out


def _blind_mi_filter(recs: list[dict], cfg: CodexLeaksFilter, scorer) -> tuple[list[dict], dict]:
    import random

    bmi = cfg.blind_mi
    ok = [i for i, r in enumerate(recs) if r.get("status", "ok") == "ok"]
    scored = [i for i in ok if recs[i].get("perplexity") is not None and continuation(recs[i]).strip()]
    rng = random.Random(bmi.seed)
    order = list(range(len(scored)))
    rng.shuffle(order)
    info: dict = {}
    if bmi.nonmembers == "split":
        # the authors' feature: mean token log-probability of the generated tokens = -log perplexity
        feats = [-math.log(float(recs[i]["perplexity"])) for i in scored]
        member, info = blind_mi_split(feats, bmi.band, order, bmi.batch)
        source = "response logprobs"
    else:
        if scorer is None:
            raise ConfigError("baselines.codexleaks.filter.blind_mi.nonmembers = 'generated' needs its scorer "
                              "(filter.blind_mi.scorer)")
        picks = [scored[rng.randrange(len(scored))] for _ in range(bmi.generated)] if scored else []
        gen = [perturb(continuation(recs[i]), rng) for i in picks]
        ts = scorer.score([continuation(recs[i]) for i in scored] + gen,
                          [recs[i].get("prompt_text") or "" for i in scored + picks])
        means = [_mean_nll(t) for t in ts]
        feats = [-(x or 0.0) for x in means[:len(scored)]]
        gfeats = [-(x or 0.0) for x in means[len(scored):]]
        member, info = (blind_mi_generated(feats, gfeats, order, bmi.batch) if scored else ([], {}))
        info = {**info, "generated": len(gen)}
        source = f"scorer {bmi.scorer}"
    scored_set = set(scored)
    unranked = [i for i in ok if i not in scored_set]
    keep = {i for i, mem in zip(scored, member) if mem}
    if cfg.unranked == "keep":
        keep |= set(unranked)
    for i, mem, x in zip(scored, member, feats):
        recs[i] = {**recs[i], "mi_feature": x, "mi_member": mem}
    fk = [x for x, mem in zip(feats, member) if mem]
    stats = {"filter": "codexleaks_blind_mi", "rule": RULE_BLIND_MI, "nonmembers": bmi.nonmembers,
             "band": list(bmi.band), "batch": bmi.batch, "seed": bmi.seed, "feature": "mean token logprob",
             "feature_source": source, **info,
             "responses": len(recs), "ok": len(ok), "scored": len(scored), "kept_scored": sum(member),
             "unranked": len(unranked), "unranked_policy": cfg.unranked,
             "unranked_kept": len(unranked) if cfg.unranked == "keep" else 0,
             "not_ok": len(recs) - len(ok), "kept": len(keep),
             "member_feature_range": [min(fk), max(fk)] if fk else None}
    return [recs[i] for i in range(len(recs)) if i in keep], stats


def _rank_filter(recs: list[dict], cfg: CodexLeaksFilter, scorer) -> tuple[list[dict], dict]:
    scores = membership_scores(recs, cfg.reference, scorer)
    ok = [i for i, r in enumerate(recs) if r.get("status", "ok") == "ok"]
    scored = [i for i in ok if scores[i] is not None]
    unranked = [i for i in ok if scores[i] is None]
    n_keep = math.ceil(cfg.top_share * len(scored)) if scored else 0
    ranked = sorted(scored, key=lambda i: (scores[i], i))
    keep = set(ranked[:n_keep]) | (set(unranked) if cfg.unranked == "keep" else set())
    for rank, i in enumerate(ranked, 1):
        recs[i] = {**recs[i], "mi_score": scores[i], "mi_rank": rank}
    stats = {"filter": "codexleaks_blind_mi", "rule": RULE_RANK, "reference": cfg.reference,
             "top_share": cfg.top_share,
             "responses": len(recs), "ok": len(ok), "scored": len(scored), "kept_scored": n_keep,
             "unranked": len(unranked), "unranked_policy": cfg.unranked,
             "unranked_kept": len(unranked) if cfg.unranked == "keep" else 0,
             "not_ok": len(recs) - len(ok), "kept": len(keep),
             "threshold": scores[ranked[n_keep - 1]] if n_keep else None}
    return [recs[i] for i in range(len(recs)) if i in keep], stats


def codexleaks_filter(responses: Iterable[dict], cfg: CodexLeaksFilter, scorer=None) -> tuple[list[dict], dict]:
    """CodexLeaks' blind membership-inference filter (``cfg``: ``baselines.codexleaks.filter``,
    its ``rule``): the responses to keep (input order) and the filter's stats (counts, settings and
    feature values only: no text). ``scorer`` is :func:`filter_scorer`'s model when the rule needs one."""
    recs = list(responses)
    if cfg.rule == RULE_BLIND_MI:
        return _blind_mi_filter(recs, cfg, scorer)
    return _rank_filter(recs, cfg, scorer)


# ---------------------------------------------------------------------------- Codebreaker

_CARRY = ("question_id", "prompt_id", "method", "variant", "model", "round")


def codebreaker_candidates(responses: Iterable[dict], presidio_cfg: Mapping | None) -> tuple[list[dict], dict]:
    """Codebreaker's NER verifier: Presidio entities over each ok response's output
    (prompt + continuation, so a value completing an opened key is whole), mapped to our
    attributes. Returns candidate records (ids ``<response_id>:p<n>``) and counts."""
    from .. import presidio
    from ..extract.core import prompt_texts, response_text

    cands: list[dict] = []
    skipped: Counter = Counter()
    mapped: Counter = Counter()
    unmapped: Counter = Counter()
    stats = {"responses": 0, "with_candidates": 0, "excluded": 0, "duplicates": 0}
    for r in responses:
        stats["responses"] += 1
        if r.get("status", "ok") != "ok":
            skipped[str(r.get("status"))] += 1
            continue
        text = response_text(r)
        if not text:
            skipped["no_text"] += 1
            continue
        prompts = prompt_texts(r)
        seen: set[tuple[str, str]] = set()
        n0 = len(cands)
        for e in presidio.analyze(text, presidio_cfg):
            if e.attribute is None:
                unmapped[e.entity_type] += 1
                continue
            value = e.value.strip()
            if not value or any(value in p for p in prompts):
                stats["excluded"] += 1
                continue
            if (e.attribute, value) in seen:
                stats["duplicates"] += 1
                continue
            seen.add((e.attribute, value))
            mapped[e.attribute] += 1
            rid = r.get("id")
            rec = {"id": f"{rid}:p{len(cands) - n0}", "response_id": rid, **{k: r[k] for k in _CARRY if k in r},
                   "test_index": 0, "attribute": e.attribute, "value": value, "value_hash": value_hash(value),
                   "evidence": {"pattern": f"presidio:{e.entity_type}", "start": e.start, "end": e.end,
                                "score": round(e.score, 4)},
                   "language": r.get("lang")}
            cands.append(rec)
        if len(cands) > n0:
            stats["with_candidates"] += 1
    stats.update({"candidates": len(cands), "skipped": dict(skipped), "by_attribute": dict(sorted(mapped.items())),
                  "unmapped": dict(sorted(unmapped.items())), "unmapped_total": sum(unmapped.values()),
                  "extractor": "presidio"})
    return cands, stats


# ---------------------------------------------------------------------------- dispatch

def codexleaks_published(params: Mapping, responses: list, models_dir) -> tuple[list[dict], dict]:
    """CodexLeaks as published: its blind membership-inference filter over the responses, then
    the values of the kept responses (ExtractPII reads the completed privacy slots). The stage
    boundary of the candidates stage for this method: it reads ``baselines.codexleaks.filter``, and
    ``library.division`` and ``library.torch_threads`` only when the filter scores with a model."""
    from ..extract import candidates_from_responses
    from ..taxonomy import Taxonomy

    cfg = typed(params, "baselines.codexleaks.filter")
    scorer = (filter_scorer(cfg, typed(params, "library.division"), typed(params, "library.torch_threads"), models_dir)
              if scorer_need(cfg) is not None else None)
    kept, fstats = codexleaks_filter(responses, cfg, scorer)
    cands, stats = candidates_from_responses(kept, Taxonomy.from_config(params))
    return cands, {**stats, "responses": len(responses), "after_filter": len(kept), "filter": fstats}


def codebreaker_published(params: Mapping, responses: list, models_dir) -> tuple[list[dict], dict]:
    """Codebreaker as published: Presidio NER over the outputs, entities mapped to attributes
    (``presidio``: the candidates stage's boundary for this method)."""
    cands, stats = codebreaker_candidates(responses, typed(params, "presidio").model_dump())
    return cands, {**stats, "after_filter": stats["with_candidates"]}


#: each baseline's own verification under ``published``: ``(params, responses, models_dir) ->
#: (candidate records, stats)``; the candidates stage looks the run's method up here.
PUBLISHED = {"codexleaks": codexleaks_published, "codebreaker": codebreaker_published}


# ---------------------------------------------------------------------------- judged

def passthrough_verdicts(candidates: Iterable[dict], run: str) -> list[dict]:
    """Verdict records that keep every candidate: under ``published`` the baselines apply
    neither our format rules nor our judge LLM (their own filter ran at the candidates stage).
    The review policy ``auto`` then confirms what is in the hit window (judge ``skipped``, kept).
    A candidate that withheld its value (an echo, a taxonomy word, a placeholder: no value kept,
    so nothing to search) is not kept, with that status as its rules verdict."""
    why = "not applied: baselines.protocol=published (the baseline's own filter ran at the candidates stage)"
    out = []
    for c in candidates:
        rec = {"candidate_id": c["id"], "run": c.get("run", run), "attribute": c["attribute"],
               "value_hash": c.get("value_hash") or value_hash(str(c["value"])), "mode": "published",
               "rules": {"ok": None, "reason": why}, "judge": {"ok": None, "reason": why, "status": "skipped"},
               "kept": True}
        if (held := withheld_verdict(c)) is not None:
            rec["rules"], rec["kept"] = held, False
        out.append(rec)
    return out


__all__ = ["PROTOCOLS", "PUBLISHED", "codexleaks_published", "codebreaker_published", "run_protocol", "zlib_entropy", "membership_scores", "codexleaks_filter", "filter_scorer", "scorer_need",
           "blind_mi_split", "blind_mi_generated", "band_split", "mmd", "kernel_matrix", "perturb",
           "codebreaker_candidates", "passthrough_verdicts", "continuation"]

