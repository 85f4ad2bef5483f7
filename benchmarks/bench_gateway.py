"""Gateway overhead, concurrency and memory of the embedded model server, in one run.

Starts `testleak serve` (xllamacpp, 0.5B Q4_K_M) in its own process with 4 slots, then:
1. single-stream generation tokens/s calling the server directly over its HTTP API
   (plain `requests`) vs through the gateway (openai client, limiter, cache lookups,
   call log; cache misses forced by fresh sample indices), interleaved, same prompt and
   exactly N generated tokens (ignore_eos);
2. aggregate tokens/s with 1, 2 and 4 concurrent requests through the gateway;
3. peak RSS of the serving process (sampled every 50 ms).
Prints figures; goals: gateway >= 0.95x direct; best concurrency >= 1.3x single; RSS <= 1.5 GB.

usage: python benchmarks/bench_gateway.py [--tokens 96] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.config import compose_dict  # noqa: E402
from testleak.llm import ChatRequest, Gateway  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a Python class that stores user profiles with validation."}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    proc = subprocess.Popen([str(ROOT / ".venv/bin/testleak"), "serve", "--parallel", "4"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    base_url = proc.stdout.readline().strip()
    ps = psutil.Process(proc.pid)
    peak = [0]
    stop = threading.Event()

    def sample_rss():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], ps.memory_info().rss)
            except psutil.Error:
                break
            time.sleep(0.05)

    threading.Thread(target=sample_rss, daemon=True).start()
    cfg = compose_dict()["model"]
    cfg = dict(cfg, provider="openai", base_url=base_url, api_key_env="TESTLEAK_BENCH_KEY")
    cfg["limits"] = dict(cfg["limits"], concurrency=4)
    import os

    os.environ["TESTLEAK_BENCH_KEY"] = "local"
    body_params = {"max_tokens": args.tokens, "temperature": 0.7, "extra_body": {"ignore_eos": True}}
    sample = iter(range(10_000))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            gw = Gateway(cfg, cache_dir=Path(tmp) / "c", log_path=Path(tmp) / "log.jsonl")
            gw.chat(PROMPT, sample=next(sample), max_tokens=8)  # warm-up

            def direct() -> float:
                t = time.monotonic()
                r = requests.post(base_url + "/chat/completions", json={
                    "model": cfg["api_model"], "messages": PROMPT, "max_tokens": args.tokens, "temperature": 0.7,
                    "ignore_eos": True, "seed": next(sample)}, timeout=300)
                r.raise_for_status()
                return r.json()["usage"]["completion_tokens"] / (time.monotonic() - t)

            def via_gateway() -> float:
                t = time.monotonic()
                c = gw.chat(PROMPT, sample=next(sample), **body_params)
                assert c.status == "ok" and not c.cached, c.error
                return c.usage["completion_tokens"] / (time.monotonic() - t)

            d, g = [], []
            for _ in range(args.rounds):
                d.append(direct())
                g.append(via_gateway())
            md, mg = statistics.median(d), statistics.median(g)
            print(f"single stream, {args.tokens} tokens, median of {args.rounds}:")
            print(f"  direct HTTP   {md:6.1f} tok/s")
            print(f"  gateway       {mg:6.1f} tok/s   ratio {mg / md:.3f} (goal >= 0.95)")

            agg = {}
            for n in (1, 2, 4):
                t = time.monotonic()
                out = gw.chat_many([ChatRequest(PROMPT, sample=next(sample), params=body_params) for _ in range(n)])
                dt = time.monotonic() - t
                assert all(c.status == "ok" for c in out)
                agg[n] = sum(c.usage["completion_tokens"] for c in out) / dt
            print("aggregate through the gateway:")
            for n, v in agg.items():
                print(f"  {n} in flight  {v:6.1f} tok/s   x{v / agg[1]:.2f} of single")
            best = max(agg.values()) / agg[1]
            print(f"  best/single {best:.2f} (goal >= 1.3)")
            gw.close()
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=30)
    print(f"peak RSS of the serving process: {peak[0] / 2**20:.0f} MiB (goal <= 1536 MiB)")


if __name__ == "__main__":
    main()
