"""Temporary copies of this project for end-to-end runs of real DVC stages.

A copy holds the git-tracked files (as a fresh clone would), its own git repository and
DVC config, a params.yaml composed from conf/ with overrides (plus optional edits), and a
`.venv` link to the interpreter's venv (a bootstrapped checkout). The environment of DVC
calls is the caller's: no venv is put on PATH, so stages find the project's interpreter by
themselves (stages/run) as they do for a user; `run(["dvc", ...])` calls the venv's dvc,
as the README's `.venv/bin/dvc` does. $TESTLEAK_CACHE points at a shared cache whose
models/ is the project's assembled model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from testleak.config import ROOT, compose, dump_params

BIN = Path(sys.executable).parent
IN_VENV = sys.prefix != sys.base_prefix


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [f for f in out if f and (ROOT / f).is_file() and not f.startswith(("metrics/", "reports/", "labels/labels"))]


def env_for(cache: Path) -> dict:
    env = dict(os.environ)
    if not IN_VENV:  # no venv to link into the project: name the interpreter instead
        env["TESTLEAK_PYTHON"] = sys.executable
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


def shared_cache(base: Path) -> Path:
    cache = base / "cache"
    (cache / "llm").mkdir(parents=True, exist_ok=True)
    models = ROOT / ".cache" / "models"
    models.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(models, target_is_directory=True)
    return cache


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
    dump_params(data, dest / "params.yaml")
    if IN_VENV and not (dest / ".venv").exists():
        (dest / ".venv").symlink_to(sys.prefix, target_is_directory=True)
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
