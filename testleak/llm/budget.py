"""Prices, token estimates, spend and the spending cap of LLM calls.

Price: a model config's ``price`` (USD per 1M prompt and completion tokens, ``as_of``, ``source``;
local 0, ``null`` unknown); :func:`cost_usd` is the one cost formula. Spend: every answer a stage
uses counts at the tokens the endpoint reported, also when served from the response cache, so the
spend is what the experiment costs from an empty cache and a rerun stops where it stopped
(duplicates in one batch count once). Cap (``budget.usd``, ``budget.completion_tokens``): bounds the
sum over the experiment's LLM stages, each stage's gateway keeping a ledger in
``logs/spend/<stage>[@<run>].json`` (a queued ``dvc exp run`` starts with an empty one). A request
whose worst case (estimated prompt tokens + ``max_tokens``) would pass a cap is not sent (``error``
of kind ``budget``): completion tokens never exceed the cap, USD only by the prompt estimate's
error. The stage writes what it has, marks its stats ``partial: true`` and exits 3
(:class:`testleak.errors.BudgetReached`), so that DVC never records a partial output.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import ConfigError
from ..settings import Budget

CHARS_PER_TOKEN = 4       # the usual estimate for English text and code (no tokenizer needed)
MESSAGE_OVERHEAD = 4      # chat-template tokens around each message


def estimate_prompt_tokens(messages: Sequence[Mapping]) -> int:
    """Estimated prompt tokens of chat messages: characters / 4 plus a few tokens per message."""
    return sum(len(str(m.get("content") or "")) for m in messages) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD * len(messages)


def cost_usd(price: Mapping | None, prompt_tokens: float, completion_tokens: float) -> float | None:
    """USD of the given tokens at a model's ``price`` (None when the price is unknown)."""
    if not price:
        return None
    return (float(prompt_tokens) * float(price["prompt_usd_per_1m"])
            + float(completion_tokens) * float(price["completion_usd_per_1m"])) / 1e6


def budget_settings(cap: Budget, scope: str | None) -> dict:
    """The cap of a stage's gateways (``budget=`` of ``open_gateway``): ``budget`` of the composed
    config (``cap``) and the experiment it is for (``scope``: ``experiment.name``, whose stages'
    ledgers add up)."""
    return {"usd": cap.usd, "completion_tokens": cap.completion_tokens, "scope": scope}


@dataclass
class Spend:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float | None = 0.0     # None: some tokens were of a model without a price

    def add(self, prompt_tokens: int, completion_tokens: int, usd: float | None, calls: int = 1) -> None:
        self.calls += calls
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)
        self.usd = None if usd is None or self.usd is None else self.usd + usd


def _ledger_name(stage: str | None, run: str | None) -> str:
    return f"{stage or 'unattributed'}{'@' + run if run else ''}.json"


def read_ledger(ledger_dir: str | os.PathLike | None, scope: str | None, exclude: str | None = None) -> Spend:
    """The spend recorded by the stages of experiment ``scope`` (all but the file ``exclude``)."""
    total = Spend()
    d = Path(ledger_dir) if ledger_dir else None
    if d is None or not d.is_dir():
        return total
    for p in sorted(d.glob("*.json")):
        if p.name == exclude:
            continue
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # a ledger being rewritten by another process: skip it, never fail a stage on it
        if isinstance(rec, dict) and rec.get("scope") == scope:
            total.add(rec.get("prompt_tokens", 0), rec.get("completion_tokens", 0), rec.get("usd"), rec.get("calls", 0))
    return total


class Meter:
    """Spend of one gateway (model) and, with a cap, the admission of its uncached requests."""

    def __init__(self, model: str, price: Mapping | None, budget: Mapping | None = None,
                 ledger_dir: str | os.PathLike | None = None, stage: str | None = None, run: str | None = None):
        b = dict(budget or {})
        self.model, self.price = model, (dict(price) if price else None)
        self.cap_usd = b.get("usd")
        self.cap_completion = b.get("completion_tokens")
        self.scope = b.get("scope")
        if self.cap_usd is not None and self.price is None:
            raise ConfigError(f"budget.usd={self.cap_usd} needs the price of model {model!r}: set its price "
                              f"(conf/model/{model}.yaml, price:) or remove budget.usd")
        self.ledger = Path(ledger_dir) / _ledger_name(stage, run) if ledger_dir else None
        self.before = read_ledger(ledger_dir, self.scope, self.ledger.name) if self.ledger else Spend()
        self.own = Spend()
        self.reserved_completion = 0
        self.reserved_usd = 0.0
        self.refused = 0
        self.reached: str | None = None
        self._lock = threading.Lock()

    @property
    def capped(self) -> bool:
        return self.cap_usd is not None or self.cap_completion is not None

    def _cost(self, usage: Mapping) -> float | None:
        return cost_usd(self.price, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))

    def charge(self, usage: Mapping) -> None:
        """Count an answer used (sent now or from the cache)."""
        with self._lock:
            self.own.add(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), self._cost(usage))

    def spent(self) -> Spend:
        """The experiment's spend: other stages' ledgers plus this gateway's."""
        s = Spend(**asdict(self.before))
        s.add(self.own.prompt_tokens, self.own.completion_tokens, self.own.usd, self.own.calls)
        return s

    def admit(self, messages: Sequence[Mapping], sampling: Mapping) -> tuple[int, float] | None:
        """Reserve the worst case of an uncached request (``sampling``: its sampling parameters); None
        (not to be sent) when it could exceed a cap."""
        if not self.capped:
            return (0, 0.0)
        worst_c = int(sampling.get("max_tokens") or 0)
        worst_usd = self._cost({"prompt_tokens": estimate_prompt_tokens(messages), "completion_tokens": worst_c}) or 0.0
        with self._lock:
            s = self.spent()
            why = None
            if self.cap_completion is not None and s.completion_tokens + self.reserved_completion + worst_c > self.cap_completion:
                why = (f"budget.completion_tokens={self.cap_completion} reached: the experiment used "
                       f"{s.completion_tokens} completion tokens and the next call may take {worst_c}")
            elif self.cap_usd is not None and (s.usd or 0.0) + self.reserved_usd + worst_usd > self.cap_usd:
                why = (f"budget.usd={self.cap_usd:g} reached: the experiment spent ${s.usd or 0.0:.4f} and the next "
                       f"call may cost ${worst_usd:.4f}")
            if why:
                self.refused += 1
                self.reached = self.reached or why
                return None
            self.reserved_completion += worst_c
            self.reserved_usd += worst_usd
            return (worst_c, worst_usd)

    def settle(self, ticket: tuple[int, float], usage: Mapping | None) -> None:
        """Release a reservation and count what the call used (``usage`` None: it failed)."""
        with self._lock:
            self.reserved_completion -= ticket[0]
            self.reserved_usd -= ticket[1]
        if usage is not None:
            self.charge(usage)
        self.flush()

    def flush(self) -> None:
        """Write this stage's spend to its ledger file (atomically)."""
        if self.ledger is None:
            return
        with self._lock:
            rec = {"scope": self.scope, "model": self.model, **asdict(self.own)}
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.ledger.with_name(f".{self.ledger.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(rec), encoding="utf-8")
        os.replace(tmp, self.ledger)

    def summary(self) -> dict:
        """For a stage's stats: the tokens and cost of the answers it used (independent of the cache),
        and ``partial``/``partial_reason`` when a cap stopped it."""
        out = {"llm": {"model": self.model, "calls": self.own.calls, "prompt_tokens": self.own.prompt_tokens,
                       "completion_tokens": self.own.completion_tokens,
                       "usd": None if self.own.usd is None or self.price is None else round(self.own.usd, 6),
                       "price_as_of": (self.price or {}).get("as_of")},
               "partial": bool(self.reached)}
        if self.reached:
            out.update({"partial_reason": self.reached, "not_sent": self.refused})
        return out


def run_cost(stage_stats: Sequence[Mapping], confirmed: int) -> dict:
    """The LLM cost of a run from its stages' stats (their ``llm`` sections: the responses and
    judged stages; the questions stage is shared by the runs and not included) and the cost per
    confirmed leak (distinct confirmed values; None with none confirmed or a model without price)."""
    total = Spend()
    models = []
    for st in stage_stats:
        llm = (st or {}).get("llm")
        if llm:
            total.add(llm.get("prompt_tokens", 0), llm.get("completion_tokens", 0), llm.get("usd"), llm.get("calls", 0))
            models.append(llm.get("model"))
    usd = None if total.usd is None else round(total.usd, 6)
    return {"calls": total.calls, "prompt_tokens": total.prompt_tokens, "completion_tokens": total.completion_tokens,
            "usd": usd, "models": models, "confirmed": confirmed,
            "usd_per_confirmed": None if usd is None or not confirmed else round(usd / confirmed, 6)}


__all__ = ["estimate_prompt_tokens", "cost_usd", "budget_settings", "Spend", "read_ledger", "Meter", "run_cost"]
