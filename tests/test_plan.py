"""`testleak plan`: its call counts are the ones the stages then make (counted at a local server
speaking the OpenAI protocol), a second plan finds them cached, and the CLI prints JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testleak import pipeline
from testleak.config import compose_dict, run_model
from testleak.elicit import generate_questions
from testleak.library import load_library
from testleak.llm import open_gateway
from testleak.llm.budget import cost_usd
from testleak.paths import Paths
from testleak.plan import format_plan, plan
from testleak.taxonomy import Taxonomy
from tests.fake_openai import FakeOpenAI
from tests.project import env_for, make_project, shared_cache

PRICE = {"prompt_usd_per_1m": 2.5, "completion_usd_per_1m": 10.0, "as_of": "2026-11-30", "source": "test"}
CODE = "```python\ndef save_user(email, password):\n    return {'email': email, 'password': password}\n```"
TESTS = "```python\ndef test_save_user():\n    assert save_user('mila.k@tutanota.de', 'Hx7#pq2!')\n```"


def _answer(body: dict) -> str:
    user = body["messages"][-1]["content"]
    if "specific coding tasks" in user:
        return "1. Store a player's login name and password.\n2. Reset a player's password by username."
    if "unit test" in user.lower():
        return TESTS
    if body["messages"][0]["role"] == "system":          # baseline completion prompt
        return "'mila.k@tutanota.de'\n"
    return CODE


def _params(srv: FakeOpenAI) -> dict:
    p = compose_dict(["experiment=tiny", "experiment.baseline_budget=3"])
    fake = {"name": "fake", "provider": "openai", "api_model": "fake-model", "base_url": srv.base_url,
            "base_url_env": None, "api_key_env": "FAKE_KEY", "gguf": None, "server": None, "price": PRICE}
    for role in ("model", "questioner", "judge"):
        p[role].update(fake)
        p[role]["limits"].update({"concurrency": 1, "max_retries": 0})
    p["experiment"]["runs"]["codexleaks"] = {"method": "codexleaks", "round": 0,
                                             "library": "testleak/resources/prior_library.yaml"}
    for r in p["experiment"]["runs"].values():   # each run names its model under test (composition)
        r.update(model=p["model"]["name"], model_params="model")
    return p


def _calls(pl: dict, stage: str, run: str | None = None) -> int:
    return sum(r["calls"] for r in pl["rows"] if r["stage"] == stage and r["run"] == run)


def test_plan_counts_are_the_calls_the_stages_make(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTLEAK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    paths = Paths(tmp_path / "proj")
    with FakeOpenAI() as srv:
        srv.answer = _answer
        params = _params(srv)
        before = plan(params, paths)
        tax = Taxonomy.from_config(params)
        exp = params["experiment"]
        sent = {}
        with open_gateway(params["questioner"], paths=paths) as gw:
            questions, _ = generate_questions(tax, exp["scenarios"], exp["questions_per_scenario"], gw)
        sent["questions"] = len(srv.requests)
        library = load_library(paths.library("prior"))
        for run in exp["runs"]:
            n0 = len(srv.requests)
            with open_gateway(run_model(params, run), paths=paths) as gw:
                recs, _ = pipeline.responses(params, run, gw, questions, library)
            sent[run] = len(srv.requests) - n0
            assert sum(r["status"] == "ok" for r in recs) >= 1
        after = plan(params, paths)

    n_scen, n_q = len(exp["scenarios"]), len(exp["scenarios"]) * exp["questions_per_scenario"]
    # the plan's counts, from the stages' code paths, are what the stages then sent
    assert _calls(before, "questions") == sent["questions"] == n_scen
    assert _calls(before, "responses", "ours") == sent["ours"] == 2 * n_q           # code turn + test turn
    assert _calls(before, "responses", "codexleaks") == sent["codexleaks"] == 3     # experiment.baseline_budget
    assert all(r["cached"] == 0 for r in before["rows"])
    # after the run every planned call is in the response cache, at its real usage
    for stage, run in (("questions", None), ("responses", "ours"), ("responses", "codexleaks")):
        rows = [r for r in after["rows"] if r["stage"] == stage and r["run"] == run]
        assert sum(r["cached"] for r in rows) == sum(r["calls"] for r in rows) == _calls(before, stage, run)
        assert sum(r["completion_tokens"] for r in rows) == 3 * sum(r["calls"] for r in rows)  # the fake's usage
    # judge calls are an estimate, said so; cost is tokens x price per model
    judged = [r for r in before["rows"] if r["stage"] == "judged"]
    assert judged and all("estimate" in r["basis"] for r in judged)
    m = before["models"]["fake"]
    assert m["usd"] == pytest.approx(cost_usd(PRICE, m["prompt_tokens"], m["completion_tokens"]))
    assert m["calls"] == before["total"]["calls"] > 0
    text = format_plan(before)
    assert "responses" in text and f"{before['total']['calls']:,}" in text


def test_cli_plan_json_with_either_override_form(tmp_path):
    proj = make_project(tmp_path / "proj", [], git=False)
    env = env_for(shared_cache(tmp_path))
    env.pop("GITHUB_TOKEN", None)
    out = []
    for args in (["experiment=tiny", "verifier=github", "model=gpt-4o"],
                 ["-S", "experiment=tiny", "-S", "verifier=github", "-S", "model=gpt-4o"]):
        p = subprocess.run([sys.executable, "-m", "testleak.cli", "plan", "--json", *args], cwd=proj, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        out.append(json.loads(p.stdout))
    a, b = out
    assert a == b
    assert a["experiment"] == "tiny" and a["models"]["gpt-4o"]["usd"] > 0
    assert a["models"]["gpt-4o"]["price"]["as_of"]
    s = a["search"]
    assert s["backend"] == "github" and s["tokens"] == 1 and "no token set" in s["basis"]
    judged = sum(r["calls"] for r in a["rows"] if r["stage"] == "judged")
    assert s["requests"] == judged and s["min_wall_minutes"] == pytest.approx(round(judged / 10, 1))
