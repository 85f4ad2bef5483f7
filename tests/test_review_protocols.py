"""One review for every method: under review=auto a baseline's published and shared protocols
differ in their filter only; the same in-window candidates get the same automatic review
(format rules + judge LLM), judged at the confirmed stage when the judged stage was the
baseline's own pass-through."""

from __future__ import annotations

import json

import pytest

from testleak import pipeline
from testleak.config import compose
from testleak.errors import DataError
from testleak.llm import Gateway
from testleak.privacy import value_hash
from testleak.verify.judge import load_fragments
from testleak.verify.review import confirm
from tests.fake_openai import FakeOpenAI, model_config

# a real-looking address, a documentation placeholder (rules reject it), a value the judge calls
# implausible, an echo of its prompt, and a plausible value outside the hit window
VALUES = [("c1", "email", "wei.zhang83@qq.com", "in_window"), ("c2", "email", "john@example.com", "in_window"),
          ("c3", "name", "Ilse Varga", "in_window"), ("c4", "email", "li.na@163.com", "in_window"),
          ("c5", "email", "mark.dale@web.de", "out_of_window")]


def _cands(run):
    out = []
    for cid, attr, value, _ in VALUES:
        c = {"id": cid, "response_id": f"{run}/r1", "run": run, "test_index": 0, "attribute": attr, "value": value,
             "value_hash": value_hash(value)}
        if cid == "c4":
            c.update({"echo_of": "prompt", "echo_match": "equal"})
        out.append(c)
    return out


def _hits(run, verdicts):
    kept = {v["candidate_id"] for v in verdicts if v["kept"]}
    return [{"candidate_id": cid, "run": run, "attribute": attr, "value_hash": value_hash(value),
             "outcome": outcome if cid in kept else "not_searched", "k": 3, "repo_ids": ["7"]}
            for cid, attr, value, outcome in VALUES]


def _judge_answer(body):
    user = body["messages"][-1]["content"]
    return json.dumps({"plausible": "Varga" not in user, "reason": "fake judge"})


@pytest.fixture()
def judge(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-test")
    with FakeOpenAI() as srv:
        srv.answer = _judge_answer
        cfg = model_config(srv.base_url, name="fake-judge", key_env="FAKE_JUDGE_KEY",
                           sampling={"temperature": 0.0, "max_tokens": 64})
        yield srv, lambda name: Gateway(cfg, cache_dir=tmp_path / name, log_path=tmp_path / f"{name}.jsonl")


def _protocol(params, run, gw_factory, srv):
    """judged -> (search outcomes) -> confirmed for ``run`` from the same candidate values."""
    frags = load_fragments("testleak/resources/prior_library.yaml")
    cands = _cands(run)
    n0 = len(srv.requests)
    jgw = gw_factory(f"{run}-judged") if not pipeline.run_protocol(params, run) == "published" else None
    verdicts, vstats = pipeline.judged(params, run, cands, jgw, frags)
    hits = _hits(run, verdicts)
    rgw = gw_factory(f"{run}-review") if pipeline.review_asks_judge(params, run) else None
    recs, stats = pipeline.confirmed(params, run, hits, verdicts, [], cands, rgw, frags)
    for g in (jgw, rgw):
        if g is not None:
            g.close()
    return vstats, recs, stats, len(srv.requests) - n0


def test_published_and_shared_get_the_same_review(judge):
    srv, gw_factory = judge
    params = compose(["verifier.judge_mode=both", "review=auto"])
    assert pipeline.run_protocol(params, "codexleaks") == "published"
    assert pipeline.run_protocol(params, "codexleaks_shared") == "shared"
    pv, pub, pst, pub_calls = _protocol(params, "codexleaks", gw_factory, srv)
    sv, sha, sst, sha_calls = _protocol(params, "codexleaks_shared", gw_factory, srv)
    # the filters differ: published passes everything through, shared's rules and judge filter
    assert pv["mode"] == "published" and pv["kept"] == 5 and sv["mode"] == "both" and sv["kept"] == 2
    # the review is the same: per candidate, status and the reviewer's verdict
    status = lambda recs: {r["candidate_id"]: r["status"] for r in recs}  # noqa: E731
    verdict = lambda recs: {r["candidate_id"]: {k: r["review"][k] for k in ("rules", "judge", "kept")}  # noqa: E731
                            for r in recs if "review" in r}
    assert status(pub) == {"c1": "confirmed", "c2": "potential", "c3": "potential", "c4": "potential",
                           "c5": "not_in_window"}
    # shared: c2-c4 never reached the window (its filter dropped them); where both reviewed, they agree
    assert status(sha) == {"c1": "confirmed", "c2": "not_in_window", "c3": "not_in_window", "c4": "not_in_window",
                           "c5": "not_in_window"}
    assert verdict(pub)["c1"] == verdict(sha)["c1"] == {"rules": "ok", "judge": "ok", "kept": True}
    assert verdict(pub)["c2"]["rules"] == "placeholder" and verdict(pub)["c4"]["rules"] == "echo"
    assert verdict(pub)["c3"] == {"rules": "ok", "judge": "ok", "kept": False}
    assert {r["review"]["by"] for r in pub if "review" in r} == {"confirmed stage"}
    assert {r["review"]["by"] for r in sha if "review" in r} == {"judged stage"}
    # judge calls: published asks only its in-window, rule-passing candidates (c1, c3), at the confirmed stage
    assert (pub_calls, pst["reviewed_here"]) == (2, 4) and (sha_calls, sst["reviewed_here"]) == (3, 0)
    assert pst["protocol"] == "published" and sst["protocol"] == "shared"


def test_the_same_candidates_in_window_under_both_protocols_get_equal_records(judge):
    # the strict form: the same hits for both (as if shared's filter had let everything through)
    srv, gw_factory = judge
    params = compose(["verifier.judge_mode=both", "review=auto"])
    frags = load_fragments("testleak/resources/prior_library.yaml")
    out = {}
    for run in ("codexleaks", "codexleaks_shared"):
        cands = _cands("x")
        gw = gw_factory(run)
        if pipeline.run_protocol(params, run) == "published":
            verdicts, _ = pipeline.judged(params, run, cands, None, frags)
        else:
            verdicts, _ = pipeline.judged(params, run, cands, gw, frags)
        hits = _hits("x", pipeline.judged(params, "codexleaks", cands, None, frags)[0])  # all searched
        recs, _ = pipeline.confirmed(params, run, hits, verdicts, [], cands, gw, frags)
        gw.close()
        out[run] = [{k: r[k] for k in ("candidate_id", "status")} | {k: r.get("review", {}).get(k)
                                                                      for k in ("rules", "judge", "kept")} for r in recs]
    assert out["codexleaks"] == out["codexleaks_shared"]
    assert [r["status"] for r in out["codexleaks"]] == ["confirmed", "potential", "potential", "potential", "not_in_window"]


def test_a_pass_through_verdict_is_no_review():
    params = compose(["review=auto"])
    cands = _cands("codexleaks")
    verdicts, _ = pipeline.judged(params, "codexleaks", cands, None, {})
    with pytest.raises(DataError, match="automatic reviewer"):
        confirm(_hits("codexleaks", verdicts), verdicts, [], "auto")
