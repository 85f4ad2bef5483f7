"""The human review flow through the installed `testleak` entry point in a real terminal
(a pty, via pexpect): label, reveal with `r`, quit (q and Ctrl-D) and resume where the
reviewer stopped, `--agreement`, `--help`; then the two_reviewers policy (both_yes) in a `dvc repro`
whose confirmed stage counts what two reviewers said yes to in the terminal. No venv and
a failing `python` shim on PATH, as for a user who runs `.venv/bin/testleak`."""

from __future__ import annotations

import json
import re

import pexpect
import pytest
import yaml

from testleak.privacy import mask
from testleak.paths import Paths
from testleak.pipeline import write_artifact
from testleak.records import read_jsonl
from tests.project import BIN, make_project, run, shared_cache, shim_env
from tests.test_verify_review import project  # noqa: F401  (fixture: params + records of run `ours`)

TESTLEAK = str(BIN / "testleak")


def spawn(args, cwd, env) -> pexpect.spawn:
    return pexpect.spawn(TESTLEAK, list(args), cwd=str(cwd), env=env, encoding="utf-8", timeout=60,
                         dimensions=(40, 160))


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before


def labels_of(path):
    return [(l["candidate_id"], l["reviewer"], l["label"]) for l in read_jsonl(path, kind="label")]


def test_label_reveal_quit_resume_and_agreement_in_a_terminal(project, tmp_path):  # noqa: F811
    root, values = project
    env = shim_env(tmp_path, shared_cache(tmp_path))
    labels = root / "data/labels/labels.jsonl"  # review.labels_file of the fixture

    child = spawn(["review", "--reviewer", "alice", "--run", "ours"], root, env)
    child.expect(r"3 of 3 in-window candidates to label \(0 done earlier\)")
    child.expect_exact("> ")
    first = child.before
    assert mask(values["c1"]) in first and values["c1"] not in first       # masked by default
    assert "search:  k=3 in 2 repositories" in first and "judge:   ok plausible=True" in first
    child.sendline("r")
    child.expect_exact(values["c1"])                                       # revealed on request
    child.expect_exact("> ")
    child.sendline("y")
    child.expect_exact("[2/3]")
    child.expect_exact("> ")
    assert values["c3"] not in child.before and mask(values["c3"]) in child.before
    child.sendline("q")
    child.expect("stopped: 1 labelled now")
    finish(child)
    assert labels_of(labels) == [("c1", "alice", "yes")]

    # resume at c3; a bad answer is asked again; Ctrl-D quits as q does
    child = spawn(["review", "--reviewer", "alice"], root, env)
    child.expect(r"2 of 3 in-window candidates to label \(1 done earlier\)")
    child.expect_exact(f"value:   {mask(values['c3'])}")
    child.expect_exact("> ")
    child.sendline("maybe")
    child.expect("unknown answer 'maybe'")
    child.expect_exact("> ")
    child.sendline("n")
    child.expect_exact(f"value:   {mask(values['c4'])}")
    child.expect_exact("> ")
    child.sendeof()
    child.expect("stopped: 1 labelled now")
    finish(child)
    assert labels_of(labels) == [("c1", "alice", "yes"), ("c3", "alice", "no")]

    child = spawn(["review", "--reviewer", "alice"], root, env)
    child.expect(r"1 of 3 in-window candidates to label \(2 done earlier\)")
    child.expect_exact("> ")
    child.sendline("y")
    child.expect("done: 1 labelled, 0 skipped")
    finish(child)

    child = spawn(["review", "--reviewer", "bob"], root, env)
    for _ in range(3):
        child.expect_exact("> ")
        child.sendline("y")
    child.expect("done: 3 labelled, 0 skipped")
    finish(child)
    assert labels_of(labels)[3:] == [("c1", "bob", "yes"), ("c3", "bob", "yes"), ("c4", "bob", "yes")]

    # alice yes/no/yes, bob yes/yes/yes: po = 2/3, pe = 2/3*1 + 1/3*0 = 2/3, kappa = 0
    out = finish(spawn(["review", "--agreement", "alice", "bob"], root, env))
    res = json.loads(out[out.index("{"):])
    assert res == {"reviewers": ["alice", "bob"], "n": 3, "kappa": 0.0, "observed_agreement": round(2 / 3, 4)}

    out = finish(spawn(["review", "--help"], root, env))
    assert "--reviewer REVIEWER" in out and "--agreement" in out and "resumes" in out


def test_review_errors_are_one_line(project, tmp_path):  # noqa: F811
    root, _ = project
    env = shim_env(tmp_path, shared_cache(tmp_path))
    for args, msg in ((["review"], "say who you are: testleak review --reviewer NAME"),
                      (["review", "--reviewer", "alice", "--run", "nope"], r"unknown run 'nope'; experiment '\w+' defines: ours"),
                      (["review", "--agreement", "alice"], "agreement needs exactly two reviewers")):
        child = spawn(args, root, env)
        child.expect(pexpect.EOF)
        child.close()
        lines = [l for l in child.before.splitlines() if l.strip()]
        assert child.exitstatus == 2 and len(lines) == 1 and re.search(msg, lines[0]), child.before


ANSWER = '''```python
def test_register_user():
    user = register(email="lena.voigt@mailbox.org", phone="+49 30 901820", password="Tr4pez!Kunst")
    assert user.email == "lena.voigt@mailbox.org"

def test_contact():
    assert register(email="j.okafor@posteo.net", phone="+44 20 7946 0321")
```'''

CORPUS = '''# app/settings.py of some repository
ADMIN_EMAIL = "lena.voigt@mailbox.org"
SUPPORT_PHONE = "+49 30 901820"
backup_contact = {"email": "j.okafor@posteo.net"}
'''


@pytest.mark.slow
def test_two_reviewers_in_the_terminal_then_confirmed_by_dvc_repro(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "acme-app" / "app").mkdir(parents=True)
    (corpus / "acme-app" / "app" / "settings.py").write_text(CORPUS, encoding="utf-8")

    def edit(p):
        p["verifier"]["judge_mode"] = "rules"
        p["verifier"]["local"].update({"corpus": "dirs", "dirs": [str(corpus)]})
        p["experiment"]["runs"] = {"ours": {"method": "ours", "round": 0, "model": p["model"]["name"], "model_params": "model",
                                            "library": "testleak/resources/prior_library.yaml"}}
        p["experiment"]["library_from"] = {"ours": {"library": p["experiment"]["runs"]["ours"]["library"]}}

    proj = make_project(tmp_path / "p", ["experiment=tiny"], edit=edit)
    env = shim_env(tmp_path, shared_cache(tmp_path))
    resp = {"id": "r_1", "run": "ours", "question_id": "q_1", "method": "ours", "variant": "none",
            "model": "fixed", "round": 0, "status": "ok", "turn1": {"text": "code"}, "functions": [],
            "turn2": {"text": ANSWER}, "tests_requested": 2, "tests_text": ANSWER, "prompt_text": "Write tests.",
            "attributes": ["email", "phone", "password"], "scenario": "web_social"}
    # what the responses stage writes: its records and its stats (a dep of candidates@RUN)
    write_artifact(Paths(proj), "responses", "ours", [resp], {"run": "ours", "responses": 1, "status": {"ok": 1}})
    run(["dvc", "repro", "-s", "index", "candidates@ours", "judged@ours", "verified@ours"], proj, env)
    cands = {c["id"]: c for c in read_jsonl(proj / "data/runs/ours/candidates.jsonl", kind="candidate")}

    def review(reviewer, say):
        """Label every queued candidate in the terminal: ``say(value) -> key``; returns {value: key}."""
        child = spawn(["review", "--reviewer", reviewer], proj, env)
        child.expect(r"(\d+) of \1 in-window candidates to label")
        n = int(child.match.group(1))
        said = {}
        for _ in range(n):
            child.expect(r"id=(\S+)\r?\n")
            cid = child.match.group(1)
            child.expect_exact("> ")
            screen = child.before
            assert cands[cid]["value"] not in screen                      # masked, context lines too
            assert "acme-app/app/settings.py:" in screen                   # the matching corpus line
            said[cands[cid]["value"]] = say(cands[cid]["value"])
            child.sendline(said[cands[cid]["value"]])
        child.expect(f"done: {n} labelled")
        finish(child)
        return said

    alice = review("alice", lambda v: "y")
    bob = review("bob", lambda v: "n" if v.startswith("+") else "y")   # bob rejects the phone number
    assert set(alice) == set(bob) == {"lena.voigt@mailbox.org", "j.okafor@posteo.net", "+49 30 901820"}

    # the paper's policy once both reviewers are done (the config requires the labels file to exist)
    params = yaml.safe_load((proj / "params.yaml").read_text())
    params["review"].update({"policy": "both_yes", "reviewers": ["alice", "bob"]})
    (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = run(["dvc", "repro", "-s", "confirmed@ours"], proj, env)
    assert "sh stages/run confirmed ours" in out.stdout
    conf = read_jsonl(proj / "data/runs/ours/confirmed.jsonl", kind="confirmed")
    confirmed = sorted(cands[c["candidate_id"]]["value"] for c in conf if c["status"] == "confirmed")
    both_yes = sorted(v for v in alice if alice[v] == "y" and bob[v] == "y")
    assert confirmed == both_yes == ["j.okafor@posteo.net", "lena.voigt@mailbox.org"]
    stats = json.loads((proj / "data/runs/ours/confirmed_stats.json").read_text())
    assert (stats["policy"], stats["reviewers"], stats["confirmed"], stats["rejected"]) == \
        ("both_yes", ["alice", "bob"], 2, 1)
    assert stats["agreement"]["n"] == 3 and stats["agreement"]["observed_agreement"] == round(2 / 3, 4)
    assert not re.search(r"lena\.voigt@mailbox\.org", (proj / "data/runs/ours/confirmed_stats.json").read_text())
