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
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testleak.config import ROOT, compose_dict
from testleak.errors import ConfigError, DataError
from testleak.privacy import value_hash
from testleak.records import read_jsonl, write_json, write_jsonl
from tests.fake_openai import FakeOpenAI, completion_body

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


def stage(proj: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESTLEAK_CACHE=str(proj / ".cache"), FAULT_TEST_KEY="sk-test")
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
        url = srv.base_url.replace("http://", "http://auditor:s3cr3t-token@")  # credentials in the URL
        proj = project(tmp_path / "p", [*hosted("judge", url), "verifier.judge_mode=judge"])
        candidates(proj)
        srv.default_text = VERDICT_YES
        srv.script = [ok(), ERR_500, ok(), ERR_500]
        r = stage(proj, "judged", "ours")
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
        r2 = stage(proj, "judged", "ours")
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
        build_index({"corpus": "dirs", "dirs": [str(tmp_path / "corpus")], "extensions": [".py"]},
                    proj / "data/index/corpus.sqlite")
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
    assert "Running stage" not in r.stdout
    assert (proj / "params.yaml").read_text(encoding="utf-8") == before
