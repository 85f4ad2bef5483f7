"""One gateway for every model, through the `openai` client.

The same code talks to the embedded llama.cpp server, OpenAI, DeepSeek, or any
OpenAI-compatible (vLLM, llama.cpp) endpoint; a model config names base_url, API model,
API-key environment variable and default sampling. The gateway gives:

- N requests in flight (threads, ``limits.concurrency``), answers in request order;
- per-model limits on requests and tokens per minute;
- retries with exponential backoff that honour ``retry-after`` on 429, 5xx, timeouts and
  connection errors; no retry on 401/403/404, which raise an error naming the env var or
  model to fix;
- an on-disk cache keyed by model, messages, sampling parameters and sample index, so a
  rerun or a resumed stage makes zero repeated calls (only successes are cached);
- a call log (JSONL: latency, tokens, status, attempts, cache hits; never prompt text).

Failures that are not configuration errors come back as ``Completion(status="error")``,
never as exceptions, so that a stage records and counts them.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from ..errors import AuthError, ConfigError, LLMError
from .cache import ResponseCache, cache_key
from .ratelimit import RateLimiter

PROVIDERS = ("local", "openai")
LOCAL_API_KEY = "sk-local-no-key"


@dataclass
class ChatRequest:
    messages: list
    sample: int = 0
    params: dict = field(default_factory=dict)


@dataclass
class Completion:
    text: str = ""
    status: str = "ok"  # ok | error
    error: str | None = None
    error_kind: str | None = None  # http_429 | http_5xx | timeout | connection | malformed | bad_request
    finish_reason: str | None = None
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    latency_s: float = 0.0
    cached: bool = False
    model: str = ""
    logprobs: list | None = None
    attempts: int = 0

    def to_record(self) -> dict:
        d = asdict(self)
        if d["logprobs"] is None:
            d.pop("logprobs")
        return d


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


def _retry_after(exc) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        try:
            dt = email.utils.parsedate_to_datetime(ra)
            return max(0.0, dt.timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class Gateway:
    """Chat completions for one model config. Use :func:`open_gateway`."""

    def __init__(self, model_cfg, *, cache_dir: str | os.PathLike, log_path: str | os.PathLike | None = None,
                 models_dir: str | os.PathLike | None = None, backoff_base: float = 1.0,
                 backoff_max: float = 60.0, show_progress: bool | None = None):
        self.cfg = _to_dict(model_cfg)
        self.name = self.cfg.get("name", "?")
        provider = self.cfg.get("provider")
        if provider not in PROVIDERS:
            raise ConfigError(f"model {self.name!r}: unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
        self.provider = provider
        self.models_dir = Path(models_dir) if models_dir else Path(cache_dir).parent / "models"
        limits = self.cfg.get("limits") or {}
        self.concurrency = max(1, int(limits.get("concurrency") or 1))
        self.timeout = float(limits.get("timeout") or 120)
        self.max_retries = int(limits.get("max_retries") if limits.get("max_retries") is not None else 4)
        self.limiter = RateLimiter(limits.get("requests_per_minute"), limits.get("tokens_per_minute"))
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.show_progress = show_progress
        self.cache = ResponseCache(Path(cache_dir) / "responses.sqlite")
        self.log_path = Path(log_path) if log_path else None
        self._log_lock = threading.Lock()
        self._client = None
        self._client_lock = threading.Lock()
        self._server_key = None
        self.base_url: str | None = None
        self.stats = {"requests": 0, "cache_hits": 0, "errors": 0, "retries": 0}
        self._stats_lock = threading.Lock()

    # -- identity and configuration -------------------------------------------------
    @property
    def identity(self) -> dict:
        ident = {"provider": self.provider, "api_model": self.cfg.get("api_model")}
        if self.provider == "local":
            ident["gguf_sha256"] = (self.cfg.get("gguf") or {}).get("sha256")
        else:
            ident["base_url"] = self._configured_base_url()
        return ident

    def _configured_base_url(self) -> str | None:
        env = self.cfg.get("base_url_env")
        if env and os.environ.get(env):
            return os.environ[env]
        return self.cfg.get("base_url")

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

                server, self._server_key = acquire_server(self.cfg, self.models_dir)
                self.base_url = server.base_url
                api_key = LOCAL_API_KEY
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
        if self._server_key is not None:
            from .local import SHARED

            SHARED.release(self._server_key)
            self._server_key = None
        self._client = None
        self.cache.close()

    # -- logging -----------------------------------------------------------------------
    def _log(self, key: str, c: Completion) -> None:
        if self.log_path is None:
            return
        rec = {"ts": round(time.time(), 3), "model": self.name, "key": key[:16], "status": c.status,
               "error_kind": c.error_kind, "cached": c.cached, "attempts": c.attempts,
               "latency_s": round(c.latency_s, 3), "prompt_tokens": c.usage.get("prompt_tokens", 0),
               "completion_tokens": c.usage.get("completion_tokens", 0)}
        with self._log_lock:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")

    def _count(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[name] += n

    # -- calls -----------------------------------------------------------------------
    def chat(self, messages: Sequence[Mapping], sample: int = 0, **params) -> Completion:
        return self._one(ChatRequest(list(messages), sample, params))

    def chat_many(self, requests: Iterable[ChatRequest], desc: str | None = None) -> list[Completion]:
        reqs = list(requests)
        if not reqs:
            return []
        out: list[Completion | None] = [None] * len(reqs)
        bar = None
        show = self.show_progress if self.show_progress is not None else bool(desc)
        if show:
            from tqdm import tqdm

            bar = tqdm(total=len(reqs), desc=desc or self.name, unit="req", leave=False)

        def run(i: int) -> None:
            out[i] = self._one(reqs[i])
            if bar is not None:
                bar.update(1)

        try:
            if self.concurrency == 1 or len(reqs) == 1:
                for i in range(len(reqs)):
                    run(i)
            else:
                with ThreadPoolExecutor(max_workers=min(self.concurrency, len(reqs))) as ex:
                    list(ex.map(run, range(len(reqs))))
        finally:
            if bar is not None:
                bar.close()
        return out  # type: ignore[return-value]

    def _one(self, req: ChatRequest) -> Completion:
        params = self.sampling(req.params)
        if self.provider == "local" and "seed" not in params:
            params["seed"] = int(req.sample)
        key = cache_key(self.identity, req.messages, params, req.sample)
        hit = self.cache.get(key)
        if hit is not None:
            c = Completion(**hit)
            c.cached = True
            self._count("cache_hits")
            self._log(key, c)
            return c
        c = self._call(req.messages, params)
        if c.status == "ok":
            self.cache.put(key, {k: v for k, v in asdict(c).items() if k != "cached"})
        else:
            self._count("errors")
        self._log(key, c)
        return c

    def _call(self, messages: list, params: dict) -> Completion:
        import openai

        client = self._ensure_client()
        kwargs = dict(params)
        want_logprobs = bool(kwargs.get("logprobs"))
        est = sum(len(str(m.get("content", ""))) for m in messages) // 4 + int(kwargs.get("max_tokens") or 0)
        attempt = 0
        t0 = time.monotonic()
        while True:
            attempt += 1
            self.limiter.acquire(est)
            self._count("requests")
            try:
                resp = client.chat.completions.create(model=self.cfg.get("api_model"), messages=messages, **kwargs)
                c = self._parse(resp, want_logprobs)
                c.latency_s = time.monotonic() - t0
                c.attempts = attempt
                c.model = self.name
                self.limiter.adjust(est, sum(c.usage.values()))
                return c
            except openai.AuthenticationError:
                raise AuthError(
                    f"model {self.name!r}: HTTP 401 unauthorized; check the API key in "
                    f"${self.cfg.get('api_key_env') or '(no api_key_env)'}", status=401) from None
            except openai.PermissionDeniedError:
                raise AuthError(
                    f"model {self.name!r}: HTTP 403 forbidden; the key in ${self.cfg.get('api_key_env')} "
                    f"has no access to {self.cfg.get('api_model')!r}", status=403) from None
            except openai.NotFoundError:
                raise LLMError(
                    f"model {self.name!r}: HTTP 404; the endpoint {self.base_url} has no model "
                    f"{self.cfg.get('api_model')!r} (fix api_model / base_url in conf/model/{self.name}.yaml)",
                    status=404) from None
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as e:
                kind = ("http_429" if isinstance(e, openai.RateLimitError) else
                        "timeout" if isinstance(e, openai.APITimeoutError) else
                        "connection" if isinstance(e, openai.APIConnectionError) else "http_5xx")
                status = getattr(e, "status_code", None)
                if attempt > self.max_retries:
                    return Completion(status="error", error_kind=kind, model=self.name, attempts=attempt,
                                      latency_s=time.monotonic() - t0,
                                      error=f"{kind} after {attempt} attempts (HTTP {status})" if status else
                                      f"{kind} after {attempt} attempts")
                delay = _retry_after(e)
                if delay is None:
                    delay = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
                    delay *= 0.5 + random.random() * 0.5
                self._count("retries")
                time.sleep(delay)
            except openai.APIStatusError as e:  # 400, 409, 422, ...: not temporary
                return Completion(status="error", error_kind="bad_request", model=self.name, attempts=attempt,
                                  latency_s=time.monotonic() - t0,
                                  error=f"HTTP {e.status_code}: {str(e.message)[:200]}")
            except Exception as e:  # malformed JSON, unexpected shapes
                return Completion(status="error", error_kind="malformed", model=self.name, attempts=attempt,
                                  latency_s=time.monotonic() - t0,
                                  error=f"unparsable response: {type(e).__name__}")

    @staticmethod
    def _parse(resp, want_logprobs: bool) -> Completion:
        if isinstance(resp, str):
            raise ValueError("response body is not a JSON object")
        choices = getattr(resp, "choices", None)
        if not choices:
            raise ValueError("response has no choices")
        ch = choices[0]
        msg = getattr(ch, "message", None)
        text = getattr(msg, "content", None) or ""
        usage = getattr(resp, "usage", None)
        u = {"prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
             "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}
        lps = None
        if want_logprobs and getattr(ch, "logprobs", None) is not None and ch.logprobs.content:
            lps = [float(t.logprob) for t in ch.logprobs.content]
        return Completion(text=text, status="ok", finish_reason=getattr(ch, "finish_reason", None), usage=u,
                          logprobs=lps)


@contextmanager
def open_gateway(model_cfg, paths=None, *, cache_dir=None, log_path=None, **kwargs) -> Iterator[Gateway]:
    """Open a gateway for a model config; a local server starts on the first uncached call
    and stops when the block ends."""
    if paths is None:
        from ..paths import Paths

        paths = Paths()
    cache_dir = Path(cache_dir) if cache_dir else paths.llm_cache
    log_path = log_path if log_path is not None else paths.logs / "llm_calls.jsonl"
    gw = Gateway(model_cfg, cache_dir=cache_dir, log_path=log_path, models_dir=paths.models, **kwargs)
    try:
        yield gw
    finally:
        gw.close()
