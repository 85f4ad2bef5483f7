"""Stage ``candidates@RUN``: ExtractPII over the run's responses (paper Sec. 4.2, App. B.2), or
a baseline's own published filter under ``baselines.protocol: published``.

    python -m stages.candidates RUN

Reads params: taxonomy, experiment.runs.RUN, baselines.protocol, baselines.codexleaks.filter,
presidio, library.division.models_file (and the files those name). Reads data/runs/RUN/responses.jsonl; writes
data/runs/RUN/candidates.jsonl (candidate/1) and candidates_stats.json.
Library function: :func:`testleak.pipeline.candidates`.
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.paths import Paths
from testleak.stage import entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "candidates")
    paths = Paths()
    cands, stats = pipeline.candidates(params, run, pipeline.read_artifact(paths, "responses", run),
                                       paths.models)
    pipeline.write_artifact(paths, "candidates", run, cands, stats)
    print(f"candidates@{run}: {stats['candidates']} from {stats['responses']} responses "
          f"(skipped {stats['skipped']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
