"""With `experiment=paper` composed, the report reads exactly the runs the experiment declares:
Table 4's ablation rows come from the ablation runs (ours_no_cgq, ...), the final library
round is reported as "ours", and results under the two-reviewer policy are not labelled
unreviewed. Metrics inputs are fabricated records run through the real metrics stage."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from testleak.config import compose, dump_params
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
                                         "status": status, "tests_requested": 10}], kind="response")
    cands = [{"id": f"{run}-c{i}", "response_id": rid, "test_index": i + 1, "attribute": a, "value": v,
              "value_hash": value_hash(v)} for i, (a, v) in enumerate(values)]
    write_jsonl(d / "candidates.jsonl", cands, kind="candidate")
    write_jsonl(d / "judged.jsonl", [{"candidate_id": c["id"], "attribute": c["attribute"],
                                      "value_hash": c["value_hash"], "rules": {"ok": True, "reason": "ok"},
                                      "judge": None, "kept": True} for c in cands], kind="verdict")
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
    for run, vals in VALUES.items():
        _write(root, run, (runs[run].get("ablation") or {}).get("name", "none"), vals,
               "refused" if run == "ours_no_tg" else "ok")
        assert mstage.main([run]) == 0
    assert rstage.main([]) == 0
    yield root, params
    mp.undo()


def test_paper_experiment_is_the_papers_protocol(project):
    _, params = project
    assert (params["verifier"]["backend"], params["review"]["policy"]) == ("github", "both_yes")
    assert params["experiment"]["functions_per_response"] == "all"
    assert {"ours_no_cgq", "ours_no_fl", "ours_no_tg", "ours_tg_only", "ours_r1"} <= set(params["experiment"]["runs"])


def test_table4_rows_come_from_the_ablation_runs(project):
    root, _ = project
    with open(root / "reports/table4.csv", encoding="utf-8") as f:
        rows = {r[0]: r for r in list(csv.reader(f))[1:]}
    # reference: ours (round 0, the ablations' round) = {email, phone, username}
    assert rows["no_cgq"][1] == "ours_no_cgq" and rows["no_cgq"][5:8] == ["1", "2", "0"]
    assert rows["no_fl"][1] == "ours_no_fl" and rows["no_fl"][5:8] == ["2", "1", "1"]
    assert rows["no_tg"][1] == "ours_no_tg" and rows["no_tg"][5:8] == ["0", "3", "0"] and rows["no_tg"][-1] == "100.00%"
    assert rows["tg_only"][1] == "ours_tg_only" and rows["tg_only"][5:8] == ["1", "2", "1"]
    assert rows["none"][1] == "ours" and rows["none"][-1] == "0.00%"


def test_final_round_is_ours_and_reviewed_results_are_not_unreviewed(project):
    root, _ = project
    with open(root / "reports/table3.csv", encoding="utf-8") as f:
        labels = {(r[0], r[1]) for r in csv.reader(f)}
    assert {("ours", "ours_r1"), ("ours (round 0)", "ours"), ("ours [no_fl]", "ours_no_fl")} <= labels
    text = (root / "reports/paper_comparison.md").read_text(encoding="utf-8")
    assert "run `ours_r1`" in text and "github verifier, review both_yes |" in text
    for name in ("table2.md", "table3.md", "table4.md", "figure1.md"):
        assert "unreviewed" not in (root / "reports" / name).read_text(encoding="utf-8").splitlines()[0]
