"""Stage ``verified@RUN``: corpus search of judge-kept candidates and the hit window (paper Sec. 4.3).

    python -m stages.verified RUN

Reads params: verifier (backend local | github, window, min_query_chars, local, github).
Reads data/runs/RUN/{candidates,judged}.jsonl and, for backend local, data/index/corpus.sqlite.
Writes data/runs/RUN/verified.jsonl (hit/1, one per candidate: outcome in_window |
out_of_window | unverifiable | error | filtered, k, repository ids) and
data/runs/RUN/verified_stats.json.
"""

from __future__ import annotations

import sys

from testleak.config import load_params
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, write_json, write_jsonl
from testleak.verify.search import open_backend, summarize_hits, verify_candidates


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "verified")
    ver = params.get("verifier") or {}
    cands = read_jsonl(paths.candidates(run), kind="candidate")
    verdicts = read_jsonl(paths.judged(run), kind="verdict")
    backend = open_backend(ver, paths)
    hits = verify_candidates(verdicts, cands, backend, ver.get("window") or {"min": 1, "max": 100},
                             ver.get("backend", "local"))
    write_jsonl(paths.verified(run), hits, kind="hit")
    stats = {"run": run, "backend": ver.get("backend"), "engine": backend.engine,
             "window": ver.get("window"), **summarize_hits(hits)}
    if hasattr(backend, "stats"):
        stats["search_stats"] = dict(backend.stats)
    write_json(paths.run_dir(run) / "verified_stats.json", stats)
    print(f"verified@{run}: {stats['in_window']} in window, {stats['out_of_window']} out, "
          f"{stats['unverifiable']} unverifiable, {stats['error']} errors, {stats['filtered']} filtered by the judge",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
