"""ExtractPII precision and recall on real model output (issue #17, item 3).

The truth is ``benchmarks/labels/model_output_ours.jsonl``: every privacy-like value in the
test code of the embedded model's answers of a default run, labelled by hand (never from
ExtractPII's output; the guide is ``benchmarks/labels/README.md``), one line per distinct
value of a response: ``response_id``, ``value_hmac`` (:func:`testleak.privacy.keyed_hash` of
the exact literal text, keyed with the labelled answer itself, the response's ``tests_text``:
whoever has the labelled responses file can score, git alone gives nothing to enumerate
against), ``attribute``, ``placeholder``, ``copied_from_prompt`` and ``masked``. A legacy
file with plain ``value_hash`` (unkeyed sha256) is still scored, with a note to remake it.
No raw value is in git. The sidecar ``model_output_ours.meta.json`` records the
sha256 (and DVC md5) of the responses file the labels were made for; a different file is
refused with one line instead of a meaningless score.

ExtractPII runs exactly as the ``candidates`` stage runs it (:func:`testleak.pipeline.candidates`
with the taxonomy of ``params.yaml``); a candidate matches a label by ``(response_id,
the answer-keyed hash of its value)``. Printed:

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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.extract import prompt_texts  # noqa: E402
from testleak.privacy import keyed_hash, mask, value_hash  # noqa: E402

LABELS = ROOT / "benchmarks" / "labels" / "model_output_ours.jsonl"
RUN = "ours"
LABEL_KEYS = ("response_id", "value_hmac", "attribute", "placeholder", "copied_from_prompt", "masked")


def answer_hash(value: str, response: dict) -> str:
    """The benchmark label's hash of ``value``: keyed with its response's test answer."""
    return keyed_hash(value, (response.get("tests_text") or "").encode("utf-8", "surrogatepass"))


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
def make_labels(raw_path: Path, responses_path: Path, out: Path) -> int:
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
        rows.append({"response_id": rid, "value_hmac": answer_hash(v, rec), "attribute": attr,
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
    meta = {
        "labels": out.name,
        "run": RUN,
        "responses": {"path": f"data/runs/{RUN}/responses.jsonl", **file_digests(responses_path),
                      "records": len(responses), "ok": len(ok),
                      "git_commit": commit,
                      "note": "md5/size as in dvc.lock (outs of responses@ours) at git_commit"},
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


def label_key(label: dict) -> tuple[str, str]:
    """A label's match key: ``(response_id, value_hmac)``, a legacy file's ``(response_id, value_hash)``."""
    return (label["response_id"], label["value_hmac"]) if "value_hmac" in label else \
        (label["response_id"], "plain:" + label["value_hash"])


def candidate_key(c: dict, responses: dict[str, dict], legacy: bool) -> tuple[str, str]:
    if legacy:
        return (c["response_id"], "plain:" + value_hash(c["value"]))
    return (c["response_id"], answer_hash(c["value"], responses.get(c["response_id"]) or {}))


def evaluate(labels: list[dict], cands: list[dict], responses: dict[str, dict] | None = None) -> dict:
    responses = responses or {}
    legacy = any("value_hmac" not in r for r in labels)
    lab = {label_key(r): r for r in labels}
    ckey = {id(c): candidate_key(c, responses, legacy) for c in cands}
    found: dict[tuple, set] = {}
    for c in cands:
        found.setdefault(ckey[id(c)], set()).add(c["attribute"])
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
        r = lab.get(ckey[id(c)])
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


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} % ({a}/{b})" if b else "- (0/0)"


def table(res: dict) -> str:
    lines = ["| attribute | labelled (not copied) | recall | without placeholders | candidates | precision |",
             "|---|---|---|---|---|---|"]
    for a, c in res["per_attribute"].items():
        lines.append(f"| {a} | {c.get('labelled', 0)} (+{c.get('copied', 0)} copied) | "
                     f"{pct(c.get('right', 0), c.get('labelled', 0))} | {pct(c.get('right_real', 0), c.get('labelled_real', 0))} | "
                     f"{c.get('candidates', 0)} | {pct(c.get('correct', 0), c.get('candidates', 0))} |")
    r, p = res["recall"], res["precision"]
    lines.append(f"| **all** | {r.get('all', 0)} | {pct(r.get('all_right', 0), r.get('all', 0))} | "
                 f"{pct(r.get('real_right', 0), r.get('real', 0))} | {p.get('candidates', 0)} | "
                 f"{pct(p.get('correct', 0), p.get('candidates', 0))} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=Path, default=ROOT / "data" / "runs" / RUN / "responses.jsonl")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--make-labels", type=Path, metavar="RAW", help="write --labels from hand labels with raw values")
    ap.add_argument("--misses", action="store_true", help="list missed labels and wrong candidates (masked)")
    ap.add_argument("--json", type=Path, default=None, help="also write the counts here")
    a = ap.parse_args(argv)
    if not a.responses.exists():
        print(f"{a.responses} does not exist: run `dvc repro responses@{RUN}` or pass --responses", file=sys.stderr)
        return 2
    if a.make_labels:
        return make_labels(a.make_labels, a.responses, a.labels)
    why = check_labels(a.labels, a.responses)
    if why:
        print(why, file=sys.stderr)
        return 2
    from testleak import pipeline

    labels = read_jsonl(a.labels)
    responses = read_jsonl(a.responses)
    params = load_params()
    cands, _ = pipeline.candidates(params, RUN, responses)
    # the stage withholds the raw value of echoes, taxonomy words and placeholders: score them by
    # the value ExtractPII found (same ids), here in memory only
    from testleak.extract import candidates_from_responses
    from testleak.taxonomy import Taxonomy

    found = {c["id"]: c["value"] for c in candidates_from_responses(responses, Taxonomy.from_config(params))[0]}
    cands = [c if "value" in c else {**c, "value": found[c["id"]]} for c in cands]
    if any("value_hmac" not in x for x in labels):
        print(f"note: {a.labels} holds plain value hashes (a legacy file, reversible for small value spaces): "
              f"remake it with --make-labels from the raw hand labels", file=sys.stderr)
    res = evaluate(labels, cands, {r["id"]: r for r in responses})
    r, p = res["recall"], res["precision"]
    print(f"ExtractPII on {len(responses)} responses of run {RUN} ({len(labels)} labelled values, "
          f"{sum(x['copied_from_prompt'] for x in labels)} copied from the prompt)\n")
    print(table(res))
    print(f"\nrecall, values not copied from the prompt: {pct(r.get('all_right', 0), r.get('all', 0))}; "
          f"without placeholders: {pct(r.get('real_right', 0), r.get('real', 0))}; "
          f"returned with any attribute: {pct(r.get('all_found', 0), r.get('all', 0))}")
    print(f"precision: {pct(p.get('correct', 0), p.get('candidates', 0))} right attribute; "
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
        a.json.write_text(json.dumps({k: v for k, v in res.items() if not k.startswith("_")}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
