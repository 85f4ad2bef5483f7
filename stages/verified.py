"""Stage ``verified@RUN``: corpus search of judge-kept candidates and the hit window (paper Sec. 4.3).

    python -m stages.verified RUN

Reads params: verifier (backend local | github, window, min_query_chars, local, github).
Reads data/runs/RUN/{candidates,judged}.jsonl and, for backend local, data/index/corpus.sqlite.
Writes data/runs/RUN/verified.jsonl (hit/1, one per candidate: outcome in_window |
out_of_window | unverifiable | error | filtered, k, repository ids) and
data/runs/RUN/verified_stats.json. Library function: :func:`testleak.pipeline.verified`.
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.paths import Paths
from testleak.stage import check_errors, entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "verified")
    paths = Paths()
    cands = pipeline.read_artifact(paths, "candidates", run)
    verdicts = pipeline.read_artifact(paths, "judged", run)
    backend = pipeline.open_backend(params.get("verifier") or {}, paths)
    hits, stats = pipeline.verified(params, run, verdicts, cands, backend)
    pipeline.write_artifact(paths, "verified", run, hits, stats)
    print(f"verified@{run}: {stats['in_window']} in window, {stats['out_of_window']} out, "
          f"{stats['unverifiable']} unverifiable, {stats['error']} errors, {stats['filtered']} filtered by the judge",
          file=sys.stderr)
    check_errors(f"verified@{run}", hits, "hit", params, params.get("verifier"))
    return 0


if __name__ == "__main__":
    entry(main)
