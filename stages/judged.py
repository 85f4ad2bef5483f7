"""Stage ``judged@RUN``: format rules + judge LLM over the run's candidates (paper Sec. 4.3).

    python -m stages.judged RUN

Reads params: verifier.judge_mode (rules | judge | both), verifier.judge (examples,
sampling), judge (model config), taxonomy, library.prior, seed. Reads
data/runs/RUN/candidates.jsonl; writes data/runs/RUN/judged.jsonl (verdict/1, one per
candidate, raw values masked in every reason) and data/runs/RUN/judged_stats.json.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext

from testleak.config import load_params
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, write_json, write_jsonl
from testleak.taxonomy import Taxonomy
from testleak.verify.judge import judge_candidates, judge_mode, load_fragments, summarize


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "judged")
    tax = Taxonomy.from_config(params)
    ver = params.get("verifier") or {}
    mode = judge_mode(ver)
    jcfg = ver.get("judge") or {}
    prior = (params.get("library") or {}).get("prior")
    fragments = load_fragments(paths.root / prior if prior else paths.library("prior"))
    cands = read_jsonl(paths.candidates(run), kind="candidate")
    if mode == "rules":
        ctx = nullcontext(None)
    else:
        from testleak.llm import open_gateway

        ctx = open_gateway(params["judge"], paths=paths)
    with ctx as gw:
        verdicts = judge_candidates(cands, tax, mode=mode, gateway=gw, fragments=fragments,
                                    n_examples=int(jcfg.get("examples", 3)), seed=int(params.get("seed", 0)),
                                    sampling=jcfg.get("sampling") or {}, run=run)
    write_jsonl(paths.judged(run), verdicts, kind="verdict")
    stats = {"run": run, "mode": mode, "judge_model": (params.get("judge") or {}).get("name"), **summarize(verdicts)}
    write_json(paths.run_dir(run) / "judged_stats.json", stats)
    print(f"judged@{run}: mode={mode} kept {stats['kept']}/{stats['candidates']} "
          f"(rules ok {stats['rules_ok']}, judge {stats['judge_status']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
