"""ExtractPII precision and recall on real model output (issue #17, item 3).

The truth is ``benchmarks/labels/model_output_ours.jsonl``: every privacy-like value in the
test code of the embedded model's answers of a default run, labelled by hand (never from
ExtractPII's output; the guide is ``benchmarks/labels/README.md``), one line per distinct
value of a response: ``response_id``, ``value_hash`` (:func:`testleak.privacy.value_hash`
of the exact literal text), ``attribute``, ``placeholder``, ``copied_from_prompt`` and
``masked``. No raw value is in git. The sidecar ``model_output_ours.meta.json`` records the
sha256 (and DVC md5) of the responses file the labels were made for; a different file is
refused with one line instead of a meaningless score.

ExtractPII runs exactly as the ``candidates`` stage runs it (:func:`testleak.pipeline.candidates`
with the taxonomy of ``params.yaml``); a candidate matches a label by ``(response_id,
value_hash)``. Printed:

- per labelled attribute, over the values not copied from the prompt (ExtractPII drops
  prompt values by design): labelled, returned with the right attribute, recall; and per
  candidate attribute: candidates, correct (a label of that attribute), precision;
- recall of the non-copied labels, all and without placeholders; precision overall
  (right attribute) and on values (any attribute);
- with ``--misses``: every missed label and every wrong candidate, masked, with the key and
  pattern ExtractPII used.

    .venv/bin/python benchmarks/eval_model_output.py [--responses data/runs/ours/responses.jsonl] [--misses] [--json out.json]

Making the label file from hand labels with raw values (kept under ``data/``, never in git;
lines ``{"response_id", "value", "attribute", "placeholder"}``): ``copied_from_prompt`` is
computed here (the value occurs verbatim in a text the model was given:
:func:`testleak.extract.prompt_texts`), and the sidecar is written::

    .venv/bin/python benchmarks/eval_model_output.py --make-labels data/labels/model_output_ours.raw.jsonl

Evaluation protocol (development and held-out parts). ``--make-labels`` also decides the
split, once, before any scoring: the responses of the file (all of them, ``ok`` or not, sorted
by id) are shuffled with ``random.Random(--seed)`` and the first ``--heldout-fraction`` are
the held-out part; the sidecar records the seed, the fraction and the held-out response ids
(a split by response, so the values of one answer never sit on both sides). Design work
reads ``--part dev`` (the default) only; ``--part heldout`` is the final measurement, reported
as such. A label file made before the split (no ``split`` in its sidecar) is all development.
Several label sets are scored together by repeating ``--labels L --responses R`` pairs (one
per run: ours and the baselines, other seeds); counts are reported per method (the
responses' ``method``) and per attribute with Wilson 95 % intervals
(``statsmodels.stats.proportion.proportion_confint`` when installed, else
``scipy.stats.binomtest(...).proportion_ci``)::

    .venv/bin/python benchmarks/eval_model_output.py --labels A.jsonl --responses A/responses.jsonl \
        --labels B.jsonl --responses B/responses.jsonl --part heldout
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.extract import prompt_texts  # noqa: E402
from testleak.privacy import mask, value_hash  # noqa: E402

LABELS = ROOT / "benchmarks" / "labels" / "model_output_ours.jsonl"
RUN = "ours"
LABEL_KEYS = ("response_id", "value_hash", "attribute", "placeholder", "copied_from_prompt", "masked")


def meta_path(labels: Path) -> Path:
    return labels.with_name(labels.name.removesuffix(".jsonl") + ".meta.json")


def file_digests(path: Path) -> dict:
    b = path.read_bytes()
    return {"sha256": hashlib.sha256(b).hexdigest(), "md5": hashlib.md5(b).hexdigest(), "size": len(b)}  # noqa: S324 - DVC's hash


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_params() -> dict:
    from omegaconf import OmegaConf

    from testleak.config import load_params as _load

    return OmegaConf.to_container(_load(ROOT / "params.yaml"), resolve=True)


# --- making the label file ---------------------------------------------------------------
def split_responses(ids, seed: int, heldout_fraction: float) -> list[str]:
    """The held-out response ids: ``ids`` sorted, shuffled with ``random.Random(seed)``, the
    first ``round(fraction * n)`` of them."""
    order = sorted(set(ids))
    random.Random(seed).shuffle(order)
    return sorted(order[:round(heldout_fraction * len(order))])


def make_labels(raw_path: Path, responses_path: Path, out: Path, run: str = RUN, seed: int = 0,
                heldout_fraction: float = 0.5) -> int:
    from testleak.taxonomy import Taxonomy

    attrs = set(Taxonomy.from_config(load_params()).attributes)
    responses = {r["id"]: r for r in read_jsonl(responses_path)}
    rows, seen = [], set()
    for n, raw in enumerate(read_jsonl(raw_path), 1):
        rid, v, attr = raw.get("response_id"), raw.get("value"), raw.get("attribute")
        rec = responses.get(rid)
        if rec is None or attr not in attrs or not isinstance(v, str) or not isinstance(raw.get("placeholder"), bool):
            print(f"{raw_path}:{n}: needs a response_id of {responses_path.name}, a string value, an attribute "
                  f"of the taxonomy and a boolean placeholder (got response {rid!r}, attribute {attr!r})", file=sys.stderr)
            return 2
        if v not in (rec.get("tests_text") or ""):
            print(f"{raw_path}:{n}: value {mask(v)} does not occur in the test answer of {rid}", file=sys.stderr)
            return 2
        if (rid, v) in seen:
            print(f"{raw_path}:{n}: value {mask(v)} labelled twice for {rid}", file=sys.stderr)
            return 2
        seen.add((rid, v))
        rows.append({"response_id": rid, "value_hash": value_hash(v), "attribute": attr,
                     "placeholder": raw["placeholder"],
                     "copied_from_prompt": any(v in p for p in prompt_texts(rec)),
                     "masked": mask(v)})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    try:
        commit = subprocess.run(["git", "-C", str(responses_path.resolve().parent), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    ok = [r for r in responses.values() if r.get("status") == "ok"]
    methods = sorted({str(r.get("method")) for r in responses.values() if r.get("method")})
    meta = {
        "labels": out.name,
        "run": run,
        "method": methods[0] if len(methods) == 1 else run,
        "split": {"seed": seed, "heldout_fraction": heldout_fraction, "by": "response",
                  "decided": "at labelling, before any scoring",
                  "heldout": split_responses(responses, seed, heldout_fraction)},
        "responses": {"path": f"data/runs/{run}/responses.jsonl", **file_digests(responses_path),
                      "records": len(responses), "ok": len(ok),
                      "git_commit": commit,
                      "note": f"md5/size as in dvc.lock (outs of responses@{run}) at git_commit"},
        "labelled": {"values": len(rows), "responses_with_values": len({r['response_id'] for r in rows})},
        "guide": "benchmarks/labels/README.md",
    }
    meta_path(out).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(rows)} labels) and {meta_path(out).name}", file=sys.stderr)
    return 0


# --- scoring -----------------------------------------------------------------------------
def check_labels(labels_path: Path, responses_path: Path) -> str | None:
    """None when the labels were made for this responses file, else the reason (one line)."""
    mp = meta_path(labels_path)
    if not labels_path.exists() or not mp.exists():
        return f"{labels_path} or its sidecar {mp.name} is missing"
    meta = json.loads(mp.read_text(encoding="utf-8"))
    want = meta["responses"]["sha256"]
    have = file_digests(responses_path)["sha256"]
    if want != have:
        return (f"the labels do not match {responses_path}: they were made for responses sha256 {want[:12]}... "
                f"(run {meta.get('run')}, commit {str(meta['responses'].get('git_commit'))[:10]}), this file is "
                f"{have[:12]}...: the model's answers changed; label the new answers "
                f"(benchmarks/labels/README.md) or pass --responses with the labelled file")
    return None


def evaluate(labels: list[dict], cands: list[dict]) -> dict:
    lab = {(r["response_id"], r["value_hash"]): r for r in labels}
    found: dict[tuple, set] = {}
    for c in cands:
        found.setdefault((c["response_id"], c["value_hash"]), set()).add(c["attribute"])
    per_attr: dict[str, Counter] = {}

    def bump(a, k, n=1):
        per_attr.setdefault(a, Counter())[k] += n

    recall = Counter()
    for key, r in lab.items():
        a = r["attribute"]
        if r["copied_from_prompt"]:
            bump(a, "copied")
            continue
        right = a in found.get(key, ())
        for scope in ("all",) + (() if r["placeholder"] else ("real",)):
            recall[scope] += 1
            recall[scope + "_right"] += right
            recall[scope + "_found"] += key in found
        bump(a, "labelled")
        bump(a, "right", right)
        if not r["placeholder"]:
            bump(a, "labelled_real")
            bump(a, "right_real", right)
    prec = Counter()
    wrong = []
    for c in cands:
        r = lab.get((c["response_id"], c["value_hash"]))
        ok = r is not None and r["attribute"] == c["attribute"]
        bump(c["attribute"], "candidates")
        bump(c["attribute"], "correct", ok)
        prec["candidates"] += 1
        prec["correct"] += ok
        prec["values"] += r is not None
        if not ok:
            wrong.append((c, r))
    misses = [r for key, r in lab.items() if not r["copied_from_prompt"] and r["attribute"] not in found.get(key, ())]
    return {"per_attribute": {a: dict(v) for a, v in sorted(per_attr.items())}, "recall": dict(recall),
            "precision": dict(prec), "_misses": misses, "_wrong": wrong}


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``k`` successes in ``n`` trials (statsmodels, else scipy)."""
    if n == 0:
        return float("nan"), float("nan")
    try:
        from statsmodels.stats.proportion import proportion_confint
    except ImportError:
        from scipy.stats import binomtest

        ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        return float(ci.low), float(ci.high)
    lo, hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    return float(lo), float(hi)


def part_of(labels: list[dict], meta: dict, part: str) -> list[dict]:
    """The labels of one part (``dev``, ``heldout`` or ``all``) of a label set."""
    if part == "all":
        return labels
    held = set((meta.get("split") or {}).get("heldout") or ())
    return [r for r in labels if (r["response_id"] in held) == (part == "heldout")]


def merge(results: list[dict]) -> dict:
    """Counts of several :func:`evaluate` results added up."""
    out = {"per_attribute": {}, "recall": Counter(), "precision": Counter(), "_misses": [], "_wrong": []}
    for r in results:
        for a, c in r["per_attribute"].items():
            out["per_attribute"].setdefault(a, Counter()).update(c)
        out["recall"].update(r["recall"])
        out["precision"].update(r["precision"])
        out["_misses"] += r["_misses"]
        out["_wrong"] += r["_wrong"]
    out["per_attribute"] = {a: dict(c) for a, c in sorted(out["per_attribute"].items())}
    out["recall"], out["precision"] = dict(out["recall"]), dict(out["precision"])
    return out


def ci(k: int, n: int) -> str:
    """``p % [lo, hi] (k/n)`` with the Wilson 95 % interval."""
    if not n:
        return "- (0/0)"
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}] ({k}/{n})"


def method_table(by_method: dict[str, dict]) -> str:
    lines = ["| method | labelled (not copied) | recall [95 % CI] | without placeholders | candidates | precision [95 % CI] |",
             "|---|---|---|---|---|---|"]
    for m, res in by_method.items():
        r, p = res["recall"], res["precision"]
        lines.append(f"| {m} | {r.get('all', 0)} | {ci(r.get('all_right', 0), r.get('all', 0))} | "
                     f"{ci(r.get('real_right', 0), r.get('real', 0))} | {p.get('candidates', 0)} | "
                     f"{ci(p.get('correct', 0), p.get('candidates', 0))} |")
    return "\n".join(lines)


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} % ({a}/{b})" if b else "- (0/0)"


def table(res: dict, fmt=pct) -> str:
    lines = ["| attribute | labelled (not copied) | recall | without placeholders | candidates | precision |",
             "|---|---|---|---|---|---|"]
    for a, c in res["per_attribute"].items():
        lines.append(f"| {a} | {c.get('labelled', 0)} (+{c.get('copied', 0)} copied) | "
                     f"{fmt(c.get('right', 0), c.get('labelled', 0))} | {fmt(c.get('right_real', 0), c.get('labelled_real', 0))} | "
                     f"{c.get('candidates', 0)} | {fmt(c.get('correct', 0), c.get('candidates', 0))} |")
    r, p = res["recall"], res["precision"]
    lines.append(f"| **all** | {r.get('all', 0)} | {fmt(r.get('all_right', 0), r.get('all', 0))} | "
                 f"{fmt(r.get('real_right', 0), r.get('real', 0))} | {p.get('candidates', 0)} | "
                 f"{fmt(p.get('correct', 0), p.get('candidates', 0))} |")
    return "\n".join(lines)


def score_set(labels_path: Path, responses_path: Path, part: str, params: dict) -> tuple[str, dict, int, int] | str:
    """``(method, result, responses, labels)`` of one label set's part, or why it cannot be scored."""
    why = check_labels(labels_path, responses_path)
    if why:
        return why
    meta = json.loads(meta_path(labels_path).read_text(encoding="utf-8"))
    if part == "heldout" and not meta.get("split"):
        return f"{labels_path} was made before the split (no split in {meta_path(labels_path).name}): it is all development"
    from testleak import pipeline

    labels = part_of(read_jsonl(labels_path), meta, part)
    responses = read_jsonl(responses_path)
    if part != "all":
        held = set(meta["split"]["heldout"]) if meta.get("split") else set()
        responses = [r for r in responses if (r.get("id") in held) == (part == "heldout")]
    run = meta.get("run") or RUN
    cands, _ = pipeline.candidates(params, run, responses)
    return meta.get("method") or run, evaluate(labels, cands), len(responses), len(labels)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=Path, action="append", default=None,
                    help="responses file of the label set at the same position (repeatable)")
    ap.add_argument("--labels", type=Path, action="append", default=None, help="label file (repeatable)")
    ap.add_argument("--make-labels", type=Path, metavar="RAW", help="write --labels from hand labels with raw values")
    ap.add_argument("--run", default=RUN, help="with --make-labels: the run the responses belong to")
    ap.add_argument("--seed", type=int, default=0, help="with --make-labels: seed of the dev/held-out split")
    ap.add_argument("--heldout-fraction", type=float, default=0.5, help="with --make-labels: share of responses held out")
    ap.add_argument("--part", choices=("dev", "heldout", "all"), default="dev",
                    help="which part to score (default dev; heldout is the final measurement)")
    ap.add_argument("--misses", action="store_true", help="list missed labels and wrong candidates (masked)")
    ap.add_argument("--json", type=Path, default=None, help="also write the counts here")
    a = ap.parse_args(argv)
    responses = a.responses or [ROOT / "data" / "runs" / RUN / "responses.jsonl"]
    labels = a.labels or [LABELS]
    if len(responses) != len(labels):
        print(f"give one --responses per --labels ({len(labels)} label files, {len(responses)} responses files)",
              file=sys.stderr)
        return 2
    for rp in responses:
        if not rp.exists():
            print(f"{rp} does not exist: run `dvc repro responses@{a.run}` or pass --responses", file=sys.stderr)
            return 2
    if a.make_labels:
        if not 0 <= a.heldout_fraction <= 1:
            print(f"--heldout-fraction must be within 0..1, not {a.heldout_fraction}", file=sys.stderr)
            return 2
        return make_labels(a.make_labels, responses[0], labels[0], a.run, a.seed, a.heldout_fraction)
    params = load_params()
    by_method: dict[str, list[dict]] = {}
    n_resp = n_lab = 0
    for lp, rp in zip(labels, responses):
        got = score_set(lp, rp, a.part, params)
        if isinstance(got, str):
            print(got, file=sys.stderr)
            return 2
        method, res, nr, nl = got
        by_method.setdefault(method, []).append(res)
        n_resp += nr
        n_lab += nl
    merged = {m: merge(rs) for m, rs in by_method.items()}
    res = merge(list(merged.values()))
    r, p = res["recall"], res["precision"]
    print(f"ExtractPII, part {a.part}: {n_resp} responses of {len(labels)} label set(s), {n_lab} labelled values\n")
    print(method_table(merged) + "\n")
    print(table(res, ci))
    print(f"\nrecall, values not copied from the prompt: {ci(r.get('all_right', 0), r.get('all', 0))}; "
          f"without placeholders: {ci(r.get('real_right', 0), r.get('real', 0))}; "
          f"returned with any attribute: {pct(r.get('all_found', 0), r.get('all', 0))}")
    print(f"precision: {ci(p.get('correct', 0), p.get('candidates', 0))} right attribute; "
          f"{pct(p.get('values', 0), p.get('candidates', 0))} a labelled value")
    if a.misses:
        print("\nmissed (not copied):")
        for m in res["_misses"]:
            print(f"  {m['response_id']} {m['attribute']:<15} {m['masked']}{'  (placeholder)' if m['placeholder'] else ''}")
        print("wrong candidates:")
        for c, lab in res["_wrong"]:
            why = f"labelled {lab['attribute']}" if lab else "not a labelled value"
            print(f"  {c['response_id']} {c['attribute']:<15} {mask(c['value'])}  key={c['evidence'].get('key')!r} "
                  f"pattern={c['evidence'].get('pattern')}: {why}")
    if a.json:
        def public(x):
            return {k: v for k, v in x.items() if not k.startswith("_")}
        a.json.write_text(json.dumps({"part": a.part, **public(res),
                                      "by_method": {m: public(v) for m, v in merged.items()}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
