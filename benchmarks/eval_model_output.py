"""ExtractPII precision and recall on real model output, against labels made by hand.

The truth is the label sets under ``benchmarks/labels/`` (``*.jsonl`` + ``*.meta.json``):
every privacy-like value in the test code of fresh default runs' answers, labelled by reading
the code, never from ExtractPII's output (the guide: ``benchmarks/labels/README.md``). A line
is ``response_id``, ``value_hmac`` (:func:`value_hmac`: keyed with the response's own test
text, so the file alone cannot be enumerated), ``attribute``, ``placeholder``,
``copied_from_prompt`` and ``masked``; no raw value is in git. The sidecar records the sha256
and DVC md5 of the responses file, how to regenerate it, and the development / held-out split.
A different responses file is refused with one line.

ExtractPII runs as the ``candidates`` stage runs it (:func:`testleak.pipeline.candidates`); for
a baseline under ``baselines.protocol: published`` the run of the same method under our
verification (:func:`extractor_run`). Printed per method and per attribute with Wilson 95 %
intervals: recall of the values not copied from the prompt (ExtractPII drops those by design),
all and without placeholders, and precision (right attribute); ``--misses`` lists every missed
label and wrong candidate, masked.

    .venv/bin/python benchmarks/eval_model_output.py [--part dev|heldout|all] [--misses] [--json out.json]

Making a label set from raw hand labels (under ``data/``, never in git; lines
``{"response_id", "value", "attribute", "placeholder"}``) decides the split at the same time,
before any scoring: a response is held out when its question (ours) or prompt (a baseline)
hashes with ``--seed`` below ``--heldout-fraction`` (:func:`split_responses`), so a question
sits on one side in every set made with the same seed. When sets are scored together, a
question or prompt on the development side of any of them is development in all
(:func:`heldout_ids`; label sets made before this rule split by response)::

    .venv/bin/python benchmarks/eval_model_output.py --make-labels RAW --responses R --labels OUT \
        --run RUN --seed S --reproduce "COMMAND THAT REGENERATES R"

Design work reads ``--part dev`` (the default) only; ``--part heldout`` is the final measurement.

How far two annotators agree bounds what an extractor can score against either: ``--agreement
A B`` takes two label sets of the same responses, labelled independently, and scores each
against the other as :func:`evaluate` scores candidates (values copied from the prompt left out
on both sides, as in recall)::

    .venv/bin/python benchmarks/eval_model_output.py --agreement LABELS_A LABELS_B
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
from testleak.privacy import MASK_CHAR, keyed_hash, mask  # noqa: E402

LABEL_DIR = ROOT / "benchmarks" / "labels"
RUN = "ours"
LABEL_KEYS = ("response_id", "value_hmac", "attribute", "placeholder", "copied_from_prompt", "masked")


def value_hmac(value: str, rec: dict) -> str:
    """The label's hash of a raw value: HMAC-SHA256 keyed with its response's ``tests_text``.
    Whoever has the responses file can score; the label file alone gives nothing to enumerate
    a date or a phone number against (a plain hash would)."""
    return keyed_hash(value, (rec.get("tests_text") or "").encode("utf-8", "surrogatepass"))


def label_mask(value: str) -> str:
    """The ``masked`` field of a committed label: the first character and the length. A label
    file stays in git for good, so it shows less than a report's :func:`mask`, whose kept
    prefix can spell out a shorter labelled value (``123456`` in a longer number's mask)."""
    return value[:1] + MASK_CHAR * (len(value) - 1)


def committed_label_sets() -> list[Path]:
    """The label files under benchmarks/labels/ (each with its ``.meta.json`` sidecar)."""
    return sorted(p for p in LABEL_DIR.glob("*.jsonl") if meta_path(p).exists())


def responses_of(labels: Path) -> Path:
    """The responses file a label set was made for: the sidecar's path when it exists, else
    the DVC cache object of its md5 (present after the sidecar's ``reproduce`` command ran)."""
    meta = json.loads(meta_path(labels).read_text(encoding="utf-8"))
    path = ROOT / meta["responses"]["path"]
    md5 = meta["responses"].get("md5") or ""
    cached = ROOT / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    return path if path.exists() or not md5 or not cached.exists() else cached


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
def split_responses(records: list[dict], seed: int, heldout_fraction: float) -> list[str]:
    """The held-out response ids: those whose :func:`split_group` (the question of ours, the
    prompt of a baseline) hashes with ``seed`` below ``heldout_fraction``. A group sits on one
    side in every label set made with the same seed (another seed of ours asks the same
    questions; a baseline's samples of one prompt go together), whatever the file's order."""
    def side(rec: dict) -> float:
        digest = hashlib.sha256(json.dumps([seed, *split_group(rec)]).encode("utf-8")).hexdigest()
        return int(digest[:15], 16) / 16 ** 15

    return sorted(r["id"] for r in records if side(r) < heldout_fraction)


def make_labels(raw_path: Path, responses_path: Path, out: Path, run: str = RUN, seed: int = 0,
                heldout_fraction: float = 0.5, reproduce: str | None = None) -> int:
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
        rows.append({"response_id": rid, "value_hmac": value_hmac(v, rec), "attribute": attr,
                     "placeholder": raw["placeholder"],
                     "copied_from_prompt": any(v in p for p in prompt_texts(rec)),
                     "masked": label_mask(v)})
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
        "split": {"seed": seed, "heldout_fraction": heldout_fraction, "by": "question or prompt",
                  "decided": "at labelling, before any scoring",
                  "heldout": split_responses(list(responses.values()), seed, heldout_fraction)},
        "responses": {"path": _repo_path(responses_path), **file_digests(responses_path),
                      "records": len(responses), "ok": len(ok),
                      "git_commit": commit,
                      "note": f"md5/size as in dvc.lock (outs of responses@{run.removesuffix('_shared')})",
                      "reproduce": reproduce},
        "labelled": {"values": len(rows), "responses_with_values": len({r['response_id'] for r in rows})},
        "guide": "benchmarks/labels/README.md",
    }
    meta_path(out).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(rows)} labels) and {meta_path(out).name}", file=sys.stderr)
    return 0


def _repo_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


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


def _hmacs(c: dict) -> list[str]:
    """A candidate's label hashes: of its value and, for an escaped literal, of the literal as
    written (a label holds the source text, ExtractPII the decoded value; the guide takes either)."""
    return [c["value_hmac"]] + list(c.get("source_hmacs", ()))


def evaluate(labels: list[dict], cands: list[dict]) -> dict:
    lab = {(r["response_id"], r["value_hmac"]): r for r in labels}
    # each candidate's label key: the first of its hashes that a label holds
    keys = [(c["response_id"], next((h for h in _hmacs(c) if (c["response_id"], h) in lab), c["value_hmac"]))
            for c in cands]
    found: dict[tuple, set] = {}
    for c, key in zip(cands, keys):
        found.setdefault(key, set()).add(c["attribute"])
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
    for c, key in zip(cands, keys):
        r = lab.get(key)
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


def part_of(labels: list[dict], held: set, part: str) -> list[dict]:
    """The labels of one part (``dev``, ``heldout`` or ``all``) of a label set whose held-out
    response ids are ``held``."""
    if part == "all":
        return labels
    return [r for r in labels if (r["response_id"] in held) == (part == "heldout")]


def split_group(rec: dict) -> tuple:
    """What must sit on one side of the split in every label set: the question a response of
    ours answers (another seed asks the same question again), else the prompt a baseline
    completed."""
    if rec.get("question_id"):
        return rec.get("method"), "q", rec["question_id"]
    return rec.get("method"), "p", hashlib.sha256((rec.get("prompt_text") or "").encode("utf-8")).hexdigest()


def heldout_ids(sets: list[tuple[dict, list[dict]]], seen: set = frozenset()) -> list[set]:
    """The held-out response ids of each ``(sidecar, responses)`` scored together: those its
    own split holds out, less any whose :func:`split_group` is on the development side of any
    set (a question answered in a development response is development everywhere) or in
    ``seen`` (the groups of label sets a later fix was designed on)."""
    own = [set((meta.get("split") or {}).get("heldout") or ()) for meta, _ in sets]
    dev = {split_group(r) for held, (_, recs) in zip(own, sets) for r in recs if r.get("id") not in held} | set(seen)
    return [{r["id"] for r in recs if r.get("id") in held and split_group(r) not in dev}
            for held, (_, recs) in zip(own, sets)]


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


def check_set(labels_path: Path, responses_path: Path, part: str) -> str | None:
    """Why a label set cannot be scored for ``part``, or None."""
    why = check_labels(labels_path, responses_path)
    if why:
        return why
    meta = json.loads(meta_path(labels_path).read_text(encoding="utf-8"))
    if part == "heldout" and not meta.get("split"):
        return f"{labels_path} was made before the split (no split in {meta_path(labels_path).name}): it is all development"
    return None


def score_set(labels_path: Path, meta: dict, responses: list[dict], held: set, part: str,
              params: dict) -> tuple[str, dict, int, int]:
    """``(method, result, responses, labels)`` of one label set's part (sidecar ``meta``,
    held-out ids ``held``)."""
    from testleak import pipeline

    labels = part_of(read_jsonl(labels_path), held, part)
    if part != "all":
        responses = [r for r in responses if (r.get("id") in held) == (part == "heldout")]
    run = extractor_run(params, meta.get("run") or RUN)
    cands = with_hmacs(pipeline.candidates(params, run, responses)[0], responses, params)
    return meta.get("method") or run, evaluate(labels, cands), len(responses), len(labels)


def extractor_run(params: dict, run: str) -> str:
    """The run whose candidates stage applies ExtractPII to these responses: ``run`` itself, or
    for a baseline under ``baselines.protocol: published`` (its own filter, not ExtractPII) the
    run of the same method under our verification (``verification: shared``)."""
    from testleak.baselines.published import run_protocol

    runs = params["experiment"]["runs"]
    if run in runs and run_protocol(params, run) != "published":
        return run
    method = (runs.get(run) or {}).get("method", run)
    shared = [r for r, spec in runs.items() if spec.get("method") == method and run_protocol(params, r) != "published"]
    if not shared:
        raise SystemExit(f"no run of method {method!r} applies ExtractPII in params.yaml (experiment.runs): "
                         f"add one with verification: shared")
    return shared[0]


def with_hmacs(cands: list[dict], responses: list[dict], params: dict) -> list[dict]:
    """Candidates with the label hash of their raw value. Withheld candidates (echoes,
    placeholders) keep only ``value_hash``: their value is taken from ExtractPII's raw output."""
    from testleak.extract import candidates_from_responses
    from testleak.taxonomy import Taxonomy

    raw = {c["value_hash"]: c["value"] for c in candidates_from_responses(responses, Taxonomy.from_config(params))[0]}
    recs = {r["id"]: r for r in responses}
    out = []
    for c in cands:
        rec = recs[c["response_id"]]
        span = (c.get("evidence") or {}).get("span") or (0, 0)
        written = _inner((rec.get("tests_text") or "")[span[0]:span[1]])
        out.append({**c, "value_hmac": value_hmac(c.get("value", raw.get(c["value_hash"], "")), rec),
                    "source_hmacs": [value_hmac(written, rec)] if written else []})
    return out


def _inner(token: str) -> str:
    """The text between a literal token's quotes (``"a\\"b"`` -> ``a\\"b``), or "" for no token."""
    for q in ('"""', "'''", '"', "'", "`"):
        if len(token) >= 2 * len(q) and token.startswith(q) and token.endswith(q):
            return token[len(q):-len(q)]
    return ""


def agreement(path_a: Path, path_b: Path, out: Path | None = None) -> int:
    """Each annotator's labels scored against the other's (module docstring): recall is the
    share of the other's values not copied from the prompt labelled the same, with the same
    attribute."""
    metas = [json.loads(meta_path(p).read_text(encoding="utf-8")) for p in (path_a, path_b)]
    if metas[0]["responses"]["sha256"] != metas[1]["responses"]["sha256"]:
        print(f"{path_a} and {path_b} label different responses files: pass two label sets of the same file",
              file=sys.stderr)
        return 2
    a, b = read_jsonl(path_a), read_jsonl(path_b)
    res = {}
    for name, truth, other in (("B against A", a, b), ("A against B", b, a)):
        r = evaluate(truth, [x for x in other if not x["copied_from_prompt"]])
        rec = r["recall"]
        res[name] = {"recall": rec, "precision": r["precision"]}
        print(f"{name}: recall {ci(rec.get('all_right', 0), rec.get('all', 0))}, without placeholders "
              f"{ci(rec.get('real_right', 0), rec.get('real', 0))}; same value, any attribute "
              f"{pct(rec.get('all_found', 0), rec.get('all', 0))}")
    if out:
        out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=Path, action="append", default=None,
                    help="responses file of the label set at the same position (repeatable)")
    ap.add_argument("--labels", type=Path, action="append", default=None, help="label file (repeatable)")
    ap.add_argument("--make-labels", type=Path, metavar="RAW", help="write --labels from hand labels with raw values")
    ap.add_argument("--run", default=RUN, help="with --make-labels: the run the responses belong to")
    ap.add_argument("--seed", type=int, default=0, help="with --make-labels: seed of the dev/held-out split")
    ap.add_argument("--reproduce", default=None, help="with --make-labels: the command that regenerates the responses")
    ap.add_argument("--heldout-fraction", type=float, default=0.5, help="with --make-labels: share of responses held out")
    ap.add_argument("--part", choices=("dev", "heldout", "all"), default="dev",
                    help="which part to score (default dev; heldout is the final measurement)")
    ap.add_argument("--seen", type=Path, action="append", default=[], metavar="LABELS",
                    help="a label set the code was since designed on: its questions and prompts are development "
                         "in the sets scored (repeatable)")
    ap.add_argument("--misses", action="store_true", help="list missed labels and wrong candidates (masked)")
    ap.add_argument("--json", type=Path, default=None, help="also write the counts here")
    ap.add_argument("--agreement", type=Path, nargs=2, metavar=("LABELS_A", "LABELS_B"), default=None,
                    help="score two independent label sets of the same responses against each other")
    a = ap.parse_args(argv)
    if a.agreement:
        return agreement(*a.agreement, out=a.json)
    if a.make_labels:
        if not (a.labels and a.responses and len(a.labels) == len(a.responses) == 1):
            print("--make-labels RAW needs one --responses (the labelled file) and one --labels (the file to write)",
                  file=sys.stderr)
            return 2
        if not a.responses[0].exists():
            print(f"{a.responses[0]} does not exist: pass --responses with the labelled responses file", file=sys.stderr)
            return 2
        if not 0 <= a.heldout_fraction <= 1:
            print(f"--heldout-fraction must be within 0..1, not {a.heldout_fraction}", file=sys.stderr)
            return 2
        return make_labels(a.make_labels, a.responses[0], a.labels[0], a.run, a.seed, a.heldout_fraction, a.reproduce)
    labels = a.labels or committed_label_sets()
    if not labels:
        print(f"no label sets in {LABEL_DIR}: pass --labels", file=sys.stderr)
        return 2
    responses = a.responses or [responses_of(lp) if meta_path(lp).exists() else lp for lp in labels]
    if len(responses) != len(labels):
        print(f"give one --responses per --labels ({len(labels)} label files, {len(responses)} responses files)",
              file=sys.stderr)
        return 2
    for lp, rp in zip(labels, responses):
        if not rp.exists():
            how = json.loads(meta_path(lp).read_text())["responses"].get("reproduce") if meta_path(lp).exists() else None
            print(f"{rp} does not exist: " + (f"reproduce it with `{how}`" if how else "pass --responses"), file=sys.stderr)
            return 2
    params = load_params()
    by_method: dict[str, list[dict]] = {}
    n_resp = n_lab = 0
    for lp, rp in zip(labels, responses):
        why = check_set(lp, rp, a.part)
        if why:
            print(why, file=sys.stderr)
            return 2
    recs = [read_jsonl(rp) for rp in responses]
    metas = [json.loads(meta_path(lp).read_text(encoding="utf-8")) for lp in labels]
    seen = {split_group(r) for lp in a.seen for r in read_jsonl(responses_of(lp))}
    helds = heldout_ids(list(zip(metas, recs)), seen)
    for lp, meta, rs, held in zip(labels, metas, recs, helds):
        method, res, nr, nl = score_set(lp, meta, rs, held, a.part, params)
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
            print(f"  {c['response_id']} {c['attribute']:<15} {c.get('masked') or mask(c['value'])}  key={c['evidence'].get('key')!r} "
                  f"pattern={c['evidence'].get('pattern')}: {why}")
    if a.json:
        def public(x):
            return {k: v for k, v in x.items() if not k.startswith("_")}
        a.json.write_text(json.dumps({"part": a.part, **public(res),
                                      "by_method": {m: public(v) for m, v in merged.items()}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
