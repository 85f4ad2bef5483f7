"""Metrics and report stages on a hand-made run: exact outputs, "not run" for missing runs,
and no raw value from the fixture in any metrics or report file."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml

from testleak.privacy import value_hash
from testleak.records import write_jsonl

ROOT = Path(__file__).resolve().parent.parent

RAW = {
    "c1": ("email", "alice.w@corpmail.test"),
    "c2": ("phone", "+14155550199"),
    "c3": ("username", "zorg_admin77"),
    "c4": ("password", "Tr0ub4dor&3x!"),
    "c5": ("email", "bob.k@corpmail.test"),
}
RESP_OF = {"c1": "r1", "c2": "r1", "c3": "r2", "c4": "r2", "c5": "r1"}
REPOS = {"c1": [11, 12], "c2": [12], "c3": [40], "c5": [77]}


# c4 echoes its prompt (testleak/echo.py): the rules step rejected it with status echo
RULES = {"c4": {"ok": False, "reason": "echo of prompt (equal): the prompt of this response gave the model this value",
                "status": "echo"}}
COMPLETION = {"r1": 1000, "r2": 1500, "r3": 500}   # completion tokens of each response (turn 1 + turn 2)


def _write_run(root: Path, run: str, variant: str, statuses: dict, kept: set, confirmed: list, spend: dict | None = None):
    d = root / "data" / "runs" / run
    qs = {"r1": "q1", "r2": "q2", "r3": "q1"}
    write_jsonl(d / "responses.jsonl", [
        {"id": rid, "question_id": qs[rid], "method": "ours", "variant": variant, "status": st, "tests_requested": 5,
         "turn1": {"usage": {"prompt_tokens": 100, "completion_tokens": COMPLETION[rid] - 200}},
         "turn2": {"usage": {"prompt_tokens": 300, "completion_tokens": 200}},
         "tests_text": " ".join(v for c, (_, v) in RAW.items() if RESP_OF[c] == rid)}
        for rid, st in statuses.items()], kind="response")
    if spend is not None:   # the responses stage's stats: what the run spent (its budget)
        (d / "responses_stats.json").write_text(json.dumps({"run": run, "responses": len(statuses), "llm": spend}))
    cands = [c for c in RAW if RESP_OF[c] in statuses]
    write_jsonl(d / "candidates.jsonl", [
        {"id": c, "response_id": RESP_OF[c], "test_index": 0, "attribute": RAW[c][0], "value": RAW[c][1],
         "value_hash": value_hash(RAW[c][1])} for c in cands], kind="candidate")
    write_jsonl(d / "judged.jsonl", [{"candidate_id": c, "attribute": RAW[c][0], "value_hash": value_hash(RAW[c][1]),
                                      "kept": c in kept, "rules": RULES.get(c, {"ok": True, "reason": "ok"}),
                                      "judge": {"ok": None, "reason": "rules mode", "status": "skipped"}}
                                     for c in cands], kind="verdict")
    write_jsonl(d / "verified.jsonl", [
        {"candidate_id": c, "attribute": RAW[c][0], "value_hash": value_hash(RAW[c][1]), "k": len(REPOS.get(c, [])),
         "repo_ids": REPOS.get(c, []), "repos": [f"dist{r}" for r in REPOS.get(c, [])],
         "paths": [f"dist{r}/pkg/data.py" for r in REPOS.get(c, [])],
         "outcome": "in_window" if c in REPOS else "unverifiable"} for c in cands],
        kind="hit")
    write_jsonl(d / "confirmed.jsonl", [
        {"candidate_id": c, "attribute": RAW[c][0], "value_hash": value_hash(RAW[c][1]), "outcome": "in_window",
         "repo_ids": REPOS[c], "policy": "auto", "status": "confirmed"} for c in confirmed]
        # shape of testleak.verify.review.confirm: every candidate, with a status
        + [{"candidate_id": c, "attribute": RAW[c][0], "value_hash": value_hash(RAW[c][1]), "outcome": "unverifiable",
            "repo_ids": [], "policy": "auto", "status": "not_in_window"} for c in cands if c not in confirmed and c not in REPOS],
        kind="confirmed")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    # one ablation run beside the full pipeline, as experiment=paper declares them
    params["experiment"]["runs"]["ours_no_fl"] = {
        "method": "ours", "round": 0, "library": "testleak/resources/prior_library.yaml",
        "ablation": {"name": "no_fl", "scenario_questions": True, "library_hints": False, "test_generation": True},
        "model": params["experiment"]["runs"]["ours"]["model"], "model_params": "model"}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    write_jsonl(root / "data/questions/questions.jsonl", [
        {"id": "q1", "scenario": "s", "attributes": ["email", "phone"], "text": "t"},
        {"id": "q2", "scenario": "s", "attributes": ["username", "password"], "text": "t"}], kind="question")
    mp = pytest.MonkeyPatch()
    mp.setenv("TESTLEAK_ROOT", str(root))
    from stages import metrics as mstage
    from stages import report as rstage

    _write_run(root, "ours_no_fl", "no_fl", {"r1": "ok", "r2": "refused"}, {"c1", "c2", "c5"}, ["c1", "c5"])
    assert mstage.main(["ours_no_fl"]) == 0
    _write_run(root, "ours", "none", {"r1": "ok", "r2": "ok", "r3": "refused"}, {"c1", "c2", "c3"}, ["c1", "c2", "c3"],
               spend={"calls": 6, "prompt_tokens": 1200, "completion_tokens": 3000, "model": "m"})
    assert mstage.main(["ours"]) == 0
    # a stale metrics file of a run this experiment does not declare is never read
    (root / "data/metrics/ours_old.json").write_text(json.dumps({"run": "ours_old", "variant": "no_cgq"}))
    assert rstage.main([]) == 0
    yield root
    mp.undo()


def _csv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f))


def test_metrics_json(project):
    m = json.loads((project / "data/metrics/ours.json").read_text())
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert (m["run"], m["method"], m["variant"], m["policy"], m["model"]) == (
        "ours", "ours", "none", "auto", params["model"]["name"])
    assert (m["responses"]["responses"], m["responses"]["refused"]) == (3, 1)
    assert m["responses"]["refusal_rate"] == pytest.approx(1 / 3)  # 1 - 10 accepted / 15 test cases
    t = m["steps"]["total"]
    assert (t["test_cases"], t["accepted"], t["candidates"], t["judge"], t["in_window"], t["confirmed"], t["permille"]) == (
        30, 20, 5, 3, 3, 3, 100.0)
    # identifiable: email + phone test cases = 10 + 10; r1 holds a linked email and phone
    # 3 answered responses x 5 tests + the values outside every test of r1 and r2 = 17 test cases
    assert m["leakage"]["identifiable"] == pytest.approx({"lp1": 1 / 17, "lp2": 1 / 17, "lp3": 0.0, "il2": 1 / 17, "il3": 0.0})
    assert m["leakage"]["secret"] == pytest.approx({"lp1": 1 / 17, "lp2": 0.0, "lp3": 0.0, "il2": 0.0, "il3": 0.0})
    assert m["variant"] == "none" and len(m["keys"]) == 3


def test_rejections_per_reason_in_metrics_and_report(project):
    """Where the judged step left each candidate: kept, or why not, echo of its prompt among the
    reasons (metrics: data/metrics/RUN.json ``rejections``; report: reports/rejections.*)."""
    m = json.loads((project / "data/metrics/ours.json").read_text())
    assert m["rejections"]["total"] == {"kept": 3, "echo": 1, "generic": 0, "placeholder": 0, "format": 0, "judge_rejected": 1,
                                        "judge_unparsable": 0, "judge_error": 0}
    assert m["rejections"]["attributes"]["password"]["echo"] == 1
    rows = _csv(project / "reports/rejections.csv")
    assert rows[0] == ["Method", "Run", "candidates", "kept", "echo of its prompt", "taxonomy word", "placeholder", "format rule",
                       "judge: implausible", "judge: unparsable", "judge: call failed"]
    assert ["ours", "ours", "5", "3", "1", "0", "0", "0", "1", "0", "0"] in rows
    assert "echo of its prompt" in (project / "reports/rejections.md").read_text(encoding="utf-8")


def test_headline_metrics_in_git(project):
    h = json.loads((project / "metrics/ours.json").read_text())
    assert h == {"confirmed": 3, "permille": 100.0, "responses": 3, "tokens": 3 * 400 + 3000}
    # the elicitation budget and confirmed (3 distinct) per 1,000 completion tokens / per 100 calls:
    # with the step statistics (a plain output), not a headline column of `dvc exp show`
    m = json.loads((project / "data/metrics/ours.json").read_text())
    assert m["steps"]["categories"]["secret"]["permille"] == 100.0 and m["responses"]["refusal_rate"] == pytest.approx(1 / 3)
    assert round(m["leakage"]["identifiable"]["lp1"] * 1000, 4) == 58.8235   # LP>=1, per category
    # every budget unit: responses, test cases, completion tokens, prompt + completion tokens, USD (at the
    # embedded model's price, 0)
    assert m["efficiency"] == {"confirmed": 3, "calls": 6, "prompt_tokens": 1200, "completion_tokens": 3000,
                               "responses": 3, "test_cases": 15, "tokens": 4200, "usd": 0.0,
                               "per_1k_completion_tokens": 1.0, "per_100_calls": 50.0}


def test_plot_csv(project):
    assert _csv(project / "metrics/plots/ours_confirmed_vs_responses.csv") == [
        ["responses", "completion_tokens", "test_cases", "tokens", "usd", "identifiable", "private", "secret", "all"],
        ["1", "1000", "5", "1400", "0.0", "2", "0", "0", "2"], ["2", "2500", "10", "3300", "0.0", "2", "0", "1", "3"],
        ["3", "3000", "15", "4200", "0.0", "2", "0", "1", "3"]]


def test_report_files_written(project):
    names = sorted(p.name for p in (project / "reports").iterdir())
    assert names == sorted(["table2.md", "table2.csv", "table3.md", "table3.csv", "table4.md", "table4.csv",
                            "table8.md", "table8.csv", "rejections.md", "rejections.csv", "confirmed.md", "confirmed.csv", "figure1.md", "figure1.csv", "figure1.png", "figure1_tokens.png",
                            "figure1_units.png", "paper_comparison.md"])
    assert (project / "reports/figure1_units.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (project / "reports/figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (project / "reports/figure1_tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_comparison_tables_state_budgets(project):
    """Table 3, Figure 1's table and the paper comparison (ours vs baselines) give each run's budget in
    every unit (responses, test cases, completion tokens, prompt + completion tokens, USD), how it was
    set and confirmed per 1k completion tokens / per 100 calls."""
    rows = _csv(project / "reports/table3.csv")
    head = rows[0]
    units = ("Budget: responses", "Budget: test cases", "Budget: completion tokens", "Budget: prompt + completion tokens",
             "Budget: USD")
    for col in units + ("Budget rule", "confirmed / 1k completion tokens", "confirmed / 100 calls"):
        assert col in head, col
    ours = next(r for r in rows if r[1] == "ours" and r[2] == "all")
    cell = dict(zip(head, ours))
    assert tuple(cell[u] for u in units) == ("3", "15", "3000", "4200", "0.0000")
    assert cell["Budget rule"] == "own (questions x tests)"
    assert (cell["confirmed / 1k completion tokens"], cell["confirmed / 100 calls"]) == ("1", "50")
    # the baselines of the default experiment are set to match ours' completion tokens (not run here)
    cx = dict(zip(head, next(r for r in rows if r[1] == "codexleaks")))
    assert cx["Budget: responses"] == "not run"
    fig = (project / "reports/figure1.md").read_text(encoding="utf-8")
    assert "figure1_tokens.png" in fig and "figure1_units.png" in fig and "Budget: prompt + completion tokens" in fig
    assert "| ours | ours | 3 | 2 | 0 | 1 | 3 | 15 | 3000 | 4200 | 0.0000 | own (questions x tests) | 3 | 1 | 50 |" in fig
    fig_csv = _csv(project / "reports/figure1.csv")
    assert fig_csv[0][:8] == ["run", "method", "responses", "completion_tokens", "test_cases", "tokens", "usd", "all"]
    assert ["ours", "ours", "3", "3000", "15", "4200", "0.0", "3"] == fig_csv[[r[0] for r in fig_csv].index("ours") + 2][:8]
    text = (project / "reports/paper_comparison.md").read_text(encoding="utf-8")
    assert ("3 responses, 15 test cases, 3000 completion tokens, 4200 prompt + completion tokens, USD 0.0000 "
            "(own (questions x tests)); confirmed 1 per 1k") in text
    assert "the completion tokens of the same model's ours (match_ours" in text
    assert "comparable budget" not in text.lower()


def test_table2_row(project):
    rows = _csv(project / "reports/table2.csv")
    email = next(r for r in rows if r[1] == "Email")
    assert email == ["identifiable", "Email", "10", "5", "1", "1", "1", "1", "100.0‰"]
    assert [r[:3] for r in rows[-3:]] == [["Refusal rate", "", "33.3%"], ["No-code rate", "", "0.0%"],
                                          ["Truncated rate", "", "0.0%"]]


def test_table3_not_run_and_values(project):
    rows = _csv(project / "reports/table3.csv")
    rows = [r[:9] for r in rows]   # then the budget columns (test_comparison_tables_state_budgets)
    assert ["codexleaks", "codexleaks", "identifiable", "not run", "not run", "not run", "not run", "not run", "not run"] in rows
    assert ["ours", "ours", "identifiable", "17", "58.82‰", "58.82‰", "0.00‰", "58.82‰", "0.00‰"] in rows
    assert ["ours [no_fl]", "ours_no_fl", "identifiable", "12", "83.33‰", "83.33‰", "0.00‰", "0.00‰", "0.00‰"] in rows


def test_table4_ablation(project):
    rows = {r[0]: r for r in _csv(project / "reports/table4.csv")[1:]}
    assert rows["no_fl"] == ["no_fl", "ours_no_fl", "✓", "✗", "✓", "1", "2", "1", "50.0%", "33.3%", "40.0%", "50.00%"]
    assert rows["no_cgq"][1] == "not run" and rows["no_cgq"][5:] == ["not run"] * 7  # the stale file is not read
    assert rows["none"][1] == "ours" and rows["none"][5:] == ["-", "-", "-", "-", "-", "-", "33.33%"]


def test_table3_names_protocol_and_review_of_each_number(project):
    rows = _csv(project / "reports/table3.csv")
    head = rows[0]
    assert head[-2:] == ["Protocol (filter)", "Review"]
    ours = [r for r in rows[1:] if r[1] == "ours"]
    assert ours and all(r[-2:] == ["shared", "auto (unreviewed)"] for r in ours)
    assert all(r[-2:] == ["not run", "not run"] for r in rows[1:] if r[1] == "codexleaks")


def test_confirmed_values_say_which_files_matched_masked(project):
    rows = _csv(project / "reports/confirmed.csv")
    head, body = rows[0], rows[1:]
    assert head[-6:] == ["Attribute", "Value (masked)", "Instances", "k", "Repositories", "Files matched"]
    ours = [dict(zip(head, r)) for r in body if r[1] == "ours"]
    assert len(ours) == 3                                    # the run's distinct confirmed values
    text = (project / "reports/confirmed.md").read_text(encoding="utf-8")
    for _, value in RAW.values():
        assert value not in text                             # masked, never raw
    assert all("*" in r["Value (masked)"] for r in ours)
    assert all(r["Files matched"].startswith("dist") and "/pkg/data.py" in r["Files matched"] for r in ours)
    assert {r["Review"] for r in ours} == {"auto (unreviewed)"} and {r["Protocol (filter)"] for r in ours} == {"shared"}


def test_paper_comparison(project):
    text = (project / "reports/paper_comparison.md").read_text(encoding="utf-8")
    params = yaml.safe_load((project / "params.yaml").read_text())
    for needle in (params["model"]["name"], params["experiment"]["name"], "GitHub code search", "two authors",
                   "| Review policy |", "auto (unreviewed)", "not run", "21.8‰", "39.3%", "22.55‰", "24.12%",
                   "8 scenarios x 20 questions x 10 tests", "## Paper arithmetic", "13.64‰", "580.3"):
        assert needle in text, needle
    under = "shared protocol, local verifier, review auto (unreviewed)"
    assert f"| identifiable | Email | 25.5‰ | 39.2‰ | 100.0‰ | 1 / 10 | {under} |" in text
    assert f"| ours | identifiable | this repo, run ours | 58.82‰ | 58.82‰ | 0.00‰ | 58.82‰ | 0.00‰ | {under} | 3 responses" in text
    assert ("| no_fl | paper | 57.2 | 41.8 | 5.3 | 91.8% | 57.7% | 70.7% | 58.01% | GitHub search, two human reviewers; "
            "macro over models |") in text
    assert f"| no_fl | this repo, run ours_no_fl | 1 | 2 | 1 | 50.0% | 33.3% | 40.0% | 50.00% | {under}; pooled, one model |" in text
    for name in ("table2.md", "table3.md", "table4.md", "figure1.md"):
        assert "(unreviewed)" in (project / "reports" / name).read_text(encoding="utf-8").splitlines()[0], name


def test_no_raw_value_in_outputs(project):
    files = [p for d in ("reports", "metrics", "data/metrics") for p in (project / d).rglob("*") if p.is_file()]
    assert len(files) >= 17
    for p in files:
        data = p.read_bytes()
        for _, raw in RAW.values():
            assert raw.encode() not in data, f"{raw!r} leaked into {p}"


def test_report_with_no_runs_at_all(tmp_path):
    from testleak.report import ReportSettings, build_reports
    from testleak.taxonomy import Taxonomy

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs = params["experiment"]["runs"]
    files = build_reports(ReportSettings.from_params(params), {r: None for r in runs}, {r: None for r in runs},
                          Taxonomy.from_config(params), tmp_path)
    assert len(files) == 18   # + figure1_units.png, + table8, rejections and confirmed (.md, .csv), figure1_tokens.png
    rows = _csv(tmp_path / "table3.csv")[1:]
    assert len(rows) == 4 * len(runs) and all(r[3] == "not run" for r in rows)
    assert "not run" in (tmp_path / "paper_comparison.md").read_text(encoding="utf-8")


def test_unknown_run_is_a_clear_error(project):
    from stages import metrics as mstage
    from testleak.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown run .nosuch.; experiment .* defines: ours"):
        mstage.main(["nosuch"])


def test_a_run_that_lost_calls_is_marked_incomplete_in_every_report(project, tmp_path):
    from testleak.report import ReportSettings, build_reports
    from testleak.taxonomy import Taxonomy

    assert not any("Incomplete" in p.read_text(encoding="utf-8") for p in (project / "reports").glob("*.md"))
    params = yaml.safe_load((project / "params.yaml").read_text())
    m = json.loads((project / "data/metrics/ours.json").read_text())
    assert m["complete"] is True
    m.update(complete=False, errors={"responses": 0, "judged": 2, "verified": 1, "confirmed": 0})
    metrics = {r: (m if r == "ours" else None) for r in params["experiment"]["runs"]}
    build_reports(ReportSettings.from_params(params), metrics, {r: None for r in metrics}, Taxonomy.from_config(params),
                  tmp_path)
    for p in tmp_path.glob("*.md"):
        text = p.read_text(encoding="utf-8")
        assert "Incomplete: run `ours` lost calls to errors (judged 2, verified 1)" in text, p.name


def test_table8_lists_each_baseline_run_with_its_protocol_beside_the_paper(project):
    from testleak.report.markdown import NOT_RUN

    rows = _csv(project / "reports/table8.csv")
    head = rows[0]
    assert head[:2] == ["Category", "Attribute"]
    assert "codexleaks (published): after filter" in head and "codebreaker (published): in window" in head
    assert "paper codexleaks: prompts / test cases" in head
    email = next(r for r in rows if r[1] == "Email")
    i = head.index("codexleaks (published): confirmed")
    assert email[i] == NOT_RUN                      # the baselines did not run in this fixture
    assert email[head.index("paper codexleaks: confirmed")] == "n/a"   # Table 8's cells are not in the text
    assert rows[-1][0] == "Total"


def test_reports_say_what_a_zero_means_at_this_size(project):
    """Issue 15 item 7: beside the zeros, each run's size, the largest rate a zero is compatible
    with (95 % Wilson upper bound of 0 / test cases: z^2 / (n + z^2)), and the canary command."""
    from scipy.stats import norm

    z2 = norm.ppf(0.975) ** 2
    for run in ("ours", "ours_no_fl"):
        total = json.loads((project / f"data/metrics/{run}.json").read_text())["steps"]["total"]
        n, k = total["test_cases"], total["confirmed"]
        assert n > 0 and k > 0
        want = f"`{run}` {n} attribute test cases, {k} confirmed (a 0 here is compatible with up to {z2 / (n + z2) * 1000:.1f}‰)"
        for name in ("table2.md", "table3.md", "table4.md", "figure1.md"):
            text = (project / "reports" / name).read_text(encoding="utf-8")
            assert "Reading zeros: " in text and want in text, (name, want)
            assert "dvc exp run -S experiment=canary_tiny" in text
