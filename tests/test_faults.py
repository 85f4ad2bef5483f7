"""Fault suite (issue 19 items 1-3, 6): faults and bad input never become results.

Each test reproduces one case of "What happens today" with real stages run as programs
(`python -m stages.X RUN`) against a real local OpenAI-protocol server (tests/fake_openai.py)
and asserts the new behaviour: failed calls are `error` outcomes that fail the stage after
it wrote its outputs, a rerun sends only the failed calls again, readers reject damaged
artifacts naming file and line, and every bad configuration is one line from
`testleak params` (no traceback).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import signal
import sys
from pathlib import Path

import pytest
import yaml

from testleak.config import ROOT, compose_dict
from testleak.errors import ConfigError, DataError
from testleak.privacy import value_hash
from testleak.records import read_jsonl, write_json, write_jsonl
from tests.fake_openai import FakeOpenAI, completion_body
from tests.project import local_search

PRIOR = str(ROOT / "testleak" / "resources" / "prior_library.yaml")
EMAILS = ["lena.voigt@mailbox.org", "j.okafor@posteo.net", "mara.fink@web.de", "tom.berg@gmx.net"]
VERDICT_YES = '{"plausible": true, "reason": "a realistic personal address"}'
ERR_500 = {"status": 500, "body": {"error": {"message": "upstream exploded"}}}


def ok(text=VERDICT_YES):
    return {"status": 200, "body": completion_body(text)}


def hosted(role: str, url: str) -> list[str]:
    """Overrides pointing ``role`` (model | judge) at the fake server: one attempt, one at a time."""
    return [f"{role}=gpt-oss-120b", f"{role}.base_url={url}", f"{role}.base_url_env=null",
            f"{role}.api_key_env=FAULT_TEST_KEY", f"{role}.limits.concurrency=1", f"{role}.limits.max_retries=0",
            f"{role}.limits.timeout=10"]


def project(tmp: Path, overrides=(), edit=None) -> Path:
    """A minimal project directory: params.yaml composed from conf/ (+ edits), shipped
    resources referenced by absolute path, a fresh LLM cache."""
    p = compose_dict(["experiment=tiny", *overrides])
    p["library"]["prior"] = PRIOR
    for r in p["experiment"]["runs"].values():
        r["library"] = PRIOR
    for r in p["experiment"]["library_from"].values():   # each names its run's own library
        r["library"] = PRIOR
    if edit:
        edit(p)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False), encoding="utf-8")
    return tmp


def stage(proj: Path, name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESTLEAK_CACHE=str(proj / ".cache"), FAULT_TEST_KEY="sk-test",
               **(env or {}))
    env.pop("TESTLEAK_ROOT", None)
    return subprocess.run([sys.executable, "-m", f"stages.{name}", *args], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=300)


def candidates(proj: Path, run="ours", values=EMAILS) -> list[dict]:
    recs = [{"id": f"r_{i}:0", "response_id": f"r_{i}", "run": run, "attribute": "email", "value": v,
             "value_hash": value_hash(v), "test_index": 0, "evidence": {"pattern": "email"}, "language": "python"}
            for i, v in enumerate(values)]
    d = proj / "data" / "runs" / run
    write_jsonl(d / "candidates.jsonl", recs, kind="candidate")
    write_json(d / "candidates_stats.json", {"run": run, "candidates": len(recs), "responses": len(recs)})
    return recs


def one_line(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert "Traceback" not in stderr, stderr
    return lines[-1]


# ----------------------------------------------------------------------------- failures that fail

def test_judge_500_fails_the_stage_counts_errors_and_a_rerun_resends_only_the_failures(tmp_path):
    with FakeOpenAI() as srv:
        # credentials in the URL: from the variable base_url_env names, never in params
        url = {"FAULT_BASE_URL": srv.base_url.replace("http://", "http://auditor:s3cr3t-token@")}
        proj = project(tmp_path / "p", [*hosted("judge", srv.base_url), "judge.base_url_env=FAULT_BASE_URL",
                                        "verifier.judge_mode=judge"])
        candidates(proj)
        srv.default_text = VERDICT_YES
        srv.script = [ok(), ERR_500, ok(), ERR_500]
        r = stage(proj, "judged", "ours", env=url)
        assert r.returncode == 1, r.stderr
        msg = one_line(r.stderr)
        assert "judged@ours: 2 of 4 calls failed" in msg and "http_5xx" in msg
        assert srv.origin.split("//")[1] in msg and "***@" in msg and "s3cr3t" not in r.stderr
        # it wrote what it has, with the errors counted as errors
        verdicts = read_jsonl(proj / "data/runs/ours/judged.jsonl", kind="verdict")
        assert [v["judge"]["status"] for v in verdicts] == ["ok", "error", "ok", "error"]
        stats = json.loads((proj / "data/runs/ours/judged_stats.json").read_text())
        assert stats["errors"] == 2 and stats["judge_status"]["error"] == 2 and stats["kept"] == 2
        assert len(srv.requests) == 4

        # the endpoint recovers: a rerun sends only the two failed calls, successes come from the cache
        r2 = stage(proj, "judged", "ours", env=url)
        assert r2.returncode == 0, r2.stderr
        assert len(srv.requests) == 6
        verdicts = read_jsonl(proj / "data/runs/ours/judged.jsonl", kind="verdict")
        assert [v["judge"]["status"] for v in verdicts] == ["ok"] * 4 and all(v["kept"] for v in verdicts)
        assert json.loads((proj / "data/runs/ours/judged_stats.json").read_text())["errors"] == 0


def test_judge_errors_are_errors_downstream_not_filtered(tmp_path):
    from testleak.verify.index import build_index

    with FakeOpenAI() as srv:
        proj = project(tmp_path / "p", [*hosted("judge", srv.base_url), "verifier.judge_mode=judge",
                                        "max_error_share=1.0"])  # let judged pass to see what flows on
        corpus = tmp_path / "corpus" / "acme" / "app"
        corpus.mkdir(parents=True)
        (corpus / "settings.py").write_text(f'ADMIN = "{EMAILS[0]}"\n', encoding="utf-8")
        build_index(local_search(dirs=[str(tmp_path / "corpus")]), proj / "data/index/corpus.sqlite")
        candidates(proj)
        srv.default_text = VERDICT_YES
        srv.script = [ok(), ERR_500, ERR_500, ERR_500]
        assert stage(proj, "judged", "ours").returncode == 0  # tolerated by max_error_share=1.0
        # verified with the default threshold: judge errors are errors (not "filtered by the judge")
        params = yaml.safe_load((proj / "params.yaml").read_text())
        params["max_error_share"] = 0.0
        (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        r = stage(proj, "verified", "ours")
        assert r.returncode == 1 and "verified@ours: 3 of 4 calls failed" in one_line(r.stderr)
        hits = read_jsonl(proj / "data/runs/ours/verified.jsonl", kind="hit")
        assert [h["outcome"] for h in hits] == ["in_window", "error", "error", "error"]
        st = json.loads((proj / "data/runs/ours/verified_stats.json").read_text())
        assert st["errors"] == 3 and st["filtered"] == 0 and st["in_window"] == 1
        # confirmed: an error stays an error (a leak count over it is incomplete, not 0)
        r = stage(proj, "confirmed", "ours")
        assert r.returncode == 1 and "confirmed@ours: 3 of 4" in one_line(r.stderr)
        conf = read_jsonl(proj / "data/runs/ours/confirmed.jsonl", kind="confirmed")
        assert [c["status"] for c in conf] == ["confirmed", "error", "error", "error"]
        assert json.loads((proj / "data/runs/ours/confirmed_stats.json").read_text())["errors"] == 3
        # metrics count them per step, and a run that lost calls is not complete
        from testleak.metrics.run import error_counts

        verdicts = read_jsonl(proj / "data/runs/ours/judged.jsonl", kind="verdict")
        assert error_counts([], verdicts, hits, conf) == {"responses": 0, "judged": 3, "verified": 3, "confirmed": 3}


def test_invalid_json_from_the_model_fails_responses(tmp_path):
    with FakeOpenAI() as srv:
        proj = project(tmp_path / "p", hosted("model", srv.base_url))
        write_jsonl(proj / "data/questions/questions.jsonl", [
            {"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"], "text": f"A login form {i}."}
            for i in range(2)], kind="question")
        srv.script = [{"status": 200, "body": "{this is not json"}] * 2
        r = stage(proj, "responses", "ours")
        assert r.returncode == 1, r.stderr
        msg = one_line(r.stderr)
        assert "responses@ours: 2 of 2 calls failed" in msg and "unparsable" in msg and srv.origin in msg
        recs = read_jsonl(proj / "data/runs/ours/responses.jsonl", kind="response")
        assert [x["status"] for x in recs] == ["error", "error"]


# ----------------------------------------------------------------------------- validated records

def test_empty_candidates_against_stats_of_25_is_rejected(tmp_path):
    d = tmp_path / "data/runs/ours"
    d.mkdir(parents=True)
    (d / "candidates.jsonl").write_text("", encoding="utf-8")
    write_json(d / "candidates_stats.json", {"run": "ours", "candidates": 25})
    with pytest.raises(DataError, match=r"candidates\.jsonl has 0 records but candidates_stats\.json says 25"):
        read_jsonl(d / "candidates.jsonl", kind="candidate")


def test_duplicated_line_is_rejected_with_its_line(tmp_path):
    p = tmp_path / "data/runs/ours/candidates.jsonl"
    candidates(tmp_path, values=EMAILS[:2])
    lines = p.read_text().splitlines()
    p.write_text("\n".join([*lines, lines[0]]) + "\n")
    with pytest.raises(DataError, match=r"candidates\.jsonl:3: duplicate candidate id 'r_0:0' \(first at line 1\)"):
        read_jsonl(p, kind="candidate")
    with pytest.raises(DataError, match="duplicate"):  # also when the caller names no kind
        read_jsonl(p)


@pytest.mark.parametrize("kind,field", [("candidate", "value"), ("verdict", "kept"), ("hit", "outcome"),
                                        ("confirmed", "status")])
def test_missing_field_names_file_and_line(tmp_path, kind, field):
    rec = {"candidate": {"id": "c1", "response_id": "r1", "attribute": "email", "value": "a@b.de", "value_hash": "h"},
           "verdict": {"candidate_id": "c1", "attribute": "email", "value_hash": "h", "rules": {}, "judge": {},
                       "kept": True},
           "hit": {"candidate_id": "c1", "attribute": "email", "value_hash": "h", "outcome": "in_window"},
           "confirmed": {"candidate_id": "c1", "attribute": "email", "value_hash": "h", "outcome": "in_window",
                         "status": "confirmed"}}[kind]
    good = {**rec, ("id" if kind == "candidate" else "candidate_id"): "c0"}
    bad = {k: v for k, v in rec.items() if k != field}
    p = tmp_path / f"{kind}.jsonl"
    write_jsonl(p, [good, bad], kind=kind)
    with pytest.raises(DataError, match=rf"{kind}\.jsonl:2: {kind} record without '{field}'"):
        read_jsonl(p, kind=kind)


def test_confirmed_without_status_is_not_a_leak(tmp_path):
    from testleak.metrics.records import is_confirmed

    rec = {"candidate_id": "c1", "attribute": "email", "value_hash": "h", "outcome": "in_window", "policy": "auto"}
    assert not is_confirmed(rec)
    p = tmp_path / "confirmed.jsonl"
    write_jsonl(p, [rec], kind="confirmed")
    with pytest.raises(DataError, match=r"confirmed\.jsonl:1: confirmed record without 'status'"):
        read_jsonl(p)


def test_a_stage_reading_a_damaged_file_prints_one_line(tmp_path):
    proj = project(tmp_path / "p", ["verifier.judge_mode=rules"])
    recs = candidates(proj, values=EMAILS[:2])
    del recs[1]["attribute"]
    write_jsonl(proj / "data/runs/ours/candidates.jsonl", recs, kind="candidate")
    r = stage(proj, "judged", "ours")
    assert r.returncode == 2
    assert one_line(r.stderr).startswith("error: ") and "candidates.jsonl:2: candidate record without 'attribute'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- configuration

BAD_CONFIG = {
    "window min > max": (["verifier.window.min=5", "verifier.window.max=1"], "verifier.window = {min: 5, max: 1}",
                         "min <= max"),
    "negative window": (["verifier.window.min=-1"], "verifier.window.min = -1", ">= 0"),
    "window not a number": (["verifier.window.min=abc"], "verifier.window.min = 'abc'", "an integer"),
    "no scenarios": (["experiment.scenarios=[]"], "experiment.scenarios = []", "non-empty"),
    "budget 0": (["experiment.baseline_budget=0"], "experiment.baseline_budget = 0", ">= 1"),
    "budget 3.7": (["experiment.baseline_budget=3.7"], "experiment.baseline_budget = 3.7", "an integer"),
    "budget ten": (["experiment.baseline_budget=ten"], "experiment.baseline_budget = 'ten'", "an integer"),
    "questions 1.5": (["experiment.questions_per_scenario=1.5"], "experiment.questions_per_scenario = 1.5",
                      "an integer >= 1"),
    "questions abc": (["experiment.questions_per_scenario=abc"], "experiment.questions_per_scenario = 'abc'",
                      "an integer"),
    "seed abc": (["seed=abc"], "seed = 'abc'", "an integer"),
    "timeout 0": (["model.limits.timeout=0"], "model.limits.timeout = 0", "> 0"),
    "labels file missing": (["review=two_reviewers"], "review.labels_file = 'labels/labels.jsonl'",
                            "an existing labels file"),
    "one reviewer": (["review=two_reviewers", "review.reviewers=[r1]", "review.labels_file=params.yaml"],
                     "review.reviewers = ['r1']", "two distinct reviewer"),
    "unknown option": (["model=nope"], "unknown model option 'nope'", "qwen2.5-coder-0.5b"),
    "misspelt key": (["experiment.questoins=3"], "no key 'questoins' in experiment", "questions_per_scenario"),
    "misspelt + key": (["+experiment.questoins=3"], "experiment.questoins = 3", "questions_per_scenario"),
    "malformed override": (["experiment.scenarios=[a"], "experiment.scenarios=[a", "cannot parse"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIG))
def test_bad_config_is_one_line_from_testleak_params(case, tmp_path, monkeypatch, capsys):
    from testleak.cli import main

    overrides, shown, expected = BAD_CONFIG[case]
    monkeypatch.setenv("TESTLEAK_ROOT", str(tmp_path))
    (tmp_path / "params.yaml").write_text("{}\n")
    out = tmp_path / "out.yaml"
    rc = main(["params", *overrides, "-o", str(out)])
    err = capsys.readouterr().err
    assert rc != 0 and not out.exists()
    assert len(err.strip().splitlines()) == 1, err
    assert shown in err and expected in err


def test_bad_config_names_its_source():
    with pytest.raises(ConfigError) as ei:
        from testleak.config import compose

        compose(["experiment=tiny", "experiment.baseline_budget=0"])
    assert "(override 'experiment.baseline_budget=0')" in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        compose(["verifier.window.min=500"])  # a rule over a mapping names the override inside it
    assert str(ei.value) == ("verifier.window = {min: 500, max: 100} (override 'verifier.window.min=500'): "
                             "expected min <= max")
    with pytest.raises(ConfigError) as ei:
        compose(["experiment=tiny", "experiment.scenarios=[game,atlantis]"])
    assert "scenario keys of the taxonomy" in str(ei.value) and "'atlantis'" in str(ei.value)


def test_unknown_option_without_traceback_as_a_program(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "testleak.cli", "params", "model=nope", "-o", str(tmp_path / "x.yaml")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "known: deepseek-r1" in r.stderr, r.stderr


def test_a_stage_rejects_an_invalid_params_yaml(tmp_path):
    proj = project(tmp_path / "p", edit=lambda p: p["verifier"]["window"].update({"min": 100, "max": 1}))
    candidates(proj)
    r = stage(proj, "judged", "ours")
    assert r.returncode == 2
    assert one_line(r.stderr) == ("error: verifier.window = {min: 100, max: 1} (params.yaml): expected min <= max")


@pytest.mark.parametrize("override, expected", [
    ("experiment.baseline_budget=3.7", "experiment.baseline_budget = 3.7"),
    ("verifier.window.min=500", "verifier.window = {min: 500, max: 100}"),
    ("verifier.github.api_url=api.github.com", "verifier.github.api_url = 'api.github.com'"),
])
def test_dvc_exp_run_rejects_a_bad_override_at_composition(tmp_path, override, expected):
    """`dvc exp run -S` composes conf/ itself; the resolver that hydra_plugins/ registers validates
    the composition, so the experiment fails before any stage runs and params.yaml is untouched."""
    from tests.project import env_for, make_project, run

    proj = make_project(tmp_path / "p", ["experiment=tiny"])
    before = (proj / "params.yaml").read_text(encoding="utf-8")
    env = env_for(tmp_path / "cache")
    r = run(["dvc", "exp", "run", "-S", override], proj, env, timeout=300, check=False)
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1 and expected in errors[0] and "conf/ composed with the -S overrides" in errors[0], r.stderr
    assert "unexpected error" not in r.stderr and "ConfigError" not in r.stderr and "troubles" not in r.stderr
    assert "Running stage" not in r.stdout
    assert (proj / "params.yaml").read_text(encoding="utf-8") == before


# ----------------------------------------------------------------------------- answers that are not answers
# The fault table: the local OpenAI-protocol server (tests/fake_openai.py, `mode`) answers HTTP 200
# with something that is not an answer, or fails; each row runs the real stage program, checks its
# exit code, its one line, the records' statuses and what it sent, then fixes the endpoint and checks
# that the rerun sends exactly the calls that failed (the fake server's request log).

CODE = "```python\ndef login(username, password):\n    return check_credentials(username, password)\n```"
TESTS = "```python\ndef test_login():\n    assert login('lena.voigt', 'Tr0ub4dor&3')\n```"


def is_test_turn(body) -> bool:
    return len(body["messages"]) > 1          # [user code prompt, assistant code, user test prompt]


def ours_answer(body) -> str:
    return TESTS if is_test_turn(body) else CODE


def questions(proj: Path, n: int = 2) -> None:
    write_jsonl(proj / "data/questions/questions.jsonl", [
        {"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"], "text": f"A login form {i}."}
        for i in range(n)], kind="question")


def judge_of(*values):
    return lambda body: any(json.dumps(v) in body["messages"][-1]["content"] for v in values)


# case: (stage, fault mode, requests it applies to, error kind, one-line message parts, statuses,
# calls sent, calls sent again after the fix). ours asks 2 questions (code turn + test turn each) of a
# sampling model (temperature 1.0): a failed answer is asked once more; the judge is greedy
# (temperature 0): asked once.
FAULTS = {
    "empty content": ("responses", "empty", is_test_turn, "empty",
                      ["responses@ours: 2 of 2 calls failed", "empty answer"], ["error", "error"], 2 + 2 * 2, 2),
    "whitespace-only content": ("responses", "whitespace", is_test_turn, "empty", ["2 of 2 calls failed", "all whitespace"],
                                ["error", "error"], 6, 2),
    "lone surrogate": ("responses", "surrogate", is_test_turn, "encoding", ["2 of 2 calls failed", "not valid Unicode"],
                       ["error", "error"], 6, 2),
    "oversized answers": ("responses", "oversized", is_test_turn, "oversized",
                          ["2 of 2 calls failed", "above answers.max_chars default=65536"], ["error", "error"], 6, 2),
    "empty judge content": ("judged", "empty", judge_of(EMAILS[2]), "empty",
                            ["judged@ours: 1 of 4 calls failed", "empty answer"], ["ok", "ok", "error", "ok"], 4, 1),
    "non-verdict judge text": ("judged", "non_verdict", judge_of(EMAILS[1], EMAILS[3]), "invalid",
                               ["judged@ours: 2 of 4 calls failed", "not a judge answer: no verdict"],
                               ["ok", "error", "ok", "error"], 4, 2),
    "cut judge verdict": ("judged", "truncated", judge_of(EMAILS[0]), "truncated",
                          ["judged@ours: 1 of 4 calls failed", "cut by max_tokens"], ["error", "ok", "ok", "ok"], 4, 1),
    "echoing error body": ("judged", "echo_error", None, "bad_request",
                           ["judged@ours: 4 of 4 calls failed", "HTTP 400", "cannot process request"], ["error"] * 4, 4, 4),
}


@pytest.mark.parametrize("case", list(FAULTS))
def test_fault_table(case, tmp_path):
    name, mode, when, failed_kind, line, statuses, sent, resent = FAULTS[case]
    with FakeOpenAI() as srv:
        if name == "responses":
            proj = project(tmp_path / "p", hosted("model", srv.base_url))
            questions(proj)
            srv.answer = ours_answer
        else:
            proj = project(tmp_path / "p", [*hosted("judge", srv.base_url), "verifier.judge_mode=judge"])
            candidates(proj)
            srv.default_text = VERDICT_YES
        srv.mode, srv.fault_when = mode, when
        r = stage(proj, name, "ours")
        assert r.returncode == 1, r.stderr
        msg = one_line(r.stderr)
        assert all(part in msg for part in line), msg
        kind = "response" if name == "responses" else "verdict"
        recs = read_jsonl(proj / f"data/runs/ours/{name}.jsonl", kind=kind)
        got = [x["status"] for x in recs] if name == "responses" else [v["judge"]["status"] for v in recs]
        assert got == statuses
        st = json.loads((proj / f"data/runs/ours/{name}_stats.json").read_text())
        assert st["failed_calls"] == {failed_kind: statuses.count("error")}
        assert len(srv.requests) == sent
        failed_bodies = [q["json"] for q in srv.requests if when is None or when(q["json"])]
        # raw text of the answer or of the request reaches neither the message nor the records
        shown = r.stderr + (proj / f"data/runs/ours/{name}.jsonl").read_text() + (proj / "logs/llm_calls.jsonl").read_text()
        assert "\ud800" not in shown and "Sorry, I cannot" not in shown and "lena.voigt@mailbox.org" not in shown
        if mode == "echo_error":
            assert not any(part in r.stderr + json.dumps(got) for part in ("voigt", "okafor", "mailbox", "posteo"))

        srv.mode = None                       # the endpoint is fixed: only the failed calls are sent again
        before = len(srv.requests)
        r2 = stage(proj, name, "ours")
        assert r2.returncode == 0, r2.stderr
        again = [q["json"] for q in srv.requests[before:]]
        assert len(again) == resent and all(b in failed_bodies for b in again)
        recs = read_jsonl(proj / f"data/runs/ours/{name}.jsonl", kind=kind)
        got = [x["status"] for x in recs] if name == "responses" else [v["judge"]["status"] for v in recs]
        assert got == ["ok"] * len(statuses)


def test_fault_table_equivalent_endpoints_share_the_cache(tmp_path):
    """``.../v1/`` and ``localhost`` are the endpoint ``127.0.0.1.../v1`` (testleak.net.canonical_url):
    the rerun sends nothing."""
    with FakeOpenAI() as srv:
        srv.answer = ours_answer
        proj = project(tmp_path / "p", hosted("model", srv.base_url))
        questions(proj)
        assert stage(proj, "responses", "ours").returncode == 0
        assert len(srv.requests) == 4
        for url in (srv.base_url + "/", srv.base_url.replace("127.0.0.1", "localhost") + "/"):
            params = yaml.safe_load((proj / "params.yaml").read_text())
            params["model"]["base_url"] = url
            (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            r = stage(proj, "responses", "ours")
            assert r.returncode == 0, r.stderr
            assert len(srv.requests) == 4, url
        assert [x["status"] for x in read_jsonl(proj / "data/runs/ours/responses.jsonl")] == ["ok", "ok"]


def test_fault_table_500_for_a_match_ours_baseline(tmp_path):
    """A baseline at ours' completion tokens against an endpoint answering 500: the circuit breaker
    stops it after limits.max_consecutive_failures calls (not at baseline_max_responses), the line
    does not advise raising the cap, and the rerun after the fix sends exactly the failed calls."""
    with FakeOpenAI() as srv:
        proj = project(tmp_path / "p", [*hosted("model", srv.base_url), "experiment.baseline_budget=match_ours",
                                        "+experiment.protocol.codexleaks={method: codexleaks, round: 0, library: x}"])
        write_json(proj / "data/runs/ours/responses_stats.json", {"run": "ours", "llm": {"completion_tokens": 5000}})
        srv.answer = lambda body: completion_body("'lena.voigt@mailbox.org'\n", completion_tokens=100)
        srv.mode = "error_500"
        r = stage(proj, "responses", "codexleaks")
        assert r.returncode == 1, r.stderr
        msg = one_line(r.stderr)
        assert msg.startswith("error: responses@codexleaks: stopped early: 8 calls in a row to ") and "http_5xx" in msg
        assert "42 calls not sent" in msg and "raise experiment.baseline_max_responses" not in r.stderr
        assert len(srv.requests) == 8                          # not 400 (baseline_max_responses)
        recs = read_jsonl(proj / "data/runs/codexleaks/responses.jsonl", kind="response")
        assert [x["status"] for x in recs] == ["error"] * 50   # the first batch (5000 / 100 tokens)
        st = json.loads((proj / "data/runs/codexleaks/responses_stats.json").read_text())
        assert st["failed_calls"] == {"circuit_open": 42, "http_5xx": 8}
        assert (st["budget"]["stop"], st["budget"]["failed"]) == ("calls failed", 50)
        failed_bodies = [q["json"] for q in srv.requests]

        srv.mode = None
        r2 = stage(proj, "responses", "codexleaks")
        assert r2.returncode == 0, r2.stderr
        again = [q["json"] for q in srv.requests[8:]]
        assert len(again) == 50 and all(b in again for b in failed_bodies)   # the 8 failed and the 42 not sent
        st = json.loads((proj / "data/runs/codexleaks/responses_stats.json").read_text())
        assert st["budget"]["stop"] == "target reached" and st["ok"] == 50 and st["failed_calls"] == {}


def test_one_answer_cannot_buy_thousands_of_candidates(params):
    """A response under answers.max_chars but full of values gives at most
    answers.max_candidates_per_response candidates (the first in extraction order); the cap is
    counted in the stage's stats, and a response under it keeps all of its candidates."""
    from testleak import pipeline

    def response(rid: str, n: int) -> dict:
        lines = "".join(f'    assert send_mail("user{i}.k@mailbox{i}.org")\n' for i in range(n))
        text = f"```python\ndef test_mail():\n{lines}```"
        return {"id": rid, "status": "ok", "method": "ours", "question_id": "q0", "turn2": {"text": text},
                "tests_text": text}

    flood, small = response("r_flood", 260), response("r_small", 3)
    cands, stats = pipeline.candidates(params, "ours", [flood, small])
    by_response = [c["response_id"] for c in cands]
    assert by_response.count("r_flood") == 200 and by_response.count("r_small") == 3
    assert [c["value"] for c in cands][:2] == ["user0.k@mailbox0.org", "user1.k@mailbox1.org"]
    assert stats["cap"] == {"max_per_response": 200, "responses": 1, "dropped": 60}
    assert stats["candidates"] == 203 and stats["by_attribute"] == {"email": 203}

    tight = {**params, "answers": {**params["answers"], "max_candidates_per_response": 2}}
    cands, stats = pipeline.candidates(tight, "ours", [flood, small])
    assert [c["response_id"] for c in cands] == ["r_flood"] * 2 + ["r_small"] * 2
    assert stats["cap"] == {"max_per_response": 2, "responses": 2, "dropped": 259}


# ----------------------------------------------------------------------------- the corruption table
# Every field with a vocabulary or a type is checked by the reader every stage uses
# (testleak.records.iter_jsonl via pipeline.read_artifact / verify.review.read_labels), naming
# file:line; a value is never quoted. Line 1 of each file is valid, line 2 is corrupted.

VALID = {
    "responses": {"id": "r0", "status": "ok", "method": "ours", "turn1": {"text": CODE}, "turn2": {"text": TESTS},
                  "tests_text": TESTS},
    "candidates": {"id": "c0", "response_id": "r0", "attribute": "email", "value": EMAILS[0],
                   "value_hash": value_hash(EMAILS[0])},
    "judged": {"candidate_id": "c0", "attribute": "email", "value_hash": "h", "rules": {"ok": True, "status": "ok"},
               "judge": {"ok": True, "status": "ok"}, "kept": True},
    "verified": {"candidate_id": "c0", "attribute": "email", "value_hash": "h", "outcome": "in_window", "k": 3},
    "confirmed": {"candidate_id": "c0", "attribute": "email", "value_hash": "h", "outcome": "in_window",
                  "status": "confirmed", "policy": "auto"},
    "labels": {"candidate_id": "c0", "value_hash": "h", "reviewer": "alice", "label": "yes"},
}
CORRUPT = {   # case: (file, fields changed on line 2, what the message says)
    "hit outcome misspelt": ("verified", {"outcome": "in_windw"},
                             "hit record with outcome = 'in_windw': expected one of in_window, out_of_window"),
    "response status okay": ("responses", {"status": "okay"}, "response record with status = 'okay': expected one of ok"),
    "confirmed status okay": ("confirmed", {"status": "okay"}, "confirmed record with status = 'okay'"),
    "confirmed outcome unknown": ("confirmed", {"outcome": "found"}, "confirmed record with outcome = 'found'"),
    "kept as a string": ("judged", {"kept": "false"}, "verdict record with kept = 'false': expected true or false"),
    "kept as a number": ("judged", {"kept": 1}, "verdict record with kept = 1: expected true or false"),
    "judge status unknown": ("judged", {"judge": {"ok": True, "status": "fine"}}, "judge.status = 'fine'"),
    "rules status unknown": ("judged", {"rules": {"ok": True, "status": "passed"}}, "rules.status = 'passed'"),
    "value an int": ("candidates", {"value": 4111111111111111}, "candidate record with value is int: expected a non-empty string"),
    "value null": ("candidates", {"value": None}, "candidate record with value is NoneType: expected a non-empty string"),
    "value empty": ("candidates", {"value": ""}, "value is an empty string"),
    "ok response without its test turn": ("responses", {"turn2": None, "tests_text": ""},
                                          "status 'ok' without its test turn (turn2.text or tests_text)"),
    "ok baseline response without tests_text": ("responses", {"method": "codexleaks", "tests_text": None},
                                                "status 'ok' without tests_text"),
    "label Yes": ("labels", {"label": "Yes"}, "label record with label = 'Yes': expected one of yes, likely, no, unknown"),
    "label maybe": ("labels", {"label": "maybe"}, "label = 'maybe'"),
    "label 7": ("labels", {"label": 7}, "label = 7"),
}


def _reader(paths, name: str):
    from testleak import pipeline
    from testleak.verify.review import read_labels

    if name == "labels":
        return paths.labels_dir / "labels.jsonl", lambda: read_labels(paths.labels_dir / "labels.jsonl")
    return paths.records(name, "ours"), lambda: pipeline.read_artifact(paths, name, "ours")


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corruption_table(case, tmp_path):
    from testleak.paths import RUN_STAGES, Paths

    name, change, expected = CORRUPT[case]
    paths = Paths(tmp_path)
    path, read = _reader(paths, name)
    kind = RUN_STAGES.get(name, "label")
    good = VALID[name]
    bad = {**good, **change, **({"id": "r1"} if "id" in good else {"candidate_id": "c1"})}
    write_jsonl(path, [good, bad], kind=kind)
    with pytest.raises(DataError) as ei:
        read()
    msg = str(ei.value)
    assert msg.startswith(f"{path}:2: ") and expected in msg and "\n" not in msg, msg
    assert EMAILS[0] not in msg and "4111111111111111" not in msg


@pytest.mark.parametrize("name", list(VALID))
def test_corruption_table_invalid_utf8_names_file_and_line(name, tmp_path):
    from testleak.paths import RUN_STAGES, Paths

    paths = Paths(tmp_path)
    path, read = _reader(paths, name)
    write_jsonl(path, [VALID[name]], kind=RUN_STAGES.get(name, "label"))
    with path.open("ab") as f:
        f.write(b'{"schema": "x", "id": "caf\xe9"}\n')   # Latin-1, not UTF-8
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:2 is not valid UTF-8 \(byte 26 of the line\)"):
        read()


def test_corruption_in_a_stats_file_names_the_file(tmp_path):
    from testleak.records import read_json

    p = tmp_path / "responses_stats.json"
    p.write_bytes(b'{"run": "caf\xe9"}')
    with pytest.raises(DataError, match=r"responses_stats\.json is not valid UTF-8 \(byte 12\)"):
        read_json(p)
    p.write_text('{"run": ', encoding="utf-8")
    with pytest.raises(DataError, match=r"responses_stats\.json:1 is not valid JSON"):
        read_json(p)


@pytest.mark.parametrize("damage", ["label maybe", "invalid utf-8"])
def test_corruption_a_stage_stops_with_one_line(damage, tmp_path):
    """The confirmed stage as a program: a bad label or a non-UTF-8 hit file is one line, exit 2."""
    proj = project(tmp_path / "p")
    paths_root = proj / "data/runs/ours"
    write_jsonl(paths_root / "judged.jsonl", [VALID["judged"]], kind="verdict")
    write_jsonl(paths_root / "verified.jsonl", [VALID["verified"]], kind="hit")
    if damage == "label maybe":
        write_jsonl(proj / "labels/labels.jsonl", [{**VALID["labels"], "label": "maybe"}], kind="label")
        where = "labels/labels.jsonl:1: label record with label = 'maybe'"
    else:
        with (paths_root / "verified.jsonl").open("ab") as f:
            f.write(b"\xff\xfe\n")
        where = "verified.jsonl:2 is not valid UTF-8"
    r = stage(proj, "confirmed", "ours")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and where in one_line(r.stderr), r.stderr


# ----------------------------------------------------------------------------- interrupted stages

def _start(proj: Path, name: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESTLEAK_CACHE=str(proj / ".cache"), FAULT_TEST_KEY="sk-test")
    env.pop("TESTLEAK_ROOT", None)
    # a suite started in the background by a non-interactive shell (`cmd &`) ignores SIGINT, and a
    # child inherits SIG_IGN (Python then installs no KeyboardInterrupt handler): start the stage as
    # a foreground program would be, with SIGINT at its default
    return subprocess.Popen([sys.executable, "-m", f"stages.{name}", *args], cwd=proj, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(cond, timeout: float = 60.0) -> None:
    import time

    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_ctrl_c_during_a_stage_is_one_line(tmp_path):
    import signal

    with FakeOpenAI() as srv:
        proj = project(tmp_path / "p", hosted("model", srv.base_url))
        questions(proj)
        srv.answer = ours_answer
        srv.script = [{"status": 200, "body": completion_body(CODE), "delay": 2.0}]
        p = _start(proj, "responses", "ours")
        _wait_for(lambda: srv.requests)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert one_line(err) == ("error: stage responses interrupted (SIGINT): outputs not written; every answered LLM "
                             "and search call is cached: rerun (dvc repro) to go on")
    assert not (proj / "data/runs/ours/responses.jsonl").exists()


def test_a_killed_index_build_leaves_no_temporary_file(tmp_path):
    import signal

    corpus = tmp_path / "corpus" / "acme"
    corpus.mkdir(parents=True)
    line = "".join(f'USER_{i} = "user{i}@mailbox.org"  # a fixture\n' for i in range(200))
    for i in range(1500):
        (corpus / f"m{i}.py").write_text(line, encoding="utf-8")
    proj = project(tmp_path / "p", ["verifier.local.corpus=dirs", f"verifier.local.dirs=[{tmp_path / 'corpus'}]",
                                    "verifier.local.compress=false"])
    p = _start(proj, "index")
    tmp = proj / "data/index/corpus.sqlite.tmp"
    _wait_for(tmp.exists)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert one_line(err).startswith("error: stage index interrupted (SIGTERM)")
    assert sorted(x.name for x in (proj / "data/index").iterdir()) == []
