"""Each baseline end to end on the embedded Qwen2.5-Coder-0.5B model (slow: real llama.cpp server)."""

from __future__ import annotations

import copy

import pytest

from testleak.baselines import run_codebreaker, run_codexleaks
from testleak.config import typed
from testleak.methods import summarize
from testleak.baselines.mutation import OPERATORS
from testleak.records import read_jsonl, write_jsonl

pytestmark = pytest.mark.slow

RESPONSE_KEYS = {"id", "prompt_id", "method", "variant", "model", "round", "turn1", "turn2", "functions",
                 "tests_text", "prompt_text", "status", "error", "perplexity"}


ATTRS = ["email", "password"]


def tiny(params, method, **over):
    """``baselines`` (typed) with a tiny ``method`` section."""
    p = copy.deepcopy(params)
    m = p["baselines"][method]
    m["sampling"]["max_tokens"] = 12
    m.update(over)
    return typed(p, "baselines")


def _check_common(recs, method, budget, tmp_path):
    assert len(recs) == budget
    for r in recs:
        assert RESPONSE_KEYS <= set(r)
        assert r["method"] == method and r["variant"] == "none" and r["round"] == 0
        assert r["turn2"] is None and r["functions"] == []
        assert r["status"] in ("ok", "refused", "error")
    ok = [r for r in recs if r["status"] == "ok"]
    assert ok, f"no ok response: {summarize(recs)}"
    for r in ok:
        assert r["tests_text"].startswith(r["prompt_text"])
        assert r["tests_text"] == r["prompt_text"] + r["turn1"]["continuation"]
        assert r["turn1"]["continuation"].strip(), r["id"]  # the model continued the prompt
        assert r["perplexity"] is not None and r["perplexity"] >= 1.0  # llama.cpp returns logprobs
    counts = summarize(recs)
    assert counts["responses"] == budget and counts["ok"] == len(ok)
    out = tmp_path / "responses.jsonl"
    assert write_jsonl(out, recs, kind="response") == budget
    assert [r["id"] for r in read_jsonl(out, kind="response")] == [r["id"] for r in recs]


def test_codexleaks_end_to_end(params, taxonomy, local_gateway, tmp_path):
    p = tiny(params, "codexleaks", samples_per_prompt=2)
    recs = run_codexleaks(p, params["model"], ATTRS, local_gateway, budget=3, seed=11)
    _check_common(recs, "codexleaks", 3, tmp_path)
    assert [r["prompt_id"] for r in recs] == ["codexleaks/p0000"] * 2 + ["codexleaks/p0001"]
    assert [r["attribute"] for r in recs] == ["email", "email", "password"]
    ranks = sorted(r["ppl_rank"] for r in recs if r["perplexity"] is not None)
    assert ranks == list(range(1, len(ranks) + 1))
    # a rerun is served from the gateway cache: same records
    sent = local_gateway.stats["requests"]
    again = run_codexleaks(p, params["model"], ATTRS, local_gateway, budget=3, seed=11)
    assert again == recs and local_gateway.stats["requests"] == sent   # from the cache: the same records


def test_codebreaker_end_to_end(params, taxonomy, local_gateway, tmp_path):
    p = tiny(params, "codebreaker", samples_per_prompt=1, population=1, parents=1, children=1,
             codexleaks_seeds=4)
    recs = run_codebreaker(p, params["model"], ATTRS, local_gateway, budget=3, seed=11)
    _check_common(recs, "codebreaker", 3, tmp_path)
    assert len({r["prompt_id"] for r in recs}) == 3
    first, child = recs[0], recs[1]
    assert first["iteration"] == 0 and first["epoch"] == 0
    assert child["iteration"] == 1 and child["origin"] in set(OPERATORS) - {"crossover"}  # one parent
    assert child["parents"] == [first["prompt_id"]]
    for r in recs:
        sel = r["selection"]
        assert set(sel) == {"fitness", "mean_nll", "semantic_entropy"}
        assert sel["semantic_entropy"] == 0.0  # one response per prompt: one cluster
    ok = [r for r in recs if r["status"] == "ok"]
    for r in ok:  # _check_common required at least one
        assert r["selection"]["fitness"] == pytest.approx(r["selection"]["mean_nll"])
