"""Corpus search behind one interface (paper Sec. 4.3, "GitHub search"), and the hit window.

Backends (``verifier.backend``, :data:`BACKENDS`): ``local`` (FTS5 trigram index, :mod:`.index`),
``infinigram`` (suffix array, :mod:`.infinigram`) and ``github`` (:mod:`.github`), all answering
``search(value) -> {k, repo_ids, repos, paths, outcome, ...}`` with ``outcome`` ``searched`` |
``unverifiable`` | ``error``. :func:`verify_candidates` applies the window: a judge-kept candidate
is ``in_window`` when 1 <= k <= 100 (``verifier.window``), else ``out_of_window``; judge-dropped
candidates are not searched but recorded as ``filtered`` so that every count is complete; a failed
judge call is ``error``, never ``filtered`` (a failure is no judgement).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from .. import registry
from ..config import select
from ..errors import DataError
from ..privacy import mask
from ..records import HIT_OUTCOMES
from ..config import typed
from ..settings import Window

OUTCOMES = HIT_OUTCOMES   # the record vocabulary (testleak.records), checked by every reader


# The openers read exactly the keys the verified stage declares (testleak/graph.py), typed.

def _open_local(params, paths):
    from .index import LocalIndex

    return LocalIndex(paths.corpus_index(typed(params, "verifier.index")),
                      max_hits_listed=typed(params, "verifier.local.max_hits_listed"))


def _open_infinigram(params, paths):
    from .infinigram import InfiniGramIndex

    return InfiniGramIndex(paths.corpus_index(typed(params, "verifier.index")),
                           max_hits_listed=typed(params, "verifier.local.max_hits_listed"),
                           max_docs_counted=typed(params, "verifier.infinigram.max_docs_counted"))


def _open_github(params, paths):
    from .github import GitHubSearch

    return GitHubSearch(typed(params, "verifier.github"), paths.search_cache,
                        min_query_chars=typed(params, "verifier.min_query_chars"), log_path=paths.logs / "search_calls.jsonl")


#: The opener of each backend of :data:`testleak.registry.BACKENDS`: ``open(params, paths)``.
BACKENDS = {"local": _open_local, "infinigram": _open_infinigram, "github": _open_github}
assert set(BACKENDS) == set(registry.BACKENDS), "testleak/registry.py BACKENDS and verify.search.BACKENDS differ"


def open_backend(params, paths):
    """The search backend named by ``verifier.backend`` of the composed ``params`` (a name of
    :data:`testleak.registry.BACKENDS`)."""
    name = typed(params, "verifier.backend")
    return BACKENDS[select(params, name, list(registry.BACKENDS), "verifier.backend")](params, paths)


def build_corpus_index(params, paths) -> dict:
    """Build the index the configured backend searches, at ``verifier.index``: an infini-gram
    suffix array for ``infinigram``, else the FTS5 trigram database (``local``; ``github``
    keeps one for the canary absence checks). Both index :func:`.index.select_corpus`'s
    documents. Returns counts plus ``engine``, ``index_bytes``, ``index_over_corpus`` and
    ``seconds`` (the caller keeps timings out of DVC-hashed files)."""
    local = typed(params, "verifier.local")
    out = paths.corpus_index(typed(params, "verifier.index"))
    if typed(params, "verifier.backend") == "infinigram":
        from .infinigram import build_infinigram

        ig = typed(params, "verifier.infinigram")
        stats = build_infinigram(local, out, shards=ig.shards, mem_gib=ig.mem_gib)
        stats["engine"] = "infini-gram"
    else:
        from .index import build_index

        stats = build_index(local, out)
        stats["engine"], stats["index_bytes"] = "fts5-trigram", stats.pop("db_bytes")
    stats["index_over_corpus"] = round(stats["index_bytes"] / max(1, stats["bytes"]), 3)
    return stats


def window_outcome(k: int | None, window: Window) -> str:
    lo, hi = window.min, window.max
    if k is None:
        return "unverifiable"
    return "in_window" if lo <= k <= hi else "out_of_window"


def verify_candidates(verdicts: Iterable[dict], candidates: Iterable[dict], backend, window: Window,
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
            # a judge call that failed is an error, not a judgement: never "filtered"
            judge_failed = (v.get("judge") or {}).get("status") == "error"
            rec.update({"outcome": "error" if judge_failed else "filtered", "k": None, "repo_ids": [], "repos": [],
                        "paths": [], "query": c.get("masked") or mask(c["value"]), "engine": backend.engine, "searched_at": None})
            if judge_failed:
                rec["reason"] = str((v.get("judge") or {}).get("reason") or "judge call failed")[:300]
            out.append(rec)
            continue
        if c.get("withheld"):   # no value kept, nothing to search: its verdict predates the withholding
            raise DataError(f"verdict keeps candidate {cid}, whose value is withheld ({c['withheld']}): "
                            f"rerun the judged stage")
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
    return {"candidates": len(hits), **{o: c.get(o, 0) for o in OUTCOMES}, "errors": c.get("error", 0),
            "in_window_by_attribute": dict(Counter(h["attribute"] for h in hits if h["outcome"] == "in_window"))}
