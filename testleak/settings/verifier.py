"""conf/verifier/ and conf/review/: the judge, the corpus search backends and the review policy."""

from __future__ import annotations

from pathlib import Path
from pydantic import Field, field_validator, model_validator

from ..net.urls import mask_url, url_problem
from .. import registry
from ._base import _Range, _Strict, _known
from .messages import _rule
from .models import Sampling


class Window(_Range):
    min: int = Field(ge=0)
    max: int = Field(ge=0)


class JudgeSettings(_Strict):
    examples: int = Field(ge=0)
    sampling: Sampling


class CorpusExclusion(_Strict):
    name: str                     # a distribution name or glob (normalized: lower case, -_. as -)
    why: str = Field(min_length=1)


class LocalSearch(_Strict):
    case_sensitive: bool
    corpus: str
    dirs: list[str]
    extensions: list[str]
    max_file_bytes: int = Field(ge=1)
    max_files: int = Field(ge=0)
    max_bytes: int = Field(ge=0)  # 0: no limit
    compress: bool
    max_hits_listed: int = Field(ge=1)
    lock_file: str | None         # corpus site-packages: the installed versions must equal this lock
    exclude: list[CorpusExclusion] = Field(default_factory=list)   # site-packages kept out of the corpus


class GitHubSearch(_Strict):
    api_url: str
    token_envs: list[str] = Field(min_length=1)
    requests_per_minute: float = Field(gt=0)
    window_seconds: float = Field(gt=0)
    per_page: int = Field(ge=1, le=100)
    max_pages: int = Field(ge=1)
    max_hits: int = Field(ge=1)
    timeout: float = Field(gt=0)
    max_retries: int = Field(ge=0)
    max_wait_seconds: float = Field(gt=0)
    deadline: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _url(self):
        problem = url_problem(self.api_url)
        if problem:
            raise _rule("api_url", mask_url(self.api_url), problem + "; tokens come from token_envs")
        return self


class InfiniGramSettings(_Strict):
    max_docs_counted: int = Field(ge=1)
    shards: int = Field(ge=1)
    mem_gib: int = Field(ge=1)


class Verifier(_Strict):
    backend: str
    judge_mode: str
    judge: JudgeSettings
    index: str = Field(pattern=r"^data/")
    window: Window
    min_query_chars: int = Field(ge=1)
    local: LocalSearch
    github: GitHubSearch
    infinigram: InfiniGramSettings

    @field_validator("backend")
    @classmethod
    def _backend(cls, v):
        return _known(v, registry.BACKENDS)

    @field_validator("judge_mode")
    @classmethod
    def _judge_mode(cls, v):
        return _known(v, registry.JUDGE_MODES)

    @model_validator(mode="after")
    def _index_for_backend(self):
        if self.infinigram_index != (self.backend == "infinigram"):
            want = "a directory for the infini-gram index (e.g. data/index/infinigram)" if self.backend == "infinigram" \
                else "an SQLite database path ending in .sqlite (e.g. data/index/corpus.sqlite)"
            raise _rule("index", self.index, f"{want} for backend {self.backend}")
        return self

    @property
    def infinigram_index(self) -> bool:
        return not self.index.endswith(".sqlite")


class Review(_Strict):
    policy: str
    reviewers: list[str]
    labels_file: str = Field(default="labels/labels.jsonl", min_length=1)

    @field_validator("policy")
    @classmethod
    def _policy_name(cls, v):
        return _known(v, registry.POLICIES)

    @model_validator(mode="after")
    def _policy(self, info):
        if self.policy == "auto":
            return self
        need = 2 if self.policy == "both_yes" else 1
        if len(set(self.reviewers)) < need or len(set(self.reviewers)) != len(self.reviewers):
            raise _rule("reviewers", self.reviewers,
                        f"{'two' if need == 2 else 'at least one'} distinct reviewer name(s) for policy {self.policy}")
        ctx = info.context or {}
        root = Path(ctx.get("root") or ".")
        if ctx.get("check_files", True) and not (root / self.labels_file).is_file():
            raise _rule("labels_file", self.labels_file,
                        f"an existing labels file for policy {self.policy} (label first: testleak review --reviewer "
                        f"{self.reviewers[0]}; or use review=auto)")
        return self
