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

Projection (printed as JSON and as a markdown table; ``--project out.json`` redoes it from a
saved result without measuring): each measure is fitted as y = a + b * f(n) over the measured
sizes (non-negative least squares, scipy) with f chosen per engine from how the engine works
(MODELS below: build ~ n log n; infini-gram p50 ~ log n; tail latencies and every FTS5 / scan
latency ~ n) and extrapolated to 100 GB and 1 TB; the free log-log power law is reported beside
it as a check. Disk: infini-gram's layout is computed (1 byte of text + ceil(log2 n / 8) bytes
of suffix-array pointer per corpus byte, plus the measured bytes per document), FTS5's is the
measured ratio. A projection from a few hundred MB to 1 TB is an order-of-magnitude guide: it
assumes the measured growth continues (the same disk, no memory cliff, the same mix of
queries and documents): see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testleak.privacy import mask
from testleak.settings import LocalSearch
from testleak.verify.index import LocalIndex, build_index, iter_site_packages, select_corpus
from testleak.verify.infinigram import InfiniGramIndex, build_infinigram

MAX_FILE = 393216


def local_search(**over) -> LocalSearch:
    """The corpus section (``verifier.local``) of a benchmark index: .py files, uncompressed."""
    base = {"case_sensitive": True, "corpus": "site-packages", "dirs": [], "extensions": [".py"],
            "max_file_bytes": MAX_FILE, "max_files": 0, "max_bytes": 0, "compress": False, "max_hits_listed": 100,
            "lock_file": None, "exclude": []}
    return LocalSearch.model_validate({**base, **over})


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
    cfg = local_search(max_bytes=max_bytes, max_file_bytes=MAX_FILE)
    for d in select_corpus(cfg, iter_site_packages([".py"]), stats):
        dst = corpus / d.repo / d.path
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(d.text, encoding="utf-8")
    return corpus, stats


def make_queries(corpus: Path, n: int, rng: random.Random,
                 candidates: str = "data/runs/*/candidates.jsonl") -> tuple[list[str], list[str]]:
    """(queries, kinds): run candidates (files matching the glob ``candidates``; at most a
    third), Faker values up to two thirds, corpus substrings for the rest."""
    run_values = []
    for f in sorted(glob.glob(candidates)):
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
    """Least squares of log y = log a + b log x; returns (a, b) (the empirical power law)."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    b = sum((u - mx) * (v - my) for u, v in zip(lx, ly)) / max(1e-12, sum((u - mx) ** 2 for u in lx))
    return math.exp(my - b * mx), b


# Growth models per engine and measure: y = a + b * f(n), n = corpus bytes, a, b >= 0 fitted by
# non-negative least squares (scipy.optimize.nnls) over the measured sizes.
#   build     infini-gram: n log n (suffix-array construction is a sort of all suffixes);
#             FTS5: n log n (trigram posting lists merged into B-tree segments).
#   p50       infini-gram: log n (binary search of the suffix array, O(|q| log n) probes; the
#             typical candidate has few occurrences); FTS5: n (posting lists of the query's
#             trigrams grow with the corpus, then candidate rows are confirmed); scan: n.
#   p95, max  every engine: n (the slow queries are frequent substrings: infini-gram reads one
#             suffix-array pointer per occurrence, up to ``max_docs_counted`` documents, FTS5
#             reads and confirms every posting, a scan reads the corpus).
MODELS = {
    "build_s": {"infinigram": "n log n", "fts5": "n log n"},
    "p50_ms": {"infinigram": "log n", "fts5": "n", "scan": "n"},
    "p95_ms": {"infinigram": "n", "fts5": "n", "scan": "n"},
    "max_ms": {"infinigram": "n", "fts5": "n", "scan": "n"},
}
_F = {"n": lambda n: n, "log n": lambda n: math.log2(n), "n log n": lambda n: n * math.log2(n)}
TARGETS = ((100e9, "100GB"), (1e12, "1TB"))


def fit_model(xs, ys, model: str) -> tuple[float, float]:
    """Non-negative least squares of y = a + b * f(x) for f named by ``model``; returns (a, b)."""
    import numpy as np
    from scipy.optimize import nnls

    f = _F[model]
    A = np.array([[1.0, f(x)] for x in xs])
    scale = A.max(axis=0)  # column scaling keeps nnls well conditioned (f(x) ~ 1e9..1e11)
    coef, _ = nnls(A / scale, np.asarray(ys, dtype=float))
    a, b = coef / scale
    return float(a), float(b)


def infinigram_disk(n: float, docs_per_byte: float, per_doc: float) -> float:
    """Bytes of a u8 infini-gram index over n corpus bytes: the text (1 byte/byte, separators
    included), the suffix array (ceil(log2 n / 8) bytes per position) and per-document tables
    (offsets, metadata offsets and lines, repository ids: ``per_doc`` bytes each)."""
    return n * (1 + math.ceil(math.log2(n) / 8)) + n * docs_per_byte * per_doc


def project(rows: list[dict], targets=TARGETS) -> dict:
    """The 100 GB / 1 TB projection from the measured rows (see MODELS and README)."""
    xs = [r["corpus_bytes"] for r in rows]
    big = max(rows, key=lambda r: r["corpus_bytes"])
    docs_per_byte = big["files"] / big["corpus_bytes"]
    out: dict = {"models": MODELS, "measured_mb": [round(x / 1e6, 1) for x in xs], "engines": {}}
    for eng in ("infinigram", "fts5", "scan"):
        fits = {}
        for measure, by_eng in MODELS.items():
            if eng not in by_eng:
                continue
            ys = [r["build_s"][eng] if measure == "build_s" else r["latency"][eng][measure] for r in rows]
            a, b = fit_model(xs, ys, by_eng[eng])
            pa, pb = fit(xs, ys)
            fits[measure] = {"model": by_eng[eng], "a": a, "b": b, "power_law_exponent": round(pb, 2),
                             "at": {label: a + b * _F[by_eng[eng]](t) for t, label in targets},
                             "power_law_at": {label: pa * t ** pb for t, label in targets}}
        if eng == "infinigram":
            per_doc = statistics.mean(
                (r["index_bytes"]["infinigram"] - infinigram_disk(r["corpus_bytes"], 0, 0)) / r["files"] for r in rows)
            disk = {label: infinigram_disk(t, docs_per_byte, per_doc) for t, label in targets}
            fits["disk"] = {"model": "n (1 + ceil(log2 n / 8)) + docs * per_doc", "per_doc_bytes": round(per_doc, 1),
                            "docs_per_mb": round(docs_per_byte * 1e6, 1), "at": disk}
        elif eng == "fts5":
            ratio = big["index_over_corpus"]["fts5"]
            fits["disk"] = {"model": "n * ratio (largest size)", "ratio": ratio,
                            "at": {label: ratio * t for t, label in targets}}
        else:
            fits["disk"] = {"model": "the corpus itself", "at": {label: t for t, label in targets}}
        out["engines"][eng] = fits
    return out


def projection_table(proj: dict) -> str:
    """Markdown rows: engine | target | build | disk | p50 | p95 (model-based figures)."""
    def dur(s):
        return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"

    def ms(v):
        return f"{v:.1f} ms" if v < 100 else f"{v:,.0f} ms" if v < 10_000 else f"{v / 1000:,.0f} s"

    lines = ["| engine | corpus | build | disk | p50 | p95 |", "|---|---|---|---|---|---|"]
    for eng, fits in proj["engines"].items():
        for _, label in TARGETS:
            build = dur(fits["build_s"]["at"][label]) if "build_s" in fits else "-"
            disk = fits["disk"]["at"][label]
            lines.append(f"| {eng} | {label} | {build} | {disk / 1e12:.2f} TB | {ms(fits['p50_ms']['at'][label])} "
                         f"| {ms(fits['p95_ms']['at'][label])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50e6,100e6,200e6", help="corpus bounds in bytes, ascending")
    ap.add_argument("--queries", type=int, default=1000, help="queries at the largest size")
    ap.add_argument("--size-queries", type=int, default=200, help="queries at the smaller sizes")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--candidates", default="data/runs/*/candidates.jsonl",
                    help="glob of candidates.jsonl files whose values are used as queries")
    ap.add_argument("--json")
    ap.add_argument("--project", metavar="JSON", help="only print the projection of a saved --json result")
    a = ap.parse_args(argv)
    if a.project:
        res = json.loads(Path(a.project).read_text())
        proj = project(res["sizes"])
        print(json.dumps(proj, indent=2))
        print(projection_table(proj))
        return 0
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    rg = shutil.which("rg")
    scanner = [rg, "-lF", "--no-ignore", "--hidden", "-uu", "--"] if rg else ["grep", "-rlF", "--"]
    rows, disagreements = [], 0
    for size in sizes:
        rng = random.Random(a.seed)
        load_start = os.getloadavg()[0]
        work = Path(tempfile.mkdtemp(prefix="bench_index_"))
        try:
            corpus, cst = materialise(work, size)
            cfg = local_search(corpus="dirs", dirs=[str(corpus)], max_file_bytes=MAX_FILE)
            t0 = time.perf_counter()
            fst = build_index(cfg, work / "corpus.sqlite")
            t_fts = time.perf_counter() - t0
            t0 = time.perf_counter()
            ist = build_infinigram(cfg, work / "infinigram")
            t_ig = time.perf_counter() - t0
            assert fst["files"] == ist["files"] == cst["files"], (fst["files"], ist["files"], cst["files"])
            n = a.queries if size == sizes[-1] else a.size_queries
            queries, kinds = make_queries(corpus, n, rng, a.candidates)
            load0 = os.getloadavg()[0]
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
            row = {"corpus_mb": round(cst["bytes"] / 1e6, 1), "corpus_bytes": cst["bytes"],
                   "files": cst["files"], "repos": cst["repos"],
                   "load_avg_1min": {"start": round(load_start, 2), "queries": round(load0, 2),
                                     "end": round(os.getloadavg()[0], 2)},
                   "index_bytes": {"infinigram": ist["index_bytes"], "fts5": fst["db_bytes"]},
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
    proj = project(rows) if len(rows) >= 2 else {}
    if proj:
        print(json.dumps(proj, indent=2))
        print(projection_table(proj))
    res = {"sizes": rows, "projection": proj, "disagreements": disagreements}
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))
    return 0 if disagreements == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
