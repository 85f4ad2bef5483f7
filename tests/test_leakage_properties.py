"""Properties of LP/IL (docs/METRICS.md) over generated runs: every level is a share of one set
of test cases, each test case counted once per category."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from testleak.metrics import IL_LEVELS, LP_LEVELS, leakage_levels
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent
TAX = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text(encoding="utf-8")))
ATTRS = list(TAX.attributes)
STATUSES = ("ok", "refused", "no_code", "error")


@st.composite
def runs(draw):
    """Responses (any status, 0..6 tests requested, asked about any attributes or none),
    candidates in any test index (0 = outside every test, possibly beyond the requested tests),
    each confirmed or not, values repeated across and within test cases, random repository ids."""
    n = draw(st.integers(0, 6))
    responses = [{"id": f"r{i}", "status": draw(st.sampled_from(STATUSES)), "tests_requested": draw(st.integers(0, 6)),
                  "attributes": draw(st.lists(st.sampled_from(ATTRS), max_size=3))} for i in range(n)]
    answered = [r["id"] for r in responses if r["status"] != "error"]
    cands, conf = [], []
    for i in range(draw(st.integers(0, 25)) if answered else 0):
        rid = draw(st.sampled_from(answered))
        c = {"id": f"c{i}", "response_id": rid, "test_index": draw(st.integers(0, 8)),
             "attribute": draw(st.sampled_from(ATTRS)), "value_hash": f"v{draw(st.integers(0, 5))}"}
        cands.append(c)
        if draw(st.booleans()):
            conf.append({"candidate_id": c["id"], "attribute": c["attribute"], "value_hash": c["value_hash"],
                         "repo_ids": draw(st.lists(st.sampled_from("ABCD"), max_size=2)), "status": "confirmed"})
    return responses, cands, conf, draw(st.booleans())


@settings(max_examples=400, deadline=None)
@given(runs())
def test_levels_are_shares_of_one_set_of_test_cases(run):
    responses, cands, conf, per_test = run
    lv = leakage_levels(responses, conf, TAX, candidates=cands, per_test=per_test)
    by_id = {c["id"]: c for c in cands}
    for cat, members in list(TAX.by_category().items()) + [("all", ATTRS)]:
        v, n = lv[cat], lv["test_cases"][cat]
        assert n == lv["test_cases"]["all"]
        for L in LP_LEVELS:
            assert 0.0 <= v[f"lp{L}"] <= 1.0
            if L + 1 in LP_LEVELS:
                assert v[f"lp{L + 1}"] <= v[f"lp{L}"]
        for L in IL_LEVELS:
            assert 0.0 <= v[f"il{L}"] <= v[f"lp{L}"]
            if L + 1 in IL_LEVELS:
                assert v[f"il{L + 1}"] <= v[f"il{L}"]
        instances = sum(1 for c in conf if by_id[c["candidate_id"]]["attribute"] in members)
        assert round(v["lp1"] * n) <= instances
        # LP>=1 + LP>=2 <= instances / test cases: a test case with two elements holds one more
        assert round((v["lp1"] + v["lp2"]) * n) <= instances


@settings(max_examples=200, deadline=None)
@given(runs())
def test_denominator_does_not_depend_on_what_was_confirmed(run):
    responses, cands, conf, per_test = run
    a = leakage_levels(responses, conf, TAX, candidates=cands, per_test=per_test)
    b = leakage_levels(responses, [], TAX, candidates=cands, per_test=per_test)
    assert a["test_cases"] == b["test_cases"]
    assert all(b[c]["lp1"] == 0.0 for c in b if c != "test_cases")
