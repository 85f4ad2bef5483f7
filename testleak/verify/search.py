"""Corpus search behind one interface (paper Sec. 4.3, "GitHub search"), and the hit window.

Backends, chosen by ``verifier.backend``: ``local`` (exact substring index over a local
code corpus, :mod:`.index`) and ``github`` (REST code search, :mod:`.github`). Both answer
``search(value) -> {k, repo_ids, repos, paths, outcome, query, engine, searched_at}`` with
``outcome`` ``searched`` | ``unverifiable`` | ``error``.

:func:`verify_candidates` applies the paper's window: a judge-kept candidate is searched
and is ``in_window`` when 1 <= k <= 100 (``verifier.window``), else ``out_of_window``;
values that cannot be searched are ``unverifiable`` and failed searches ``error``;
candidates the judge stage dropped are not searched (as in the paper) but still get a
record with outcome ``filtered`` so that every count is complete.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from ..config import select
from ..errors import DataError
from ..privacy import mask

BACKENDS = ("local", "github")
OUTCOMES = ("in_window", "out_of_window", "unverifiable", "error", "filtered")


def open_backend(verifier_cfg: Mapping, paths):
    """The search backend named by ``verifier.backend``."""
    name = select(verifier_cfg, verifier_cfg.get("backend", "local"), BACKENDS, "verifier.backend")
    if name == "local":
        from .index import LocalIndex

        local = verifier_cfg.get("local") or {}
        return LocalIndex(paths.index, max_hits_listed=int(local.get("max_hits_listed") or 100))
    from .github import GitHubSearch

    gh = dict(verifier_cfg.get("github") or {})
    gh.setdefault("min_query_chars", verifier_cfg.get("min_query_chars", 3))
    return GitHubSearch(gh, paths.search_cache, log_path=paths.logs / "search_calls.jsonl")


def window_outcome(k: int | None, window: Mapping) -> str:
    lo, hi = int(window.get("min", 1)), int(window.get("max", 100))
    if k is None:
        return "unverifiable"
    return "in_window" if lo <= k <= hi else "out_of_window"


def verify_candidates(verdicts: Iterable[dict], candidates: Iterable[dict], backend, window: Mapping,
                      backend_name: str) -> list[dict]:
    """Hit records (schema ``hit/1``), one per verdict, in verdict order."""
    by_id = {c["id"]: c for c in candidates}
    out = []
    memo: dict[str, dict] = {}
    for v in verdicts:
        cid = v["candidate_id"]
        c = by_id.get(cid)
        if c is None:
            raise DataError(f"verdict for candidate {cid} has no candidate record: rerun the judged stage")
        rec = {"candidate_id": cid, "run": v.get("run"), "attribute": v["attribute"],
               "value_hash": v["value_hash"], "backend": backend_name, "kept": bool(v["kept"])}
        if not v["kept"]:
            rec.update({"outcome": "filtered", "k": None, "repo_ids": [], "repos": [], "paths": [],
                        "query": mask(c["value"]), "engine": backend.engine, "searched_at": None})
            out.append(rec)
            continue
        value = c["value"]
        res = memo.get(value)
        if res is None:
            res = memo[value] = backend.search(value)
        outcome = res["outcome"]
        if outcome == "searched":
            outcome = window_outcome(res["k"], window)
        rec.update({k: res.get(k) for k in ("k", "repo_ids", "repos", "paths", "query", "engine", "searched_at")})
        rec["outcome"] = outcome
        if res.get("reason"):
            rec["reason"] = res["reason"]
        out.append(rec)
    return out


def summarize_hits(hits: list[dict]) -> dict:
    c = Counter(h["outcome"] for h in hits)
    return {"candidates": len(hits), **{o: c.get(o, 0) for o in OUTCOMES},
            "in_window_by_attribute": dict(Counter(h["attribute"] for h in hits if h["outcome"] == "in_window"))}
