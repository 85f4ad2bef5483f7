"""End-to-end runs of the real pipeline with `dvc repro` / `dvc exp run` on the embedded
model, in temporary copies of the project (tiny sizes). The LLM cache is shared within the
test session, so a call made by one test is not paid again by the next."""

from __future__ import annotations

import json

import pytest

from testleak.records import read_jsonl
from tests.project import SMALL_INDEX, SMALL_MODEL, env_for, make_project, run, run_queue

pytestmark = pytest.mark.slow


def test_questions_responses_candidates_through_dvc_repro(tmp_path, session_cache):
    proj = make_project(tmp_path / "p", ["experiment=tiny", *SMALL_INDEX, *SMALL_MODEL])
    env = env_for(session_cache)
    run(["dvc", "repro", "candidates@ours"], proj, env)
    qs = read_jsonl(proj / "data/questions/questions.jsonl", kind="question")
    assert len(qs) == 2 and {q["scenario"] for q in qs} == {"game"}
    assert all(set(q["attributes"]) == {"username", "password"} and q["text"].strip() for q in qs)
    rs = read_jsonl(proj / "data/runs/ours/responses.jsonl", kind="response")
    assert sorted(r["question_id"] for r in rs) == sorted(q["id"] for q in qs)
    assert {r["status"] for r in rs} <= {"ok", "refused", "no_code", "error"}
    for r in rs:
        assert r["turn1"]["text"] and r["model"] == "qwen2.5-coder-0.5b"
    ok = [r for r in rs if r["status"] == "ok"]
    assert ok, [(r["status"], r["error"]) for r in rs]
    for r in ok:
        assert r["functions"] and r["turn2"]["text"] and r["tests_requested"] == 3
    cands = read_jsonl(proj / "data/runs/ours/candidates.jsonl", kind="candidate")
    ok_ids = {r["id"] for r in ok}
    # a candidate holds its raw value, or (echo, taxonomy word, placeholder) only its mask
    assert all(c["response_id"] in ok_ids and (c.get("value") or (c["withheld"] and c["masked"])) and c["attribute"]
               for c in cands)
    stats = json.loads((proj / "data/runs/ours/candidates_stats.json").read_text())
    assert stats["candidates"] == len(cands) and stats["responses"] == len(rs)
    # a second repro is a no-op
    out = run(["dvc", "repro", "candidates@ours"], proj, env).stdout
    assert "didn't change" in out or "up to date" in out.lower()


def _baseline_runs(p):
    lib = "testleak/resources/prior_library.yaml"
    p["experiment"]["runs"] = {"codexleaks": {"method": "codexleaks", "round": 0, "library": lib, "model": p["model"]["name"], "model_params": "model"},
                               "codebreaker": {"method": "codebreaker", "round": 0, "library": lib, "model": p["model"]["name"], "model_params": "model"}}
    p["experiment"]["library_from"] = {}
    p["experiment"]["baseline_budget"] = 3
    p["baselines"]["codexleaks"]["samples_per_prompt"] = 3
    p["baselines"]["codebreaker"]["samples_per_prompt"] = 3


def test_both_baselines_end_to_end_through_dvc_repro(tmp_path, session_cache):
    proj = make_project(tmp_path / "p", ["experiment=tiny", *SMALL_INDEX, *SMALL_MODEL], edit=_baseline_runs)
    env = env_for(session_cache)
    run(["dvc", "repro"], proj, env)
    for method in ("codexleaks", "codebreaker"):
        rs = read_jsonl(proj / f"data/runs/{method}/responses.jsonl", kind="response")
        assert len(rs) == 3 and {r["method"] for r in rs} == {method}
        assert all(r["prompt_text"] for r in rs)
        ok = [r for r in rs if r["status"] == "ok"]
        assert ok, (method, [(r["status"], r["error"]) for r in rs])
        assert all(r["tests_text"].startswith(r["prompt_text"]) and len(r["tests_text"]) > len(r["prompt_text"])
                   for r in ok)
        hits = read_jsonl(proj / f"data/runs/{method}/verified.jsonl", kind="hit")
        cands = read_jsonl(proj / f"data/runs/{method}/candidates.jsonl", kind="candidate")
        assert len(hits) == len(cands)
        m = json.loads((proj / f"metrics/{method}.json").read_text())
        assert m["responses"] == 3  # headline metrics (testleak.metrics.headline)
    table3 = (proj / "reports/table3.md").read_text()
    assert "codexleaks" in table3.lower() and "codebreaker" in table3.lower()


def test_queued_sweep_of_two_experiments_shows_in_exp_show(tmp_path, session_cache):
    proj = make_project(tmp_path / "p", ["experiment=tiny", *SMALL_INDEX, *SMALL_MODEL])
    env = env_for(session_cache)
    run(["dvc", "config", "hydra.enabled", "true"], proj, env)
    sets = ["-S", "experiment=tiny", "-S", SMALL_INDEX[0], *sum((["-S", s] for s in SMALL_MODEL), []),
            "-S", "verifier.window.max=100,50"]   # a knob after the LLM stages: the second experiment's
    # LLM answers come from the session cache (the sweep, not the model, is under test here)
    run(["dvc", "exp", "run", "--queue", *sets], proj, env)
    st = run_queue(proj, env, jobs=1, timeout=1500)
    assert st.count("Success") == 2, st
    shown = json.loads(run(["dvc", "exp", "show", "--json"], proj, env).stdout)
    exps = []
    for entry in shown:
        for ex in entry.get("experiments") or []:
            for r in ex.get("revs", []):
                exps.append(r)
    assert len(exps) == 2, json.dumps(shown)[:2000]
    windows = set()
    for r in exps:
        data = r["data"]
        params = data["params"]["params.yaml"]["data"]
        windows.add(params["verifier"]["window"]["max"])
        metrics = data["metrics"]
        assert "metrics/ours.json" in metrics, list(metrics)
        assert "responses" in metrics["metrics/ours.json"]["data"]
    assert windows == {100, 50}
