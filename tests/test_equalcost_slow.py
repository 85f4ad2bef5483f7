"""Equal cost on the embedded model (slow: real llama.cpp server, real stages): under
``experiment.baseline_budget: match_ours`` a baseline's responses stage reads ours' responses
stats and spends ours' completion tokens within 10 %, and a rerun from the response cache stops
at the same response."""

from __future__ import annotations

import json
import sys

import pytest

from tests.project import SMALL_INDEX, env_for, make_project, run

# the questions of the other end-to-end tests (session cache); ours keeps the model's max_tokens so
# that its spend (the target) exceeds 10 CodexLeaks answers and the 10 % bound is reachable
SMALL_QUESTIONER = ["questioner.sampling.max_tokens=320"]

pytestmark = pytest.mark.slow

LIB = "testleak/resources/prior_library.yaml"


def _stats(proj, run_name):
    return json.loads((proj / f"data/runs/{run_name}/responses_stats.json").read_text(encoding="utf-8"))


def test_codexleaks_spends_ours_completion_tokens_within_10_percent(tmp_path, session_cache):
    # the tiny experiment (2 questions, 3 tests) with CodexLeaks beside ours, at the default budget rule
    proj = make_project(tmp_path / "p", ["experiment=tiny", *SMALL_INDEX, *SMALL_QUESTIONER, "experiment.baseline_budget=match_ours",
                                         f"+experiment.protocol.codexleaks={{method: codexleaks, round: 0, library: {LIB}}}"],
                        git=False)
    env = env_for(session_cache)
    for args in (["questions"], ["responses", "ours"], ["responses", "codexleaks"]):
        run([sys.executable, "-m", "stages", *args], proj, env, timeout=900)
    ours, cx = _stats(proj, "ours"), _stats(proj, "codexleaks")
    target = ours["llm"]["completion_tokens"]
    b = cx["budget"]
    assert b["kind"] == "match_ours" and b["reference"] == "ours" and b["target_completion_tokens"] == target
    spent = cx["llm"]["completion_tokens"]
    assert spent == b["completion_tokens"] and b["stop"] == "target reached", b
    # the stop rule: reached, and passed by less than one answer (max_tokens of CodexLeaks' sampling)
    assert target <= spent < target + 100
    assert abs(spent / target - 1) <= 0.10 and b["within_tolerance"]
    assert cx["responses"] == b["responses_issued"]      # every response issued is kept
    # a rerun is served from the response cache and stops at the same response
    run([sys.executable, "-m", "stages", "responses", "codexleaks"], proj, env, timeout=900)
    again = _stats(proj, "codexleaks")
    assert (again["responses"], again["llm"]["completion_tokens"]) == (cx["responses"], spent)
