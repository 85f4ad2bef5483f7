"""One gateway for every model, through the `openai` client.

The same code talks to the embedded llama.cpp server, OpenAI, DeepSeek or any OpenAI-compatible
endpoint a model config names. It gives concurrent requests answered in request order, per-model
rate limits, bounded retries (:mod:`testleak.net`), an on-disk cache keyed by canonical endpoint,
messages, sampling and sample index (only successes cached, so reruns repeat no call), per-purpose
answer checks (:mod:`.answers`), a circuit breaker after ``limits.max_consecutive_failures``
failures (:attr:`Gateway.breaker`), duplicate sharing in :meth:`Gateway.chat_many`, the spending
cap (:mod:`.budget`) and a call log without prompt text. An elicitation ``seed`` shifts every
sample index by ``SEED_STRIDE * seed`` (cache key and local sampling seed): seed 0 keeps the keys of
a gateway without one, and two seeds never share an answer. Records are in :mod:`.records`,
sending and the breaker in :mod:`.transport`. Failures that are not configuration errors come back
as ``Completion(status="error")``, never as exceptions, so that a stage records and counts them.
"""

from __future__ import annotations

import copy
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from ..errors import AuthError, ConfigError
from ..settings import Limits
from .answers import AnswerPolicy, resample_helps, resample_params
from .budget import Meter
from .local import model_section, numerics, resolve_replicas, server_settings
from .records import ChatRequest, Completion, cache_key
from .transport import CircuitBreaker, parse_response, send_chat
from ..net import CallLog, JsonCache, RateLimiter, RetryPolicy, canonical_url, check_url, mask_url

PROVIDERS = ("local", "openai")
SEED_STRIDE = 1_000_000     # sample indices per elicitation seed (no method draws that many samples of one request)
LOCAL_API_KEY = "sk-local-no-key"
NOT_SENT = ("budget", "circuit_open")   # error kinds of requests the gateway did not send


def _to_dict(cfg) -> dict:
    if cfg is None:
        return {}
    if isinstance(cfg, dict):
        return cfg
    try:
        from omegaconf import OmegaConf

        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:
        return dict(cfg)


class Gateway:
    """Chat completions for one model config. Use :func:`open_gateway`."""

    def __init__(self, model_cfg, *, cache_dir: str | os.PathLike, log_path: str | os.PathLike | None = None,
                 models_dir: str | os.PathLike | None = None, backoff_base: float = 1.0,
                 backoff_max: float = 60.0, show_progress: bool | None = None,
                 echo: Callable[[str], None] | None = None, attribution: Mapping | None = None,
                 budget: Mapping | None = None, seed: int = 0, answers: Mapping | None = None):
        self.cfg = _to_dict(model_cfg)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"elicitation seed {seed!r}: expected an integer >= 0")
        self.seed = seed
        self.name = self.cfg.get("name")
        provider = self.cfg.get("provider")
        if provider not in PROVIDERS:
            raise ConfigError(f"model {self.name!r}: unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
        self.provider = provider
        self.models_dir = Path(models_dir) if models_dir else Path(cache_dir).parent / "models"
        limits = model_section(self.cfg, "limits", Limits)
        self.server = server_settings(self.cfg) if provider == "local" else None
        self.concurrency = limits.concurrency
        if self.server is not None:   # no more requests in flight than the servers compute at once
            self.concurrency = min(self.concurrency, resolve_replicas(self.server.replicas) * self.server.n_parallel)
        self.policy = RetryPolicy(max_retries=limits.max_retries, timeout=limits.timeout, deadline=limits.deadline,
                                  backoff_base=backoff_base, backoff_max=backoff_max, echo=echo)
        try:
            self.limiter = RateLimiter(limits.requests_per_minute, limits.tokens_per_minute)
        except ConfigError as e:
            raise ConfigError(f"model {self.name!r} (conf/model/{self.name}.yaml): {e}") from None
        self.timeout = self.policy.timeout
        self.max_retries = self.policy.max_retries
        self.answers = AnswerPolicy.from_config(answers)
        self.breaker = CircuitBreaker(limits.max_consecutive_failures)
        if provider == "openai":
            self._configured_base_url()   # its shape, before any call (one line naming where it came from)
        self.show_progress = show_progress
        self.cache = JsonCache(Path(cache_dir) / "responses.sqlite")
        self.log_path = Path(log_path) if log_path else None
        self.calls = CallLog(self.log_path)
        # stage and run every call-log line is attributed to (tokens and cost per stage/run)
        self.attribution = {"stage": None, "run": None, **dict(attribution or {})}
        # spend of the answers used and the experiment's cap (budget: {usd, completion_tokens, scope})
        self.meter = Meter(self.name, self.cfg.get("price"), budget,
                           self.log_path.parent / "spend" if self.log_path else None,
                           self.attribution["stage"], self.attribution["run"])
        self._client = None
        self._clients: list = []            # local: one client per server of the pool
        self._pool = None
        self._client_lock = threading.Lock()
        self._server_key = None
        self.base_url: str | None = None
        self.stats = {"requests": 0, "cache_hits": 0, "shared": 0, "errors": 0, "retries": 0, "not_sent_budget": 0,
                      "not_sent_breaker": 0, "resampled": 0}
        self.failures: dict[str, int] = {}          # error kind -> failed calls (answers included)
        self._stats_lock = threading.Lock()
        self._inflight: dict[str, Future] = {}     # cache key -> answer of the request in flight
        self._inflight_lock = threading.Lock()

    # -- identity and configuration -------------------------------------------------
    @property
    def identity(self) -> dict:
        ident = {"provider": self.provider, "api_model": self.cfg.get("api_model")}
        if self.server is not None:
            ident["gguf_sha256"] = (self.cfg.get("gguf") or {}).get("sha256")
            ident["server"] = numerics(self.server)
        else:
            url = self._configured_base_url()
            ident["base_url"] = canonical_url(url) if url else url
        return ident

    def _configured_base_url(self) -> str | None:
        """The endpoint's base URL: from the environment variable ``base_url_env`` names (it may
        hold credentials), else ``base_url``; its shape checked (:func:`testleak.net.check_url`)."""
        env = self.cfg.get("base_url_env")
        if env and os.environ.get(env):
            return check_url(os.environ[env], f"${env} (base_url_env of model {self.name!r})", userinfo=True,
                             fix=f"fix the variable {env}")
        url = self.cfg.get("base_url")
        if url is None:
            return None
        return check_url(url, f"base_url of model {self.name!r}",
                         fix=f"fix it in conf/model/{self.name}.yaml or set {env or 'base_url_env'}")

    def sampling(self, overrides: Mapping | None = None) -> dict:
        s = dict(self.cfg.get("sampling") or {})
        s.update(overrides or {})
        extra = dict(s.pop("extra_body", None) or {})
        params = {k: v for k, v in s.items() if v is not None}
        if extra:
            params["extra_body"] = extra
        return params

    # -- client ----------------------------------------------------------------------
    def _ensure_client(self):
        with self._client_lock:
            if self._client is not None:
                return self._client
            import openai

            if self.provider == "local":
                from .local import acquire_server

                self._pool, self._server_key = acquire_server(self.cfg, self.models_dir)
                self.base_url = self._pool.base_urls[0]
                self._clients = [openai.OpenAI(base_url=u, api_key=LOCAL_API_KEY, max_retries=0,
                                               timeout=self.timeout) for u in self._pool.base_urls]
                self._client = self._clients[0]
                return self._client
            else:
                self.base_url = self._configured_base_url()
                env = self.cfg.get("api_key_env")
                api_key = os.environ.get(env) if env else None
                if not api_key:
                    raise AuthError(
                        f"model {self.name!r} needs an API key: set the environment variable {env or '(api_key_env unset in the model config)'}"
                    )
            self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0,
                                         timeout=self.timeout)
            return self._client

    def close(self) -> None:
        self.meter.flush()
        if self._server_key is not None:
            from .local import SHARED

            SHARED.release(self._server_key)
            self._server_key = None
        self._client, self._clients, self._pool = None, [], None
        self.cache.close()

    @property
    def endpoint(self) -> str:
        """The chat-completions URL with credentials masked (for messages)."""
        base = self.base_url or self._configured_base_url() or "(local server)"
        return mask_url(base.rstrip("/") + "/chat/completions")

    # -- logging -----------------------------------------------------------------------
    def _log(self, key: str, c: Completion, purpose: str | None, shared: bool = False) -> None:
        self.calls.write(model=self.name, **self.attribution, purpose=purpose, key=key[:16], status=c.status,
                         error_kind=c.error_kind,
                         cached=c.cached, shared=shared, attempts=0 if shared else c.attempts,
                         latency_s=0.0 if shared else round(c.latency_s, 3),
                         prompt_tokens=c.usage.get("prompt_tokens", 0),
                         completion_tokens=c.usage.get("completion_tokens", 0),
                         # of prompt_tokens, served from the server's prompt cache (this call only)
                         prompt_cached_tokens=None if (c.cached or shared) else c.prompt_cached_tokens)

    def failure_counts(self) -> dict[str, int]:
        """Failed calls by error kind (sorted by kind), for a stage's stats."""
        with self._stats_lock:
            return dict(sorted(self.failures.items()))

    def _count(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[name] += n

    # -- calls -----------------------------------------------------------------------
    def chat(self, messages: Sequence[Mapping], sample: int = 0, *, purpose: str | None = None,
             accept: Callable[[str], str | None] | None = None, **params) -> Completion:
        """One request (answered from the cache, or sent). ``accept``: as :class:`ChatRequest`."""
        return self._one(*self._prepare(ChatRequest(list(messages), sample, params, purpose)), accept=accept)

    def chat_many(self, requests: Iterable[ChatRequest], desc: str | None = None,
                  purpose: str | None = None) -> list[Completion]:
        """Answers in request order. Requests with the same cache key are sent once: the
        first of them is answered (from the cache or the endpoint), the others share its
        answer (logged with ``shared: true``). ``purpose`` (for requests without their own)
        goes to the call log; ``desc`` labels the progress bar."""
        reqs = list(requests)
        if not reqs:
            return []
        prepared = [self._prepare(r, purpose) for r in reqs]
        first: dict[str, int] = {}
        for i, (key, *_) in enumerate(prepared):
            first.setdefault(key, i)
        unique = sorted(first.values())
        out: list[Completion | None] = [None] * len(reqs)
        bar = None
        show = self.show_progress if self.show_progress is not None else bool(desc)
        if show:
            from tqdm import tqdm

            bar = tqdm(total=len(reqs), desc=desc or self.name, unit="req", leave=False)

        def run(i: int) -> None:
            out[i] = self._one(*prepared[i], accept=reqs[i].accept)
            if bar is not None:
                bar.update(1)

        try:
            if self.concurrency == 1 or len(unique) == 1:
                for i in unique:
                    run(i)
            else:
                with ThreadPoolExecutor(max_workers=min(self.concurrency, len(unique))) as ex:
                    list(ex.map(run, unique))
            for i, (key, *_, why) in enumerate(prepared):
                j = first[key]
                if j != i:
                    out[i] = Completion(**copy.deepcopy(asdict(out[j])))
                    self._count("shared")
                    self._log(key, out[i], why, shared=True)
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return out  # type: ignore[return-value]

    def _prepare(self, req: ChatRequest, purpose: str | None = None) -> tuple[str, list, dict, str | None]:
        params = self.sampling(req.params)
        sample = int(req.sample) + SEED_STRIDE * self.seed   # the elicitation seed (module docstring)
        if self.provider == "local" and "seed" not in params:
            params["seed"] = sample
        key = cache_key(self.identity, req.messages, params, sample)
        return key, req.messages, params, req.purpose or purpose

    def _one(self, key: str, messages: list, params: dict, purpose: str | None = None,
             accept: Callable[[str], str | None] | None = None) -> Completion:
        """One request, single flight: while a request with this cache key is in flight (from
        any thread), an identical one waits for its answer and shares it instead of paying
        for a second call."""
        with self._inflight_lock:
            owner = key not in self._inflight
            if owner:
                self._inflight[key] = Future()
            fut = self._inflight[key]
        if not owner:
            c = Completion(**copy.deepcopy(asdict(fut.result())))
            self._count("shared")
            self._log(key, c, purpose, shared=True)
            return c
        try:
            c = self._one_uncoalesced(key, messages, params, purpose, accept)
            fut.set_result(c)
            return c
        except BaseException as e:
            fut.set_exception(e)
            raise
        finally:
            with self._inflight_lock:
                del self._inflight[key]

    def _one_uncoalesced(self, key: str, messages: list, params: dict, purpose: str | None = None,
                         accept: Callable[[str], str | None] | None = None) -> Completion:
        hit = self.cache.get(key)
        # an answer cached before a rule of the answer policy existed is not an answer: asked again
        if hit is not None and self.answers.problem(hit.get("text"), hit.get("finish_reason"), purpose, accept) is None:
            c = Completion(**hit)
            c.cached = True
            self._count("cache_hits")
            self.meter.charge(c.usage)
            self._log(key, c, purpose)
            return c
        if self.breaker.reason:        # the endpoint failed too often in a row: not sent
            self._count("not_sent_breaker")
            return self._failed(key, Completion(status="error", error_kind="circuit_open", model=self.name,
                                                error=f"not sent: {self.breaker.reason}"), purpose)
        ticket = self.meter.admit(messages, params)
        if ticket is None:  # the next call could exceed the budget: not sent
            self._count("not_sent_budget")
            c = Completion(status="error", error_kind="budget", model=self.name, error=self.meter.reached)
            self._log(key, c, purpose)
            return c
        c = None
        try:
            c = self._call(messages, params)
            c = self._checked(c, messages, params, purpose, accept)
        finally:
            self.meter.settle(ticket, c.usage if c is not None and c.status == "ok" else None)
        if c.status == "ok":
            self.cache.put(key, {k: v for k, v in asdict(c).items() if k != "cached"})
            self.breaker.success()
            self._log(key, c, purpose)
            return c
        return self._failed(key, c, purpose)

    def _checked(self, c: Completion, messages: list, params: dict, purpose: str | None,
                 accept: Callable[[str], str | None] | None) -> Completion:
        """``c`` when it is an answer (:mod:`.answers`); else, while :data:`.answers.RETRIES` allow and
        another sample can differ, the answer to the request with another sample; else a failed
        :class:`Completion` of the answer's error kind, without its text."""
        attempts, latency = 0, 0.0
        for retry in range(self.answers.retries + 1):
            if retry:
                self._count("resampled")
                c = self._call(messages, resample_params(params, retry))
            attempts += c.attempts
            latency += c.latency_s
            if c.status != "ok":
                break
            problem = self.answers.problem(c.text, c.finish_reason, purpose, accept)
            if problem is None:
                break
            kind, why = problem
            c = Completion(status="error", error_kind=kind, finish_reason=c.finish_reason, model=self.name,
                           error=why + (f" ({retry + 1} samples)" if retry else ""))
            if not resample_helps(params):
                break
        c.attempts, c.latency_s = attempts, latency
        return c

    def _failed(self, key: str, c: Completion, purpose: str | None) -> Completion:
        """Count and log a failed call; a failure of the endpoint (not a request left unsent)
        moves the circuit breaker."""
        self._count("errors")
        with self._stats_lock:
            self.failures[c.error_kind or "error"] = self.failures.get(c.error_kind or "error", 0) + 1
        if c.error_kind not in NOT_SENT:
            self.breaker.failure(self.endpoint, c)
        self._log(key, c, purpose)
        return c

    def _call(self, messages: list, params: dict) -> Completion:
        """One request sent to the endpoint (:func:`.transport.send_chat`)."""
        return send_chat(self, messages, params)

    _parse = staticmethod(parse_response)


@contextmanager
def open_gateway(model_cfg, paths=None, *, cache_dir=None, log_path=None, models_dir=None,
                 **kwargs) -> Iterator[Gateway]:
    """Open a gateway for a model config; a local server starts on the first uncached call
    and stops when the block ends.

    The caller names the directories: ``cache_dir`` (answer cache), ``log_path`` (call
    log), ``models_dir`` (assembled model files), or ``paths``, any object with the
    attributes ``llm_cache``, ``logs`` and ``models`` (a :class:`testleak.paths.Paths`),
    for those not given. This module does not import the project layout itself."""
    if paths is None and cache_dir is None:
        raise TypeError("open_gateway needs cache_dir=... or paths=... (the caller names the directories)")
    cache_dir = Path(cache_dir) if cache_dir else paths.llm_cache
    if log_path is None and paths is not None:
        log_path = paths.logs / "llm_calls.jsonl"
    if models_dir is None and paths is not None:
        models_dir = paths.models
    gw = Gateway(model_cfg, cache_dir=cache_dir, log_path=log_path, models_dir=models_dir, **kwargs)
    try:
        yield gw
    finally:
        gw.close()
