"""Temporary copies of this project for end-to-end runs of real DVC stages.

A copy holds the git-tracked files (as a fresh clone would), its own git repository and
DVC config, a params.yaml composed from conf/ with overrides (plus optional edits), and a
`.venv/bin/python` that execs this interpreter (a bootstrapped checkout; a small script, not
a link, so nothing that deletes the copy can reach the shared venv). The environment of DVC
calls is the caller's: no venv is put on PATH, so stages find the project's interpreter by
themselves (stages/run) as they do for a user; `run(["dvc", ...])` calls the venv's dvc,
as `.venv/bin/dvc` of the README and docs/PIPELINE.md does. $TESTLEAK_CACHE points at a shared cache whose
models/ is the project's assembled model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from testleak.config import ROOT, compose, dump_params
from testleak.equalcost import fill_budgets

BIN = Path(sys.executable).parent


def local_search(**over):
    """A ``verifier.local`` section (:class:`testleak.settings.LocalSearch`) for index tests: a
    ``dirs`` corpus of .py files, no bounds, uncompressed, case-sensitive; ``over`` replaces keys."""
    from testleak.settings import LocalSearch

    base = {"case_sensitive": True, "corpus": "dirs", "dirs": [], "extensions": [".py"], "max_file_bytes": 393216,
            "max_files": 0, "max_bytes": 0, "compress": False, "max_hits_listed": 100, "lock_file": None, "exclude": []}
    return LocalSearch.model_validate({**base, **over})


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [f for f in out if f and (ROOT / f).is_file() and not f.startswith(("metrics/", "reports/", "labels/labels"))]


def env_for(cache: Path) -> dict:
    env = dict(os.environ)
    env.pop("TESTLEAK_PYTHON", None)
    env["TESTLEAK_CACHE"] = str(cache)
    env["DVC_NO_ANALYTICS"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.pop("TESTLEAK_ROOT", None)
    return env


SHIM = "#!/bin/sh\necho 'python shim: this is not the project interpreter' >&2\nexit 1\n"


def shim_env(base: Path, cache: Path) -> dict:
    """env_for's environment as on a machine whose `python` is not the project's: a `python`
    and `python3` that exit 1 loudly first on PATH, the venv's bin off PATH, no venv active."""
    shims = base / "shims"
    shims.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        (shims / name).write_text(SHIM)
        (shims / name).chmod(0o755)
    env = env_for(cache)
    keep = [d for d in env.get("PATH", "").split(os.pathsep) if d and Path(d).resolve() != BIN.resolve()]
    env["PATH"] = os.pathsep.join([str(shims), *keep])
    env.pop("VIRTUAL_ENV", None)
    return env


# The sizes of the end-to-end runs on the embedded model (tiny experiment): a 3 MB corpus index,
# shorter answers. Tests that share these overrides and the session cache (conftest.session_cache)
# send each LLM request once per test session.
SMALL_INDEX = ["verifier.local.max_bytes=3000000"]
SMALL_MODEL = ["model.sampling.max_tokens=320", "questioner.sampling.max_tokens=320", "judge.sampling.max_tokens=64"]
SMALL = [*SMALL_INDEX, *SMALL_MODEL]


def shared_cache(base: Path) -> Path:
    """``base/cache``: LLM and search caches of their own, with the project's assembled models."""
    cache = base / "cache"
    (cache / "llm").mkdir(parents=True, exist_ok=True)
    models = ROOT / ".cache" / "models"
    models.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(models, target_is_directory=True)
    return cache


def fake_venv(dest: Path) -> Path:
    """``dest/.venv/bin/python``: a script that execs this interpreter (what stages/run looks for)."""
    py = dest / ".venv" / "bin" / "python"
    py.parent.mkdir(parents=True, exist_ok=True)
    py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    py.chmod(0o755)
    return py


def make_project(dest: Path, overrides=(), edit=None, git: bool = True) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for f in tracked_files():
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target)
    cfg = compose(list(overrides))
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=True)
    if edit is not None:
        edit(data)
        fill_budgets(data)   # runs written by hand get the budget composition would give them (dvc.yaml reads it)
    dump_params(data, dest / "params.yaml")
    fake_venv(dest)
    if git:
        run(["git", "init", "-q"], dest)
        run(["git", "config", "user.email", "test@testleak.local"], dest)
        run(["git", "config", "user.name", "testleak tests"], dest)
        run(["git", "add", "-A"], dest)
        run(["git", "commit", "-qm", "test project"], dest)
    return dest


def run(cmd, cwd: Path, env=None, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``cmd`` in ``cwd``; ``dvc`` and ``testleak`` mean the venv's (``.venv/bin/dvc``)."""
    if cmd and cmd[0] in ("dvc", "testleak"):
        cmd = [str(BIN / cmd[0]), *cmd[1:]]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    return p


def run_queue(proj: Path, env: dict, jobs: int = 1, timeout: float = 1500) -> str:
    """`dvc queue start -j JOBS`, then wait until nothing is queued or running; the final
    `dvc queue status`. DVC starts its workers as `dvc` from PATH, so the venv's bin is put
    on PATH for the workers (an activated venv; docs/PIPELINE.md, "Running stages"), after whatever env puts first."""
    import time

    first, *rest = env.get("PATH", "").split(os.pathsep)
    qenv = {**env, "PATH": os.pathsep.join([first, str(BIN), *rest])}
    run(["dvc", "queue", "start", "-j", str(jobs)], proj, qenv)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = run(["dvc", "queue", "status"], proj, qenv).stdout
        if "Queued" not in st and "Running" not in st:
            return st
        time.sleep(3)
    return run(["dvc", "queue", "status"], proj, qenv).stdout
