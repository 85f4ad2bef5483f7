"""Stage ``library@RUN``: build the privacy feature library of the next round (paper Sec. 5).

    python -m stages.library RUN

Reads params: library (division, clustering, figures), taxonomy, experiment.library_from[RUN].library
(composed from experiment.runs[RUN].library: the input library: prior YAML or data/library/<run>.json). Reads data/runs/RUN/
{confirmed,candidates,responses}.jsonl. Writes data/library/RUN.json (input library + new
templates/fragments of RUN with cluster and source run; raw values: data/ only),
data/library/RUN.divisions.jsonl (per-leak division with token scores),
data/library/RUN_stats.json (counts only) and reports/figures/RUN_division_scores.png,
RUN_embeddings_{fragments,templates}.png (no strings drawn).
Library function: :func:`testleak.pipeline.library_round`.
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.library import load_library
from testleak.paths import Paths
from testleak.stage import entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "library", runs_key="library_from")
    paths = Paths()
    src = str(params["experiment"]["library_from"][run].get("library") or "prior")
    doc, divisions, stats = pipeline.library_round(
        params, run, load_library(paths.library(src)), pipeline.read_artifact(paths, "confirmed", run),
        pipeline.read_artifact(paths, "candidates", run), pipeline.read_artifact(paths, "responses", run), paths.models)
    doc["base"] = src
    pub = pipeline.write_library(paths, params, run, doc, divisions, stats)
    print(f"library@{run}: {pub['divided']} divided; templates {pub.get('templates')}; fragments {pub.get('fragments')}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
