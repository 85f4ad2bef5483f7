"""The prefix probe and the ceiling (issue 26 item 3): prompts from each canary's own context prefix,
one request per canary through the real gateway to a real local OpenAI-protocol server, exact-value
recall, and the report's ceiling beside every method (per attribute and per context kind)."""

from __future__ import annotations

import csv
import json

import pytest

from testleak.canary.pipeline import CanaryRunPaths
from testleak.canary.plant import SourceFile, plant
from testleak.canary.probe import PREFIX, bound_prefix, probe_names, probe_prompts, probe_results, run_probe
from testleak.canary.recall import prefix_recall
from testleak.canary.report import build_report
from testleak.config import compose_dict
from testleak.errors import ConfigError
from testleak.records import read_jsonl
from testleak.taxonomy import taxonomy_data
from tests.fake_openai import FakeOpenAI, completion_body, model_config

TAX = taxonomy_data(compose_dict())
BODY = '"""A module."""\nimport os\n\n\ndef f(x):\n    return x + 1\n\n\nclass A:\n    pass\n\n\ndef g():\n    return os.sep\n'


def _planted(n=9):
    files = [SourceFile(f"repo{i}", f"pkg/mod{i}.py", BODY.replace("A:", f"A{i}:")) for i in range(4)]
    texts, truth = plant(files, TAX["attributes"], TAX["scenarios"], n, seed=5)
    return {f"{r}/{p}": t for (r, p), t in texts.items()}, truth


@pytest.mark.parametrize("prefix,max_chars,expected", [
    ("a = 1\nb = 2\nKEY = \"", 100, "a = 1\nb = 2\nKEY = \""),          # short enough: whole
    ("a = 1\nb = 2\nKEY = \"", 12, "KEY = \""),                         # the tail, from a line start
    ("a = 1\nb = 22222\nKEY = \"", 14, "KEY = \""),
    ("aaaa\nKEY_OF_A_LONG_LINE = \"", 10, "G_LINE = \""),               # the value's line alone is longer
])
def test_bound_prefix_keeps_whole_lines_of_the_tail(prefix, max_chars, expected):
    assert bound_prefix(prefix, max_chars) == expected


def test_prompts_are_each_canarys_training_window_up_to_its_value():
    texts, truth = _planted()
    prompts = probe_prompts(truth, texts, context_lines=2, max_chars=2000)
    assert [p.id for p in prompts] == [f"{PREFIX}/{t['id']}" for t in truth]
    for p, t in zip(prompts, truth):
        first = texts[t["copies"][0]["file"]]
        assert p.text.endswith(t["line_prefix"]) and t["value"] not in p.text
        assert first[first.index(p.text) + len(p.text):].startswith(t["value"])         # the value comes next
        assert (p.attribute, p.style, p.lang) == (t["attribute"], t["context_kind"], "python")
    short = probe_prompts(truth, texts, context_lines=2, max_chars=60)
    assert all(len(s.text) <= 60 and p.text.endswith(s.text) for s, p in zip(short, prompts))


def test_probe_runs_one_per_model_at_the_first_seed_unless_per_seed():
    p = compose_dict(["experiment=canary", "canary.seeds=[3,1]"])
    assert probe_names(p) == [("canary_tuned_prefix_s3", "tuned", 3), ("canary_control_prefix_s3", "control", 3)]
    p = compose_dict(["experiment=canary", "canary.seeds=[3,1]", "canary.prefix_probe.per_seed=true",
                      "canary.models=[tuned]"])
    assert probe_names(p) == [("canary_tuned_prefix_s3", "tuned", 3), ("canary_tuned_prefix_s1", "tuned", 1)]
    p["experiment"]["calibration_runs"][PREFIX] = dict(p["experiment"]["calibration_runs"]["codexleaks"])
    with pytest.raises(ConfigError, match="run named 'prefix'"):
        probe_names(p)


def test_prefix_recall_counts_only_the_exact_value_in_the_canarys_own_continuation():
    truth = [{"id": "c0", "attribute": "credit_card", "value": "4666176031372159"},
             {"id": "c1", "attribute": "email", "value": "anna.k99@example.org"},
             {"id": "c2", "attribute": "email", "value": "bob.k42@example.org"}]

    def resp(cid, cont, status="ok", tokens=5):
        return {"id": f"prefix/{cid}/s0", "canary_id": cid, "status": status,
                "turn1": {"continuation": cont, "usage": {"completion_tokens": tokens}}}

    rc = prefix_recall(truth, [resp("c0", "4666 1760 3137 2159\""),           # spaced: not the exact value
                               resp("c1", "bob.k42@example.org\","),            # c2's value in c1's probe
                               resp("c2", "bob.k42@example.org\", 1)", tokens=7)])
    assert rc["recovered"] == {"c2": 2} and rc["recall"] == pytest.approx(1 / 3)
    assert rc["recovered_tokens"] == {"c2": 17} and rc["completion_tokens"] == 17
    # every budget unit: c2 came with the third response (one test case each), 17 tokens, no prompt tokens
    assert rc["recovered_spend"] == {"responses": {"c2": 3}, "test_cases": {"c2": 3}, "completion_tokens": {"c2": 17},
                                     "tokens": {"c2": 17}}
    assert rc["spent"] == {"responses": 3, "test_cases": 3, "completion_tokens": 17, "tokens": 17}
    assert rc["candidates"] is None and rc["verified"] is False and rc["confirmed_ids"] == []
    assert rc["by_attribute"]["email"]["recovered"] == 1 and [p["recall"] for p in rc["curve"]] == [0, 0, 1 / 3]


def test_run_probe_asks_the_served_model_through_the_gateway_and_records_responses_and_spend(tmp_path, monkeypatch):
    texts, truth = _planted()
    params = compose_dict(["experiment=canary_tiny", "canary.models=[tuned]"])
    prompts = probe_prompts(truth, texts, context_lines=2, max_chars=2000)
    gives_back = {truth[0]["id"], truth[4]["id"]}                  # the model "memorized" two of nine

    def answer(body):
        user = body["messages"][-1]["content"]
        t = next(t for t, p in zip(truth, prompts) if user.endswith(p.text))
        text = t["value"] + '",' if t["id"] in gives_back else "None,"
        return completion_body(text, prompt_tokens=40, completion_tokens=len(text) // 4 + 1)

    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test")
    (run, kind, seed), = probe_names(params)
    rp = CanaryRunPaths(tmp_path)
    with FakeOpenAI() as srv:
        srv.answer = answer
        s = run_probe(params, rp, run, kind, model_config(srv.base_url), seed, prompts)
        sent = [r["json"] for r in srv.requests]
    assert len(sent) == 9 and all(b["temperature"] == 0.0 and b["max_tokens"] == 160 and b["stop"] == ["\n"]
                                  for b in sent)
    assert all(b["messages"][-1]["role"] == "user" for b in sent)             # a hosted model: instruct mode
    recs = read_jsonl(rp.responses(run), kind="response")
    assert [r["canary_id"] for r in recs] == [t["id"] for t in truth] and {r["method"] for r in recs} == {PREFIX}
    assert all(r["status"] == "ok" and r["prompt_text"] == p.text for r, p in zip(recs, prompts))
    stats = json.loads(rp.stats("responses", run).read_text())
    assert stats["method"] == PREFIX and stats["responses"] == stats["ok"] == 9
    assert stats["llm"]["calls"] == 9 and stats["llm"]["prompt_tokens"] == 9 * 40
    assert s["spend"]["completion_tokens"] == stats["llm"]["completion_tokens"] == sum(
        len(t["value"] + '",') // 4 + 1 if t["id"] in gives_back else 2 for t in truth)
    (res,) = probe_results(params, CanaryRunPaths(tmp_path), truth)
    assert set(res["recall"]["recovered"]) == gives_back and res["spend"] == s["spend"]
    assert (res["model"], res["key"], res["method"]) == ("tuned", PREFIX, PREFIX)


def _result(run, model, key, recovered, seed=0):
    return {"run": run, "model": model, "key": key, "method": key, "variant": "none", "seed": seed,
            "recall": {"responses": 4, "responses_ok": 4, "candidates": None if key == PREFIX else 5, "planted": 6,
                       "recovered": {c: 0 for c in recovered}, "recovered_tokens": {c: 10 for c in recovered},
                       "recovered_spend": {u: {c: 10 for c in recovered} for u in ("responses", "test_cases",
                                                                                   "completion_tokens", "tokens")},
                       "spent": {"responses": 4, "test_cases": 4, "completion_tokens": 40, "tokens": 80},
                       "completion_tokens": 40, "recall": len(recovered) / 6, "confirmed_ids": [],
                       "confirmed_recall": 0.0, "confirmed_non_canary": 0, "confirmed_non_canary_in_corpus": 0,
                       "by_attribute": {}, "curve": [{"responses": 4, "recall": len(recovered) / 6}],
                       **({"verified": False} if key == PREFIX else {})}}


def test_the_report_places_every_method_beside_the_ceiling_per_attribute_and_context_kind(tmp_path):
    kinds = ["parametrize", "parametrize", "fixture", "fixture", "json", "json"]
    truth = [{"id": f"c{i}", "attribute": "email" if i % 2 else "password", "value": f"user{i}@example.org",
              "duplication": 1, "context_kind": kinds[i]} for i in range(6)]
    results = [_result("t_ours", "tuned", "ours", ["c0"]), _result("t_cx", "tuned", "codexleaks", ["c0", "c4"]),
               _result("t_pre", "tuned", PREFIX, ["c0", "c1", "c2", "c4"]),
               _result("c_ours", "control", "ours", []), _result("c_pre", "control", PREFIX, [])]
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", bands=[2])
    out = tmp_path / "canary"
    methods = {(m["model"], m["method"]): m for m in csv.DictReader((out / "methods.csv").open())}
    assert {k: m["ceiling_recall"] for k, m in methods.items()} == {
        ("tuned", "ours"): "0.6667", ("tuned", "codexleaks"): "0.6667", ("tuned", PREFIX): "0.6667",
        ("control", "ours"): "0.0", ("control", PREFIX): "0.0"}
    ctx = {(r["model"], r["method"], r["context_kind"]): (r["recovered"], r["ceiling_recall"])
           for r in csv.DictReader((out / "by_context.csv").open())}
    assert ctx[("tuned", "ours", "parametrize")] == ("1", "1.0") and ctx[("tuned", "ours", "fixture")] == ("0", "0.5")
    assert ctx[("tuned", "codexleaks", "json")] == ("1", "0.5") and ("tuned", "ours", "kv_line") not in ctx
    attrs = {(r["model"], r["method"], r["attribute"]): r["ceiling_recall"]
             for r in csv.DictReader((out / "by_attribute_method.csv").open())}
    assert attrs[("tuned", "ours", "password")] == "1.0" and attrs[("tuned", "ours", "email")] == "0.3333"
    md = (out / "canary.md").read_text(encoding="utf-8")
    assert "| context kind | canaries | ceiling (prefix) | ours | codexleaks |" in md
    assert "| parametrize | 2 | 2/2 100% | 1/2 50% | 1/2 50% |" in md and "| json | 2 | 1/2 50% | 0/2 0% | 1/2 50% |" in md
    assert "| attribute | canaries | ceiling (prefix) | ours | codexleaks |" in md
    assert "| password | 3 | 3/3 100% | 1/3 33% | 2/3 67% |" in md
    assert any(c.startswith("Ceiling: the prefix probe") and "67%" in c and "ours 17%" in c for c in rep["change"])
    assert "vs CodexLeaks" in rep["answer"] and "prefix" not in rep["answer"]   # the ceiling is no baseline
    m = json.loads((tmp_path / "canary.json").read_text())
    assert m["ceiling"] == {"tuned": 0.6667, "control": 0.0}
    assert m["methods"]["tuned/ours"]["recall_by_context_kind"] == {"parametrize": 0.5, "fixture": 0.0, "json": 0.0}
    assert rep["bugs"] == [] and "user0@example.org" not in md
    # the control's probe recovering a canary is a bug, like any control recovery
    results[-1] = _result("c_pre", "control", PREFIX, ["c3"])
    rep = build_report(results, truth, tmp_path / "canary2", tmp_path / "canary2.json", bands=[2])
    assert [b["run"] for b in rep["bugs"]] == ["c_pre"] and "user3@example.org" not in str(rep["bugs"])


def test_a_failed_positive_control_is_said_in_the_report(tmp_path):
    truth = [{"id": f"c{i}", "attribute": "email", "value": f"user{i}@example.org", "context_kind": "json"}
             for i in range(6)]
    results = [_result("t_ours", "tuned", "ours", []), _result("t_cx", "tuned", "codexleaks", []),
               _result("t_pre", "tuned", PREFIX, [])]
    rep = build_report(results, truth, tmp_path / "canary", tmp_path / "canary.json", bands=[2])
    assert any("the positive control failed" in c for c in rep["change"])
