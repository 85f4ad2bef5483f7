"""Benchmark of the local corpus index (testleak.verify.index) against ripgrep / grep.

    .venv/bin/python benchmarks/bench_index.py [--max-bytes 200000000] [--queries 200] [--json out.json]

Corpus: the Python sources of the installed distributions (the index stage's default),
bounded by --max-bytes and materialised into a temporary directory so that `rg -lF` (or
`grep -rlF` when ripgrep is missing) searches exactly the same files. Reports build MB/s,
database size / corpus bytes, and median / p95 query latency of the index vs the scanner
over the same queries: realistic candidate values (faker emails, phones, names, keys) and
random substrings (8-40 chars) of corpus files. Every query's hit count is compared
with the scanner's (agreement must be 100%).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testleak.verify.index import CorpusFile, LocalIndex, build_index, iter_site_packages


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-bytes", type=int, default=200_000_000)
    ap.add_argument("--queries", type=int, default=200, help="total queries (half realistic, half substrings)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--compress", action="store_true", help="zlib-compressed contents (smaller, slower)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    work = Path(tempfile.mkdtemp(prefix="bench_index_"))
    try:
        # materialise the bounded corpus (same order and bound as build_index)
        files, total = [], 0
        for f in iter_site_packages([".py"]):
            size = f.abspath.stat().st_size
            if size > 393216:
                continue
            if total + size > a.max_bytes:
                break
            dst = work / "corpus" / f.repo / f.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.abspath, dst)
            files.append(CorpusFile(f.repo, f.path, dst))
            total += size
        db = work / "corpus.sqlite"
        t0 = time.perf_counter()
        stats = build_index({"compress": a.compress}, db, files=files)
        build_s = time.perf_counter() - t0

        from faker import Faker

        fk = Faker(["en_US", "zh_CN", "de_DE"])
        Faker.seed(a.seed)
        n_real = a.queries // 2
        real = []
        for i in range(n_real):
            kind = i % 5
            real.append([fk.free_email, fk.phone_number, fk.name, fk.user_name,
                         lambda: fk.password(length=16)][kind]())
        subs = []
        while len(subs) < a.queries - n_real:
            f = rng.choice(files)
            text = f.abspath.read_text(encoding="utf-8", errors="replace")
            if len(text) < 60:
                continue
            n = rng.randint(8, 40)
            i = rng.randrange(0, len(text) - n)
            s = text[i:i + n]
            if "\n" in s or not s.strip() or "\ufffd" in s:
                continue
            subs.append(s)
        queries = real + subs

        scanner = ["rg", "-lF", "--no-ignore", "--hidden", "-uu", "--"] if shutil.which("rg") else ["grep", "-rlF", "--"]
        ix = LocalIndex(db)
        t_ix, t_sc, agree, unverifiable = [], [], 0, 0
        ks = []
        for q in queries:
            t = time.perf_counter()
            r = ix.search(q)
            t_ix.append(time.perf_counter() - t)
            t = time.perf_counter()
            p = subprocess.run(scanner + [q, str(work / "corpus")], capture_output=True)
            t_sc.append(time.perf_counter() - t)
            k_sc = len([l for l in p.stdout.split(b"\n") if l])
            ks.append(r["k"])
            if r["outcome"] == "unverifiable":   # < 3 chars: no trigram, reported as such, not as 0
                unverifiable += 1
                continue
            agree += r["k"] == k_sc
            if r["k"] != k_sc:
                print(f"disagree: index {r['k']} vs {scanner[0]} {k_sc} for {q!r}", file=sys.stderr)
        res = {
            "corpus_files": stats["files"], "corpus_mb": round(stats["bytes"] / 1e6, 1),
            "repos": stats["repos"], "build_s": round(build_s, 1),
            "build_mb_per_s": round(stats["bytes"] / 1e6 / build_s, 2),
            "db_mb": round(stats["db_bytes"] / 1e6, 1), "db_over_corpus": round(stats["db_bytes"] / stats["bytes"], 3),
            "compress": a.compress, "scanner": scanner[0], "queries": len(queries),
            "index_median_ms": round(statistics.median(t_ix) * 1e3, 2), "index_p95_ms": round(pct(t_ix, 0.95) * 1e3, 2),
            "scan_median_ms": round(statistics.median(t_sc) * 1e3, 1), "scan_p95_ms": round(pct(t_sc, 0.95) * 1e3, 1),
            "median_speedup": round(statistics.median(t_sc) / statistics.median(t_ix), 1),
            "p95_speedup": round(pct(t_sc, 0.95) / pct(t_ix, 0.95), 1),
            "realistic_median_ms": round(statistics.median(t_ix[:n_real]) * 1e3, 2),
            "substring_median_ms": round(statistics.median(t_ix[n_real:]) * 1e3, 2),
            "agreement": f"{agree}/{len(queries) - unverifiable}", "unverifiable": unverifiable,
            "realistic_with_hits": sum(1 for k in ks[:n_real] if k),
            "substr_k_median": statistics.median([k for k in ks[n_real:] if k is not None]),
        }
        print(json.dumps(res, indent=2))
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=2))
        return 0 if agree == len(queries) - unverifiable else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
