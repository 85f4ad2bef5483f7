"""End to end on the embedded Qwen2.5-Coder-0.5B: questions -> two-turn responses for
1 scenario x 2 questions with small max_tokens, through the library functions."""

from __future__ import annotations

import pytest

from testleak.elicit import ElicitSettings, elicit, generate_questions, response_id

pytestmark = pytest.mark.slow


def test_questions_then_responses_on_embedded_model(local_gateway, params, taxonomy):
    from testleak.library import load_library
    from testleak.paths import Paths

    qs, stats = generate_questions(taxonomy, ["game"], 2, local_gateway, max_tries=2, params={"max_tokens": 160})
    assert 1 <= len(qs) <= 2 and stats[0].attempts >= 1
    assert all(q["scenario"] == "game" and q["attributes"] == ["username", "password"] and q["text"] for q in qs)
    assert len({q["id"] for q in qs}) == len(qs)

    p = {**params, "experiment": {**params["experiment"], "tests_per_function": 2,
                                  "hints_per_attribute": {"templates": 1, "fragments": 1}}}
    s = ElicitSettings.from_params(p, "ours")
    recs = list(elicit(qs, s, taxonomy, local_gateway, load_library(Paths().library("prior")),
                       params={"max_tokens": 200}))
    assert [r["question_id"] for r in recs] == [q["id"] for q in qs]
    for r in recs:
        assert r["id"] == response_id("ours", r["question_id"])
        assert r["status"] in ("ok", "refused", "no_code", "error")
        assert r["turn1"]["status"] == "ok" and r["turn1"]["usage"]["completion_tokens"] > 0
        assert r["turn1"]["messages"][0]["content"].startswith("As a experienced software engineer")
        assert (r["error"] is None) == (r["status"] == "ok")
    ok = [r for r in recs if r["status"] == "ok"]
    assert ok, [(r["status"], r["error"]) for r in recs]
    for r in ok:
        assert r["functions"] and all(f["attributes"] for f in r["functions"])
        assert r["turn2"]["status"] == "ok" and r["tests_text"] == r["turn2"]["text"] and r["tests_text"].strip()
        assert "Please generate 2 unit test cases" in r["turn2"]["messages"][-1]["content"]
        assert r["hints"]["enabled"] and r["hints"]["by_attribute"]  # the prior library's hints were sent
    # rerun: every call from the cache, same records
    sent = local_gateway.stats["requests"]
    again = list(elicit(qs, s, taxonomy, local_gateway, load_library(Paths().library("prior")),
                        params={"max_tokens": 200}))
    assert again == recs and local_gateway.stats["requests"] == sent   # no call-state in a record
