"""Fast tests of the per-run stage entry points (stages/<stage>.py) over a temporary project:
real params.yaml, real JSONL artifacts, a real SQLite index over a tiny corpus, the real
gateway against a local server speaking the OpenAI protocol (tests/fake_openai.py), a tiny
random masked LM for the library stage. The slow end-to-end runs use the embedded model."""

from __future__ import annotations

import json
import textwrap

import pytest

from testleak import pipeline
from testleak.config import compose_dict, dump_params
from testleak.errors import ConfigError
from testleak.paths import Paths
from testleak.privacy import mask, value_hash
from testleak.records import read_jsonl, write_jsonl
from tests.fake_openai import FakeOpenAI, model_config

from test_library_division import tiny_mlm  # noqa: F401  (fixture: a tiny masked LM directory)

RUN = "ours"
EMAIL, USER, PASSWORD = "nadia.okafor@qq.com", "nadia_okafor88", "Tr0ub4dor&3xQ"
TESTS = textwrap.dedent(f'''\
    ```python
    def test_register():
        user = register(username="{USER}", email="{EMAIL}", password="{PASSWORD}")
        assert user.email == "{EMAIL}"
        other = register(username="test_user", email="john.doe@example.com", password="password123")
        assert other.username == "test_user"
    ```''')
# (attribute, value, kept by the format rules) in extraction order; the repeated email is one candidate
EXTRACTED = [("username", USER, True), ("email", EMAIL, True), ("password", PASSWORD, True),
             ("username", "test_user", False), ("email", "john.doe@example.com", False),
             ("password", "password123", False)]
JUDGE_YES = '{"plausible": true, "reason": "looks real"}'


def fake_model(base_url: str, name: str = "fake") -> dict:
    return model_config(base_url, name=name, sampling={"temperature": 0.0, "max_tokens": 64}, limits={"max_retries": 1})


def use_model(p: dict, cfg: dict) -> dict:
    """``p`` with ``cfg`` as the ``model`` group, renamed in every run that references it
    (``model_params: model``), as composition writes it."""
    p["model"] = cfg
    for spec in p["experiment"]["runs"].values():
        if spec.get("model_params") == "model":
            spec["model"] = cfg["name"]
    return p


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory (params.yaml of experiment=tiny, rules-only judging, a local index
    over a two-repository corpus) that the stages find through $TESTLEAK_ROOT."""
    root = tmp_path / "proj"
    corpus = tmp_path / "corpus"
    (corpus / "repo_a").mkdir(parents=True)
    (corpus / "repo_b").mkdir(parents=True)
    (corpus / "repo_a" / "users.py").write_text(f'ADMIN = {{"email": "{EMAIL}", "user": "{USER}"}}\n')
    (corpus / "repo_b" / "seed.py").write_text(f'contacts = ["{EMAIL}"]\n')
    p = compose_dict(["experiment=tiny"])
    p["verifier"]["judge_mode"] = "rules"
    p["verifier"]["local"].update({"corpus": "dirs", "dirs": [str(corpus)], "max_bytes": 10_000_000})
    root.mkdir()
    monkeypatch.setenv("TESTLEAK_ROOT", str(root))
    monkeypatch.setenv("TESTLEAK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test")

    def configure(edit=None):
        if edit:
            edit(p)
        dump_params(p, root / "params.yaml")
        return p

    configure()
    paths = Paths(root)
    write_jsonl(paths.responses(RUN), [
        {"id": "r_1", "run": RUN, "method": "ours", "question_id": "q1", "status": "ok", "prompt_text": "write tests",
         "tests_text": TESTS, "turn2": {"text": TESTS}, "functions": [{"language": "python"}], "error": None},
        {"id": "r_2", "run": RUN, "method": "ours", "question_id": "q2", "status": "refused", "prompt_text": "x",
         "tests_text": "", "turn2": None, "functions": [], "error": "turn 2: refusal"},
    ], kind="response")
    return paths, configure


def run_stage(name: str, *argv: str) -> int:
    import importlib

    return importlib.import_module(f"stages.{name}").main(list(argv))


def stats(paths: Paths, stage: str) -> dict:
    return json.loads(paths.stats(stage, RUN).read_text())


def test_unknown_run_is_one_clear_error(project):
    with pytest.raises(ConfigError, match=r"unknown run 'nope'; experiment 'tiny' defines: ours"):
        run_stage("candidates", "nope")
    with pytest.raises(ConfigError, match="usage: python -m stages.judged RUN"):
        run_stage("judged")


def test_candidates_stage(project):
    paths, _ = project
    assert run_stage("candidates", RUN) == 0
    cands = read_jsonl(paths.candidates(RUN), kind="candidate")
    # placeholders keep only their hash and mask under data/; the others their raw value
    assert [(c["attribute"], c.get("value"), c.get("masked"), c.get("withheld")) for c in cands] == \
        [(a, v, None, None) if k else (a, None, mask(v), "placeholder") for a, v, k in EXTRACTED]
    assert [c["value_hash"] for c in cands] == [value_hash(v) for _, v, _ in EXTRACTED]
    assert [c["id"] for c in cands] == [f"r_1:{i}" for i in range(len(EXTRACTED))]
    assert {c["response_id"] for c in cands} == {"r_1"}
    s = stats(paths, "candidates")
    assert (s["run"], s["responses"], s["candidates"], s["skipped"], s["duplicates"]) == (RUN, 2, 6, {"refused": 1}, 2)


def test_judged_stage_rules_mode_calls_no_llm(project):
    paths, configure = project
    configure(lambda p: p.update(judge=fake_model("http://127.0.0.1:9/v1")))  # unreachable: must not be called
    run_stage("candidates", RUN)
    assert run_stage("judged", RUN) == 0
    verdicts = read_jsonl(paths.judged(RUN), kind="verdict")
    assert [v["kept"] for v in verdicts] == [k for *_, k in EXTRACTED]
    assert {v["judge"]["status"] for v in verdicts} == {"skipped"} and {v["mode"] for v in verdicts} == {"rules"}
    for v, (_, value, _) in zip(verdicts, EXTRACTED):
        assert value not in json.dumps(v)  # reasons are masked
    s = stats(paths, "judged")
    assert (s["mode"], s["candidates"], s["kept"], s["rules_ok"]) == ("rules", 6, 3, 3)


def test_judged_stage_both_asks_only_rule_passing_values_and_judge_asks_all(project):
    paths, configure = project
    run_stage("candidates", RUN)
    with FakeOpenAI() as srv:
        srv.default_text = JUDGE_YES
        configure(lambda p: (p.update(judge=fake_model(srv.base_url)), p["verifier"].update(judge_mode="both")))
        run_stage("judged", RUN)
        both = read_jsonl(paths.judged(RUN), kind="verdict")
        assert len(srv.requests) == 3  # the three values the format rules accept
        assert [v["judge"]["status"] for v in both] == ["ok"] * 3 + ["skipped"] * 3
        assert [v["kept"] for v in both] == [True] * 3 + [False] * 3
        assert all(EMAIL not in json.dumps(r["json"]) or i == 1 for i, r in enumerate(srv.requests))
        configure(lambda p: p["verifier"].update(judge_mode="judge"))
        run_stage("candidates", RUN)    # judge-only applies no placeholder rule: the candidates keep their values
        run_stage("judged", RUN)
        judge_only = read_jsonl(paths.judged(RUN), kind="verdict")
        assert len(srv.requests) == 6  # three more; the first three come from the response cache
        assert [v["kept"] for v in judge_only] == [True] * 6  # judge only: the rules do not filter
    log = [json.loads(x) for x in (paths.logs / "llm_calls.jsonl").read_text().splitlines()]
    assert len(log) == 9 and {(x["stage"], x["run"], x["purpose"]) for x in log} == {("judged", RUN, "judge")}
    s = stats(paths, "judged")
    assert (s["mode"], s["kept"], s["judge_plausible"], s["judge_model"]) == ("judge", 6, 6, "fake")


def test_verified_stage_over_a_local_index(project):
    paths, _ = project
    for stage in ("candidates", "judged"):
        run_stage(stage, RUN)
    assert run_stage("index") == 0
    assert run_stage("verified", RUN) == 0
    hits = read_jsonl(paths.verified(RUN), kind="hit")
    assert [(h["attribute"], h["outcome"], h["k"]) for h in hits] == [
        ("username", "in_window", 1), ("email", "in_window", 2), ("password", "out_of_window", 0),
        ("username", "filtered", None), ("email", "filtered", None), ("password", "filtered", None)]
    assert sorted(hits[1]["repos"]) == ["repo_a", "repo_b"] and len(set(hits[1]["repo_ids"])) == 2
    s = stats(paths, "verified")
    assert (s["backend"], s["in_window"], s["out_of_window"], s["filtered"]) == ("local", 2, 1, 3)


def _through_verified():
    for stage in ("candidates", "judged", "index", "verified"):
        run_stage(stage, *([] if stage == "index" else [RUN]))


def test_confirmed_stage_auto_and_two_reviewers(project):
    paths, configure = project
    _through_verified()
    assert run_stage("confirmed", RUN) == 0
    conf = read_jsonl(paths.confirmed(RUN), kind="confirmed")
    assert [(c["attribute"], c["status"]) for c in conf] == [
        ("username", "confirmed"), ("email", "confirmed"), ("password", "not_in_window"),
        ("username", "not_in_window"), ("email", "not_in_window"), ("password", "not_in_window")]
    assert {c["policy"] for c in conf} == {"auto"}
    # two reviewers: both yes confirms, one no rejects
    labels = paths.root / "labels" / "labels.jsonl"
    write_jsonl(labels, [{"candidate_id": conf[0]["candidate_id"], "value_hash": conf[0]["value_hash"], "reviewer": r,
                          "label": lab} for r, lab in (("alice", "yes"), ("bob", "no"))] +
                [{"candidate_id": conf[1]["candidate_id"], "value_hash": conf[1]["value_hash"], "reviewer": r,
                  "label": "yes"} for r in ("alice", "bob")], kind="label")
    configure(lambda p: p.update(review={"policy": "both_yes", "reviewers": ["alice", "bob"],
                                         "labels_file": "labels/labels.jsonl"}))
    run_stage("confirmed", RUN)
    conf = read_jsonl(paths.confirmed(RUN), kind="confirmed")
    assert [c["status"] for c in conf[:3]] == ["rejected", "confirmed", "not_in_window"]
    s = stats(paths, "confirmed")
    assert (s["policy"], s["confirmed"], s["rejected"]) == ("both_yes", 1, 1)
    assert s["agreement"]["n"] == 2 and s["agreement"]["reviewers"] == ["alice", "bob"]


def test_library_stage_with_a_tiny_masked_lm(project, tiny_mlm):  # noqa: F811
    paths, configure = project
    configure(lambda p: (p["library"]["division"].update(scorer="mlm_pll", mlm_path=str(tiny_mlm)),
                         p["library"]["clustering"].update(encoder="mlm")))
    _through_verified()
    run_stage("confirmed", RUN)
    assert run_stage("library", RUN) == 0
    doc = json.loads(paths.library(RUN).read_text())
    new = [(a, kind, e["text"]) for a, v in doc["attributes"].items() for kind in ("templates", "fragments")
           for e in v[kind] if e.get("source_run") == RUN]
    # the two confirmed leaks (one line): their values as fragments, the line with both slotted as a
    # template (the attribute each is filed under comes from clustering, random with a random encoder)
    fragments = {t for _, kind, t in new if kind == "fragments"}
    templates = [t for _, kind, t in new if kind == "templates"]
    assert {USER, EMAIL} <= fragments
    assert len(templates) == 1 and 'username="<USERNAME>"' in templates[0] and 'email="<EMAIL>"' in templates[0]
    assert doc["base"] == "testleak/resources/prior_library.yaml"
    s = json.loads(paths.library_stats(RUN).read_text())
    assert s["divided"] == 2 and s["instances_by_status"] == {"ok": 2, "not_confirmed": 4}
    assert EMAIL not in json.dumps(s)
    divisions = read_jsonl(paths.library_divisions(RUN), kind="library")
    assert sorted(d["status"] for d in divisions) == ["divided", "divided"]
    for kind in ("division_scores", "embeddings_fragments", "embeddings_templates"):
        assert (paths.figures / f"{RUN}_{kind}.png").stat().st_size > 0


CODE_AND_TESTS = textwrap.dedent(f'''\
    ```python
    def register(username, password):
        return {{"username": username, "password": password}}

    def test_register():
        assert register("{USER}", "{PASSWORD}")["username"] == "{USER}"
    ```''')


def test_responses_stage_and_the_chain_with_a_fake_model(project):
    """responses@RUN through the method registry, then the same chain the canary calibration
    runs (pipeline.run_chain) over the same project: both need at least one ok record."""
    paths, configure = project
    qs = [{"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"], "text": t, "kind": "scenario"}
          for i, t in enumerate(["Write a sign-up handler.", "Write a login check."])]
    write_jsonl(paths.questions, qs, kind="question")
    with FakeOpenAI() as srv:
        srv.default_text = CODE_AND_TESTS
        # the model under test is the run's (experiment.runs.RUN.model_params: the model group)
        p = configure(lambda p: use_model(p, fake_model(srv.base_url, "fake-test-model")))
        assert run_stage("responses", RUN) == 0
        recs = read_jsonl(paths.responses(RUN), kind="response")
        assert [r["question_id"] for r in recs] == ["q0", "q1"]
        assert [r["status"] for r in recs] == ["ok", "ok"]
        for r in recs:
            assert r["tests_text"] == CODE_AND_TESTS and r["method"] == "ours" and r["model"] == "fake-test-model"
            assert r["hints"]["enabled"] and set(r["hints"]["by_attribute"]) <= {"username", "password"}
        assert len(srv.requests) == 4  # two turns per question
        log = [json.loads(x) for x in (paths.logs / "llm_calls.jsonl").read_text().splitlines()]
        assert sorted((x["stage"], x["run"], x["purpose"], x["cached"]) for x in log) == (
            [("responses", RUN, "code turn", False)] * 2 + [("responses", RUN, "test turn", False)] * 2)
        run_stage("index")
        from testleak.verify.index import LocalIndex

        questions, library = pipeline.method_inputs(p, paths, RUN)
        assert [q["id"] for q in questions] == ["q0", "q1"] and "password" in library
        with LocalIndex(paths.index) as index:
            out = pipeline.run_chain(p, paths, RUN, index, questions, library, labels=[])
        assert len(srv.requests) == 4  # the chain's responses came from the response cache
    assert out["responses"]["ok"] == 2 and out["candidates"]["candidates"] == 4
    # the user name is in repo_a (confirmed, once per response); the password is in no file
    assert out["verified"]["in_window"] == 2 and out["confirmed"]["confirmed"] == 2
    conf = read_jsonl(paths.confirmed(RUN), kind="confirmed")
    cands = {c["id"]: c for c in read_jsonl(paths.candidates(RUN), kind="candidate")}
    assert [cands[c["candidate_id"]]["value"] for c in conf if c["status"] == "confirmed"] == [USER, USER]
