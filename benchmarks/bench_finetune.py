"""Canary fine-tune benchmark (issue 8): training speed, memorization after k epochs, and
generation speed of the tuned model as served (GGUF write-back + xllamacpp, via the gateway).

Runs the real stages' library functions in a temporary project (the embedded model is
linked, not copied): plant N canaries, LoRA-train for E epochs with a memorization check
after every epoch, write the tuned GGUF, then time chat generation through the gateway
for the tuned and the base model (fresh cache, exactly --gen-tokens tokens, ignore_eos).

usage: python benchmarks/bench_finetune.py [--canaries 8] [--epochs 3] [--max-tokens 128]
       [--targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj] [--gen-tokens 96]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.canary import make_canary_corpus, run_finetune  # noqa: E402
from testleak.canary.pipeline import CanaryPaths  # noqa: E402
from testleak.config import compose_dict  # noqa: E402
from testleak.llm import open_gateway  # noqa: E402
from testleak.paths import Paths  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a Python function that validates a user's login form."}]


def gen_speed(model_cfg, paths, tokens: int, rounds: int = 2) -> float:
    with open_gateway(model_cfg, paths=paths, log_path=paths.root / "calls.jsonl") as gw:
        gw.chat(PROMPT, sample=999, max_tokens=8)  # start the server
        rates = []
        for i in range(rounds):
            c = gw.chat(PROMPT, sample=i, max_tokens=tokens, extra_body={"ignore_eos": True})
            rates.append(c.usage["completion_tokens"] / max(1e-9, c.latency_s))
    return sum(rates) / len(rates)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--canaries", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--targets", default="q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
    ap.add_argument("--gen-tokens", type=int, default=96)
    ap.add_argument("--lr", type=float, default=1e-3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / ".cache").mkdir()
        os.symlink(ROOT / ".cache" / "models", root / ".cache" / "models")
        params = compose_dict([f"canary.n={a.canaries}", f"canary.files={max(2, a.canaries // 2)}",
                               f"canary.finetune.epochs={a.epochs}", f"canary.finetune.max_tokens={a.max_tokens}",
                               f"canary.finetune.target_modules=[{a.targets}]", "canary.finetune.eval_every=1",
                               f"canary.finetune.lr={a.lr}", "canary.finetune.clean_windows=2"])
        paths = Paths(root)
        make_canary_corpus(params, paths)
        t0 = time.perf_counter()
        m = run_finetune(params, paths, log=print)
        total = time.perf_counter() - t0
        tuned = json.loads(CanaryPaths(paths).tuned_cfg.read_text())
        tuned_tps = gen_speed(tuned, paths, a.gen_tokens)
        base_tps = gen_speed(params["model"], paths, a.gen_tokens)
    print(f"canaries {a.canaries}, examples {m['examples']}, targets {a.targets}, max_tokens {a.max_tokens}")
    print(f"load {m['load_seconds']:.1f}s; train {m['steps']} steps in {m['train_seconds']:.1f}s: "
          f"{m['seconds_per_step']:.2f} s/step, {m['train_tokens_per_s']:.0f} tokens/s; GGUF write "
          f"{m['gguf_write_seconds']:.1f}s ({m['gguf']['bytes'] / 1e6:.0f} MB, {m['gguf']['replaced']} tensors F16); "
          f"stage total {total:.0f}s")
    print("memorized (greedy completion from own prefix): before {:.0%}; ".format(m["memorized_before"]) +
          "; ".join(f"epoch {h['epoch']}: loss {h['loss']:.3f}" + (f", {h['memorized']:.0%}" if "memorized" in h else "")
                    for h in m["history"]) + f"; final {m['memorized_after']:.0%}")
    print(f"generation as served (xllamacpp via gateway): tuned {tuned_tps:.1f} tokens/s, base {base_tps:.1f} tokens/s")


if __name__ == "__main__":
    main()
