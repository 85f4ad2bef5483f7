"""llama.cpp server threads against the machine's load (issue 16, item 5; ``server.n_threads: auto``).

For each thread count in ``--threads`` (in that order, so a count can be repeated to see the
load drift), starts the embedded model's server with 4 slots, then 4 requests in flight
generate exactly ``--tokens`` tokens each (``ignore_eos``); prints aggregate tokens/s, the
process CPU seconds and the 1-minute load average when the wave started.

usage: python benchmarks/bench_threads.py [--threads 1,2,1] [--tokens 48]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.config import compose_dict  # noqa: E402
from testleak.llm.local import LocalServer, ensure_model  # noqa: E402
from testleak.paths import Paths  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2,1")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--slots", type=int, default=4)
    args = ap.parse_args()
    path = ensure_model(compose_dict()["model"], Paths().models)
    for nt in [int(x) for x in args.threads.split(",")]:
        with LocalServer(path, n_ctx=2048, n_parallel=args.slots, n_threads=nt) as s:
            def one(i: int) -> int:
                r = requests.post(s.base_url + "/chat/completions", timeout=900, json={
                    "model": "m", "max_tokens": args.tokens, "ignore_eos": True,
                    "messages": [{"role": "user", "content": f"{i} Write a Python class for a user"}]})
                r.raise_for_status()
                return r.json()["timings"]["predicted_n"]

            one(-1)   # warm-up
            load, t, c = os.getloadavg()[0], time.monotonic(), time.process_time()
            with ThreadPoolExecutor(args.slots) as ex:
                n = sum(ex.map(one, range(args.slots)))
            dt = time.monotonic() - t
            print(f"n_threads={nt}: {n} tokens in {dt:.1f} s = {n / dt:.1f} tok/s "
                  f"(process CPU {time.process_time() - c:.1f} s), load {load:.1f}", flush=True)


if __name__ == "__main__":
    main()
