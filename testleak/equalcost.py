"""Equal-cost budgets of the baseline runs: "ours vs baselines" as a race at equal cost.

Every run entry of ``experiment.runs`` gets a ``budget`` at composition (:func:`run_budgets`): ``own``
(ours), ``responses`` (an integer ``baseline_budget``: N responses) or ``match_ours`` (spend up to
the reference run's spend in ``experiment.baseline_unit``, :data:`UNITS`, at most
``baseline_max_responses``); ``reads`` names the file the budget comes from, a DVC dep, so a
baseline reruns when ours' spend changes. The reference is the same model's run of ours that the
reports call "ours" (highest round, never a named ablation); the earlier library rounds' cost is not
added (docs/BASELINES.md). Stop rule (:class:`ResponseBudget`): with target T, spent C and at most M
per response (1 for responses and test cases, else ``max_tokens`` or the largest seen), the next
batch has ``max(1, floor((T - C) / M))`` requests, so T <= C < T + M, deterministic given the answers
(cached reruns stop at the same response). Every response issued is kept; once more than
``max_failed`` failed, no more are requested. Tokens are as the endpoint reported, cached or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import ConfigError, DataError
from .records import read_json
from .settings import RunBudget

MATCH_OURS = "match_ours"
#: Units a baseline's budget can be matched to ours in (``experiment.baseline_unit``).
UNITS = ("responses", "test_cases", "completion_tokens", "tokens", "usd")
#: ``experiment.baseline_unit: every``: the common budget, ours' spend reached in each of these units.
EVERY = "every"
COMMON_UNITS = ("responses", "test_cases", "completion_tokens", "tokens")
TOLERANCE = 0.10                    # "within 10 %" of the target (reported, not a stop rule parameter)
# Where testleak.paths.Paths places these files, relative to the project root (this module sits
# below config and paths in the layer order, so it names them; tests/test_equalcost.py checks
# they equal Paths.questions_stats and Paths.stats("responses", run)).
QUESTIONS_STATS = "data/questions/stats.json"


def responses_stats_path(run: str) -> str:
    """The responses stats of ``run``, relative to the project root."""
    return f"data/runs/{run}/responses_stats.json"


# ----------------------------------------------------------------------------- composition

def reference_run(protocol: Mapping[str, Mapping], ablation_name: str | None) -> str | None:
    """The protocol run a baseline matches: of method ours, with the experiment's own ablation
    (``ablation_name``; not a named Table 4 ablation), the highest round (first on ties)."""
    ours = [(name, spec) for name, spec in protocol.items() if spec.get("method") == "ours"]
    own = [(n, s) for n, s in ours if ((s.get("ablation") or {}).get("name") or "none") == (ablation_name or "none")]
    pick = own or ours
    if not pick:
        return None
    best = max(int(s.get("round", 0)) for _, s in pick)
    return next(n for n, s in pick if int(s.get("round", 0)) == best)


def check_baseline_budget(value: Any, max_responses: Any = None) -> int | str:
    """``experiment.baseline_budget``: an integer >= 1 (LLM responses) or ``match_ours``."""
    if value == MATCH_OURS:
        if isinstance(max_responses, bool) or not isinstance(max_responses, int) or max_responses < 1:
            raise ConfigError(f"experiment.baseline_max_responses = {max_responses!r}: expected an integer >= 1 "
                              f"(the hard cap on responses of a baseline under baseline_budget: {MATCH_OURS})")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"experiment.baseline_budget = {value!r}: expected an integer >= 1 (LLM responses) "
                          f"or '{MATCH_OURS}'")
    return value


def check_unit(unit: Any) -> str:
    """``experiment.baseline_unit``: one of :data:`UNITS` (None: completion tokens)."""
    if unit is None:
        return "completion_tokens"
    if unit not in UNITS and unit != EVERY:
        raise ConfigError(f"experiment.baseline_unit = {unit!r}: expected one of {', '.join(UNITS)} or {EVERY} "
                          f"(ours' spend in each of {', '.join(COMMON_UNITS)})")
    return str(unit)


def run_budgets(protocol: Mapping[str, Mapping], baseline_budget: Any, max_responses: Any,
                ablation_name: str | None, run_name, unit: str | None = None) -> dict[str, dict]:
    """Protocol run -> a function of the model id giving the run's ``budget`` entry (see the
    module docstring); ``run_name(protocol_run, model_id)`` names unrolled runs."""
    if baseline_budget is None:          # an experiment without baselines may leave it out
        baseline_budget = 1
    check_baseline_budget(baseline_budget, max_responses)
    ref = reference_run(protocol, ablation_name) if baseline_budget == MATCH_OURS else None
    out = {}
    for name, spec in protocol.items():
        method = spec.get("method")
        if method == "ours":
            out[name] = lambda mid: {"kind": "own", "responses": None, "reference": None, "max_responses": None,
                                     "reads": QUESTIONS_STATS}
        elif baseline_budget != MATCH_OURS:
            out[name] = lambda mid, n=int(baseline_budget): {"kind": "responses", "responses": n, "reference": None,
                                                              "max_responses": None, "reads": QUESTIONS_STATS}
        else:
            if ref is None:
                raise ConfigError(f"experiment.baseline_budget = '{MATCH_OURS}': expected a run of method ours in "
                                  f"experiment.protocol to match (it has {', '.join(protocol) or 'none'}); give an "
                                  f"integer budget instead")
            out[name] = lambda mid: {"kind": MATCH_OURS, "responses": None, "reference": run_name(ref, mid),
                                     "max_responses": int(max_responses), "unit": check_unit(unit),
                                     "reads": responses_stats_path(run_name(ref, mid))}
    return out


def fill_budgets(params: dict) -> dict:
    """Give every run of ``params["experiment"]["runs"]`` without a ``budget`` the one composition
    would give it (runs written by hand, e.g. in tests; run names are taken as protocol names).
    Changes ``params`` in place and returns it."""
    exp = params["experiment"]
    runs = exp.get("runs") or {}
    missing = [r for r, spec in runs.items() if not spec.get("budget")]
    if missing:
        b = run_budgets(runs, exp.get("baseline_budget"), exp.get("baseline_max_responses"),
                        (params.get("ablation") or {}).get("name"), lambda r, mid: r)
        for r in missing:
            runs[r]["budget"] = b[r](None)
    return params


# ----------------------------------------------------------------------------- the stop rule

@dataclass
class ResponseBudget:
    """How many responses a baseline may request next (:meth:`allowance`), fed with the
    completion tokens of each response in request order (:meth:`record`).

    ``responses``: a fixed count (``kind`` responses). ``target_tokens``: the completion tokens
    to reach (``kind`` match_ours), with ``max_responses`` the hard cap and
    ``max_tokens_per_response`` the largest completion a request can return (None: the largest
    seen so far, 1 before any). ``max_failed``: the failed responses tolerated (None: any)."""
    responses: int | None = None
    target_tokens: int | None = None
    max_responses: int | None = None
    max_tokens_per_response: int | None = None
    reference: str | None = None
    max_failed: int | None = None
    unit: str = "completion_tokens"      # what target_tokens counts (:data:`UNITS`; or EVERY)
    targets: Mapping[str, float] | None = None   # unit EVERY: the target per unit of COMMON_UNITS
    usd: Any = None                      # unit usd: (prompt_tokens, completion_tokens) -> USD at the model's price
    spent: float = 0                     # in ``unit``
    issued: int = 0
    failed: int = 0
    completion_tokens: int = 0
    largest: int = 0
    batches: list[int] = field(default_factory=list)
    spent_by: dict[str, float] = field(default_factory=dict)     # unit EVERY: spent per unit
    largest_by: dict[str, float] = field(default_factory=dict)   # unit EVERY: largest response per unit

    def __post_init__(self):
        if (self.responses is None) == (self.target_tokens is None):
            raise ValueError("a ResponseBudget has either a fixed number of responses or a token target")
        if self.responses is not None and self.responses < 0:
            raise ConfigError(f"baseline budget must be a non-negative integer (experiment.baseline_budget), got "
                              f"{self.responses!r}")
        if self.target_tokens is not None and (self.max_responses is None or self.max_responses < 1):
            raise ConfigError(f"experiment.baseline_max_responses = {self.max_responses!r}: expected an integer >= 1")
        self._init_common()

    @property
    def kind(self) -> str:
        return "responses" if self.responses is not None else MATCH_OURS

    @property
    def cap(self) -> int:
        return self.responses if self.responses is not None else int(self.max_responses)

    def _init_common(self):
        if self.unit == EVERY:
            if not self.targets or set(self.targets) != set(COMMON_UNITS):
                raise ValueError(f"a common budget (unit {EVERY}) needs a target in each of {', '.join(COMMON_UNITS)}")
            self.spent_by = {u: 0.0 for u in COMMON_UNITS}
            self.largest_by = {u: 0.0 for u in COMMON_UNITS}

    def allowance(self) -> int:
        """Responses that may be requested now (0: stop)."""
        left = self.cap - self.issued
        if left <= 0 or self.failed_out:
            return 0
        if self.target_tokens is None:
            return left
        if self.unit != EVERY:
            return self._allow(self.unit, self.target_tokens - self.spent, self.largest, left)
        allows = [self._allow(u, self.targets[u] - self.spent_by[u], self.largest_by[u], left) for u in COMMON_UNITS]
        return max(allows)

    def _allow(self, unit: str, need: float, largest: float, left: int) -> int:
        """Responses the target in ``unit`` allows now (``need`` still to spend)."""
        if need <= 0:
            return 0
        if unit in ("responses", "test_cases"):
            per = 1
        elif unit == "completion_tokens":
            per = self.max_tokens_per_response or largest
        else:
            per = largest
        if not per:
            return 1          # no bound on an answer known yet: one request, then the largest seen
        return max(1, min(left, int(need // per)))

    def take(self, n: int) -> int:
        """Grant up to ``n`` of the current allowance (the caller requests exactly that many)."""
        return min(n, self.allowance())

    def record(self, completion_tokens: Sequence[int], failed: Sequence[bool] = (),
               prompt_tokens: Sequence[int] = ()) -> None:
        """The completion (and prompt) tokens of the responses just received, in request order (0
        for a failed call), and which of them failed (``failed``, same order; empty: none)."""
        toks = [max(0, int(t or 0)) for t in completion_tokens]
        if not toks:
            return
        if failed and len(failed) != len(toks):
            raise ValueError(f"record: {len(toks)} responses but {len(failed)} failure flags")
        prompts = [max(0, int(t or 0)) for t in prompt_tokens] or [0] * len(toks)
        if len(prompts) != len(toks):
            raise ValueError(f"record: {len(toks)} responses but {len(prompts)} prompt token counts")
        if self.unit == EVERY:
            for u in COMMON_UNITS:
                got = [self._amount(c, p, u) for c, p in zip(toks, prompts)]
                self.spent_by[u] += sum(got)
                self.largest_by[u] = max([self.largest_by[u], *got])
        amounts = [self._amount(c, p, "completion_tokens" if self.unit == EVERY else self.unit)
                   for c, p in zip(toks, prompts)]
        self.batches.append(len(toks))
        self.failed += sum(bool(f) for f in failed)
        self.issued += len(toks)
        self.completion_tokens += sum(toks)
        self.spent += sum(amounts)
        self.largest = max([self.largest, *amounts])

    def _amount(self, completion: int, prompt: int, unit: str) -> float:
        """One response's spend in ``unit``."""
        if unit in ("responses", "test_cases"):
            return 1
        if unit == "tokens":
            return completion + prompt
        if unit == "usd":
            if self.usd is None:
                raise ConfigError("experiment.baseline_unit = usd needs the model's price (conf/model/<name>.yaml, price:)")
            return float(self.usd(prompt, completion) or 0.0)
        return completion

    @property
    def failed_out(self) -> bool:
        """More responses failed than ``max_failed`` tolerates."""
        return self.max_failed is not None and self.failed > self.max_failed

    @property
    def stop_reason(self) -> str:
        if self.failed_out:
            return "calls failed"
        if self.target_tokens is None:
            return "responses" if self.issued >= self.cap else "exhausted"
        if self.unit == EVERY and all(self.spent_by[u] >= self.targets[u] for u in COMMON_UNITS):
            return "target reached"
        if self.unit != EVERY and self.spent >= self.target_tokens:
            return "target reached"
        return "max_responses" if self.issued >= self.cap else "exhausted"

    def summary(self) -> dict:
        """For the responses stats (``budget``): what was allowed, what was spent, why it stopped."""
        out = {"kind": self.kind, "responses_issued": self.issued, "completion_tokens": self.completion_tokens,
               "stop": self.stop_reason, "batches": len(self.batches), "failed": self.failed,
               "max_failed": self.max_failed}
        if self.target_tokens is None:
            out["responses"] = self.responses
        else:
            ratio = self.spent / self.target_tokens if self.target_tokens else None
            out.update({"reference": self.reference, "unit": self.unit, "target": self.target_tokens,
                        "spent": round(self.spent, 6),
                        "target_completion_tokens": self.target_tokens if self.unit == "completion_tokens" else None,
                        "max_responses": self.max_responses, "max_tokens_per_response": self.max_tokens_per_response,
                        "ratio": None if ratio is None else round(ratio, 4),
                        "within_tolerance": ratio is not None and abs(ratio - 1) <= TOLERANCE})
            if self.unit == EVERY:
                out.update({"targets": dict(self.targets), "spent_by": {u: round(v, 6) for u, v in self.spent_by.items()},
                            "target_completion_tokens": self.target_tokens})
        return out


def completion_tokens_of(completion: Any) -> int:
    """Completion tokens the endpoint reported for one answer (0 when it failed)."""
    usage = getattr(completion, "usage", None)
    if usage is None and isinstance(completion, Mapping):
        usage = completion.get("usage")
    return int((usage or {}).get("completion_tokens") or 0)


def response_completion_tokens(response: Mapping) -> int:
    """Completion tokens of one response record over its LLM turns (``turn1``, ``turn2``)."""
    total = 0
    for turn in ("turn1", "turn2"):
        usage = ((response.get(turn) or {}).get("usage") or {})
        total += int(usage.get("completion_tokens") or 0)
    return total


def as_budget(budget: Any) -> ResponseBudget:
    """An integer (fixed responses) or a :class:`ResponseBudget` (returned as is)."""
    if isinstance(budget, ResponseBudget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"baseline budget must be a non-negative integer (experiment.baseline_budget), got {budget!r}")
    return ResponseBudget(responses=budget)


# ----------------------------------------------------------------------------- a run's budget

def reference_tokens(stats: Mapping, path: str | Path = "") -> int:
    """Completion tokens of a responses stage from its stats (``llm.completion_tokens``)."""
    llm = (stats or {}).get("llm") or {}
    if "completion_tokens" not in llm:
        raise DataError(f"{path}: no llm.completion_tokens (responses stats of an older version): rerun "
                        f"`dvc repro responses@{Path(path).parent.name}`")
    if stats.get("partial"):
        raise DataError(f"{path}: the reference run stopped at a spending cap (partial): raise budget.* and rerun it")
    return int(llm["completion_tokens"])


def reference_amount(stats: Mapping, path: str | Path, unit: str) -> float:
    """What the reference run spent in ``unit`` (its responses stats); unit EVERY: its completion
    tokens (use :func:`reference_amounts` for the targets of every unit)."""
    if unit in ("completion_tokens", EVERY):
        return reference_tokens(stats, path)
    reference_tokens(stats, path)          # the same checks (recorded, not partial)
    llm = stats.get("llm") or {}
    if unit == "tokens":
        return int(llm.get("prompt_tokens") or 0) + int(llm["completion_tokens"])
    if unit == "usd":
        if llm.get("usd") is None:
            raise DataError(f"{path}: no llm.usd (the reference's model has no price): set its price or choose "
                            f"another experiment.baseline_unit")
        return float(llm["usd"])
    key = "responses" if unit == "responses" else "test_cases"
    if stats.get(key) is None:
        raise DataError(f"{path}: no {key} (responses stats of an older version): rerun "
                        f"`dvc repro responses@{Path(path).parent.name}`")
    return int(stats[key])


def reference_amounts(stats: Mapping, path: str | Path) -> dict[str, float]:
    """What the reference run spent in each unit of :data:`COMMON_UNITS` (the common budget's targets)."""
    return {u: reference_amount(stats, path, u) for u in COMMON_UNITS}


def budget_of(stats: Mapping, path: str | Path, unit: str, **kwargs) -> ResponseBudget:
    """The match_ours :class:`ResponseBudget` against the reference's responses ``stats`` in ``unit``
    (EVERY: a target in every unit of COMMON_UNITS, completion tokens as ``target_tokens``)."""
    targets = reference_amounts(stats, path) if unit == EVERY else None
    return ResponseBudget(target_tokens=reference_amount(stats, path, unit), unit=unit, targets=targets, **kwargs)


def response_budget(run: str, budget: RunBudget, max_error_share: float, root: str | Path,
                    max_tokens_per_response: int | None = None, usd=None) -> ResponseBudget | None:
    """The :class:`ResponseBudget` of ``run`` for its ``budget`` entry (``experiment.runs.RUN.budget``;
    None for ``own``, ours), reading the reference run's responses stats under ``root`` for
    ``match_ours``; at most ``max_error_share`` of its responses may fail; ``usd``: (prompt,
    completion tokens) -> USD at the run's model's price (unit usd)."""
    if budget.kind == "own":
        return None
    if budget.kind == "responses":
        return ResponseBudget(responses=budget.responses, max_failed=int(max_error_share * budget.responses))
    p = Path(root) / budget.reads
    if not p.exists():
        raise DataError(f"responses@{run} matches the completion tokens of run {budget.reference!r} "
                        f"(experiment.baseline_budget: {MATCH_OURS}), but {budget.reads} does not exist: run "
                        f"`dvc repro responses@{budget.reference}` first")
    stats = read_json(p, f"rerun `dvc repro responses@{budget.reference}`")
    unit = check_unit(budget.unit)
    return budget_of(stats, budget.reads, unit, max_responses=budget.max_responses,
                     max_tokens_per_response=max_tokens_per_response, reference=budget.reference,
                     max_failed=int(max_error_share * budget.max_responses), usd=usd)


__all__ = ["MATCH_OURS", "UNITS", "EVERY", "COMMON_UNITS", "reference_amounts", "budget_of", "check_unit", "reference_amount", "TOLERANCE", "ResponseBudget", "as_budget", "check_baseline_budget", "completion_tokens_of",
           "fill_budgets",
           "reference_run", "reference_tokens", "response_budget", "response_completion_tokens", "run_budgets",
           "responses_stats_path"]
