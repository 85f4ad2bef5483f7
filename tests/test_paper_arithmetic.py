"""The paper's own published counts through our metric functions reproduce its published
rates (reports/paper_comparison.md, "Paper arithmetic"); the rows that do not are exactly the
inconsistencies documented in paper_results.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.report.arithmetic import arithmetic_section, paper_arithmetic
from testleak.report.paper import load_paper_results
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rows():
    tax = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text(encoding="utf-8")))
    return {r["quantity"]: r for r in paper_arithmetic(load_paper_results(), tax)}


@pytest.mark.parametrize("quantity, derived", [
    ("Sec. 6.2 (3) category mean, identifiable", 24.64),
    ("Sec. 6.2 (3) category mean, private", 4.25),
    ("Sec. 6.2 (3) category mean, secret", 11.78),
    ("Sec. 6.2 (1) refusal rate, gpt", 39.3),
    ("Sec. 6.2 (1) refusal rate, deepseek", 30.9),
    ("Table 4 reject rate, full pipeline", 35.10),
    ("Table 3 Ours LP>=1, identifiable", 22.55),
    ("Table 3 Ours LP>=1, private", 3.90),
    ("Table 2 permille, gpt, name", 21.8),
    ("Table 2 permille, deepseek, username", 9.4),
])
def test_published_rate_reproduced(rows, quantity, derived):
    r = rows[quantity]
    assert r["match"] and r["derived"] == pytest.approx(derived, abs=0.5 * 10 ** -r["digits"] + 1e-9)


def test_every_table2_permille_reproduced(rows):
    t2 = [r for q, r in rows.items() if q.startswith("Table 2 permille")]
    assert len(t2) == 30 and all(r["match"] for r in t2)


@pytest.mark.parametrize("quantity, derived, published", [
    ("Table 3 Ours LP>=1, secret", 13.96, 13.64),  # the paper's own Table 2 implies 13.96
    ("Sec. 6.2 (1) refusal rate from accepted row sum, gpt", 36.04, 39.3),
    ("Sec. 6.2 (1) refusal rate from accepted row sum, deepseek", 26.11, 30.9),
    ("Sec. 6.2 (3) category mean from counts, identifiable", 24.63, 24.64),
    ("Table 4 precision, tg_only", 86.60, 88.4),  # macro over models, not pooled over averaged counts
    ("Table 4 precision, no_fl", 91.52, 91.8),
])
def test_paper_inconsistencies_measured(rows, quantity, derived, published):
    r = rows[quantity]
    assert not r["match"]
    assert (r["derived"], r["published"]) == (pytest.approx(derived, abs=0.005), pytest.approx(published))


@pytest.mark.parametrize("cat, bound, lp2", [("identifiable", 0.0, 10.58), ("private", 0.0, 2.07),
                                             ("secret", 0.32, 5.85)])
def test_paper_lp1_rules_out_its_lp2(rows, cat, bound, lp2):
    # a share of one set of test cases has LP>=1 + LP>=2 <= instances / test cases; the paper's
    # Ours LP>=1 already equals that instance rate, so its LP>=2 cannot exceed (almost) zero
    r = rows[f"Table 3 Ours LP>=2 bound from LP>=1, {cat}"]
    assert not r["match"]
    assert (r["derived"], r["published"]) == (pytest.approx(bound, abs=0.01), pytest.approx(lp2))


def test_mismatches_are_all_documented(rows):
    paper = load_paper_results()
    notes = " ".join(n["what"] + " " + n["detail"] for n in paper["inconsistencies"])
    for q, r in rows.items():
        if r["match"]:
            continue
        key = ("Table 4" if q.startswith("Table 4") else "row sums" if "row sum" in q
               else "LP>=2 bound" if "LP>=2 bound" in q else "13.96" if "LP>=1, secret" in q else "rounded permilles")
        assert key in notes, q


def test_section_text(rows):
    tax = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text(encoding="utf-8")))
    text = arithmetic_section(load_paper_results(), tax)
    assert text.startswith("## Paper arithmetic")
    assert "| Table 3 Ours LP>=1, secret | 13.9643‰ | 13.64‰ | **no** |" in text
    assert "DeepSeek date of birth accepted 364.5 > 200 test cases" in text
