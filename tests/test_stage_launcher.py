"""Stages run with the project's interpreter however DVC is started (issue #11 item 1):
`sh stages/run STAGE` finds $TESTLEAK_PYTHON or the nearest .venv/bin/python up from the
working directory, never a `python` from PATH. Here a `python` that exits 1 loudly is first
on PATH and no venv is on PATH, as on a machine whose system Python lacks the packages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testleak.config import ROOT
from tests.project import fake_venv, make_project, run, run_queue, shared_cache
from tests.project import shim_env as project_shim_env


def shim_env(base: Path) -> dict:
    env = project_shim_env(base, shared_cache(base))
    assert subprocess.run(["python", "-c", "pass"], env=env, capture_output=True).returncode == 1
    return env


def test_stage_through_dvc_repro_with_a_failing_python_first_on_path(tmp_path):
    corpus = tmp_path / "corpus" / "acme" / "app"
    corpus.mkdir(parents=True)
    (corpus / "settings.py").write_text('ADMIN_EMAIL = "lena.voigt@mailbox.org"\n', encoding="utf-8")

    def edit(p):
        p["verifier"]["local"].update({"corpus": "dirs", "dirs": [str(tmp_path / "corpus")]})

    proj = make_project(tmp_path / "p", ["experiment=tiny"], edit=edit)
    env = shim_env(tmp_path)
    out = run(["dvc", "repro", "-s", "index"], proj, env)
    assert "sh stages/run index" in out.stdout
    stats = json.loads((proj / "data/index/stats.json").read_text())
    assert (stats["files"], stats["repos"]) == (1, 1)
    # the lock records the launcher command; a second repro reruns nothing
    assert "sh stages/run index" in (proj / "dvc.lock").read_text()
    again = run(["dvc", "repro", "-s", "index"], proj, env).stdout
    assert "didn't change" in again or "up to date" in again.lower()


def test_launcher_finds_the_venv_walking_up_from_a_queue_copy(tmp_path):
    """`dvc queue start` workers run in .dvc/tmp/exps/<tmp> copies without a .venv."""
    proj = tmp_path / "p"
    work = proj / ".dvc" / "tmp" / "exps" / "tmpabc"
    (work / "stages").mkdir(parents=True)
    fake_venv(proj)
    for f in ("run", "__main__.py", "confirmed.py"):
        (work / "stages" / f).write_bytes((ROOT / "stages" / f).read_bytes())
    env = shim_env(tmp_path)
    env.pop("TESTLEAK_PYTHON", None)
    p = subprocess.run(["sh", "stages/run", "confirmed"], cwd=work, env=env, capture_output=True, text=True)
    # reached the stage's own argument check, so the venv's interpreter ran it (the shim would say so)
    assert p.returncode == 2 and "usage:" in p.stderr and "shim" not in p.stderr, p.stderr


def test_no_interpreter_or_one_without_packages_is_one_line_naming_the_fix(tmp_path):
    work = tmp_path / "w"
    (work / "stages").mkdir(parents=True)
    for f in ("run", "__main__.py", "index.py"):
        (work / "stages" / f).write_bytes((ROOT / "stages" / f).read_bytes())
    shutil.copytree(ROOT / "testleak", work / "testleak", ignore=shutil.ignore_patterns("__pycache__"))
    env = shim_env(tmp_path)
    env.pop("TESTLEAK_PYTHON", None)
    env.pop("PYTHONPATH", None)
    if not any((d / ".venv/bin/python").exists() for d in work.parents):  # else that venv is found, rightly
        p = subprocess.run(["sh", "stages/run", "index"], cwd=work, env=env, capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert "no project interpreter" in p.stderr and "bash scripts/bootstrap.sh setup" in p.stderr
    env["TESTLEAK_PYTHON"] = str(tmp_path / "missing" / "python")
    p = subprocess.run(["sh", "stages/run", "index"], cwd=work, env=env, capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "is not an executable interpreter" in p.stderr and "bash scripts/bootstrap.sh setup" in p.stderr
    # an interpreter without the project's packages: a bare venv of the base Python
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env["TESTLEAK_PYTHON"] = str(bare / "bin" / "python")
    p = subprocess.run(["sh", "stages/run", "index"], cwd=work, env=env, capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    # the first third-party package the stage imports (the bare venv has none)
    assert re.search(r"lacks the package '(yaml|omegaconf|testleak)'", p.stderr) and "bash scripts/bootstrap.sh setup" in p.stderr
    # an unknown stage name
    p = subprocess.run(["sh", "stages/run", "indx"], cwd=work, env={**env, "TESTLEAK_PYTHON": sys.executable},
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown stage 'indx'" in p.stderr and "index" in p.stderr


@pytest.mark.slow
def test_queued_experiment_worker_finds_the_venv_with_a_failing_python_on_path(tmp_path):
    """`dvc queue start` runs the stage in a copy under .dvc/tmp/exps/ (no .venv there).

    DVC starts its queue workers as `dvc` from PATH (dvc/repo/experiments/queue/celery.py), so
    run_queue puts the venv's bin on PATH (an activated venv), after the failing `python`."""
    corpus = tmp_path / "corpus" / "acme" / "app"
    corpus.mkdir(parents=True)
    (corpus / "settings.py").write_text('ADMIN_EMAIL = "lena.voigt@mailbox.org"\n', encoding="utf-8")
    (tmp_path / "corpus" / "beta").mkdir()
    (tmp_path / "corpus" / "beta" / "b.py").write_text('x = "j.okafor@posteo.net"\n', encoding="utf-8")

    def edit(p):
        p["verifier"]["local"].update({"corpus": "dirs", "dirs": [str(tmp_path / "corpus")]})

    proj = make_project(tmp_path / "p", ["experiment=tiny"], edit=edit)
    env = shim_env(tmp_path)
    # hydra is enabled (.dvc/config): `dvc exp run` composes params.yaml from conf/ and these overrides
    run(["dvc", "exp", "run", "--queue", "index", "-n", "idx", "-S", "experiment=tiny", "-S", "verifier.local.corpus=dirs",
         "-S", f"verifier.local.dirs=[{tmp_path / 'corpus'}]"], proj, env)
    st = run_queue(proj, env, timeout=900)
    logs = run(["dvc", "queue", "logs", "idx"], proj, env, check=False).stdout
    assert "Success" in st, st + logs
    assert "sh stages/run index" in logs and "index (fts5-trigram): 2 files" in logs and "2 repositories" in logs, logs
    assert "shim" not in logs
