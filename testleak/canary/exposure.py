"""Exposure of every canary (Carlini et al. 2019, "The Secret Sharer"; beyond the paper).

Exposure measures memorization independently of any elicitation method: the canary's
log-likelihood given its context prefix is ranked among those of R same-format alternatives,
under the tuned and the control (untuned) model::

    exposure = log2(R + 1) - log2(rank),   rank = 1 + #{alternatives scored strictly higher}

The canary counts in the candidate set, so exposure lies in [0, log2(R + 1)] exactly (~1 bit on
average for an unseen value; R >= 1000 gives up to ~10 bits). Faker canaries' alternatives come
from the same generator (same format distribution); user canaries (``source: spec``) get their
shape with random digits and letters, so for values that are not random (a real name) the control
exposure is high too: read tuned against control. Alternatives equal to a planted canary are
redrawn. Scoring: :func:`testleak.canary.finetune.score_continuations`.
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
