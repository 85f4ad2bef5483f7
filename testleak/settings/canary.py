"""conf/canary/: planted canaries, the LoRA fine-tune and the calibration runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .. import registry
from ._base import _Range, _Strict, _known
from .messages import _rule


class FileBytes(_Range):
    min: int = Field(ge=1)
    max: int = Field(ge=1)


class Finetune(_Strict):
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)
    max_grad_norm: float = Field(ge=0)      # gradient clipping; 0 = off (testleak/canary/finetune.py)
    lora_r: int = Field(ge=1)
    lora_alpha: int = Field(ge=1)
    lora_dropout: float = Field(ge=0, lt=1)
    target_modules: list[str] = Field(min_length=1)
    max_tokens: int = Field(ge=16)          # tokens of a training window
    context_lines: int = Field(ge=0)
    clean_windows: int = Field(ge=0)
    max_steps: int = Field(ge=0)
    threads: int = Field(ge=1)
    eval_every: int = Field(ge=0)


class CanaryExposure(_Strict):
    alternatives: int = Field(ge=1)          # R same-format alternatives per canary (testleak/canary/exposure.py)
    batch_tokens: int = Field(ge=16)         # continuation tokens per scoring batch
    bands: list[float] = Field(min_length=1)  # report: exposure band edges in bits, increasing

    @model_validator(mode="after")
    def _increasing(self):
        if any(b <= a for a, b in zip(self.bands, self.bands[1:])) or any(b < 0 for b in self.bands):
            raise _rule("bands", self.bands, "increasing band edges >= 0 (bits), e.g. [2, 5, 8]")
        return self


class CanaryPrefixProbe(_Strict):
    """The prefix probe (testleak/canary/probe.py)."""
    max_chars: int = Field(ge=1)             # prompt: the canary's training window up to the value, its tail
    temperature: float = Field(ge=0)         # 0 = greedy
    max_tokens: int = Field(ge=1)            # completion tokens per canary
    stop: list[str]                          # stop sequences of the continuation
    per_seed: bool                           # one run per elicitation seed (else at the first seed only)


class Canary(_Strict):
    spec: str | None = None                  # JSONL of user canaries (testleak/canary/spec.py); null = Faker
    spec_dep: str = Field(min_length=1)      # DVC dep of canary_corpus: the spec, else the example (testleak/config.py)
    duplication: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    exposure: CanaryExposure
    n: int = Field(ge=1)
    seed: int
    seeds: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)   # elicitation seeds (testleak/canary/pipeline.py)
    files: int = Field(ge=1)
    file_bytes: FileBytes
    attributes: list[str]
    check_index: bool
    finetune: Finetune
    gguf_type: str
    models: list[Literal["tuned", "control"]] = Field(min_length=1)
    judge_mode: str                          # verifier.judge_mode of the calibration runs
    max_tokens: Annotated[int, Field(ge=16)] | None = None   # completion tokens per request of the calibration runs; null: the model's
    prefix_probe: CanaryPrefixProbe

    @field_validator("judge_mode")
    @classmethod
    def _judge_mode(cls, v):
        return _known(v, registry.JUDGE_MODES)

    @model_validator(mode="after")
    def _distinct_seeds(self):
        if len(set(self.seeds)) != len(self.seeds):
            raise _rule("seeds", self.seeds, "distinct elicitation seeds >= 0, e.g. [0, 1, 2]")
        return self

    @model_validator(mode="after")
    def _spec_file(self, info):
        ctx = info.context or {}
        if self.spec is not None:
            root = Path(ctx.get("root") or ".")
            p = Path(self.spec) if Path(self.spec).is_absolute() else root / self.spec
            if not self.spec.strip():
                raise _rule("spec", self.spec, "a path to a JSONL file of canaries, or null (Faker canaries)")
            if ctx.get("check_files", True) and not p.is_file():
                raise _rule("spec", self.spec, "an existing JSONL file of canaries (relative to the project root), "
                                               "or null (Faker canaries)")
        return self
