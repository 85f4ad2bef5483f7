"""A stage that always runs must find its deps on a fresh clone, whatever the experiment.

A dependency of a stage without ``foreach`` (it runs in every experiment) that only ``foreach``
stages write exists on a fresh clone only when the experiment has at least one entry to loop
over: ``experiment=canary`` (``runs: {}``) has no ``metrics@RUN``, and DVC stopped before its first
canary stage because it could not hash the missing ``data/metrics`` of stage ``report``. Such a
dep must therefore be in git (an empty directory kept by a ``.gitkeep``)."""

from __future__ import annotations

import subprocess

import yaml

from testleak.config import ROOT


def _path(entry) -> str:
    return next(iter(entry)) if isinstance(entry, dict) else str(entry)


def test_deps_of_always_running_stages_exist_when_every_foreach_is_empty():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    produced_always, produced_by_foreach = set(), set()
    for st in stages.values():
        body = st.get("do", st)
        for out in body.get("outs", []) + body.get("metrics", []) + body.get("plots", []):
            (produced_by_foreach if "foreach" in st else produced_always).add(_path(out).rstrip("/"))
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()

    def in_git(dep: str) -> bool:
        return any(f == dep or f.startswith(dep + "/") for f in tracked)

    def under(out: str, dep: str) -> bool:
        return out == dep or out.startswith(dep + "/")

    missing = []
    for name, st in stages.items():
        if "foreach" in st:
            continue
        for dep in map(_path, st.get("deps", [])):
            dep = dep.rstrip("/")
            if any(under(o, dep) for o in produced_always) or not any(under(o, dep) for o in produced_by_foreach):
                continue   # an always-running stage writes it, or no stage does (code and resources, checked elsewhere)
            if not in_git(dep):
                missing.append(f"{name}: {dep}")
    assert not missing, ("deps written only by foreach stages, absent on a fresh clone of an experiment whose "
                         f"loop is empty (keep the directory in git with a .gitkeep): {missing}")
