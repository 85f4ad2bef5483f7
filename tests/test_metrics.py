"""Metrics on small hand-made fixtures with hand-computed values, and the paper's own
Table 2 counts reproducing its permille column."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.errors import DataError
from testleak.metrics import (
    STEPS,
    ablation_scores,
    headline,
    refusal_rate,
    confirmed_keys,
    cumulative_confirmed,
    largest_component,
    leakage_levels,
    with_tests_written,
    nominal_test_cases,
    permille,
    refusal_stats,
    round_half_up,
    run_metrics,
    step_counts,
)
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent
PAPER = yaml.safe_load((ROOT / "testleak/resources/paper_results.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tax():
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text(encoding="utf-8")))


QUESTIONS = {"q1": {"id": "q1", "attributes": ["name", "email"]}, "q2": {"id": "q2", "attributes": ["username", "password"]}}
RESPONSES = [
    {"id": "r1", "question_id": "q1", "status": "ok", "tests_requested": 5},
    {"id": "r2", "question_id": "q1", "status": "refused", "tests_requested": 5},
    {"id": "r3", "question_id": "q2", "status": "ok", "tests_requested": 5},
    {"id": "r4", "question_id": "q2", "status": "error", "tests_requested": 5},
    {"id": "r5", "question_id": "q2", "status": "no_code", "tests_requested": 5},
]
CANDIDATES = [
    {"id": "c1", "response_id": "r1", "attribute": "name", "value_hash": "hn1"},
    {"id": "c2", "response_id": "r1", "attribute": "email", "value_hash": "he1"},
    {"id": "c3", "response_id": "r1", "attribute": "email", "value_hash": "he2"},
    {"id": "c4", "response_id": "r1", "attribute": "name", "value_hash": "hn1"},
    {"id": "c5", "response_id": "r3", "attribute": "username", "value_hash": "hu1"},
    {"id": "c6", "response_id": "r3", "attribute": "password", "value_hash": "hp1"},
    {"id": "c7", "response_id": "r3", "attribute": "password", "value_hash": "hp2"},
]
JUDGED = [{"candidate_id": f"c{i}", "kept": i != 7} for i in range(1, 8)]
VERIFIED = [
    {"candidate_id": "c1", "outcome": "in_window", "repo_ids": ["A"]},
    {"candidate_id": "c2", "outcome": "in_window", "repo_ids": ["A", "B"]},
    {"candidate_id": "c3", "outcome": "in_window", "repo_ids": ["C"]},
    {"candidate_id": "c4", "outcome": "in_window", "repo_ids": ["A"]},
    {"candidate_id": "c5", "outcome": "in_window", "repo_ids": ["D"]},
    {"candidate_id": "c6", "outcome": "out_of_window", "repo_ids": []},
    {"candidate_id": "c7", "outcome": "in_window", "repo_ids": ["D"]},  # not judge-kept
]
CONFIRMED = [
    {"candidate_id": "c1", "attribute": "name", "value_hash": "hn1", "response_id": "r1", "repo_ids": ["A"], "policy": "auto", "status": "confirmed"},
    {"candidate_id": "c2", "attribute": "email", "value_hash": "he1", "response_id": "r1", "repo_ids": ["A", "B"], "policy": "auto", "status": "confirmed"},
    {"candidate_id": "c3", "attribute": "email", "value_hash": "he2", "response_id": "r1", "repo_ids": ["C"], "policy": "auto", "status": "confirmed"},
    {"candidate_id": "c4", "attribute": "name", "value_hash": "hn1", "response_id": "r1", "repo_ids": ["A"], "policy": "auto", "status": "confirmed"},
    {"candidate_id": "c5", "attribute": "username", "value_hash": "hu1", "response_id": "r3", "repo_ids": ["D"], "policy": "auto", "status": "confirmed"},
    {"candidate_id": "c7", "attribute": "password", "value_hash": "hp2", "response_id": "r3", "repo_ids": ["D"],
     "policy": "auto", "status": "potential"},
]


def test_refusal_stats():
    # test cases: 5 per response except the error one (no model answer) -> 20; accepted: r1, r3;
    # reject rate: refusals only, 1 of the 4 answered responses; no-code answers beside it
    assert refusal_stats(RESPONSES) == {
        "responses": 5, "ok": 2, "refused": 1, "no_code": 1, "error": 1, "truncated": 0, "test_cases": 20,
        "tests_requested": 20, "accepted": 10, "tokens": 0, "refusal_rate": 0.25, "no_code_rate": 0.25,
        "truncated_rate": 0.0,
    }


def test_test_cases_are_the_tests_the_model_wrote(tax):
    # three test functions written where five were requested; a refusal wrote none; an answer cut at
    # max_tokens is counted beside the reject rate, not in it
    code = "```python\n" + "".join(f"def test_{i}():\n    assert f('ann.lee@corp-mail.net')\n\n" for i in range(3)) + "```"
    resp = [{"id": "a", "status": "ok", "tests_requested": 5, "turn2": {"text": code, "finish_reason": "length"}},
            {"id": "b", "status": "refused", "tests_requested": 5, "turn2": {"text": "I can't help with that."}},
            {"id": "c", "status": "ok", "tests_requested": 5, "turn2": {"text": "```python\nx = f('a')\n```"}}]
    w = with_tests_written(resp, tax)
    assert [r["tests_written"] for r in w] == [3, 0, 1]
    st = refusal_stats(w)
    assert (st["test_cases"], st["tests_requested"], st["accepted"]) == (4, 15, 4)
    assert (st["refusal_rate"], st["truncated"], st["truncated_rate"]) == (pytest.approx(1 / 3), 1, pytest.approx(1 / 3))
    # the responses stage's stats count the same test cases (what baseline_unit test_cases matches)
    from testleak.methods import summarize
    assert (summarize(resp, tax)["test_cases"], summarize(resp, tax)["tests_requested"]) == (4, 15)
    assert summarize(resp)["test_cases"] == 15     # without a taxonomy: the requested ones


def test_refusal_stats_empty_is_zero_and_tokens_counted():
    s = refusal_stats([])
    assert (s["responses"], s["test_cases"], s["refusal_rate"]) == (0, 0, 0.0)
    r = {"id": "x", "status": "ok", "turn1": {"usage": {"prompt_tokens": 7, "completion_tokens": 5}},
         "turn2": {"usage": {"prompt_tokens": 20, "completion_tokens": 3}}}
    assert refusal_stats([r], default_tests=1)["tokens"] == 35


def test_refusal_rate_is_one_minus_accepted_over_test_cases():
    assert refusal_rate(3642, 6000) == pytest.approx(0.393)
    assert refusal_rate(0, 0) == 0.0


@pytest.mark.parametrize(
    "attr, row",
    [
        # test cases, accepted, candidates, judge, in window, confirmed distinct, instances, permille
        ("name", (10, 5, 2, 2, 2, 1, 2, 100.0)),  # c1 and c4 are the same value: 1 distinct, 2 instances
        ("email", (10, 5, 2, 2, 2, 2, 2, 200.0)),
        ("username", (10, 5, 1, 1, 1, 1, 1, 100.0)),  # the error response r4 carries no test cases
        ("password", (10, 5, 2, 1, 0, 0, 0, 0.0)),
        ("phone", (0, 0, 0, 0, 0, 0, 0, 0.0)),
    ],
)
def test_step_counts_per_attribute(tax, attr, row):
    s = step_counts(RESPONSES, CANDIDATES, JUDGED, VERIFIED, CONFIRMED, tax, QUESTIONS)
    r = s["attributes"][attr]
    got = tuple(r[k] for k in STEPS)
    assert got == row[:7]
    assert r["permille"] == pytest.approx(row[7])


@pytest.mark.parametrize(
    "cat, row, mean_attr",
    [
        ("identifiable", (20, 10, 4, 4, 4, 3, 4, 150.0), 150.0),  # mean over attributes with test cases
        ("private", (0, 0, 0, 0, 0, 0, 0, 0.0), 0.0),
        ("secret", (20, 10, 3, 2, 1, 1, 1, 50.0), 50.0),
    ],
)
def test_step_counts_per_category(tax, cat, row, mean_attr):
    r = step_counts(RESPONSES, CANDIDATES, JUDGED, VERIFIED, CONFIRMED, tax, QUESTIONS)["categories"][cat]
    assert tuple(r[k] for k in STEPS) == row[:7]
    assert r["permille"] == pytest.approx(row[7])
    assert r["permille_mean_attr"] == pytest.approx(mean_attr)


def test_step_counts_total_and_attribute_sources(tax):
    t = step_counts(RESPONSES, CANDIDATES, JUDGED, VERIFIED, CONFIRMED, tax, QUESTIONS)["total"]
    assert tuple(t[k] for k in STEPS) + (t["permille"],) == (40, 20, 7, 6, 5, 4, 5, 100.0)
    # without questions the attributes come from the selected functions
    resp = [{"id": "x", "status": "ok", "tests_requested": 3,
             "functions": [{"attributes": ["phone"]}, {"attributes": ["phone", "email"]}]}]
    a = step_counts(resp, [], [], [], [], tax)["attributes"]
    assert (a["phone"]["test_cases"], a["email"]["test_cases"], a["name"]["test_cases"]) == (3, 3, 0)


@pytest.mark.parametrize(
    "cat, expected",
    [
        # no test_index anywhere: the values lie outside every test, one more test case of their
        # answer (r1: name + 2 emails; r3: username); denominator: the run's test cases, one set for
        # every category: 4 answered responses x 5 tests + (r1, 0) + (r3, 0) = 22
        ("identifiable", {"lp1": 1 / 22, "lp2": 1 / 22, "lp3": 1 / 22, "il2": 1 / 22, "il3": 0.0}),
        ("private", {"lp1": 0.0, "lp2": 0.0, "lp3": 0.0, "il2": 0.0, "il3": 0.0}),
        ("secret", {"lp1": 1 / 22, "lp2": 0.0, "lp3": 0.0, "il2": 0.0, "il3": 0.0}),
        ("all", {"lp1": 2 / 22, "lp2": 1 / 22, "lp3": 1 / 22, "il2": 1 / 22, "il3": 0.0}),
    ],
)
def test_leakage_levels(tax, cat, expected):
    lv = leakage_levels(RESPONSES, CONFIRMED, tax, questions=QUESTIONS)
    assert lv["test_cases"] == {"identifiable": 22, "private": 22, "secret": 22, "all": 22}
    assert lv[cat] == pytest.approx(expected)


def test_leakage_over_test_cases_of_an_answer(tax):
    # c1 and c2 in test 1 (linked by repo A), c3 in test 2, c4 (same value as c1) in test 3
    cands = [dict(c, test_index={"c1": 1, "c2": 1, "c3": 2, "c4": 3}.get(c["id"], 1)) for c in CANDIDATES]
    lv = leakage_levels(RESPONSES, CONFIRMED, tax, candidates=cands, questions=QUESTIONS)
    assert lv["test_cases"]["all"] == 20
    assert lv["identifiable"] == pytest.approx({"lp1": 3 / 20, "lp2": 1 / 20, "lp3": 0.0, "il2": 1 / 20, "il3": 0.0})
    # a baseline response is one test case whatever the candidates' test_index
    flat = leakage_levels(RESPONSES, CONFIRMED, tax, candidates=cands, questions=QUESTIONS, per_test=False)
    assert flat["test_cases"]["all"] == 4
    assert flat["identifiable"]["lp1"] == pytest.approx(1 / 4) and flat["identifiable"]["lp3"] == pytest.approx(1 / 4)


def test_leakage_counts_a_test_case_once_per_category(tax):
    # one baseline response leaking name, email and phone (three identifiable attributes) is one
    # test case with three elements, not three test cases; and its prompt need not name them
    resp = [{"id": "b1", "status": "ok", "attribute": "password"}, {"id": "b2", "status": "ok", "attribute": None}]
    conf = [{"candidate_id": f"b1:{i}", "response_id": "b1", "attribute": a, "value_hash": f"h{i}", "status": "confirmed"}
            for i, a in enumerate(("name", "email", "phone"))]
    lv = leakage_levels(resp, conf, tax, per_test=False)
    assert lv["test_cases"]["identifiable"] == 2
    assert lv["identifiable"] == pytest.approx({"lp1": 0.5, "lp2": 0.5, "lp3": 0.5, "il2": 0.0, "il3": 0.0})
    assert lv["secret"]["lp1"] == 0.0


def test_response_id_from_candidates_when_confirmed_lacks_it(tax):
    # the confirmed stage's records carry candidate_id but not response_id
    conf = [{k: v for k, v in c.items() if k != "response_id"} for c in CONFIRMED]
    assert leakage_levels(RESPONSES, conf, tax, candidates=CANDIDATES, questions=QUESTIONS) == leakage_levels(
        RESPONSES, CONFIRMED, tax, questions=QUESTIONS)
    assert cumulative_confirmed(RESPONSES, conf, tax, CANDIDATES) == cumulative_confirmed(RESPONSES, CONFIRMED, tax)
    with pytest.raises(DataError, match="no response_id and no candidate record"):
        leakage_levels(RESPONSES, conf, tax)


def test_leakage_repo_ids_fall_back_to_verified(tax):
    conf = [{k: v for k, v in c.items() if k != "repo_ids"} for c in CONFIRMED]
    assert leakage_levels(RESPONSES, conf, tax, VERIFIED, questions=QUESTIONS)["identifiable"]["il2"] == 1 / 22
    assert leakage_levels(RESPONSES, conf, tax, questions=QUESTIONS)["identifiable"]["il2"] == 0.0  # no links


@pytest.mark.parametrize(
    "elements, size",
    [
        ({}, 0),
        ({"a": {1}}, 1),
        ({"a": {1}, "b": {2}}, 1),
        ({"a": {1}, "b": {1}, "c": {2}}, 2),
        ({"a": {1}, "b": {1, 2}, "c": {2}}, 3),  # transitive link through b
        ({"a": set(), "b": set()}, 1),  # no repo ids: isolated
        ({"a": {1}, "b": {1}, "c": {2}, "d": {2}}, 2),  # tie between two components
        ({"a": {1, 2}, "b": {3}, "c": {3, 4}, "d": {4, 1}}, 4),
    ],
)
def test_largest_component(elements, size):
    assert largest_component(elements) == size


@pytest.mark.parametrize(
    "ref, var, expected",
    [
        ({("a", "1"), ("a", "2"), ("b", "3")}, {("a", "1"), ("b", "3"), ("c", "9")}, (2, 1, 1, 2 / 3, 2 / 3, 2 / 3)),
        ({("a", "1"), ("a", "2"), ("b", "3")}, set(), (0, 3, 0, 0.0, 0.0, 0.0)),
        (set(), set(), (0, 0, 0, 0.0, 0.0, 0.0)),
        (set(), {("a", "1")}, (0, 0, 1, 0.0, 0.0, 0.0)),
        ({("a", "1")}, {("a", "1")}, (1, 0, 0, 1.0, 1.0, 1.0)),
        ({("a", "1"), ("a", "2"), ("a", "3"), ("a", "4")}, {("a", "1")}, (1, 3, 0, 1.0, 0.25, 0.4)),
    ],
)
def test_ablation_scores(ref, var, expected):
    s = ablation_scores(ref, var, reject_rate=0.5)
    assert (s["tp"], s["fn"], s["fp"]) == expected[:3]
    assert (s["precision"], s["recall"], s["f1"]) == pytest.approx(expected[3:])
    assert s["reject_rate"] == 0.5


def test_confirmed_keys_dedup_and_skip_potential():
    assert confirmed_keys(CONFIRMED) == {("name", "hn1"), ("email", "he1"), ("email", "he2"), ("username", "hu1")}


def test_cumulative_confirmed(tax):
    rows = cumulative_confirmed(RESPONSES, CONFIRMED, tax)
    assert [(r["responses"], r["identifiable"], r["private"], r["secret"], r["all"]) for r in rows] == [
        (1, 4, 0, 0, 4), (2, 4, 0, 0, 4), (3, 4, 0, 1, 5), (4, 4, 0, 1, 5)]


def test_run_metrics_empty_inputs(tax):
    m = run_metrics([], [], [], [], [], tax, run="ours", policy="auto")
    assert m["policy"] == "auto"
    assert m["responses"]["refusal_rate"] == 0.0
    assert m["steps"]["total"]["permille"] == 0.0
    assert m["leakage"]["all"] == {"lp1": 0.0, "lp2": 0.0, "lp3": 0.0, "il2": 0.0, "il3": 0.0}
    assert m["confirmed_unique"] == 0 and m["keys"] == []
    assert cumulative_confirmed([], [], tax) == []


def test_run_metrics_policy_from_records(tax):
    m = run_metrics(RESPONSES, CANDIDATES, JUDGED, VERIFIED, CONFIRMED, tax, run="ours", questions=QUESTIONS, policy="x")
    assert (m["policy"], m["confirmed_unique"], m["responses"]["refused"]) == ("auto", 4, 1)
    assert m["keys"] == [["email", "he1"], ["email", "he2"], ["name", "hn1"], ["username", "hu1"]]
    h = headline(m)
    assert h == {"confirmed": 4, "permille": 100.0, "responses": 5, "tokens": m["responses"]["tokens"]}
    # the rest stays in the step statistics (a plain output), not a `dvc exp show` column
    assert m["steps"]["categories"]["identifiable"]["permille"] == 150.0 and m["responses"]["refusal_rate"] == 0.25
    assert round(m["leakage"]["identifiable"]["lp1"] * 1000, 4) == 45.4545  # LP>=1: 1 of 22 test cases


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"responses": [{"id": "r", "status": "maybe"}]}, "status 'maybe'"),
        ({"judged": [{"candidate_id": "nope", "kept": True}]}, "candidate 'nope' missing"),
        ({"candidates": [{"id": "c", "attribute": "shoe_size", "value_hash": "h"}]}, "unknown attribute 'shoe_size'"),
    ],
)
def test_bad_input_raises_clear_error(tax, kwargs, message):
    args = {"responses": [], "candidates": [], "judged": [], "verified": [], "confirmed": [], **kwargs}
    with pytest.raises(DataError, match=message):
        step_counts(args["responses"], args["candidates"], args["judged"], args["verified"], args["confirmed"], tax)


def test_leakage_rejects_confirmed_of_unknown_response(tax):
    with pytest.raises(DataError, match="response 'ghost' missing"):
        leakage_levels(RESPONSES, [{"attribute": "name", "value_hash": "h", "response_id": "ghost", "status": "confirmed"}], tax)


# ---- the paper's own numbers ------------------------------------------------------------

T2 = PAPER["table2"]


@pytest.mark.parametrize("family", ["gpt", "deepseek"])
@pytest.mark.parametrize("attr", T2["order"])
def test_paper_permille_column_reproduced(family, attr):
    row = T2["families"][family][attr]
    assert round_half_up(permille(row["confirmed"], T2["test_cases"][attr]), 1) == row["permille"]


@pytest.mark.parametrize("family", ["gpt", "deepseek"])
def test_paper_totals_and_refusal(family):
    tot = T2["total"][family]
    assert round_half_up(permille(tot["confirmed"], T2["total"]["test_cases"]), 1) == tot["permille"]
    assert round_half_up(1 - tot["accepted"] / T2["total"]["test_cases"], 3) == PAPER["refusal_rate"][family]
    assert sum(T2["test_cases"].values()) == T2["total"]["test_cases"]


def test_paper_category_average_is_mean_of_attribute_permilles(tax):
    for cat, members in tax.by_category().items():
        fam = [sum(T2["families"][f][a]["permille"] for a in members) / len(members) for f in ("gpt", "deepseek")]
        assert round_half_up(sum(fam) / 2, 2) == PAPER["category_permille"][cat]


def test_paper_test_cases_equal_nominal_from_taxonomy(tax):
    assert nominal_test_cases(tax, list(tax.scenarios), 20, 10) == T2["test_cases"]


def test_paper_table4_reference_size():
    for name, row in PAPER["table4"]["variants"].items():
        if row["tp"] is not None:
            assert round(row["tp"] + row["fn"], 1) == 99.0, name


@pytest.mark.parametrize("x, digits, out", [(21.75, 1, 21.8), (13.25, 1, 13.3), (9.375, 1, 9.4), (0.0, 1, 0.0), (11.785, 2, 11.79)])
def test_round_half_up(x, digits, out):
    assert round_half_up(x, digits) == out


def test_accepted_is_per_attribute_of_the_tested_function(tax):
    q = {"q": {"id": "q", "attributes": ["name", "email", "phone"]}}
    resp = [{"id": "a", "question_id": "q", "status": "ok", "tests_requested": 4,
             "functions": [{"name": "send", "attributes": ["email", "password"]}]},
            {"id": "b", "question_id": "q", "status": "ok", "tests_requested": 4, "functions": []}]
    rows = step_counts(resp, [], [], [], [], tax, q)["attributes"]
    assert [(rows[a]["test_cases"], rows[a]["accepted"]) for a in ("name", "email", "phone", "password")] == [
        (8, 4), (8, 8), (8, 4), (0, 0)]
