"""The typed schema of the composed configuration (params.yaml): one model per config group.

Every group of conf/ has a pydantic model here with its types, ranges and cross-field rules;
unknown keys are rejected at every level (a misspelt key, also one added with Hydra's ``+``).
:func:`validate` checks a composed config and raises :class:`~testleak.errors.ConfigError`
whose message has one line per problem, each naming the key, the value, what was expected
and where the value came from (the conf/ file or the command-line override, or params.yaml).

``testleak params`` and :func:`testleak.config.compose` validate after composing;
:func:`testleak.config.load_params` validates again when a stage reads params.yaml.

Models are strict: ``3.7``, ``"ten"`` or ``true`` are not integers; integers are accepted
where a number is expected. Free-form mappings (``sampling.extra_body``, ``taxonomy``
lexicons) are typed as such.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from .errors import ConfigError
from .net.urls import mask_url, mask_urls_in_text, url_problem

SCHEMA_VERSION = 1

PosInt = int  # annotated below with Field(ge=1)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# ----------------------------------------------------------------------------- taxonomy

class Attribute(_Strict):
    category: str
    label: str
    slot: str
    description: str
    lexicon: list[str] = Field(min_length=1)
    lexicon_i18n: list[str] = Field(default_factory=list)


class Scenario(_Strict):
    domain: str
    title: str
    attributes: list[str] = Field(min_length=1)


_SOURCE_ROOT = Path(__file__).resolve().parent.parent   # testleak.config.ROOT (no import: no cycle)


def load_taxonomy_file(file: str, root: Path) -> dict:
    """The data of a taxonomy file (``taxonomy.file`` of params.yaml: categories, attributes,
    scenarios), relative to the project directory ``root``, else to the testleak source checkout
    (:func:`load_yaml_data`). Stages that read it declare ``${taxonomy.file}`` as a DVC dep
    (testleak/graph.py)."""
    return load_yaml_data(file, root, "taxonomy file")


def _data_file(info, key: str, file: str, reader, what: str):
    """The data of a file that params.yaml names (taxonomy, scorer models, Presidio entities), read
    with ``reader(file, root)`` at composition (validation context ``check_files``, the default);
    None in a stage's load of params.yaml (only the stages that declare the file as a DVC dep read
    it). A bad file is one line naming the key: :func:`_rule`."""
    ctx = info.context or {}
    if not ctx.get("check_files", True):
        return None
    try:
        return reader(file, Path(ctx.get("root") or "."))
    except ConfigError as e:
        raise _rule(key, file, f"{what} ({e})") from None


def read_taxonomy(file: str, root: Path) -> dict:
    """The checked data of a taxonomy file (:func:`load_taxonomy_file`, then :class:`TaxonomyData`);
    :class:`ConfigError` with one line naming the file and the first problem."""
    raw = load_taxonomy_file(file, root)
    try:
        TaxonomyData.model_validate(raw)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = [str(x) for x in err["loc"]]
        exc = (err.get("ctx") or {}).get("error")
        what = (f"{'.'.join(loc + [exc.key])} = {_fmt(exc.value)}: expected {exc.expected}"
                if isinstance(exc, _Rule) else f"{'.'.join(loc)}: {err['msg']}")
        raise ConfigError(f"taxonomy file {file}: {what}") from None
    return raw


class TaxonomyData(_Strict):
    categories: list[str] = Field(min_length=1)
    attributes: dict[str, Attribute] = Field(min_length=1)
    scenarios: dict[str, Scenario] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self):
        for k, a in self.attributes.items():
            if a.category not in self.categories:
                raise _rule(f"attributes.{k}.category", a.category, f"one of the categories {self.categories}")
        for k, s in self.scenarios.items():
            bad = [a for a in s.attributes if a not in self.attributes]
            if bad:
                raise _rule(f"scenarios.{k}.attributes", bad, f"attribute keys of taxonomy.attributes")
        return self


class Taxonomy(_Strict):
    """conf/taxonomy/: the taxonomy's ``name`` and its data ``file`` (categories, attributes,
    scenarios; relative to the project root), a DVC dep of every stage that reads it
    (testleak/graph.py). The data is a file, not params: ``dvc exp show`` lists every key of
    params.yaml, and the taxonomy alone made ~115 columns."""
    name: str = Field(min_length=1)
    file: str = Field(min_length=1)
    _data: TaxonomyData | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self, info):
        # composition (check_files) reads and checks the file; a stage loading params.yaml does
        # not (only the stages that declare the file as a dep read it: Taxonomy.from_config)
        data = _data_file(info, "file", self.file, read_taxonomy, "an existing, valid taxonomy file")
        if data is not None:
            self._data = TaxonomyData.model_validate(data)
        return self

    @property
    def attributes(self) -> dict:
        return self._data.attributes

    @property
    def scenarios(self) -> dict:
        return self._data.scenarios

    @property
    def categories(self) -> list:
        return self._data.categories


# ----------------------------------------------------------------------------- models

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
    concurrency: int = Field(ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout: float = Field(gt=0)
    max_retries: int = Field(ge=0)
    # per-request deadline across retries (issue 19 item 4, http helper); optional here
    deadline: float | None = Field(default=None, gt=0)
    # failed calls in a row after which the gateway sends nothing more (testleak/llm/gateway.py;
    # unset: MAX_CONSECUTIVE_FAILURES there)
    max_consecutive_failures: int | None = Field(default=None, ge=1)


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


# ----------------------------------------------------------------------------- experiment

class AblationFlags(_Strict):
    name: str
    scenario_questions: bool
    library_hints: bool
    test_generation: bool


class RunPlan(_Strict):
    """A run of one model (``experiment.protocol``, ``experiment.calibration_runs``)."""
    method: Literal["ours", "codexleaks", "codebreaker"]
    round: int = Field(ge=0)
    library: str = Field(min_length=1)
    # the flags, resolved at composition (conf/experiment: '${ablation}' or '${experiment.ablations.X}')
    ablation: AblationFlags | None = None
    # a baseline run's verification protocol; None: baselines.protocol
    verification: Literal["published", "shared"] | None = None


class RunBudget(_Strict):
    """What a run may spend (testleak/equalcost.py), resolved at composition: ``own`` (ours),
    ``responses`` (a fixed number of LLM responses) or ``match_ours`` (the completion tokens of the
    same model's run of ours, ``reference``, with at most ``max_responses``); ``reads``: the file
    the budget is read from (a DVC dep of responses@RUN)."""
    kind: Literal["own", "responses", "match_ours"]
    responses: int | None = Field(default=None, ge=1)
    reference: str | None = None
    max_responses: int | None = Field(default=None, ge=1)
    unit: Literal["responses", "test_cases", "completion_tokens", "tokens", "usd"] | None = None   # match_ours
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
    # the unit match_ours matches in (testleak/equalcost.py UNITS); null: completion tokens
    baseline_unit: Literal["responses", "test_cases", "completion_tokens", "tokens", "usd"] | None = None

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


# ----------------------------------------------------------------------------- verifier / review

class _Range(_Strict):
    """A ``{min, max}`` pair with min <= max (subclasses set the bounds of each)."""

    @model_validator(mode="after")
    def _order(self):
        if self.min > self.max:
            raise _rule("", {"min": self.min, "max": self.max}, "min <= max")
        return self


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
    backend: Literal["local", "infinigram", "github"]
    judge_mode: Literal["rules", "judge", "both"]
    judge: JudgeSettings
    index: str = Field(pattern=r"^data/")
    window: Window
    min_query_chars: int = Field(ge=1)
    local: LocalSearch
    github: GitHubSearch
    infinigram: InfiniGramSettings

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
    policy: Literal["auto", "both_yes", "yes_or_likely"]
    reviewers: list[str]
    labels_file: str = Field(min_length=1)

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


# ----------------------------------------------------------------------------- library / baselines / canary

class CausalScorer(_Strict):
    name: str
    family: str | None = None
    dtype: Literal["float32", "bfloat16", "float16"]
    gguf: Gguf


def load_yaml_data(file: str, root: Path, what: str) -> dict:
    """A YAML mapping that params.yaml names by path (relative to the project directory ``root``,
    else to the testleak source checkout); :class:`ConfigError` naming ``what`` otherwise."""
    import yaml

    p = Path(file)
    if not p.is_absolute():
        p = Path(root) / file if (Path(root) / file).is_file() else _SOURCE_ROOT / file
    if not p.is_file():
        raise ConfigError(f"{what} {p} not found (relative to the project root)")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {p} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {p} is not a mapping")
    return data


def read_scorer_models(file: str, root: Path) -> dict:
    """The checked scorer models of ``library.division.models_file`` (key -> :class:`CausalScorer`)."""
    raw = load_yaml_data(file, root, "scorer models file")
    bad = []
    for k, v in raw.items():
        try:
            CausalScorer.model_validate(v)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            bad.append(f"{k}.{'.'.join(str(x) for x in err['loc'])}: {err['msg']}")
    if bad or not raw:
        raise ConfigError(f"scorer models file {file}: {'; '.join(bad) or 'no model'}")
    return raw


class Division(_Strict):
    scorer: str
    mlm_path: str | None = None
    quantile: float = Field(gt=0, lt=1)
    value_span: str
    min_fragment_chars: int = Field(ge=1)
    context_lines: int = Field(ge=0)
    max_chars: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    model: str = Field(min_length=1)
    # the scorer models by key: a data file (testleak/resources/scorer_models.yaml), a DVC dep of the
    # stages that load a scorer (testleak/graph.py), read and checked at composition
    models_file: str = Field(min_length=1)
    _models: dict | None = PrivateAttr(default=None)

    @property
    def models(self) -> dict | None:
        """The scorer models by key (None in a stage's load of params.yaml: checked at composition)."""
        return self._models

    @model_validator(mode="after")
    def _known_model(self, info):
        self._models = _data_file(info, "models_file", self.models_file, read_scorer_models,
                                  "an existing, valid scorer models file")
        if self._models is None:
            return self
        if self.model not in self._models:
            raise _rule("model", self.model, f"a key of the scorer models {self.models_file} "
                        f"({', '.join(sorted(self._models))})")
        return self


class Eps(_Strict):
    templates: float = Field(gt=0)
    fragments: float = Field(gt=0)


class Clustering(_Strict):
    encoder: str
    eps: Eps
    min_samples: int = Field(ge=1)
    metric: str
    include_prior: bool
    neutral_slot: str
    min_similarity: float = Field(ge=-1, le=1)


class Figures(_Strict):
    projection: Literal["pca", "tsne"]


class Library(_Strict):
    prior: str = Field(min_length=1)
    division: Division
    clustering: Clustering
    figures: Figures
    torch_threads: int = Field(ge=1)   # fixed: torch's thread split changes float reductions


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
    patience: int = Field(ge=0)
    min_improvement: float
    restart_on_stall: bool
    crossover_words: int = Field(ge=1)
    operators: Operators
    entropy: EntropyCfg
    entropy_weight: float = Field(ge=0)
    sampling: Sampling
    by_family: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Baselines(_Strict):
    protocol: Literal["published", "shared"]       # the baselines' verification (testleak/baselines/published.py)
    attributes: str
    completion: Completion
    codexleaks: CodexLeaks
    codebreaker: CodeBreaker


class FileBytes(_Range):
    min: int = Field(ge=1)
    max: int = Field(ge=1)


class Finetune(_Strict):
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)
    max_grad_norm: float = Field(gt=0)
    lora_r: int = Field(ge=1)
    lora_alpha: int = Field(ge=1)
    lora_dropout: float = Field(ge=0, lt=1)
    target_modules: list[str] = Field(min_length=1)
    max_tokens: int = Field(ge=1)
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
    judge_mode: Literal["rules", "judge", "both"]

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


# ----------------------------------------------------------------------------- presidio

class Presidio(_Strict):
    """conf/presidio/: Presidio's analyzer offline (testleak/presidio.py)."""
    model: str = Field(min_length=1)        # installed spaCy pipeline package
    language: str = Field(min_length=2)
    score_threshold: float = Field(ge=0, le=1)
    # entity type -> attribute (null = unmapped, counted): a data file (testleak/resources/
    # presidio_entities.yaml), a DVC dep of the stages that declare presidio; read at composition
    entities_file: str = Field(min_length=1)
    _entities: dict | None = PrivateAttr(default=None)

    @property
    def entities(self) -> dict | None:
        """The entity table (None in a stage's load of params.yaml: checked at composition)."""
        return self._entities

    @model_validator(mode="after")
    def _load(self, info):
        self._entities = _data_file(info, "entities_file", self.entities_file, read_presidio_entities,
                                    "an existing, valid entity table")
        return self


def read_presidio_entities(file: str, root: Path) -> dict:
    """The entity table of ``presidio.entities_file``: ``{entity type: attribute or None}``."""
    raw = load_yaml_data(file, root, "presidio entities file")
    bad = [f"{k}: {v!r}" for k, v in raw.items() if not (v is None or (isinstance(v, str) and v))]
    if bad:
        raise ConfigError(f"presidio entities file {file}: expected entity type -> attribute or null, got "
                          + ", ".join(bad))
    return raw


# ----------------------------------------------------------------------------- answers

#: What the stages label their LLM calls with (``purpose``; the call log, ``answers``).
PURPOSES = ("questions", "code turn", "test turn", "codexleaks prompts", "codebreaker prompts", "judge", "cli")


class Answers(_Strict):
    """What an LLM answer must be to count as one (testleak/llm/answers.py), per purpose
    (:data:`PURPOSES`): ``whole``: the purposes whose answer cut by ``max_tokens`` is a failure
    (for the others a cut answer is data, its ``finish_reason`` recorded, unless the purpose's
    reader finds no answer in it); ``max_chars``: the
    largest answer per purpose (``default`` for the others); ``max_candidates_per_response``: the
    candidates the candidates stage keeps of one response (the others counted)."""
    whole: list[str] = Field(default_factory=list)
    max_chars: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: {"default": 65536, "judge": 4096})
    max_candidates_per_response: int = Field(default=200, ge=1)

    @model_validator(mode="after")
    def _purposes(self):
        bad = [p for p in self.whole if p not in PURPOSES]
        if bad:
            raise _rule("whole", bad, f"purposes of LLM calls ({', '.join(PURPOSES)})")
        if "default" not in self.max_chars:
            raise _rule("max_chars", self.max_chars, "a mapping with a 'default' entry (characters)")
        bad = [p for p in self.max_chars if p != "default" and p not in PURPOSES]
        if bad:
            raise _rule("max_chars", bad, f"'default' or purposes of LLM calls ({', '.join(PURPOSES)})")
        return self

    def max_chars_for(self, purpose: str | None) -> int:
        return self.max_chars.get(purpose or "", self.max_chars["default"])


# ----------------------------------------------------------------------------- budget

class Budget(_Strict):
    """Spending cap of the experiment's LLM calls (null: no cap); see testleak/llm/budget.py."""
    usd: float | None = Field(default=None, gt=0)
    completion_tokens: int | None = Field(default=None, ge=1)


# ----------------------------------------------------------------------------- root

class Settings(_Strict):
    taxonomy: Taxonomy
    model: LLM
    judge: LLM
    questioner: LLM
    experiment: Experiment
    ablation: AblationFlags
    verifier: Verifier
    review: Review
    library: Library
    baselines: Baselines
    canary: Canary | None = None   # composed by the canary experiments only (conf/experiment/canary*.yaml)
    presidio: Presidio
    seed: int
    max_error_share: float = Field(ge=0, le=1)
    budget: Budget = Field(default_factory=Budget)
    answers: Answers = Field(default_factory=Answers)
    # written by the composition's resolver (testleak.config, conf/config.yaml): the schema it passed
    validated_by: str | None = None

    @model_validator(mode="after")
    def _cross(self):
        if self.experiment.canary and self.canary is None:
            raise _rule("canary", None, "the canary group (conf/canary/: the experiment runs the canary stages; "
                        "compose it in the experiment's defaults: - /canary@_global_.canary: default)")
        for r, run in self.experiment.runs.items():
            m = self.model if run.model_params == "model" else self.experiment.models.get(
                run.model_params.removeprefix("experiment.models."))
            if m is None or m.name != run.model:
                raise _rule(f"experiment.runs.{r}.model", run.model,
                            f"the name of the model config at {run.model_params} "
                            f"({m.name if m else 'no such key'}): recompose params.yaml with `testleak params`")
        if self.taxonomy._data is None:   # a stage loading params.yaml: checked at composition
            return self._cross_models()
        bad = [s for s in self.experiment.scenarios if s not in self.taxonomy.scenarios]
        if bad:
            raise _rule("experiment.scenarios", bad,
                        f"scenario keys of the taxonomy ({', '.join(self.taxonomy.scenarios)})")
        for entity, attr in (self.presidio.entities or {}).items():
            if attr is not None and attr not in self.taxonomy.attributes:
                raise _rule(f"presidio.entities.{entity}", attr, "an attribute of the taxonomy, or null (unmapped)")
        return self._cross_models()

    def _cross_models(self):
        if self.library.division.models is None:   # a stage loading params.yaml: checked at composition
            return self._cross_budget()
        ref = self.baselines.codexleaks.filter.reference
        if ref != "zlib" and ref not in self.library.division.models:
            raise _rule("baselines.codexleaks.filter.reference", ref,
                        f"zlib or a key of the scorer models (library.division.models_file) ({', '.join(self.library.division.models)})")
        bmi = self.baselines.codexleaks.filter.blind_mi
        if bmi.scorer is not None and bmi.scorer not in self.library.division.models:
            raise _rule("baselines.codexleaks.filter.blind_mi.scorer", bmi.scorer,
                        f"null or a key of the scorer models (library.division.models_file) ({', '.join(self.library.division.models)})")
        if bmi.nonmembers == "generated" and bmi.scorer is None:
            raise _rule("baselines.codexleaks.filter.blind_mi.scorer", None,
                        "a key of the scorer models (library.division.models_file) whose GGUF is the target model (nonmembers: generated "
                        f"scores its generated non-members with it): {', '.join(self.library.division.models)}")
        return self._cross_budget()

    def _cross_budget(self):
        if self.budget.usd is not None:
            for role in ("questioner", "model", "judge"):
                m = getattr(self, role)
                if m.price is None:
                    raise _rule("budget.usd", self.budget.usd,
                                f"a price for every model it caps: {role} {m.name!r} has price null (set "
                                f"{role}.price in conf/{role}/{m.name}.yaml or remove budget.usd)")
        return self


# ----------------------------------------------------------------------------- validation

class _Rule(ValueError):
    """A cross-field rule broken at ``key`` (relative to the model that checks it)."""

    def __init__(self, key: str, value, expected: str):
        super().__init__(f"{key}|{expected}")
        self.key, self.value, self.expected = key, value, expected


def _rule(key: str, value, expected: str) -> _Rule:
    return _Rule(key, value, expected)


def _fmt(value) -> str:
    if isinstance(value, str):
        return repr(value) if value else "''"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    s = repr(value)
    return s if len(s) <= 80 else s[:77] + "..."


def _lookup(data, loc: Sequence) -> tuple[bool, Any]:
    cur = data
    for k in loc:
        if isinstance(cur, Mapping) and k in cur:
            cur = cur[k]
        elif isinstance(cur, list) and isinstance(k, int) and k < len(cur):
            cur = cur[k]
        else:
            return False, None
    return True, cur


def _field(loc: Sequence):
    """The pydantic FieldInfo and model class for a location, when the path is typed."""
    model, info = Settings, None
    for k in loc:
        if isinstance(model, _DictOf):          # a mapping's entry (experiment.models.ID, experiment.runs.R)
            model = model.inner
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            info, model = None, None
            continue
        info = model.model_fields.get(str(k))
        if info is None:
            return None, model
        model = _model_of(info.annotation)
    return info, model


def _model_of(ann):
    import typing

    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    origin = typing.get_origin(ann)
    if origin is dict and len(args) == 2:
        return _DictOf(_model_of(args[1]))
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


class _DictOf:
    def __init__(self, inner):
        self.inner = inner


def _known_keys(loc: Sequence) -> list[str]:
    model = Settings
    for k in loc:
        if isinstance(model, _DictOf):
            model = model.inner
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        info = model.model_fields.get(str(k))
        if info is None:
            return []
        model = _model_of(info.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []


_TYPE_WORDS = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
               "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
               "string_type": "a string", "list_type": "a list", "dict_type": "a mapping",
               "model_type": "a mapping", "none_required": "null"}


def _constraints(info) -> str:
    if info is None:
        return ""
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v}")
        if getattr(m, "min_length", None):
            parts.append("non-empty")
    return " ".join(parts)


def _expectation(err: dict, loc: Sequence) -> str:
    t = err["type"]
    info, _ = _field(loc)
    if t == "extra_forbidden":
        known = _known_keys(loc[:-1])
        parent = ".".join(str(x) for x in loc[:-1]) or "the config"
        return f"a known key of {parent}" + (f" ({', '.join(known)})" if known else "") + "; check the spelling"
    if t == "missing":
        return "a value (the key is required)"
    if t == "literal_error":
        return f"one of {err.get('ctx', {}).get('expected', '')}"
    if t in ("too_short",) and err.get("ctx", {}).get("min_length") == 1:
        return "a non-empty list"
    if t in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        base = "an integer" if info is not None and info.annotation in (int, int | None) else "a number"
        return f"{base} {_constraints(info)}".strip()
    if t in _TYPE_WORDS:
        c = _constraints(info)
        return f"{_TYPE_WORDS[t]}{(' ' + c) if c else ''}"
    return err["msg"][0].lower() + err["msg"][1:]


def _source(key: str, overrides: Sequence[str], choices: Mapping[str, str] | None, file: str | None) -> str:
    """Where the value at ``key`` came from: the most specific override (URL user-info masked),
    else the conf/ file of its group option (or params.yaml when validating a written file)."""
    overrides = [mask_urls_in_text(mask_url(o)) if "@" in o else o for o in overrides]
    best = None
    for o in overrides:
        k = o.split("=", 1)[0].lstrip("+~")
        if (key == k or key.startswith(k + ".")) and (best is None or len(k) > len(best[0])):
            best = (k, o)
    group = key.split(".", 1)[0]
    if best is not None and not (choices and best[0] == group and group in choices):
        return f"override '{best[1]}'"
    inner = [o for o in overrides if o.split("=", 1)[0].lstrip("+~").startswith(key + ".")]
    if inner:  # a rule over a mapping whose entries were overridden
        return "override " + ", ".join(f"'{o}'" for o in inner)
    if file:
        return file
    if choices and group in choices and choices[group]:
        src = f"conf/{group}/{choices[group]}.yaml"
        return src + (f", chosen by override '{best[1]}'" if best else "")
    return "conf/config.yaml"


def problems(data: Mapping, *, overrides: Sequence[str] = (), choices: Mapping[str, str] | None = None,
             file: str | None = None, root: str | os.PathLike | None = None, check_files: bool = True) -> list[str]:
    """One line per problem of the composed config ``data`` (empty when it is valid).

    ``check_files``: also require the files the config names to exist (the review labels
    file of a two-reviewer policy). Composition checks them; a stage loading params.yaml
    does not (a labelling session may come after the stages that do not read labels)."""
    try:
        Settings.model_validate(data, context={"root": str(root or "."), "check_files": check_files})
        return []
    except ValidationError as e:
        out = []
        for err in e.errors(include_url=False):
            loc = [str(x) for x in err["loc"] if not (isinstance(x, str) and "[" in x)]
            exc = (err.get("ctx") or {}).get("error")
            if isinstance(exc, _Rule):
                loc = loc + [p for p in exc.key.split(".") if p]
                key, value, expected = ".".join(loc), exc.value, exc.expected
            else:
                key = ".".join(loc)
                found, value = _lookup(data, err["loc"])
                value = value if found else err.get("input")
                expected = _expectation(err, err["loc"])
            shown = "(missing)" if err["type"] == "missing" else _fmt(value)
            out.append((key, f"{key} = {shown} ({_source(key, overrides, choices, file)}): expected {expected}"))
        return [line for key, line in out if not _copy_of_reported(key, [k for k, _ in out])]


_RUN_MODEL = re.compile(r"experiment\.runs\.[^.]+\.model\.(.+)")


def _copy_of_reported(key: str, keys: Sequence[str]) -> bool:
    """A run entry carries a copy of its model config (composition): a problem of that copy is
    reported once, at the model it was copied from (``model.*`` or ``experiment.models.ID.*``)."""
    m = _RUN_MODEL.fullmatch(key)
    if not m:
        return False
    rest = m.group(1)
    return any(k == f"model.{rest}" or (k.startswith("experiment.models.") and k.endswith(f".{rest}")) for k in keys)


def validate(data: Mapping, **kw) -> Settings:
    """The typed settings of ``data``; :class:`ConfigError` (one line per problem) when invalid."""
    bad = problems(data, **kw)
    if bad:
        raise ConfigError("\n".join(bad))
    return Settings.model_validate(data, context={"root": str(kw.get("root") or "."), "check_files": False})


__all__ = ["PURPOSES", "SCHEMA_VERSION", "Answers", "Settings", "problems", "validate"]
