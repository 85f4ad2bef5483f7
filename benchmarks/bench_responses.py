"""The responses stage under deterministic serving against the previous design, in one run.

Designs (model ``server`` settings; docs/REPRODUCIBILITY.md):
- ``previous``: one server, 4 slots, 2 threads, prompt cache on (requests batched together; the
  server reuses a slot's KV for the prefix a request shares with the slot's last prompt);
- ``deterministic``: the configured default, ``replicas`` servers of 1 slot and 1 thread each,
  no prompt cache (an answer depends only on the request).

Each design runs the responses stage of ``--run`` (``pipeline.responses``, the stage's library
function, on data/questions/questions.jsonl of ``dvc repro questions``) with a fresh, empty LLM
cache, in the order A B B A (``--repeats 2``) so that a drift of the machine's load hits both
alike. Printed per design: wall seconds, completion and prompt tokens, and seconds per 1,000
tokens (the designs draw other samples, so their answers differ in length); then the ratios
deterministic / previous of both (goal <= 1.25).

usage: python benchmarks/bench_responses.py [--run ours] [--repeats 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak import pipeline  # noqa: E402
from testleak.config import run_model  # noqa: E402
from testleak.llm import open_gateway  # noqa: E402
from testleak.llm.callstats import token_totals  # noqa: E402
from testleak.paths import Paths  # noqa: E402
from testleak.stage import load_stage_params  # noqa: E402

PREVIOUS = {"n_parallel": 4, "n_threads": 2, "cache_prompt": True, "replicas": 1}


def design_model(model: dict, design: str) -> dict:
    m = copy.deepcopy(model)
    if design == "previous":
        m["server"] = {**m["server"], **PREVIOUS}
        m["limits"] = {**m["limits"], "concurrency": PREVIOUS["n_parallel"]}
    return m


def run_once(params: dict, run: str, model: dict, questions, library, paths: Paths) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_responses_") as tmp:
        log = Path(tmp) / "llm_calls.jsonl"
        with open_gateway(model, cache_dir=Path(tmp) / "llm", log_path=log, models_dir=paths.models,
                          attribution={"stage": "responses", "run": run}, show_progress=False) as gw:
            gw._ensure_client()          # servers started before the clock starts
            load0 = os.getloadavg()[0]
            t0 = time.monotonic()
            _, stats = pipeline.responses(params, run, gw, questions, library)
            wall = time.monotonic() - t0
            load1 = os.getloadavg()[0]
            concurrency = gw.concurrency
        calls = [json.loads(x) for x in log.read_text().splitlines()]
    tot = token_totals([c for c in calls if c.get("stage") == "responses"])
    tokens = tot["prompt_tokens"] + tot["completion_tokens"]
    return {"wall_s": round(wall, 2), "responses": stats.get("responses"), "ok": stats.get("ok"),
            "prompt_tokens": tot["prompt_tokens"], "completion_tokens": tot["completion_tokens"],
            "prompt_cached_tokens": tot["prompt_cached_tokens"], "concurrency": concurrency,
            "s_per_1k_completion": round(1000 * wall / max(1, tot["completion_tokens"]), 3),
            "s_per_1k_tokens": round(1000 * wall / max(1, tokens), 3), "load": [load0, load1]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="ours")
    ap.add_argument("--repeats", type=int, default=2, help="ABBA blocks: 1 = A B, 2 = A B B A")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    params = load_stage_params()
    paths = Paths()
    model = run_model(params, args.run)
    questions, library = pipeline.method_inputs(params, paths, args.run)
    order = ["previous", "deterministic"]
    plan = [d for i in range(args.repeats) for d in (order if i % 2 == 0 else order[::-1])]
    print(f"{len(questions or [])} questions; model {model['name']}; order {plan}; "
          f"load average at start {os.getloadavg()}", flush=True)
    results: dict[str, list[dict]] = {"previous": [], "deterministic": []}
    for design in plan:
        r = run_once(params, args.run, design_model(model, design), questions, library, paths)
        results[design].append(r)
        print(f"{design:13s} {json.dumps(r)}", flush=True)

    def mean(design, key):
        return statistics.mean(r[key] for r in results[design])

    out = {"run": args.run, "results": results, "previous_server": PREVIOUS,
           "deterministic_server": {k: model["server"][k] for k in ("n_parallel", "n_threads", "cache_prompt", "replicas")}}
    for key in ("wall_s", "s_per_1k_completion", "s_per_1k_tokens"):
        out[f"ratio_{key}"] = mean("deterministic", key) / mean("previous", key)
    print(f"\nprevious ({PREVIOUS}) vs deterministic ({out['deterministic_server']}), means of {args.repeats}:")
    for key in ("wall_s", "s_per_1k_completion", "s_per_1k_tokens", "completion_tokens", "prompt_tokens"):
        print(f"  {key:20s} previous {mean('previous', key):9.2f}  deterministic {mean('deterministic', key):9.2f}")
    print(f"ratio deterministic / previous: wall {out['ratio_wall_s']:.3f}, per 1k completion tokens "
          f"{out['ratio_s_per_1k_completion']:.3f}, per 1k tokens {out['ratio_s_per_1k_tokens']:.3f} (goal <= 1.25)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
