"""Human review of in-window candidates, reviewer agreement and the confirmation policy
(paper Sec. 4.3: "two authors independently inspect the matched GitHub contexts and the
candidate string itself to determine whether it represents real personal information";
Fig. 2: unverifiable candidates are "Potential" and never counted as confirmed).

- Labels yes / likely / no / unknown (the CodexLeaks scale, ``notlikely`` folded into no),
  appended one by one to ``labels/labels.jsonl`` (:func:`append_label`; the value as its keyed
  hash, :func:`testleak.privacy.label_hash`, and the key's ``key_id``), the last label of a
  reviewer winning; :func:`migrate_labels` rehashes an older or other-key label file; :func:`agreement` is Cohen's kappa of two reviewers; :func:`review_queue`
  is what a reviewer labels. The terminal UI, ``testleak review``, is testleak/cli_review.py.
- :func:`confirm`: the ``confirmed`` stage's policy. ``both_yes`` (paper: every configured
  reviewer said yes), ``yes_or_likely`` (every reviewer yes or likely) and ``auto`` (in
  window and judge-plausible, for unattended runs). Every record names its policy.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .. import registry
from ..errors import ConfigError, DataError
from ..privacy import key_id, label_hash, mask_in_text, value_key
from ..records import LABELS as _LABELS, rules_status

LABELS = _LABELS     # the record vocabulary (testleak.records), checked by every reader
POLICIES = registry.POLICIES   # the names (testleak/registry.py); confirm() applies each


# ----------------------------------------------------------------------------- labels

def read_labels(path: str | Path) -> list[dict]:
    from ..records import read_jsonl

    p = Path(path)
    return read_jsonl(p, kind="label") if p.exists() else []


def latest_labels(labels: Iterable[dict]) -> dict[tuple[str, str], str]:
    """``{(candidate_id, reviewer): label}``, the last label of each reviewer winning."""
    out: dict[tuple[str, str], str] = {}
    for r in labels:
        out[(r["candidate_id"], r["reviewer"])] = r["label"]
    return out


def append_label(path: str | Path, candidate_id: str, value: str, reviewer: str, label: str,
                 key: bytes | None = None) -> dict:
    """Append one label of the raw candidate ``value`` (written as its keyed hash under ``key``,
    default the project's value key)."""
    from ..records import tag

    if label not in LABELS:
        raise ConfigError(f"unknown label {label!r}; known: {', '.join(LABELS)}")
    key = value_key() if key is None else key
    rec = tag("label", {"candidate_id": candidate_id, "value_hash": label_hash(value, key), "key_id": key_id(key),
                        "reviewer": reviewer, "label": label,
                        "at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        f.flush()
    return rec


def candidate_values(data_dir: str | Path) -> dict[str, str]:
    """``{candidate id: raw value}`` of every candidate record under ``data_dir`` that keeps its value."""
    from ..records import iter_jsonl

    return {c["id"]: c["value"] for f in sorted(Path(data_dir).rglob("candidates.jsonl"))
            for c in iter_jsonl(f, "candidate") if "value" in c}


def migrate_labels(path: str | Path, data_dir: str | Path, key: bytes | None = None,
                   drop_unavailable: bool = False) -> dict:
    """Rewrite a label file (any label schema, any key) as ``label/2`` records keyed with ``key``
    (default: the project's value key). The raw value of each label comes from its candidate
    record under ``data_dir``; a label whose candidate is not there (its value is no longer
    available) cannot be rehashed: the file is left unchanged and a ConfigError says how many,
    unless ``drop_unavailable``, which drops them (counted in ``dropped``). Atomic."""
    from ..records import tag, write_jsonl

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p} does not exist: give the label file to migrate (--labels FILE)")
    key = value_key() if key is None else key
    kid = key_id(key)
    rows = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}:{n} is not valid JSON ({e.msg}); fix or remove the line") from None
        if not isinstance(rec, dict) or not str(rec.get("schema", "")).startswith("label/") or \
                any(f not in rec for f in ("candidate_id", "reviewer", "label")):
            raise DataError(f"{p}:{n} is not a label record (schema label/N with candidate_id, reviewer, label)")
        rows.append(rec)
    values = candidate_values(data_dir)
    out, missing, rehashed = [], [], 0
    for rec in rows:
        cid = rec["candidate_id"]
        if cid not in values:
            missing.append(cid)
            continue
        h = label_hash(values[cid], key)
        rehashed += rec.get("value_hash") != h or rec.get("key_id") != kid or rec.get("schema") != tag("label", {})["schema"]
        out.append(tag("label", {k: v for k, v in rec.items() if k != "schema"} | {"value_hash": h, "key_id": kid}))
    if missing and not drop_unavailable:
        raise ConfigError(f"{len(missing)} of {len(rows)} labels of {p} have no candidate under {data_dir} (their raw "
                          f"value is not available to rehash, e.g. {missing[0]}): bring the run's data back "
                          f"(dvc pull or dvc repro) or pass --drop-unavailable to drop them; nothing was written")
    write_jsonl(p, out, kind="label")
    return {"labels": len(rows), "kept": len(out), "rehashed": int(rehashed), "dropped": len(missing), "key_id": kid}


def agreement(labels: Iterable[dict], reviewers: Sequence[str]) -> dict:
    """Cohen's kappa (sklearn) of two reviewers over the candidates both labelled."""
    from sklearn.metrics import cohen_kappa_score

    if len(reviewers) != 2:
        raise ConfigError(f"agreement needs exactly two reviewers, got {list(reviewers)}")
    a, b = reviewers
    last = latest_labels(labels)
    common = sorted({c for c, r in last if r == a} & {c for c, r in last if r == b})
    ya = [last[(c, a)] for c in common]
    yb = [last[(c, b)] for c in common]
    if not common:
        return {"reviewers": [a, b], "n": 0, "kappa": None, "observed_agreement": None}
    observed = sum(x == y for x, y in zip(ya, yb)) / len(common)
    if len(set(ya) | set(yb)) == 1:
        kappa = 1.0  # a single category used by both: complete agreement, sklearn would give nan
    else:
        kappa = float(cohen_kappa_score(ya, yb, labels=list(LABELS)))
    return {"reviewers": [a, b], "n": len(common), "kappa": round(kappa, 4),
            "observed_agreement": round(observed, 4)}


# ----------------------------------------------------------------------------- policy

def confirm(hits: Iterable[dict], verdicts: Iterable[dict], labels: Iterable[dict], policy: str,
            reviewers: Sequence[str] = (), review: Mapping[str, dict] | None = None) -> list[dict]:
    """Confirmed records (schema ``confirmed/1``), one per hit record.

    ``status``: ``confirmed`` | ``potential`` (in window but not confirmed by the policy:
    missing, unknown or likely labels) | ``rejected`` (a reviewer said no) |
    ``not_in_window`` (the search outcome, kept in ``outcome``) | ``error`` (the judge or
    search call failed: unknown, not "no leak").

    ``auto`` is one automatic reviewer for every method: an in-window candidate is confirmed
    when the verdict of the format rules + judge (as ``verifier`` configures them) keeps it.
    That verdict is ``review[candidate_id]`` when given (judged at the confirmed stage: a
    baseline verified as published), else the judged stage's. A pass-through verdict (its
    ``mode`` is ``published``: no rules, no judge) is no review: DataError.
    """
    registry.check(registry.POLICIES, policy, "review.policy")
    if policy != "auto" and not reviewers:
        raise ConfigError(f"review.policy {policy!r} needs review.reviewers (e.g. [r1, r2]); "
                          f"or use review=auto for unattended runs")
    vmap = {v["candidate_id"]: v for v in verdicts}
    last = latest_labels(labels)
    out = []
    for h in hits:
        cid = h["candidate_id"]
        got = {r: last.get((cid, r)) for r in reviewers}
        rec = {"candidate_id": cid, "run": h.get("run"), "attribute": h["attribute"], "value_hash": h["value_hash"],
               "outcome": h["outcome"], "k": h.get("k"), "repo_ids": h.get("repo_ids", []), "policy": policy,
               "labels": got}
        if h["outcome"] == "error":  # a failed judge or search call: an error, never "not a leak"
            rec["status"] = "error"
            rec["reason"] = h.get("reason")
        elif h["outcome"] != "in_window":
            rec["status"] = "not_in_window"
        elif policy == "auto":
            here = review is not None and cid in review
            v = review[cid] if here else (vmap.get(cid) or {})
            if v.get("mode") == "published":
                raise DataError(f"candidate {cid!r}: review.policy auto needs the automatic reviewer's verdict, the "
                                "judged stage only passed it through (baselines.protocol published): rerun the "
                                "confirmed stage")
            j = v.get("judge") or {}
            rec["review"] = {"by": "confirmed stage" if here else "judged stage", "mode": v.get("mode"),
                             "rules": rules_status(v.get("rules") or {}), "judge": j.get("status"), "kept": bool(v.get("kept"))}
            if j.get("status") == "error":
                rec["status"] = "error"
                rec["reason"] = "the automatic reviewer's judge call failed"
            else:
                rec["status"] = "confirmed" if v.get("kept") else "potential"
        else:
            vals = list(got.values())
            accept = {"yes"} if policy == "both_yes" else {"yes", "likely"}
            if any(v == "no" for v in vals):
                rec["status"] = "rejected"
            elif vals and all(v in accept for v in vals):
                rec["status"] = "confirmed"
            else:
                rec["status"] = "potential"
        out.append(rec)
    return out


def summarize_confirmed(records: list[dict]) -> dict:
    c = Counter(r["status"] for r in records)
    return {"policy": records[0]["policy"] if records else None, "records": len(records),
            **{s: c.get(s, 0) for s in ("confirmed", "potential", "rejected", "not_in_window", "error")},
            "errors": c.get("error", 0)}


# ----------------------------------------------------------------------------- review queue

def review_queue(runs: Sequence[str], paths) -> list[tuple[dict, dict, dict | None]]:
    """In-window (hit, candidate, verdict) triples of the runs, in file order: what a reviewer labels."""
    from ..records import read_jsonl

    out = []
    for run in runs:
        hits = read_jsonl(paths.verified(run), kind="hit")
        cands = {c["id"]: c for c in read_jsonl(paths.candidates(run))}
        jp = paths.judged(run)
        verdicts = {v["candidate_id"]: v for v in read_jsonl(jp, kind="verdict")} if jp.exists() else {}
        for h in hits:
            if h["outcome"] == "in_window":
                c = cands.get(h["candidate_id"])
                if c is None:
                    raise DataError(f"{paths.verified(run)} names candidate {h['candidate_id']} missing from "
                                    f"{paths.candidates(run)}: rerun the pipeline (dvc repro)")
                out.append((h, c, verdicts.get(h["candidate_id"])))
    return out


def context_lines(value: str, hit: dict, index_path: Path, n: int = 5, reveal: bool = False) -> list[str]:
    """Up to ``n`` corpus lines that hold ``value`` (local index; the value masked unless
    ``reveal``), else the hit's paths."""
    if hit.get("backend") == "local" and index_path.exists():
        from .index import LocalIndex

        with LocalIndex(index_path) as ix:
            return [f"{l['path']}:{l['line']}: {l['text'] if reveal else mask_in_text(l['text'], [value])}"
                    for l in ix.lines(value, n)]
    return [f"{p}" for p in (hit.get("paths") or [])[:n]]
