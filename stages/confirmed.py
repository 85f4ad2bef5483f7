"""Stage ``confirmed@RUN``: apply the review policy (paper Sec. 4.3 human review, Fig. 2).

    python -m stages.confirmed RUN

Reads params: review (policy both_yes | yes_or_likely | auto, reviewers, labels_file).
Reads data/runs/RUN/{verified,judged}.jsonl and the labels file (labels/labels.jsonl,
absent = no labels yet). Writes data/runs/RUN/confirmed.jsonl (confirmed/1, one per
candidate, status confirmed | potential | rejected | not_in_window, with the policy) and
data/runs/RUN/confirmed_stats.json (counts, policy, reviewer agreement).
"""

from __future__ import annotations

import sys

from testleak.config import load_params
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, write_json, write_jsonl
from testleak.verify.review import agreement, confirm, read_labels, summarize_confirmed


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "confirmed")
    rev = params.get("review") or {}
    policy = rev.get("policy", "auto")
    reviewers = list(rev.get("reviewers") or [])
    labels = read_labels(paths.root / (rev.get("labels_file") or "labels/labels.jsonl"))
    hits = read_jsonl(paths.verified(run), kind="hit")
    verdicts = read_jsonl(paths.judged(run), kind="verdict")
    recs = confirm(hits, verdicts, labels, policy, reviewers)
    write_jsonl(paths.confirmed(run), recs, kind="confirmed")
    stats = {"run": run, **summarize_confirmed(recs), "policy": policy, "reviewers": reviewers}
    if len(reviewers) == 2:
        ids = {h["candidate_id"] for h in hits}
        stats["agreement"] = agreement([l for l in labels if l["candidate_id"] in ids], reviewers)
    write_json(paths.run_dir(run) / "confirmed_stats.json", stats)
    print(f"confirmed@{run}: policy={policy}: {stats['confirmed']} confirmed, {stats['potential']} potential, "
          f"{stats['rejected']} rejected", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
