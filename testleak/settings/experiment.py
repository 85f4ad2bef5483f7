"""conf/experiment/: the runs, their budgets and the experiment's sizes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .. import registry
from ._base import _Strict, _known
from .messages import _rule
from .models import LLM


class AblationFlags(_Strict):
    name: str
    scenario_questions: bool
    library_hints: bool
    test_generation: bool


class RunPlan(_Strict):
    """A run of one model (``experiment.protocol``, ``experiment.calibration_runs``)."""
    method: str
    round: int = Field(ge=0)
    library: str = Field(min_length=1)
    # the flags, resolved at composition (conf/experiment: '${ablation}' or '${experiment.ablations.X}')
    ablation: AblationFlags | None = None
    # a baseline run's verification protocol; None: baselines.protocol
    verification: str | None = None

    @field_validator("method")
    @classmethod
    def _method(cls, v):
        return _known(v, registry.METHODS)

    @field_validator("verification")
    @classmethod
    def _verification(cls, v):
        return v if v is None else _known(v, registry.BASELINE_PROTOCOLS)


class RunBudget(_Strict):
    """What a run may spend (testleak/equalcost.py), resolved at composition: ``own`` (ours),
    ``responses`` (a fixed number of LLM responses) or ``match_ours`` (the completion tokens of the
    same model's run of ours, ``reference``, with at most ``max_responses``); ``reads``: the file
    the budget is read from (a DVC dep of responses@RUN)."""
    kind: Literal["own", "responses", "match_ours"]
    responses: int | None = Field(default=None, ge=1)
    reference: str | None = None
    max_responses: int | None = Field(default=None, ge=1)
    unit: Literal["responses", "test_cases", "completion_tokens", "tokens", "usd", "every"] | None = None   # match_ours
    reads: str = Field(pattern=r"^data/")


class Run(RunPlan):
    """A run of ``experiment.runs`` (a protocol run for one model, by ``${testleak_runs:runs}``):
    it names its model under test (``model``: the model's name) and where its config is
    (``model_params``: ``model`` or ``experiment.models.ID``; checked by :class:`Settings`), and
    carries its budget."""
    model: str = Field(min_length=1)
    model_params: str = Field(pattern=r"^(model|experiment\.models\.[A-Za-z0-9_-]+)$")
    budget: RunBudget | None = None


class LibraryFrom(_Strict):
    library: str = Field(min_length=1)     # the library that library@RUN extends (the run's own)


class Hints(_Strict):
    templates: int = Field(ge=0)
    fragments: int = Field(ge=0)


class Experiment(_Strict):
    name: str = Field(min_length=1)
    scenarios: list[str] = Field(min_length=1)
    questions_per_scenario: int = Field(ge=1)
    tests_per_function: int = Field(ge=1)
    functions_per_response: Annotated[int, Field(ge=1)] | Literal["all"]  # "all": every g in G(c) (experiment=paper)
    hints_per_attribute: Hints
    # LLM responses per baseline run, or match_ours: each baseline spends the completion tokens of the
    # same model's run of ours, with at most baseline_max_responses responses (testleak/equalcost.py)
    baseline_budget: Annotated[int, Field(ge=1)] | Literal["match_ours"]
    baseline_max_responses: int | None = Field(default=None, ge=1)
    # the unit match_ours matches in (testleak/equalcost.py UNITS, or every: the common budget); null: completion tokens
    baseline_unit: Literal["responses", "test_cases", "completion_tokens", "tokens", "usd", "every"] | None = None

    @field_validator("baseline_budget", mode="before")
    @classmethod
    def _baseline_budget(cls, v):
        if v == "match_ours" or (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            return v
        raise _rule("", v, "an integer >= 1 (LLM responses) or 'match_ours' (what ours spent, in experiment.baseline_unit)")
    canary: list[Literal["calibration"]] = Field(default_factory=list)
    library_from: dict[str, LibraryFrom] = Field(default_factory=dict)
    # test models (id -> model config, composed from conf/model/ by the experiment's defaults);
    # empty: the `model` group alone. Ids name runs (<protocol run>--<id>): letters, digits, _ and -.
    models: dict[str, LLM] = Field(default_factory=dict)
    protocol: dict[str, RunPlan] = Field(default_factory=dict)   # the runs of one model
    libraries: list[str] = Field(default_factory=list)          # protocol runs that build a library
    runs: dict[str, Run] = Field(default_factory=dict)           # protocol x models (${testleak_runs:runs})
    calibration_runs: dict[str, RunPlan] = Field(default_factory=dict)
    ablations: dict[str, AblationFlags] = Field(default_factory=dict)   # named ablations the runs refer to

    @model_validator(mode="after")
    def _runs(self):
        if not self.runs and not self.calibration_runs:
            raise _rule("runs", {}, "at least one run (or calibration_runs)")
        bad_ids = [m for m in self.models if not m or not all(c.isalnum() or c in "_-" for c in m)]
        if bad_ids:
            raise _rule("models", bad_ids, "model ids of letters, digits, _ and - (they name runs and DVC stages)")
        names = [m.name for m in self.models.values()]
        if len(set(names)) != len(names):
            raise _rule("models", names, "distinct model names (reports and records identify a model by name; "
                        "override `name` of a repeated config)")
        bad = [r for r in self.library_from if r not in self.runs]
        if bad:
            raise _rule("library_from", bad, f"names of experiment.runs ({', '.join(self.runs) or 'none'})")
        if self.baseline_budget == "match_ours":
            if self.baseline_max_responses is None:
                raise _rule("baseline_max_responses", None, "an integer >= 1 (the hard cap on a baseline's responses "
                            "under baseline_budget: match_ours)")
            if self.calibration_runs and not any(r.method == "ours" for r in self.calibration_runs.values()):
                raise _rule("baseline_budget", "match_ours", "an integer >= 1: experiment.calibration_runs has no run "
                            "of method ours to match (testleak/canary/pipeline.py)")
            if any(r.method != "ours" for r in self.protocol.values()) and not any(
                    r.method == "ours" for r in self.protocol.values()):
                raise _rule("baseline_budget", "match_ours", "an integer >= 1: experiment.protocol has no run of "
                            "method ours to match")
        differ = [r for r, f in self.library_from.items() if f.library != self.runs[r].library]
        if differ:
            raise _rule("library_from", differ, "each run's own library (compose it from experiment.runs.RUN.library)")
        return self
