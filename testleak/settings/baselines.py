"""conf/baselines/: CodexLeaks and Codebreaker."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .. import registry
from ._base import _Strict, _known
from .messages import _rule
from .models import Sampling


class Completion(_Strict):
    mode: str
    prefill_user: str
    system: str
    user: str


class BlindMI(_Strict):
    """Blind-MI-Diff, the rule of CodexLeaks' code (testleak/baselines/published.py)."""
    nonmembers: Literal["split", "generated"]
    band: list[float] = Field(min_length=2, max_length=2)  # initial member band (percentiles of the feature), split
    generated: int = Field(ge=1)                   # generated non-member reference samples, generated
    scorer: str | None = None                      # key of library.division.models: the target model's GGUF
    batch: int = Field(ge=1)
    seed: int

    @model_validator(mode="after")
    def _band(self):
        lo, hi = self.band
        if not 0 <= lo < hi <= 1:
            raise _rule("band", list(self.band), "two percentiles [lo, hi] with 0 <= lo < hi <= 1")
        return self


class CodexLeaksFilter(_Strict):
    """CodexLeaks' blind membership-inference filter (testleak/baselines/published.py)."""
    rule: Literal["blind_mi_diff", "rank"]
    blind_mi: BlindMI
    reference: str = Field(min_length=1)           # zlib | a key of the scorer models (library.division.models_file) (rule rank)
    top_share: float = Field(gt=0, le=1)           # rule rank
    unranked: Literal["keep", "drop"]


class CodexLeaks(_Strict):
    resource: str
    samples_per_prompt: int = Field(ge=1)
    zh_share: float = Field(ge=0, le=1)
    sampling: Sampling
    filter: CodexLeaksFilter
    by_family: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Operators(_Strict):
    crossover: float = Field(ge=0)
    insert: float = Field(ge=0)
    replace: float = Field(ge=0)
    delete: float = Field(ge=0)
    typo: float = Field(ge=0)


class EntropyCfg(_Strict):
    eps: float = Field(gt=0)
    min_samples: int = Field(ge=1)
    base: float = Field(gt=1)


class CodeBreaker(_Strict):
    resource: str
    codexleaks_seeds: int = Field(ge=0)
    samples_per_prompt: int = Field(ge=1)
    population: int = Field(ge=1)
    parents: int = Field(ge=1)
    children: int = Field(ge=1)
    max_iterations: int = Field(ge=0)
    patience: int = Field(ge=1)   # non-improving iterations before the epoch stops (>= 1: 0 would stop unseen)
    min_improvement: float
    restart_on_stall: bool
    crossover_words: int = Field(ge=1)
    operators: Operators
    entropy: EntropyCfg
    entropy_weight: float = Field(ge=0)
    sampling: Sampling
    by_family: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Baselines(_Strict):
    protocol: str       # the baselines' verification (testleak/baselines/published.py)
    attributes: str | list[str]   # experiment | all | a list of attributes (testleak/baselines/common.py)
    completion: Completion
    codexleaks: CodexLeaks
    codebreaker: CodeBreaker

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v):
        return _known(v, registry.BASELINE_PROTOCOLS)
