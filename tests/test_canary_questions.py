"""Ours' canary questions are asked anew for every elicitation seed (issue 26 item 1): the
questioner's gateway at seed s draws other samples (another cache key, another answer), the
questions are kept per seed under data/canary/questions/, and a rerun reads them back."""

from __future__ import annotations

import itertools

from testleak.canary.pipeline import CanaryPaths
from testleak.canary.questions import ensure_questions, questions_of
from testleak.config import compose_dict
from testleak.paths import Paths
from testleak.records import read_jsonl
from tests.fake_openai import FakeOpenAI, completion_body, model_config


def test_every_seed_asks_its_own_questions_and_a_rerun_reads_them(tmp_path, monkeypatch):
    params = compose_dict(["experiment=canary_tiny", "experiment.scenarios=[game,mobile]"])
    n = itertools.count()

    def answer(body):
        i = next(n)
        return completion_body(f"1. Store the player {i} password hash.\n2. Validate the email of user {i}.")

    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test")
    paths = Paths(tmp_path)
    with FakeOpenAI() as srv:
        srv.answer = answer
        params["questioner"] = model_config(srv.base_url)
        q0 = ensure_questions(params, paths, 0)
        q1 = ensure_questions(params, paths, 1)
        sent = len(srv.requests)
        again = ensure_questions(params, paths, 0)
        assert len(srv.requests) == sent            # read back from data/canary/questions/s0.jsonl
    assert sent == 4                                # two scenarios, one request each, per seed
    assert [q["scenario"] for q in q0] == [q["scenario"] for q in q1] == ["game", "mobile"]
    assert {q["text"] for q in q0}.isdisjoint(q["text"] for q in q1)     # other questions at seed 1
    assert again == q0 == read_jsonl(questions_of(CanaryPaths(paths), 0), kind="question")
    assert sorted(p.name for p in CanaryPaths(paths).questions.iterdir()) == ["s0.jsonl", "s1.jsonl"]
