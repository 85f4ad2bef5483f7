"""The embedded model: GGUF weights assembled from package-registry parts, served by
xllamacpp (llama.cpp's server) on 127.0.0.1.

``ensure_model`` joins the installed parts into one file under .cache/models and checks its
size and sha256 (once; a stamp file remembers the check). ``LocalServer`` starts an
xllamacpp server on a free loopback port, waits for /health and stops it on exit; servers
are shared within a process by (model file, server settings), so the test, question and
judge LLM use one server when they are the same model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Mapping

import requests

from ..errors import LLMError, ModelNotInstalledError


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


def auto_threads(n_cpu: int, load: float) -> int:
    """llama.cpp threads for ``n_threads: auto``: the cores the other jobs leave free, at least 1.

    Every graph op ends at a barrier where a server's threads spin until all of them arrive,
    so a thread that the scheduler has put off a busy core stalls the others: on 2 cores
    with a 1-minute load of 4-6 from other jobs, 4 slots generated 2.6-4.5 tokens/s with
    2 threads and 12.6-18.6 with 1 thread, at a fifth of the CPU time (benchmarks/README.md,
    "Responses stage against its ideal time"). ``load``: the cores other jobs keep busy when the
    server starts (:func:`busy_cores`); a core counts as free when less than half of it is used."""
    return max(1, min(int(n_cpu), int(n_cpu - max(0.0, float(load)) + 0.5)))


def _nice_yields_machine_wide() -> bool:
    """Whether a niced process yields to a nice-0 one anywhere on the machine. Not under Linux's
    autogroup scheduling (``kernel.sched_autogroup_enabled = 1``, the default of many kernels and
    of this project's machines): there every session is a group with equal weight and nice orders
    processes only within their own session, so a nice-19 job started from another shell still
    takes up to half of the CPU (seen here: a LoRA fine-tune fell from 200 % to 133 % CPU and
    ran 2-3x slower beside a nice-19 test run; after ``echo 19 > /proc/PID/autogroup`` of the
    test run's session it was back at 180 %)."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1"
    except OSError:
        return True


def busy_cores(window: float = 1.0) -> float:
    """Cores in use by the machine's other jobs now: CPU use over ``window`` seconds, summed over
    the CPUs this process may run on. Not the 1-minute load average: it lags by a minute, so in
    a pipeline every stage would count the previous stage's own (finished) server as another job
    and start with 1 thread on an idle machine. Time spent in niced jobs (``nice`` > 0) counts as
    free only where nice acts machine-wide (no autogroup scheduling, :func:`_nice_yields_machine_wide`):
    a nice-19 job (weight 15 against 1024) then gives a nice-0 server's threads the core within a
    time slice and does not stall llama.cpp's barriers the way a job of equal priority does."""
    import psutil

    per_cpu = psutil.cpu_times_percent(interval=window, percpu=True)
    if hasattr(os, "sched_getaffinity"):
        allowed = os.sched_getaffinity(0)
        per_cpu = [t for i, t in enumerate(per_cpu) if i in allowed] or per_cpu
    return busy_of(per_cpu, nice_is_free=_nice_yields_machine_wide())


def busy_of(per_cpu, nice_is_free: bool) -> float:
    """Busy cores of one sample of ``psutil.cpu_times_percent(percpu=True)`` (:func:`busy_cores`)."""
    free = ("idle", "iowait", "nice") if nice_is_free else ("idle", "iowait")
    return sum(max(0.0, 100.0 - sum(getattr(t, f, 0.0) for f in free)) for t in per_cpu) / 100.0


def resolve_threads(n_threads) -> int:
    """``server.n_threads``: a count, or ``auto`` (:func:`auto_threads` on this machine now)."""
    if str(n_threads).strip().lower() == "auto":
        n_cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return auto_threads(n_cpu, busy_cores())
    return int(n_threads)


class LocalServer:
    """An xllamacpp server on 127.0.0.1 serving one GGUF file."""

    def __init__(self, model_path: str | os.PathLike, *, n_ctx: int = 8192, n_parallel: int = 2,
                 n_threads: int | str = 2, startup_timeout: float = 120.0, alias: str | None = None):
        self.model_path = str(model_path)
        self.n_ctx = int(n_ctx)
        self.n_parallel = int(n_parallel)
        self.n_threads_setting = n_threads
        self.n_threads = resolve_threads(n_threads) if str(n_threads).strip().lower() != "auto" else None
        self.startup_timeout = float(startup_timeout)
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
        if str(self.n_threads_setting).strip().lower() == "auto":
            self.n_threads = resolve_threads("auto")   # decided when the server starts
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


class _Shared:
    """Process-wide servers shared by (model file, settings), reference counted."""

    def __init__(self):
        self.lock = threading.Lock()
        self.servers: dict[tuple, list] = {}

    def acquire(self, key: tuple, factory) -> LocalServer:
        with self.lock:
            entry = self.servers.get(key)
            if entry is None:
                server = factory().start()
                entry = self.servers[key] = [server, 0]
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


def server_key(model_path: Path, server_cfg: Mapping) -> tuple:
    return (str(model_path), int(server_cfg.get("n_ctx", 8192)), int(server_cfg.get("n_parallel", 2)),
            str(server_cfg.get("n_threads", 2)))


def acquire_server(model_cfg: Mapping, models_dir: str | os.PathLike) -> tuple[LocalServer, tuple]:
    path = ensure_model(model_cfg, models_dir)
    sc = model_cfg.get("server") or {}
    key = server_key(path, sc)
    server = SHARED.acquire(key, lambda: LocalServer(
        path, n_ctx=sc.get("n_ctx", 8192), n_parallel=sc.get("n_parallel", 2),
        n_threads=sc.get("n_threads", 2), startup_timeout=sc.get("startup_timeout", 120),
        alias=model_cfg.get("api_model")))
    return server, key
