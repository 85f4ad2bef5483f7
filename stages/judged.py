"""Stage ``judged@RUN``: format rules + judge LLM over the run's candidates (paper Sec. 4.3).

    python -m stages.judged RUN

Reads params: verifier.judge_mode (rules | judge | both), verifier.judge (examples,
sampling), judge (model config), taxonomy, library.prior, seed. Reads
data/runs/RUN/candidates.jsonl; writes data/runs/RUN/judged.jsonl (verdict/1, one per
candidate, raw values masked in every reason) and data/runs/RUN/judged_stats.json.
Library function: :func:`testleak.pipeline.judged`.
"""

from __future__ import annotations

import sys

from testleak import pipeline
from testleak.paths import Paths
from testleak.stage import check_errors, check_gateways, entry, stage_params


def main(argv: list[str]) -> int:
    params, run = stage_params(argv, "judged")
    paths = Paths()
    cands = pipeline.read_artifact(paths, "candidates", run)
    with pipeline.judge_gateway(params, paths, run) as gw:
        verdicts, stats = pipeline.judged(params, run, cands, gw, pipeline.judge_fragments(params, paths))
    pipeline.write_artifact(paths, "judged", run, verdicts, stats)
    print(f"judged@{run}: mode={stats['mode']} kept {stats['kept']}/{stats['candidates']} "
          f"(rules ok {stats['rules_ok']}, judge {stats['judge_status']})", file=sys.stderr)
    check_gateways(f"judged@{run}", gw)
    check_errors(f"judged@{run}", verdicts, "verdict", params, params.get("judge"))
    return 0


if __name__ == "__main__":
    entry(main)
