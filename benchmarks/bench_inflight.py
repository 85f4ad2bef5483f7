"""Remote endpoints: aggregate throughput of the gateway against requests in flight (issue 16, item 5).

A local server speaking the OpenAI chat-completions protocol (``tests/fake_openai.py``, a
threaded HTTP server) answers every request after a fixed latency, like a hosted API whose
capacity is not the limit. For each ``limits.concurrency`` in ``--levels`` the gateway (provider
``openai``, fresh response cache) sends ``--waves`` x concurrency distinct requests through
``chat_many``; the figure is answers per second, against the ideal concurrency / latency.
Aggregate throughput should scale with the requests in flight up to the configured limit
(64 for a remote model: ``limits.concurrency``).

usage: python benchmarks/bench_inflight.py [--latency 0.5] [--levels 1,2,4,8,16,32,64] [--waves 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.llm import ChatRequest, Gateway  # noqa: E402
from tests.fake_openai import FakeOpenAI, completion_body  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.5, help="seconds the server takes per answer")
    ap.add_argument("--levels", default="1,2,4,8,16,32,64")
    ap.add_argument("--waves", type=int, default=4, help="requests per level = waves x concurrency")
    ap.add_argument("--completion-tokens", type=int, default=100, help="tokens each answer reports")
    args = ap.parse_args()
    os.environ["TESTLEAK_BENCH_KEY"] = "sk-bench"
    levels = [int(x) for x in args.levels.split(",")]
    print(f"load average at start: {os.getloadavg()}; server latency {args.latency} s per answer")
    print(f"{'in flight':>9} {'requests':>8} {'wall s':>7} {'answers/s':>9} {'tokens/s':>9} {'x of 1':>7} {'of ideal':>8} {'peak seen':>9}")
    base = None
    with FakeOpenAI() as srv, tempfile.TemporaryDirectory() as tmp:
        inflight = [0, 0]   # now, peak (counted by the server)

        def answer(body):
            with srv._lock:
                inflight[0] += 1
                inflight[1] = max(inflight[1], inflight[0])
            time.sleep(args.latency)
            with srv._lock:
                inflight[0] -= 1
            return completion_body("ok", completion_tokens=args.completion_tokens)

        srv.answer = answer
        for level in levels:
            cfg = {"name": "remote", "provider": "openai", "api_model": "fake-model", "base_url": srv.base_url,
                   "api_key_env": "TESTLEAK_BENCH_KEY", "sampling": {"max_tokens": args.completion_tokens},
                   "limits": {"concurrency": level, "timeout": 60, "max_retries": 0}}
            gw = Gateway(cfg, cache_dir=Path(tmp) / f"c{level}", log_path=Path(tmp) / "calls.jsonl")
            gw.chat([{"role": "user", "content": "warm-up"}])   # client set up, first connection
            n = args.waves * level
            inflight[1] = 0
            t = time.monotonic()
            out = gw.chat_many([ChatRequest([{"role": "user", "content": f"request {i}"}]) for i in range(n)])
            wall = time.monotonic() - t
            gw.close()
            assert all(c.status == "ok" for c in out), {c.error for c in out if c.status != "ok"}
            rate = n / wall
            base = base or rate
            toks = sum(c.usage["completion_tokens"] for c in out) / wall
            print(f"{level:9d} {n:8d} {wall:7.2f} {rate:9.1f} {toks:9.0f} {rate / base:7.2f} "
                  f"{rate / (level / args.latency):8.2f} {inflight[1]:9d}", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
