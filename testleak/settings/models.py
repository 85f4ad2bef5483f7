"""The model groups (conf/model/, conf/judge/, conf/questioner/): one LLM config each."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ..net.urls import mask_url, url_problem
from ._base import _Strict
from .messages import _rule


class Gguf(_Strict):
    file: str
    packages: list[str] = Field(min_length=1)
    version: str
    size: int | None = Field(default=None, ge=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Server(_Strict):
    """The embedded llama.cpp servers (testleak.llm.local): fixed numerics, replicas for throughput."""
    n_ctx: int = Field(ge=256)
    n_parallel: int = Field(ge=1)             # slots per server; > 1 batches requests (not deterministic)
    n_threads: int = Field(ge=1)              # fixed: the thread split changes llama.cpp's numerics
    cache_prompt: bool                        # true reuses earlier prompts' KV (not deterministic)
    replicas: Annotated[int, Field(ge=1)] | Literal["auto"]   # auto: one per CPU this process may use
    startup_timeout: float = Field(gt=0)


class Sampling(_Strict):
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    logprobs: bool | None = None


class Limits(_Strict):
    """How the gateway (testleak/llm/gateway.py) sends a model's requests: in flight at once, rate
    limits (null: none), and its retry policy (testleak/net/retry.py)."""
    concurrency: int = Field(ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout: float = Field(gt=0)              # seconds per attempt
    max_retries: int = Field(ge=0)
    deadline: float = Field(gt=0)             # seconds per request across all its attempts and waits
    # failed calls in a row after which the gateway sends nothing more (testleak/llm/gateway.py)
    max_consecutive_failures: int = Field(default=8, ge=1)


class Price(_Strict):
    """USD per 1M tokens, read on ``as_of`` (a date, YYYY-MM-DD) from ``source``; local models: 0."""
    prompt_usd_per_1m: float = Field(ge=0)
    completion_usd_per_1m: float = Field(ge=0)
    as_of: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    source: str | None = None


class LLM(_Strict):
    name: str = Field(min_length=1)
    family: str
    provider: Literal["local", "openai"]
    api_model: str = Field(min_length=1)
    base_url: str | None = None
    base_url_env: str | None = None
    api_key_env: str | None = None
    gguf: Gguf | None = None
    server: Server | None = None
    sampling: Sampling
    limits: Limits
    price: Price | None = None    # null: unknown (no cost in `testleak plan`; budget.usd refuses it)

    @model_validator(mode="after")
    def _provider(self):
        if self.provider == "local" and self.gguf is None:
            raise _rule("gguf", None, "a gguf section (file, packages, version, sha256) for provider local")
        if self.provider == "openai" and not (self.base_url or self.base_url_env):
            raise _rule("base_url", None, "base_url or base_url_env for provider openai")
        if self.base_url is not None:
            problem = url_problem(self.base_url)
            if problem:
                if "user-info" in problem:   # name the variable that may hold a URL with credentials
                    var = self.base_url_env or (f"{self.api_key_env.removesuffix('_API_KEY')}_BASE_URL"
                                                if self.api_key_env else "TESTLEAK_BASE_URL")
                    problem += (f"; put the URL with them in the environment variable {var}"
                                + ("" if self.base_url_env else f" and set base_url_env: {var}, base_url: null"))
                raise _rule("base_url", mask_url(self.base_url), problem)
        return self
