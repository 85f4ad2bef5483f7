"""Corpus verifiers on the same corpus, same run: infini-gram (suffix array), SQLite FTS5
(trigram) and ripgrep (scan), at several corpus sizes, with a projection to 100 GB and 1 TB.

    .venv/bin/python benchmarks/bench_index.py [--sizes 50e6,100e6,200e6] [--queries 1000]
                                               [--size-queries 200] [--json out.json]

Corpus: the Python sources of the installed distributions (the index stage's default corpus,
document selection by testleak.verify.index.select_corpus), bounded by each size and
materialised into a temporary directory so that ripgrep scans exactly the same files.
Queries: candidate values of earlier runs (data/runs/*/candidates.jsonl, when present; never
printed), realistic Faker values (emails, phones, names, user names, passwords) and random
substrings (3-40 chars) of corpus files. For each size: build seconds and index bytes per
engine; per-query latency (p50 / p95 / max) over ``--size-queries`` queries, and over all
``--queries`` at the largest size. Agreement: infini-gram's and FTS5's hit counts (distinct
files) must be identical on every query (ripgrep's file count too); disagreements are
printed (masked) and make the exit status 1.

Projection (printed, with its assumptions): build time and index bytes are fitted as
a * size^b (least squares on log-log over the measured sizes) and extrapolated; query latency
likewise. A projection from a 200 MB machine to 1 TB is an order-of-magnitude guide: it
assumes the growth measured here continues (no memory cliff, same disk), which a suffix array
(O(log N) lookups, ~5-6 bytes/byte on disk for u8 with 40-bit pointers) and a trigram index
(posting lists grow linearly with the corpus; candidate files must be confirmed by a scan)
justify differently: see README.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testleak.privacy import mask
from testleak.verify.index import LocalIndex, build_index, iter_site_packages, select_corpus
from testleak.verify.infinigram import InfiniGramIndex, build_infinigram

MAX_FILE = 393216


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def lat(xs):
    return {"p50_ms": round(statistics.median(xs) * 1e3, 2), "p95_ms": round(pct(xs, 0.95) * 1e3, 2),
            "max_ms": round(max(xs) * 1e3, 1)}


def materialise(work: Path, max_bytes: int):
    """Copy the bounded corpus (same selection as the index stage) into work/corpus."""
    corpus = work / "corpus"
    stats: dict = {}
    cfg = {"max_bytes": max_bytes, "max_file_bytes": MAX_FILE}
    for d in select_corpus(cfg, iter_site_packages([".py"]), stats):
        dst = corpus / d.repo / d.path
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(d.text, encoding="utf-8")
    return corpus, stats


def make_queries(corpus: Path, n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """(queries, kinds): run candidates, Faker values and corpus substrings, about a third each."""
    run_values = []
    for f in sorted(glob.glob("data/runs/*/candidates.jsonl")):
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            v = json.loads(line).get("value")
            if isinstance(v, str) and len(v) >= 3 and "\n" not in v:
                run_values.append(v)
    run_values = sorted(set(run_values))
    rng.shuffle(run_values)
    qs, kinds = run_values[: n // 3], ["candidate"] * min(len(run_values), n // 3)
    from faker import Faker

    fk = Faker(["en_US", "zh_CN", "de_DE"])
    Faker.seed(rng.randrange(1 << 30))
    gens = [fk.free_email, fk.phone_number, fk.name, fk.user_name, lambda: fk.password(length=16)]
    while len(qs) < 2 * n // 3:
        qs.append(gens[len(qs) % 5]())
        kinds.append("faker")
    files = sorted(corpus.rglob("*.py"))
    while len(qs) < n:
        text = rng.choice(files).read_text(encoding="utf-8")
        k = rng.randint(3, 40)
        if len(text) <= k + 1:
            continue
        i = rng.randrange(0, len(text) - k)
        s = text[i:i + k]
        if "\n" in s or not s.strip() or "\ufffd" in s:
            continue
        qs.append(s)
        kinds.append("substring")
    return qs, kinds


def fit(xs, ys):
    """Least squares of log y = log a + b log x; returns (a, b)."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    b = sum((u - mx) * (v - my) for u, v in zip(lx, ly)) / max(1e-12, sum((u - mx) ** 2 for u in lx))
    return math.exp(my - b * mx), b


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50e6,100e6,200e6", help="corpus bounds in bytes, ascending")
    ap.add_argument("--queries", type=int, default=1000, help="queries at the largest size")
    ap.add_argument("--size-queries", type=int, default=200, help="queries at the smaller sizes")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    rg = shutil.which("rg")
    scanner = [rg, "-lF", "--no-ignore", "--hidden", "-uu", "--"] if rg else ["grep", "-rlF", "--"]
    rows, disagreements = [], 0
    for size in sizes:
        rng = random.Random(a.seed)
        work = Path(tempfile.mkdtemp(prefix="bench_index_"))
        try:
            corpus, cst = materialise(work, size)
            cfg = {"corpus": "dirs", "dirs": [str(corpus)], "extensions": [".py"], "max_file_bytes": MAX_FILE}
            t0 = time.perf_counter()
            fst = build_index(cfg, work / "corpus.sqlite")
            t_fts = time.perf_counter() - t0
            t0 = time.perf_counter()
            ist = build_infinigram(cfg, work / "infinigram")
            t_ig = time.perf_counter() - t0
            assert fst["files"] == ist["files"] == cst["files"], (fst["files"], ist["files"], cst["files"])
            n = a.queries if size == sizes[-1] else a.size_queries
            queries, kinds = make_queries(corpus, n, rng)
            t = {"infinigram": [], "fts5": [], "scan": []}
            with LocalIndex(work / "corpus.sqlite") as fts, InfiniGramIndex(work / "infinigram") as ig:
                agree = comparable = 0
                for q in queries:
                    s = time.perf_counter(); r_ig = ig.search(q); t["infinigram"].append(time.perf_counter() - s)
                    s = time.perf_counter(); r_f = fts.search(q); t["fts5"].append(time.perf_counter() - s)
                    s = time.perf_counter()
                    p = subprocess.run(scanner + [q, str(corpus)], capture_output=True)
                    t["scan"].append(time.perf_counter() - s)
                    k_scan = len([x for x in p.stdout.split(b"\n") if x])
                    if r_f["outcome"] == "unverifiable":
                        continue
                    comparable += 1
                    same = r_ig["k"] == r_f["k"] == k_scan and r_ig["repo_ids"] == r_f["repo_ids"]
                    agree += same
                    if not same:
                        print(f"disagree at {size / 1e6:.0f} MB: infini-gram {r_ig['k']} fts5 {r_f['k']} "
                              f"{Path(scanner[0]).name} {k_scan} for {mask(q)!r}", file=sys.stderr)
            disagreements += comparable - agree
            row = {"corpus_mb": round(cst["bytes"] / 1e6, 1), "files": cst["files"], "repos": cst["repos"],
                   "queries": len(queries), "query_kinds": {k: kinds.count(k) for k in sorted(set(kinds))},
                   "agreement": f"{agree}/{comparable}",
                   "build_s": {"infinigram": round(t_ig, 1), "fts5": round(t_fts, 1), "scan": 0.0},
                   "index_over_corpus": {"infinigram": round(ist["index_bytes"] / cst["bytes"], 3),
                                         "fts5": round(fst["db_bytes"] / cst["bytes"], 3), "scan": 1.0},
                   "latency": {e: lat(v) for e, v in t.items()},
                   "scanner": Path(scanner[0]).name}
            rows.append(row)
            print(json.dumps(row), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    proj = {}
    if len(rows) >= 2:
        xs = [r["corpus_mb"] * 1e6 for r in rows]
        for eng in ("infinigram", "fts5", "scan"):
            out = {}
            for target, label in ((100e9, "100GB"), (1e12, "1TB")):
                e = {}
                if eng != "scan":
                    a_, b_ = fit(xs, [r["build_s"][eng] for r in rows])
                    e["build_hours"] = round(a_ * target ** b_ / 3600, 1)
                    e["build_exponent"] = round(b_, 2)
                    e["index_tb"] = round(rows[-1]["index_over_corpus"][eng] * target / 1e12, 2)
                a_, b_ = fit(xs, [r["latency"][eng]["p50_ms"] for r in rows])
                e["p50_ms"] = round(a_ * target ** b_, 1)
                a_, b_ = fit(xs, [r["latency"][eng]["p95_ms"] for r in rows])
                e["p95_ms"] = round(a_ * target ** b_, 1)
                e["latency_exponent"] = round(b_, 2)
                out[label] = e
            proj[eng] = out
        print(json.dumps({"projection": proj}, indent=2))
    res = {"sizes": rows, "projection": proj, "disagreements": disagreements}
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))
    return 0 if disagreements == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
