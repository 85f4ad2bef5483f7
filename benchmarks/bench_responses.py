"""The responses stage against its ideal time on the embedded model, in one process (issue 16, item 5).

1. Reference rates of the served model, with the configured slots (``server.n_parallel``
   requests in flight), on the server the stage then uses:
   - prompt processing: distinct prompts of about ``--prompt-tokens`` tokens, ``cache_prompt``
     off, one generated token; rate = prompt tokens the server processed / wall seconds;
   - generation: short distinct prompts, exactly ``--gen-tokens`` tokens each (``ignore_eos``);
     rate = generated tokens / (wall seconds - the prompt seconds at the prompt rate).
   Measured before and after the stage (the machine is shared: both are printed, the mean is used).
2. The responses stage of the default experiment's run ``ours`` (``pipeline.responses``, the
   stage's library function, on data/questions/questions.jsonl of ``dvc repro questions``) with
   a fresh, empty LLM cache; wall clock timed; tokens summed from the call log.
3. ideal = prompt tokens / prompt rate + completion tokens / generation rate; the ratio
   measured / ideal (goal <= 1.25), both with the prompt tokens as the server reports them
   (``usage.prompt_tokens``, cached prefix included) and with only those it processed
   (minus ``usage.prompt_tokens_details.cached_tokens``); a breakdown by purpose, the time with
   k requests in flight (from the call log), and the same ratio in process CPU seconds (the
   server runs in this process), which is less sensitive to other jobs on the machine.

usage: python benchmarks/bench_responses.py [--run ours] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak import pipeline  # noqa: E402
from testleak.config import run_model  # noqa: E402
from testleak.llm import open_gateway  # noqa: E402
from testleak.llm.callstats import busy_profile, ideal_seconds, token_totals  # noqa: E402
from testleak.paths import Paths  # noqa: E402
from testleak.stage import load_stage_params  # noqa: E402

WORDS = ("account balance customer record session token profile address billing invoice order "
         "payment shipping handler request response validate parse format encode decode store "
         "fetch update delete create user service client server module config option").split()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _post(base: str, body: dict) -> dict:
    r = requests.post(base + "/chat/completions", json=body, timeout=900)
    r.raise_for_status()
    return r.json()


def _wave(base: str, bodies: list[dict]) -> tuple[float, list[dict]]:
    t = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(bodies)) as ex:
        out = list(ex.map(lambda b: _post(base, b), bodies))
    return time.monotonic() - t, out


def rates(base: str, model: str, slots: int, rounds: int, prompt_tokens: int, gen_tokens: int,
          rng: random.Random, sampling: dict) -> dict:
    """Prompt and generation rates with ``slots`` requests in flight (see the module doc), with
    the model's configured sampling (``sampling``: temperature, top_p, repeat_penalty, ...)."""
    load0 = os.getloadavg()[0]
    cpu0 = time.process_time()
    p_tok, p_wall, p_cpu = 0, 0.0, 0.0
    for _ in range(rounds):
        # ~1.3 tokens per word of this vocabulary; a nonce first so no two prompts share a prefix
        bodies = [{**sampling, "model": model, "max_tokens": 1, "cache_prompt": False,
                   "messages": [{"role": "user", "content": f"{rng.random():.12f} " + _text(rng, int(prompt_tokens / 1.3))}]}
                  for _ in range(slots)]
        c = time.process_time()
        dt, out = _wave(base, bodies)
        p_cpu += time.process_time() - c
        p_wall += dt
        p_tok += sum(o["timings"]["prompt_n"] for o in out)
    prompt_rate = p_tok / p_wall
    g_tok, g_wall, g_cpu, g_ptok = 0, 0.0, 0.0, 0
    for _ in range(rounds):
        bodies = [{**sampling, "model": model, "max_tokens": gen_tokens, "ignore_eos": True, "cache_prompt": False,
                   "seed": rng.randrange(1 << 30),
                   "messages": [{"role": "user", "content": f"{rng.random():.12f} Write a Python class for "
                                 + _text(rng, 6)}]} for _ in range(slots)]
        c = time.process_time()
        dt, out = _wave(base, bodies)
        g_cpu += time.process_time() - c
        g_wall += dt
        g_tok += sum(o["timings"]["predicted_n"] for o in out)
        g_ptok += sum(o["timings"]["prompt_n"] for o in out)
    gen_wall = g_wall - g_ptok / prompt_rate
    prompt_cpu_rate = p_tok / p_cpu
    return {"slots": slots, "prompt_tokens": p_tok, "prompt_s": round(p_wall, 2), "prompt_tok_s": prompt_rate,
            "gen_tokens": g_tok, "gen_s": round(g_wall, 2), "gen_tok_s": g_tok / gen_wall,
            "prompt_tok_cpu_s": prompt_cpu_rate, "gen_tok_cpu_s": g_tok / (g_cpu - g_ptok / prompt_cpu_rate),
            "load_before": load0, "load_after": os.getloadavg()[0], "cpu_s": time.process_time() - cpu0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="ours")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-pin", action="store_true", help="let the server choose the slot of every request "
                    "(the code before issue 16 item 5) instead of pinning a worker's turns to its slot")
    args = ap.parse_args()

    params = load_stage_params()
    paths = Paths()
    model = run_model(params, args.run)
    slots = int((model.get("server") or {}).get("n_parallel", 1))
    rng = random.Random(args.seed)
    questions, library = pipeline.method_inputs(params, paths, args.run)
    print(f"load average at start: {os.getloadavg()}; {len(questions or [])} questions; model {model['name']}, "
          f"{slots} slots, concurrency {model['limits']['concurrency']}, server {model.get('server')}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_responses_") as tmp:
        log = Path(tmp) / "llm_calls.jsonl"
        with open_gateway(model, cache_dir=Path(tmp) / "llm", log_path=log, models_dir=paths.models,
                          attribution={"stage": "responses", "run": args.run}, show_progress=False) as gw:
            if args.no_pin:
                gw.server_slot = lambda slot: None
            gw._ensure_client()  # start the server: the benchmark and the stage use the same one
            base = gw.base_url
            from testleak.llm.local import SHARED
            threads = SHARED.servers[gw._server_key][0].n_threads
            print(f"server threads: {threads} (server.n_threads={model['server'].get('n_threads')}; "
                  f"load {os.getloadavg()[0]:.2f} at start)", flush=True)
            api_model = model["api_model"]
            _post(base, {"model": api_model, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
            sampling = gw.sampling()
            sampling = {**{k: v for k, v in sampling.items() if k != "extra_body"}, **sampling.get("extra_body", {})}
            bench = (base, api_model, slots, args.rounds, args.prompt_tokens, args.gen_tokens, rng, sampling)
            before = rates(*bench)
            print("reference before:", json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                                    for k, v in before.items()}), flush=True)
            load0 = os.getloadavg()
            c0, t0 = time.process_time(), time.monotonic()
            recs, stats = pipeline.responses(params, args.run, gw, questions, library)
            wall = time.monotonic() - t0
            cpu = time.process_time() - c0
            load1 = os.getloadavg()
            after = rates(*bench)
            print("reference after: ", json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                                    for k, v in after.items()}), flush=True)
        calls = [json.loads(x) for x in log.read_text().splitlines()]
    calls = [c for c in calls if c.get("stage") == "responses" and c.get("run") == args.run]
    tot = token_totals(calls)
    prate = statistics.mean([before["prompt_tok_s"], after["prompt_tok_s"]])
    grate = statistics.mean([before["gen_tok_s"], after["gen_tok_s"]])
    pcpu = statistics.mean([before["prompt_tok_cpu_s"], after["prompt_tok_cpu_s"]])
    gcpu = statistics.mean([before["gen_tok_cpu_s"], after["gen_tok_cpu_s"]])
    ideal = ideal_seconds(tot["prompt_tokens"], tot["completion_tokens"], prate, grate)
    ideal_proc = ideal_seconds(tot["prompt_tokens"] - tot["prompt_cached_tokens"], tot["completion_tokens"], prate, grate)
    ideal_cpu = ideal_seconds(tot["prompt_tokens"], tot["completion_tokens"], pcpu, gcpu)
    prof = busy_profile(calls, t0_wall=None)
    out = {
        "run": args.run, "server_threads": threads, "pinned": not args.no_pin, "responses": stats.get("responses"), "ok": stats.get("ok"),
        "statuses": {k: stats.get(k) for k in ("ok", "refused", "no_code", "error")},
        "calls": tot, "wall_s": wall, "cpu_s": cpu, "load_stage": [load0, load1],
        "reference": {"before": before, "after": after, "prompt_tok_s": prate, "gen_tok_s": grate,
                      "prompt_tok_cpu_s": pcpu, "gen_tok_cpu_s": gcpu},
        "ideal_s": ideal, "ratio": wall / ideal, "ideal_processed_s": ideal_proc, "ratio_processed": wall / ideal_proc,
        "ideal_cpu_s": ideal_cpu, "ratio_cpu": cpu / ideal_cpu, "in_flight": prof,
    }
    print(f"\nresponses@{args.run}: {stats.get('responses')} responses ({out['statuses']}), "
          f"{tot['calls']} calls ({tot['cached']} from the LLM cache)")
    for purpose, t in tot["by_purpose"].items():
        print(f"  {purpose:10s} {t['calls']:3d} calls  prompt {t['prompt_tokens']:6d} tok "
              f"(cached by the server {t['prompt_cached_tokens']:5d})  completion {t['completion_tokens']:6d} tok  "
              f"mean latency {t['latency_s'] / max(t['calls'], 1):6.1f} s")
    print(f"reference ({slots} in flight; before / after / mean): prompt {before['prompt_tok_s']:.1f} / "
          f"{after['prompt_tok_s']:.1f} / {prate:.1f} tok/s; generation {before['gen_tok_s']:.1f} / "
          f"{after['gen_tok_s']:.1f} / {grate:.1f} tok/s")
    print(f"ideal {ideal:.1f} s = {tot['prompt_tokens']} / {prate:.1f} + {tot['completion_tokens']} / {grate:.1f}")
    print(f"measured wall {wall:.1f} s  ratio {wall / ideal:.3f} (goal <= 1.25)")
    print(f"  counting only processed prompt tokens ({tot['prompt_tokens'] - tot['prompt_cached_tokens']}): "
          f"ideal {ideal_proc:.1f} s, ratio {wall / ideal_proc:.3f}")
    print(f"  in CPU seconds of this process: {cpu:.1f} vs ideal {ideal_cpu:.1f} -> ratio {cpu / ideal_cpu:.3f}")
    print("  seconds with k requests in flight: " + ", ".join(f"{k}: {v:.1f}" for k, v in prof["seconds"].items())
          + f"; span {prof['span_s']:.1f} s, slot-seconds busy {prof['busy_slot_s']:.1f}")
    print(f"load average: start of stage {load0}, end {load1}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
