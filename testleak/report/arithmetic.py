"""The "Paper arithmetic" section of reports/paper_comparison.md: the paper's own published
counts (Table 2 test cases, accepted and confirmed per family; Table 4 TP/FN/FP) fed through
*our* metric functions (:mod:`testleak.metrics`), beside the numbers the paper prints.

A derived number "matches" when, rounded half-up to the published number of decimals, it
equals the published one. Mismatches are the paper's own inconsistencies; each is explained
in ``paper_results.yaml`` (``inconsistencies``) and in the section text.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Mapping

from ..metrics import category_mean, permille, prf, ratio, refusal_rate, round_half_up
from .markdown import md_table

FAMILIES = ("gpt", "deepseek")


def _row(quantity: str, derived: float, published: float, unit: str, how: str, digits: int,
         at_most: bool = False) -> dict:
    """``digits``: the decimals the paper prints for this quantity; ``at_most``: ``derived`` is an
    upper bound the published number must not exceed (match = published <= bound)."""
    d, p = round_half_up(derived, digits), round_half_up(published, digits)
    return {"quantity": quantity, "derived": derived, "published": published, "unit": unit, "how": how,
            "match": p <= d if at_most else d == p, "digits": digits}


def paper_arithmetic(paper: Mapping, taxonomy) -> list[dict]:
    """Rows ``{quantity, derived, published, unit, how, match, digits}``."""
    t2, t4 = paper["table2"], paper["table4"]["variants"]
    tc = t2["test_cases"]
    fam = t2["families"]
    total_tc = t2["total"]["test_cases"]
    rows = []
    for f in FAMILIES:
        for a in taxonomy.attributes:
            r = fam[f][a]
            rows.append(_row(f"Table 2 permille, {f}, {a}", permille(r["confirmed"], tc[a]), r["permille"], "‰",
                             f"permille({r['confirmed']}, {tc[a]})", 1))
    for cat, members in taxonomy.by_category().items():
        pub = paper["category_permille"][cat]
        rows.append(_row(f"Sec. 6.2 (3) category mean, {cat}",
                         category_mean(fam[f][a]["permille"] for f in FAMILIES for a in members), pub, "‰",
                         "category_mean of the published (rounded) attribute permilles, both families", 2))
        rows.append(_row(f"Sec. 6.2 (3) category mean from counts, {cat}",
                         category_mean(permille(fam[f][a]["confirmed"], tc[a]) for f in FAMILIES for a in members),
                         pub, "‰", "category_mean of permille(confirmed, test cases), both families", 2))
    rates = {}
    for f in FAMILIES:
        acc = t2["total"][f]["accepted"]
        rates[f] = refusal_rate(acc, total_tc)
        rows.append(_row(f"Sec. 6.2 (1) refusal rate, {f}", 100 * rates[f], 100 * paper["refusal_rate"][f], "%",
                         f"refusal_rate({acc}, {total_tc}) (Table 2 total row)", 1))
        row_sum = sum(fam[f][a]["accepted"] for a in taxonomy.attributes)
        rows.append(_row(f"Sec. 6.2 (1) refusal rate from accepted row sum, {f}", 100 * refusal_rate(row_sum, total_tc),
                         100 * paper["refusal_rate"][f], "%", f"refusal_rate({row_sum:.1f}, {total_tc})", 1))
    rows.append(_row("Table 4 reject rate, full pipeline", 100 * sum(rates.values()) / len(rates),
                     t4["none"]["reject_rate"], "%", "mean of the two families' refusal rates", digits=2))
    ours = paper["table3"]["methods"]["ours"]
    for cat, members in taxonomy.by_category().items():
        den = sum(tc[a] for a in members)
        per = [1000 * ratio(sum(fam[f][a]["confirmed"] for a in members), den) for f in FAMILIES]
        inst = sum(per) / len(per)
        rows.append(_row(f"Table 3 Ours LP>=1, {cat}", inst, ours[cat]["lp1"], "‰",
                         f"mean over families of confirmed instances / {den} (Table 2 test cases summed over the "
                         "category's attributes): the paper's LP>=1 is this instance rate", digits=2))
        # each test case with >= 2 elements holds one more element than LP>=1 counts: LP>=1 + LP>=2 <= instances
        rows.append(_row(f"Table 3 Ours LP>=2 bound from LP>=1, {cat}", max(0.0, inst - ours[cat]["lp1"]),
                         ours[cat]["lp2"], "‰", "at most confirmed instances / test cases - LP>=1 (published "
                         "LP>=2 must not exceed it)", digits=2, at_most=True))
    for v, p in t4.items():
        if p.get("tp") is None:
            continue
        s = prf(p["tp"], p["fn"], p["fp"])
        for k in ("precision", "recall", "f1"):
            rows.append(_row(f"Table 4 {k}, {v}", 100 * s[k], p[k], "%",
                             f"prf(TP={p['tp']}, FN={p['fn']}, FP={p['fp']}) on the averaged counts (pooled)", 1))
    return rows


def arithmetic_section(paper: Mapping, taxonomy) -> str:
    rows = paper_arithmetic(paper, taxonomy)
    body = [[r["quantity"], f"{r['derived']:.{r['digits'] + 2}f}{r['unit']}",
             f"{r['published']:.{r['digits']}f}{r['unit']}", "yes" if r["match"] else "**no**", r["how"]] for r in rows]
    n_ok = sum(r["match"] for r in rows)
    notes = paper.get("inconsistencies") or []
    text = ["## Paper arithmetic\n",
            "The paper's own published counts (Table 2: test cases, accepted and confirmed per family; Table 4: "
            "TP/FN/FP) fed through this repository's metric functions (`testleak.metrics`: `permille`, "
            "`category_mean`, `refusal_rate`, `prf`). A derived number matches when, rounded "
            f"half-up to the published decimals, it equals the published one: {n_ok} of {len(rows)} match.\n",
            "Definitions used (the same as for our own numbers below): permille = confirmed / test cases x 1000; "
            "category mean = mean of the attribute permilles over both families; refusal (reject) rate = 1 - "
            "accepted / test cases; precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = harmonic mean. "
            "LP>=L (docs/METRICS.md) is a share of a set of test cases, each counted once; so LP>=1 + LP>=2 <= "
            "confirmed instances / test cases. The paper's Ours LP>=1 equals its Table 2 instance rate (confirmed "
            "/ test cases summed per attribute, one test case counted once per attribute it was asked about), and "
            "its LP>=2 > 0 beside it: the two cannot both be shares of one set of test cases (rows \"LP>=2 bound\").\n",
            md_table(["Quantity", "Derived", "Published", "Match", "How"], body)]
    if notes:
        text.append("\nWhere the paper is internally inconsistent (also recorded in "
                    "`testleak/resources/paper_results.yaml`, `inconsistencies`):\n")
        text += [f"- **{n['what']}**: {n['detail']}" for n in notes]
    return "\n".join(text) + "\n"
