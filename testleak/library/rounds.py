"""Library rounds: from the confirmed leaks of run k to the library of round k+1 (paper Sec. 5.1-5.3).

``leak_instances`` finds the leaked instance x of every confirmed leak: the source line of the
test code that holds the value (evidence span in the response text), clipped to ``max_chars``
around the value, with up to ``context_lines`` preceding lines as unscored left context.
``build_round`` divides the instances (Sec. 5.2), clusters the new templates and fragments
(Sec. 5.3) and merges what survives into the input library; every step that drops an item
leaves a record with a status and a count (nothing disappears silently).
Pure: records in, (library document, division records, stats) out; raw values stay in the
returned objects, which the stage writes under data/ only.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

from ..errors import DataError
from ..privacy import value_hash
from ..settings import Clustering, Division
from .clustering import cluster_kind
from .division import Scorer, divide


def _instance(text: str, start: int, end: int, value: str, context_lines: int, max_chars: int):
    if not (0 <= start < end <= len(text)) or text[start:end] != value:
        found = text.find(value)
        if found < 0:
            return None
        start, end = found, found + len(value)
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le
    line = text[ls:le]
    va, vb = start - ls, end - ls
    if len(line) > max_chars:
        pad = max(0, (max_chars - (vb - va)) // 2)
        cut = max(0, va - pad)
        line, va, vb = line[cut:cut + max(max_chars, vb - va)], va - cut, vb - cut
    before = text[:ls].split("\n")[:-1][-context_lines:] if context_lines > 0 else []
    prefix = "\n".join(before) + ("\n" if before else "")
    return {"text": line, "value_span": [va, vb], "prefix": prefix}


def leak_instances(confirmed: Sequence[dict], candidates: Mapping[str, dict], responses: Mapping[str, dict],
                   response_text: Callable[[dict], str | None], context_lines: int = 3, max_chars: int = 240
                   ) -> tuple[list[dict], Counter]:
    """Instances for the confirmed leaks (``status == confirmed``); returns (instances, status counts)."""
    out, counts = [], Counter()
    for c in confirmed:
        if c.get("status") != "confirmed":
            counts["not_confirmed"] += 1
            continue
        cand = candidates.get(c.get("candidate_id")) or {}
        value = c.get("value") or cand.get("value")
        attr = c.get("attribute") or cand.get("attribute")
        base = {"candidate_id": c.get("candidate_id"), "attribute": attr,
                "language": cand.get("language") or c.get("language") or "text",
                "response_id": cand.get("response_id") or c.get("response_id")}
        if not value or not attr:
            out.append({**base, "status": "no_candidate"})
            counts["no_candidate"] += 1
            continue
        ev = c.get("evidence") or cand.get("evidence") or {}
        span = ev.get("span") or [-1, -1]
        if c.get("context"):
            text, span = c["context"], [-1, -1]
        else:
            text = response_text(responses.get(base["response_id"]) or {}) or ""
        inst = _instance(text, int(span[0]), int(span[1]), value, context_lines, max_chars)
        if inst is None:
            out.append({**base, "status": "value_not_found"})
            counts["value_not_found"] += 1
            continue
        out.append({**base, "status": "ok", "value": value, **inst})
        counts["ok"] += 1
    return out, counts


def build_round(instances: Sequence[dict], base_library: Mapping[str, Mapping[str, list]], scorer: Scorer, encoder,
                slots: Mapping[str, str], division_cfg: Division, clustering_cfg: Clustering, run: str,
                other_values: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> tuple[dict, list[dict], dict]:
    """Divide, cluster and merge; returns (library document, division records, stats)."""
    divisions, new = divide_instances(instances, scorer, slots, division_cfg, other_values)
    lib = {a: {"templates": [dict(e) for e in b.get("templates", [])],
               "fragments": [dict(e) for e in b.get("fragments", [])]} for a, b in base_library.items()}
    stats = {"run": run, "instances": len(instances), "divided": len(new["templates"]),
             "division_failed": sum(d["status"] == "division_failed" for d in divisions)}
    clusters = {}
    for kind in ("templates", "fragments"):
        clusters[kind], stats[kind] = merge_kind(lib, kind, new[kind], base_library, encoder, clustering_cfg, run)
    doc = {"schema": "library/1", "version": 1, "run": run, "attributes": lib, "stats": stats}
    return doc, divisions, {**stats, "_clusters": clusters, "_new": new}


def divide_instances(instances: Sequence[dict], scorer: Scorer, slots: Mapping[str, str], division_cfg: Division,
                     other_values: Mapping[str, Sequence[tuple[str, str]]] | None = None
                     ) -> tuple[list[dict], dict[str, list[dict]]]:
    """Score and divide the ``ok`` instances (Sec. 5.2); returns (division records, new {templates, fragments})."""
    ok = [i for i in instances if i.get("status") == "ok"]
    quantile, policy, minc = division_cfg.quantile, division_cfg.value_span, division_cfg.min_fragment_chars
    scored = scorer.score([i["text"] for i in ok], [i.get("prefix", "") for i in ok]) if ok else []
    divisions, new_t, new_f = [], [], []
    for inst, ts in zip(ok, scored):
        try:
            d = divide(ts, slots[inst["attribute"]], quantile, tuple(inst["value_span"]), policy, minc)
        except DataError as e:
            divisions.append({**_meta(inst), "status": "division_failed", "error": str(e)})
            continue
        template = d.template
        for v, s in (other_values or {}).get(inst.get("response_id"), ()):  # other leaked values on the line
            if v and v in template:
                template = template.replace(v, s)
        divisions.append({**_meta(inst), "status": "divided", "scorer": scorer.name, "policy": policy,
                          **d.to_record(), "template": template})
        new_t.append({"text": template, "lang": inst["language"], "attribute": inst["attribute"],
                      "candidate_id": inst["candidate_id"]})
        new_f.extend({"text": f["text"], "attribute": inst["attribute"], "candidate_id": inst["candidate_id"],
                      "by": f["by"]} for f in d.fragments)
    return divisions, {"templates": new_t, "fragments": new_f}


def merge_kind(lib: dict, kind: str, items: list[dict], base_library: Mapping[str, Mapping[str, list]], encoder,
               clustering_cfg: Clustering, run: str) -> tuple[dict, dict]:
    """Cluster the new items of ``kind`` (Sec. 5.3) and append the clustered, new ones to ``lib`` in place.

    Each item gets its cluster, similarity, status and ``filed_under``; returns (cluster info, counts).
    """
    uniq = list(dict.fromkeys(i["text"] for i in items))  # the same template from many leaks clusters once
    res = (cluster_kind(uniq, base_library, kind, encoder, clustering_cfg) if uniq
           else {"items": [], "labels": [], "embeddings": None})
    by_text = dict(zip(uniq, res["items"]))
    existing = {a: {e["text"] for e in b[kind]} for a, b in lib.items()}
    c = Counter()
    for it in items:
        r = by_text[it["text"]]
        it.update({k: r[k] for k in ("cluster", "similarity", "status")}, filed_under=r["attribute"])
    for t in uniq:
        r = by_text[t]
        if r["status"] != "clustered":
            c[r["status"]] += 1
            continue
        attr = r["attribute"]
        if t in existing.get(attr, set()):
            c["duplicate"] += 1
            continue
        src = next(i for i in items if i["text"] == t)
        entry = {"text": t, "source": f"run:{run}", "source_run": run, "cluster": r["cluster"],
                 "similarity": r["similarity"], "record_attribute": src["attribute"],
                 "candidate_ids": sorted({i["candidate_id"] for i in items if i["text"] == t})}
        if kind == "templates":
            entry["lang"] = src["lang"]
        lib.setdefault(attr, {"templates": [], "fragments": []})[kind].append(entry)
        existing.setdefault(attr, set()).add(t)
        c["added"] += 1
    counts = {"new": len(items), "distinct": len(uniq),
              **{k: c[k] for k in ("added", "duplicate", "noise", "low_similarity")}}
    return {"texts": uniq, **res}, counts


def _meta(inst: dict) -> dict:
    return {"candidate_id": inst["candidate_id"], "attribute": inst["attribute"], "language": inst["language"],
            "value_hash": value_hash(inst["value"])}
