"""Benchmark of the library stage's models: default division scorer and clustering encoder.

    .venv/bin/python benchmarks/bench_library.py [--n 64] [--scorer causal_surprisal]

Prints load time, tokens/s and strings/s of the scorer, strings/s of the encoder, and the peak
RSS of the process. Inputs are synthetic test-code lines (generated here, no real data).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

from testleak.config import compose_dict
from testleak.library.clustering import get_encoder
from testleak.library.division import get_scorer
from testleak.paths import Paths

KEYS = ["user.email", "contact_phone", "API_KEY", "payment.card_number", "account.password", "profile.dob"]


def lines(n: int, seed: int = 0) -> list[str]:
    r = random.Random(seed)
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return [f'{r.choice(KEYS)} = "{"".join(r.choice(alnum) for _ in range(r.randint(8, 24)))}"' for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--scorer", default=None)
    a = ap.parse_args()
    cfg = compose_dict()["library"]
    div = dict(cfg["division"], **({"scorer": a.scorer} if a.scorer else {}))
    texts = lines(a.n)
    out = {"n_strings": a.n, "scorer": div["scorer"]}
    t = time.perf_counter()
    scorer = get_scorer(div, Paths().models)
    out["scorer_load_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    res = scorer.score(texts)
    dt = time.perf_counter() - t
    ntok = sum(len(r.scores) for r in res)
    out.update(scorer_tokens=ntok, scorer_tokens_per_s=round(ntok / dt, 1), scorer_strings_per_s=round(a.n / dt, 2),
               scorer_forward_rows=sum(r.rows for r in res))
    t = time.perf_counter()
    enc = get_encoder(cfg["clustering"])
    out["encoder_load_s"] = round(time.perf_counter() - t, 1)
    many = lines(a.n * 8, 1)
    t = time.perf_counter()
    enc.encode(many)
    out["encoder_strings_per_s"] = round(len(many) / (time.perf_counter() - t), 1)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
