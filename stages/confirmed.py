"""Stage ``confirmed@RUN``: apply the review policy (paper Sec. 4.3 human review, Fig. 2).

    python -m stages.confirmed RUN

Reads params: review (policy both_yes | yes_or_likely | auto, reviewers, labels_file); under
auto for a baseline verified as published also what the judged stage reads (the automatic
reviewer judges its in-window candidates here). Reads data/runs/RUN/{candidates,verified,judged}.jsonl
and the labels file (labels/labels.jsonl, absent = no labels yet). Writes data/runs/RUN/confirmed.jsonl (confirmed/1, one per
candidate, status confirmed | potential | rejected | not_in_window, with the policy) and
data/runs/RUN/confirmed_stats.json (counts, policy, reviewer agreement).
Library function: :func:`testleak.pipeline.confirmed`.
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.paths import Paths
from testleak.stage import check_errors, check_gateways, entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "confirmed")
    paths = Paths()
    hits = pipeline.read_artifact(paths, "verified", run)
    verdicts = pipeline.read_artifact(paths, "judged", run)
    labels = pipeline.review_labels(params, paths)
    # the candidates' values: only the automatic reviewer of a published baseline judges them here
    cands = pipeline.read_artifact(paths, "candidates", run) if pipeline.review_judges_here(params, run) else []
    with pipeline.judge_gateway(params, paths, run, stage="confirmed") as gw:
        recs, stats = pipeline.confirmed(params, run, hits, verdicts, labels, cands, gw,
                                         pipeline.judge_fragments(params, paths) if gw is not None else {})
    pipeline.write_artifact(paths, "confirmed", run, recs, stats)
    check_gateways(f"confirmed@{run}", gw)
    print(f"confirmed@{run}: policy={stats['policy']}: {stats['confirmed']} confirmed, {stats['potential']} potential, "
          f"{stats['rejected']} rejected", file=sys.stderr)
    check_errors(f"confirmed@{run}", recs, "confirmed", params, params.get("verifier"))
    return 0


if __name__ == "__main__":
    entry(main)
