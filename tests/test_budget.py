"""The spending cap (``budget``): a capped stage stops before the cap, writes what it has marked
partial and exits 3; a rerun with a raised cap completes without repeating a call.

The responses stage runs as a real subprocess against a local server speaking the OpenAI
protocol (tests/fake_openai.py), which counts every request it receives.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testleak.errors import ConfigError
from testleak.llm import open_gateway
from testleak.llm.budget import Meter, cost_usd, estimate_prompt_tokens
from testleak.records import read_jsonl, write_jsonl
from tests.fake_openai import FakeOpenAI, model_config
from tests.project import env_for, make_project, shared_cache
from tests.test_stages import fake_model, project, use_model  # noqa: F401  (the fixture of a tiny project)

CODE = "```python\ndef save_user(email, password):\n    return {'email': email, 'password': password}\n```"
TESTS = ("```python\ndef test_save_user():\n    assert save_user('mila.k@tutanota.de', 'Hx7#pq2!')['email']"
         " == 'mila.k@tutanota.de'\n```")
COMPLETION_TOKENS = 3          # what the fake server reports per answer (completion_body's default)
MAX_TOKENS = 10                # the model's max_tokens: the worst case reserved per call


def _code_then_tests(body: dict) -> str:
    return TESTS if "unit test" in body["messages"][-1]["content"].lower() else CODE


def _sent(srv: FakeOpenAI) -> list[str]:
    return [json.dumps(r["json"], sort_keys=True) for r in srv.requests]


def _fake_model(p: dict, srv: FakeOpenAI) -> None:
    p["model"].update({"name": "fake", "provider": "openai", "api_model": "fake-model", "base_url": srv.base_url,
                       "base_url_env": None, "api_key_env": "FAKE_KEY", "gguf": None, "server": None,
                       "price": {"prompt_usd_per_1m": 1.0, "completion_usd_per_1m": 4.0, "as_of": "2026-11-30",
                                 "source": "test"}})
    p["model"]["sampling"]["max_tokens"] = MAX_TOKENS
    p["model"]["limits"].update({"concurrency": 1, "max_retries": 0, "timeout": 30})
    # one run of ours, naming its model as composition writes it (experiment.runs.RUN.model, model_params)
    p["experiment"]["runs"] = {"ours": {**p["experiment"]["runs"]["ours"], "model": p["model"]["name"], "model_params": "model"}}


def _set_budget(proj, **cap) -> None:
    import yaml

    p = yaml.safe_load((proj / "params.yaml").read_text())
    p["budget"].update(cap)
    (proj / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))


def test_capped_stage_stops_and_resumes_with_zero_repeated_calls(tmp_path):
    questions = [{"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"],
                  "text": f"Task {i}: store a player's login and password", "generator_model": "x", "sample": 0}
                 for i in range(8)]
    cap = 40
    with FakeOpenAI() as srv:
        srv.answer = _code_then_tests
        proj = make_project(tmp_path / "proj", ["experiment=tiny"], edit=lambda p: _fake_model(p, srv), git=False)
        write_jsonl(proj / "data/questions/questions.jsonl", questions, kind="question")
        env = env_for(shared_cache(tmp_path))
        env["FAKE_KEY"] = "sk-fake"
        cmd = [sys.executable, "-m", "stages.responses", "ours"]

        _set_budget(proj, completion_tokens=cap)
        p1 = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
        first = _sent(srv)
        stats1 = json.loads((proj / "data/runs/ours/responses_stats.json").read_text())
        recs1 = read_jsonl(proj / "data/runs/ours/responses.jsonl", kind="response")

        _set_budget(proj, completion_tokens=10 * cap)
        p2 = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
        second = _sent(srv)[len(first):]
        stats2 = json.loads((proj / "data/runs/ours/responses_stats.json").read_text())
        recs2 = read_jsonl(proj / "data/runs/ours/responses.jsonl", kind="response")

    # the capped run: stopped with one line and exit 3, before the worst case of the next call could pass the cap
    assert p1.returncode == 3, p1.stderr[-2000:]
    err = [ln for ln in p1.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "budget.completion_tokens=40 reached" in err[0], p1.stderr[-2000:]
    n1 = len(first)
    assert n1 * COMPLETION_TOKENS <= cap < n1 * COMPLETION_TOKENS + MAX_TOKENS  # stopped at the cap, not earlier
    assert stats1["partial"] is True and "budget.completion_tokens" in stats1["partial_reason"]
    assert stats1["llm"]["completion_tokens"] == n1 * COMPLETION_TOKENS == sum(
        (r["turn1"] or {}).get("usage", {}).get("completion_tokens", 0)
        + (r["turn2"] or {}).get("usage", {}).get("completion_tokens", 0) for r in recs1)
    assert len(recs1) == len(questions)                       # kept what it has: every question is a record
    assert 0 < sum(r["status"] == "ok" for r in recs1) < len(questions)
    assert any("budget" in (r["error"] or "") for r in recs1 if r["status"] == "error")

    # the rerun with a raised cap: complete, and not one request of the first run sent again
    assert p2.returncode == 0, p2.stderr[-2000:]
    assert stats2["partial"] is False and all(r["status"] == "ok" for r in recs2)
    assert not set(second) & set(first)
    assert n1 + len(second) == 2 * len(questions)              # code turn + test turn per question, each sent once
    # the spend counts every answer used, cached or not (cost from an empty cache)
    assert stats2["llm"]["calls"] == 2 * len(questions)
    assert stats2["llm"]["completion_tokens"] == 2 * len(questions) * COMPLETION_TOKENS
    want = cost_usd({"prompt_usd_per_1m": 1.0, "completion_usd_per_1m": 4.0},
                    stats2["llm"]["prompt_tokens"], stats2["llm"]["completion_tokens"])
    assert stats2["llm"]["usd"] == pytest.approx(want, abs=1e-6) and want > 0


def test_usd_cap_counts_other_stages_of_the_experiment(tmp_path):
    """The ledger: what an earlier stage of the same experiment spent counts against the cap;
    another experiment's spend does not."""
    price = {"prompt_usd_per_1m": 1000.0, "completion_usd_per_1m": 1000.0}   # 1 token = $0.001
    msgs = lambda i: [{"role": "user", "content": f"question number {i:04d}"}]  # noqa: E731
    with FakeOpenAI() as srv:
        cfg = model_config(srv.base_url, key_env="FAKE_KEY", api_model="m", sampling={"temperature": None, "max_tokens": 5},
                           limits={"timeout": 10}, price=price)
        import os

        os.environ["FAKE_KEY"] = "sk-fake"
        logs = tmp_path / "logs" / "llm_calls.jsonl"
        kw = dict(cache_dir=tmp_path / "cache", log_path=logs)
        with open_gateway(cfg, attribution={"stage": "questions"}, budget={"scope": "exp"}, **kw) as gw:
            for i in range(4):
                assert gw.chat(msgs(i)).status == "ok"
        spent_q = gw.meter.own.usd
        assert spent_q == pytest.approx(4 * cost_usd(price, 7, 3))     # fake usage: 7 prompt + 3 completion tokens
        one = cost_usd(price, 7, 3)
        worst = cost_usd(price, estimate_prompt_tokens(msgs(0)), 5)
        cap = spent_q + 2 * one + worst - 1e-9                       # room for exactly two more calls
        with open_gateway(cfg, attribution={"stage": "responses", "run": "ours"},
                          budget={"usd": cap, "scope": "exp"}, **kw) as gw:
            outs = [gw.chat(msgs(10 + i)) for i in range(4)]
        assert [c.status for c in outs] == ["ok", "ok", "error", "error"]
        assert outs[2].error_kind == "budget" and "budget.usd=" in outs[2].error
        assert len(srv.requests) == 6
        # another experiment (scope) starts from its own spend
        with open_gateway(cfg, attribution={"stage": "responses", "run": "ours"},
                          budget={"usd": cap - spent_q, "scope": "other"}, **kw) as gw:
            assert gw.chat(msgs(20)).status == "ok"


def test_usd_cap_needs_a_price():
    with pytest.raises(ConfigError, match=r"budget.usd=1 needs the price of model 'm'"):
        Meter("m", None, {"usd": 1})


def test_metrics_report_cost_per_confirmed_leak(project):  # noqa: F811
    """A priced fake model through the stages: the run's LLM cost (responses_stats.json) and the
    cost per confirmed leak in data/metrics/RUN.json."""
    from tests.test_stages import CODE_AND_TESTS, RUN, run_stage

    paths, configure = project
    price = {"prompt_usd_per_1m": 3.0, "completion_usd_per_1m": 15.0, "as_of": "2026-11-30", "source": "test"}
    qs = [{"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"], "text": t, "kind": "scenario"}
          for i, t in enumerate(["Write a sign-up handler.", "Write a login check."])]
    write_jsonl(paths.questions, qs, kind="question")
    with FakeOpenAI() as srv:
        srv.default_text = CODE_AND_TESTS
        # the run's model under test (the model group its entry references), priced
        configure(lambda p: use_model(p, {**fake_model(srv.base_url), "price": price}))
        assert run_stage("responses", RUN) == 0
        for stage in ("candidates", "judged", "index", "verified", "confirmed", "metrics"):
            assert run_stage(stage, *([] if stage == "index" else [RUN])) in (0, None)
        sent = len(srv.requests)
    st = json.loads(paths.stats("responses", RUN).read_text())
    assert st["partial"] is False and st["llm"]["calls"] == sent == 4
    m = json.loads(paths.run_metrics(RUN).read_text())
    confirmed = m["steps"]["total"]["confirmed"]
    assert confirmed >= 1
    want = cost_usd(price, 4 * 7, 4 * 3)          # the fake server's usage: 7 prompt + 3 completion tokens
    assert m["cost"]["usd"] == pytest.approx(want) and m["cost"]["completion_tokens"] == 12
    assert m["cost"]["usd_per_confirmed"] == pytest.approx(want / confirmed)


def test_budget_keys_are_typed_and_a_usd_cap_needs_prices():
    from testleak.config import compose

    with pytest.raises(ConfigError) as e:
        compose(["budget.usd=5", "model=gpt-oss-120b"])
    line, = str(e.value).splitlines()
    assert line.startswith("budget.usd = 5") and "model 'gpt-oss-120b' has price null" in line
    with pytest.raises(ConfigError, match=r"budget.completion_tokens = 0 .*expected an integer >= 1"):
        compose(["budget.completion_tokens=0"])
    assert compose(["budget.usd=5", "model=gpt-4o"])["budget"]["usd"] == 5
