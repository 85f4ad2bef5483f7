"""The pipeline graph is true: dvc.yaml declares exactly what each stage reads and writes.

- dvc.yaml is generated from testleak/graph.py (fast test: the committed file equals the generation).
- Every stage of a tiny experiment runs under a recorder (tests/graph_probe.py: audit hook for
  files, recording mapping for params, sys.modules for code) in a copy of the project; each
  file read under the project root must be a declared dep (or an out of the same stage), each
  file written a declared out, each params key read covered by a declared key (a parent
  covers its children), each imported project module covered by a declared dep. Deps and
  outs are taken from DVC's own resolution of dvc.yaml (foreach expanded).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testleak.config import ROOT
from tests.project import SMALL as SMALL_SIZES
from tests.project import env_for, make_project, run

SMALL = ["experiment=tiny", *SMALL_SIZES]
# Not artifacts (testleak/graph.py): params.yaml is checked key by key; logs/ and the caches
# hold call logs and request-keyed answers; code is checked through the imported modules.
IGNORED_PREFIXES = ("logs/", ".cache/", ".dvc/", ".git/")


def test_dvc_yaml_is_generated_from_the_declarations():
    from testleak.graph import dvc_yaml

    assert (ROOT / "dvc.yaml").read_text(encoding="utf-8") == dvc_yaml(), \
        "dvc.yaml differs from testleak/graph.py: run `testleak dvc-yaml` and commit both"


def resolved_stages(proj: Path) -> list[dict]:
    """DVC's own resolution of the project's dvc.yaml, in pipeline order."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    out = []
    with Repo(str(proj)) as repo:
        for s in repo.index.stages:
            params = [k for d in s.deps if isinstance(d, ParamsDependency) for k in d.params]
            out.append({"name": s.name, "cmd": s.cmd, "params": params,
                        "deps": [d.def_path for d in s.deps if not isinstance(d, ParamsDependency)],
                        "outs": [o.def_path for o in s.outs]})
    return out


def _covered(path: str, declared) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in declared)


def _param_covered(key: str, declared) -> bool:
    return any(key == d or key.startswith(d + ".") for d in declared)


def _ignored(f: str) -> bool:
    return (f.startswith(IGNORED_PREFIXES) or "__pycache__" in f or "__path_hook__" in f  # import machinery
            or f.startswith("<"))                                    # code compiled from a string


def _final(f: str) -> str:
    """The file a temporary one becomes (written as X.tmp / X.partial, then renamed to X).

    SQLite's side files of a temporary database (X.tmp-journal, -wal, -shm) belong to X too."""
    return re.sub(r"\.(tmp|partial)(-journal|-wal|-shm)?$", "", f)


def graph_violations(stage: dict, rec: dict) -> list[str]:
    name, deps, outs = stage["name"], stage["deps"], stage["outs"]
    bad = []
    for f in rec["reads"]:
        if f == "params.yaml" or _ignored(f):
            continue
        if f.endswith(".py") and f.startswith(("testleak/", "stages/")):
            continue                                   # code: checked below through sys.modules
        if not (_covered(f, deps) or _covered(f, outs)):
            bad.append(f"{name}: reads {f} but does not declare it as a dep")
    for f in rec["sqlite"]:
        if not _ignored(f) and not (_covered(f, deps) or _covered(_final(f), outs)):
            bad.append(f"{name}: opens the database {f} but does not declare it")
    for d in rec["lists"]:
        if _ignored(d) or d == "." or d.startswith(("testleak", "stages")):
            continue                                   # the import system scans sys.path entries
        if not (_covered(d, deps) or _covered(d, outs)):
            bad.append(f"{name}: lists the directory {d} but does not declare it as a dep")
    for f in rec["writes"]:
        if _ignored(f):
            continue
        if not _covered(_final(f), outs):
            bad.append(f"{name}: writes {f} but does not declare it as an out")
    for k in rec["params"]:
        if not _param_covered(k, stage["params"]):
            bad.append(f"{name}: reads param {k} but does not declare it")
    # `k in mapping` checks: the stage's own run is guaranteed by dvc.yaml's foreach
    run = name.partition("@")[2]
    for k in rec["checked"]:
        if k in (f"experiment.runs.{run}", f"experiment.library_from.{run}"):
            continue
        if not _param_covered(k, stage["params"]):
            bad.append(f"{name}: checks param {k} but does not declare it")
    for m in rec["modules"]:
        if not _covered(m, deps):
            bad.append(f"{name}: imports {m} but does not depend on it")
    return bad


def probe(proj: Path, env: dict, stage: dict, out: Path) -> dict:
    argv = shlex.split(stage["cmd"])
    assert argv[:2] == ["sh", "stages/run"] and "stages" in stage["deps"], stage["cmd"]
    p = subprocess.run([sys.executable, "-m", "tests.graph_probe", str(out), f"stages.{argv[2]}", *argv[3:]],
                       cwd=proj, env=env,
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0 and out.exists(), f"{stage['name']}: probe failed\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    rec = json.loads(out.read_text())
    assert rec["code"] == 0, f"{stage['name']} exited {rec['code']}\n{p.stderr[-3000:]}"
    return rec


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory, session_cache):
    base = tmp_path_factory.mktemp("graph")
    proj = make_project(base / "p", SMALL)
    env = env_for(session_cache)
    env["PYTHONPATH"] = str(proj)          # the copy's code, so its modules lie under its root
    return proj, env, base


@pytest.mark.slow
def test_every_stage_reads_and_writes_only_what_dvc_yaml_declares(tiny_project):
    proj, env, base = tiny_project
    stages = resolved_stages(proj)
    assert [s["name"] for s in stages][:3] == ["questions", "index", "responses@ours"]
    bad, seen = [], {}
    keep = Path(os.environ["TESTLEAK_GRAPH_RECORDS"]) if os.environ.get("TESTLEAK_GRAPH_RECORDS") else base
    keep.mkdir(parents=True, exist_ok=True)      # set it to keep the records for inspection
    for s in stages:
        rec = probe(proj, env, s, keep / f"{s['name'].replace('@', '_')}.json")
        seen[s["name"]] = rec
        bad += graph_violations(s, rec)
    assert not bad, "undeclared reads/writes:\n" + "\n".join(bad)
    # the recorder saw real work: questions written, the run's records read downstream
    assert "data/questions/questions.jsonl" in seen["questions"]["writes"]
    assert "data/runs/ours/responses.jsonl" in seen["candidates@ours"]["reads"]
    assert "experiment.runs.ours.method" in seen["responses@ours"]["params"]
    assert "testleak/records.py" in seen["candidates@ours"]["modules"]


def changed_stages(proj: Path, env: dict) -> set[str]:
    """Stages `dvc status` reports as changed (what `dvc repro` would run first)."""
    out = run(["dvc", "status", "--json"], proj, env).stdout
    return set(json.loads(out or "{}"))


@pytest.mark.slow
def test_repro_is_stable_and_a_change_reruns_exactly_its_dependents(tmp_path, session_cache):
    from testleak.config import compose_dict, dump_params

    proj = make_project(tmp_path / "p", SMALL)
    env = env_for(session_cache)
    run(["dvc", "repro"], proj, env)
    assert (proj / "data/runs/ours/confirmed.jsonl").exists() and (proj / "reports/table2.md").exists()
    # stable outputs: nothing changed, and a second repro runs no stage
    assert changed_stages(proj, env) == set()
    again = run(["dvc", "repro"], proj, env)
    assert "Running stage" not in again.stdout, again.stdout[-2000:]

    # code and shipped resources are one dep of every stage (the testleak directory, testleak/graph.py):
    # a change of the prior library makes every stage stale, and undoing it none
    lib = proj / "testleak/resources/prior_library.yaml"
    original = lib.read_text(encoding="utf-8")
    lib.write_text(original + "\n# touched\n", encoding="utf-8")
    assert changed_stages(proj, env) == {s["name"] for s in resolved_stages(proj)}
    lib.write_text(original, encoding="utf-8")
    assert changed_stages(proj, env) == set()

    # one ablation flag, composed as `dvc exp run -S ablation.library_hints=false` does: the
    # run of ours (its resolved flags) and the metrics/report entries reading ablation/experiment
    # candidates@RUN and judged@RUN declare the run's entry (its method and optional `verification`
    # choose the extractor / the pass-through judge, and DVC cannot declare a key that may be absent),
    # so they are listed too; their work is a rerun anyway once responses@ours changes
    dump_params(compose_dict([*SMALL, "ablation.library_hints=false"]), proj / "params.yaml")
    assert changed_stages(proj, env) == {"responses@ours", "candidates@ours", "judged@ours", "confirmed@ours", "metrics@ours",
                                         "report"}
