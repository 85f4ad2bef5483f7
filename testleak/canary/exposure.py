"""Exposure of every canary (Carlini et al. 2019, "The Secret Sharer"; beyond the paper, issue 15).

Exposure measures memorization independently of any elicitation method: the canary's
log-likelihood given its context prefix (the planted window up to the value) is ranked among
the log-likelihoods of R same-format alternatives from the same generator, under the tuned
model and under the control (untuned) model::

    exposure = log2(R + 1) - log2(rank),   rank = 1 + #{alternatives scored strictly higher}

The candidate set is the R alternatives plus the canary itself (R + 1 values), so exposure lies
in [0, log2(R + 1)]: ~1 bit on average for a value the model has never seen (the canary is then
a uniform draw from the set), log2(R + 1) when the canary beats every alternative. (The issue
writes log2(R); with the canary counted in the set the bound is exact. R >= 1000 gives a maximum
of ~10 bits.)

Alternatives:
- Faker canaries (``source: faker``): ``make_value(attribute, seed)`` with seeds drawn from a
  stream seeded by the canary's id and the canary seed: the same generator, hence the same
  format distribution as the canary (a generator that mixes shapes mixes them in the
  alternatives too: secret keys come as AWS, OpenAI and GitHub shapes, cards of four networks).
- User-supplied canaries (``source: spec``) have no generator: each alternative keeps the
  canary's shape (every digit replaced by a random digit, every ASCII lower/upper case letter by
  a random one of the same case, everything else kept). This is the secret sharer's format
  template ("___-__-____") read off the value. For values that are not random strings (a real
  name) a shape-random alternative is less likely than any real-looking value, so the control
  model's exposure is high too: read the tuned exposure against the control one.
Alternatives equal to the canary or to any other planted canary are redrawn.

Scoring: :func:`testleak.canary.finetune.score_continuations` (prefix forward once, KV cache
reuse, batched alternatives).
"""

from __future__ import annotations

import math
import random
import string
from typing import Iterable, Mapping, Sequence

from .values import make_value


def shape_alternative(value: str, rng: random.Random) -> str:
    """A random value with the shape of ``value`` (digits, lower and upper case letters redrawn)."""
    out = []
    for ch in value:
        if ch in string.digits:
            out.append(rng.choice(string.digits))
        elif ch in string.ascii_lowercase:
            out.append(rng.choice(string.ascii_lowercase))
        elif ch in string.ascii_uppercase:
            out.append(rng.choice(string.ascii_uppercase))
        else:
            out.append(ch)
    return "".join(out)


def alternatives(canary: Mapping, r: int, seed: int, exclude: Iterable[str] = ()) -> list[str]:
    """``r`` distinct alternatives of ``canary`` (a ground-truth record: id, attribute, value, source).

    Fewer only when the generator cannot produce ``r`` distinct values in ``20 r`` draws (the
    caller records the count used)."""
    value = canary["value"]
    banned = set(exclude) | {value}
    rng = random.Random(f"exposure:{seed}:{canary['id']}")
    out: list[str] = []
    seen: set[str] = set()
    for _ in range(20 * r):
        if len(out) >= r:
            break
        if canary.get("source", "faker") == "faker":
            alt = make_value(canary["attribute"], rng.randrange(1 << 40))
        else:
            alt = shape_alternative(value, rng)
        if alt in banned or alt in seen:
            continue
        seen.add(alt)
        out.append(alt)
    return out


def rank_exposure(canary_logprob: float, alternative_logprobs: Sequence[float]) -> dict:
    """{rank, candidates, exposure} of a canary among its alternatives (higher log-likelihood = better rank)."""
    rank = 1 + sum(1 for a in alternative_logprobs if a > canary_logprob)
    n = len(alternative_logprobs) + 1
    return {"rank": rank, "candidates": n, "exposure": round(math.log2(n) - math.log2(rank), 4)}


def exposures(model, tokenizer, probes: Sequence[Mapping], alts: Mapping[str, Sequence[str]],
              batch_tokens: int) -> dict[str, dict]:
    """{canary_id: {rank, candidates, exposure, logprob}} for every probe (``{canary_id, prefix, value}``)
    under ``model``; ``alts``: canary_id -> alternatives (:func:`alternatives`). One prefix forward
    per canary; the canary is scored in the same batches as its alternatives, ``batch_tokens``
    (``canary.exposure.batch_tokens``) continuation tokens per batch."""
    from .finetune import score_continuations

    out = {}
    for p in probes:
        vals = [p["value"], *alts[p["canary_id"]]]
        scores = score_continuations(model, tokenizer, p["prefix"], vals, batch_tokens=batch_tokens)
        lp = [s for s, _ in scores]
        out[p["canary_id"]] = {**rank_exposure(lp[0], lp[1:]), "logprob": round(lp[0], 4)}
    return out


def band_of(exposure: float | None, edges: Sequence[float]) -> str:
    """Label of the exposure band holding ``exposure``: edges [2, 5] give "<2", "2-5", ">=5"."""
    if exposure is None or (isinstance(exposure, float) and math.isnan(exposure)):
        return "n/a"
    e = sorted(float(x) for x in edges)
    fmt = lambda x: f"{x:g}"  # noqa: E731
    if not e or exposure < e[0]:
        return f"<{fmt(e[0])}" if e else "all"
    for lo, hi in zip(e, e[1:]):
        if lo <= exposure < hi:
            return f"{fmt(lo)}-{fmt(hi)}"
    return f">={fmt(e[-1])}"


def band_labels(edges: Sequence[float]) -> list[str]:
    """Every band label of ``edges`` in ascending order."""
    e = sorted(float(x) for x in edges)
    if not e:
        return ["all"]
    fmt = lambda x: f"{x:g}"  # noqa: E731
    return [f"<{fmt(e[0])}"] + [f"{fmt(lo)}-{fmt(hi)}" for lo, hi in zip(e, e[1:])] + [f">={fmt(e[-1])}"]
