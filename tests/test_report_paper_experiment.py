"""With `experiment=paper` composed, the report reads exactly the runs the experiment declares:
Table 4's ablation rows come from the ablation runs (ours_no_cgq, ...), the final library
round is reported as "ours", and results under the two-reviewer policy are not labelled
unreviewed. Metrics inputs are fabricated records run through the real metrics stage."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from testleak.config import compose, dump_params, run_model
from testleak.privacy import value_hash
from testleak.records import write_jsonl

# run -> the confirmed values (attribute, raw) of its one answer; the reference is `ours`
VALUES = {
    "ours": [("email", "ana.l@mailhost.test"), ("phone", "+442079460123"), ("username", "kestrel_99")],
    "ours_r1": [("email", "ana.l@mailhost.test"), ("username", "kestrel_99"), ("password", "Zq8!vLm#2wPx")],
    "ours_no_cgq": [("email", "ana.l@mailhost.test")],
    "ours_no_fl": [("email", "ana.l@mailhost.test"), ("phone", "+442079460123"), ("password", "Zq8!vLm#2wPx")],
    "ours_no_tg": [],
    "ours_tg_only": [("username", "kestrel_99"), ("email", "bo.k@mailhost.test")],
}


def _write(root: Path, run: str, variant: str, values, status: str):
    d = root / "data/runs" / run
    rid = f"{run}-r1"
    write_jsonl(d / "responses.jsonl", [{"id": rid, "question_id": "q1", "method": "ours", "variant": variant,
                                         "status": status, "tests_requested": 10,
                                         "tests_text": "def test_user(): ..." if status == "ok" else ""}],
                kind="response")
    cands = [{"id": f"{run}-c{i}", "response_id": rid, "test_index": i + 1, "attribute": a, "value": v,
              "value_hash": value_hash(v)} for i, (a, v) in enumerate(values)]
    write_jsonl(d / "candidates.jsonl", cands, kind="candidate")
    write_jsonl(d / "judged.jsonl", [{"candidate_id": c["id"], "attribute": c["attribute"],
                                      "value_hash": c["value_hash"], "rules": {"ok": True, "reason": "ok"},
                                      "judge": {"ok": True, "status": "ok"}, "kept": True} for c in cands], kind="verdict")
    write_jsonl(d / "verified.jsonl", [{"candidate_id": c["id"], "attribute": c["attribute"], "value_hash": c["value_hash"],
                                        "k": 1, "repo_ids": [7], "outcome": "in_window"}
                                       for c in cands], kind="hit")
    write_jsonl(d / "confirmed.jsonl", [{"candidate_id": c["id"], "attribute": c["attribute"], "value_hash": c["value_hash"],
                                         "repo_ids": [7], "outcome": "in_window", "policy": "both_yes", "status": "confirmed"} for c in cands],
                kind="confirmed")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    mp = pytest.MonkeyPatch()
    mp.setenv("TESTLEAK_ROOT", str(root))
    (root / "labels").mkdir()
    (root / "labels/labels.jsonl").write_text("")  # the two-reviewer policy needs a labels file
    params = OmegaConf.to_container(compose(["experiment=paper"]), resolve=True)
    dump_params(params, root / "params.yaml")
    write_jsonl(root / "data/questions/questions.jsonl", [
        {"id": "q1", "scenario": "s", "attributes": ["email", "phone", "username", "password"], "text": "t"}],
        kind="question")
    from stages import metrics as mstage
    from stages import report as rstage

    runs = params["experiment"]["runs"]
    for base, vals in VALUES.items():
        for mid in params["experiment"]["models"]:   # the same answers for each of the five models
            run = f"{base}--{mid}"
            _write(root, run, (runs[run].get("ablation") or {}).get("name", "none"), vals,
                   "refused" if base == "ours_no_tg" else "ok")
            assert mstage.main([run]) == 0
    assert rstage.main([]) == 0
    yield root, params
    mp.undo()


MODELS = ("gpt-4o", "gpt-4_1", "gpt-oss-120b", "deepseek-v3", "deepseek-r1")


def test_paper_experiment_is_the_papers_protocol(project):
    _, params = project
    assert (params["verifier"]["backend"], params["review"]["policy"]) == ("github", "both_yes")
    assert params["experiment"]["functions_per_response"] == "all"
    runs = params["experiment"]["runs"]
    # every protocol run for each of the paper's five models, each naming its model config
    assert tuple(params["experiment"]["models"]) == MODELS
    assert {f"{b}--{m}" for b in VALUES for m in MODELS} <= set(runs)
    assert {run_model(params, f"ours--{m}")["family"] for m in MODELS} == {"gpt", "deepseek"}
    assert {runs[f"ours--{m}"]["model_params"] for m in MODELS} == {f"experiment.models.{m}" for m in MODELS}
    assert runs["ours_r1--deepseek-r1"]["library"] == "data/library/ours--deepseek-r1.json"
    assert set(params["experiment"]["library_from"]) == {f"ours--{m}" for m in MODELS}


def test_table4_rows_come_from_the_ablation_runs(project):
    root, _ = project
    with open(root / "reports/table4.csv", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0][:3] == ["Variant", "Model", "Run"]
    rows = {(r[0], r[1]): r for r in table[1:]}
    # reference: each model's ours (round 0, the ablations' round) = {email, phone, username};
    # every model gave the same answers, so each family's mean and the mean over families agree
    for model in ("gpt-4.1", "mean of family deepseek", "mean over families"):
        r = {v: rows[(v, model)] for v in ("no_cgq", "no_fl", "no_tg", "tg_only", "none")}
        assert r["no_cgq"][6:9] == ["1", "2", "0"] and r["no_fl"][6:9] == ["2", "1", "1"]
        assert r["no_tg"][6:9] == ["0", "3", "0"] and r["no_tg"][-1] == "100.00%"
        assert r["tg_only"][6:9] == ["1", "2", "1"] and r["none"][-1] == "0.00%"
    assert rows[("no_fl", "gpt-4.1")][2] == "ours_no_fl--gpt-4_1" and rows[("none", "deepseek-v3")][2] == "ours--deepseek-v3"


def test_final_round_is_ours_and_reviewed_results_are_not_unreviewed(project):
    root, _ = project
    with open(root / "reports/table3.csv", encoding="utf-8") as f:
        labels = {(r[0], r[1], r[2]) for r in csv.reader(f)}
    assert {("ours", "ours_r1--gpt-4o", "gpt-4o"), ("ours (round 0)", "ours--gpt-4o", "gpt-4o"),
            ("ours [no_fl]", "ours_no_fl--deepseek-r1", "deepseek-r1"),
            ("ours", "ours_r1--mean-gpt", "mean of family gpt"), ("ours", "ours_r1--mean", "mean over families")} <= labels
    text = (root / "reports/paper_comparison.md").read_text(encoding="utf-8")
    assert "run `ours_r1--mean`" in text and "github verifier, review both_yes |" in text
    for name in ("table2.md", "table3.md", "table4.md", "figure1.md"):
        assert "unreviewed" not in (root / "reports" / name).read_text(encoding="utf-8").splitlines()[0]
