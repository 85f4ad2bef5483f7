"""Confirmed instances against the number of responses (paper Fig. 1) and the other budget units.

Responses in file order (as the stage produced them); ``error`` responses are skipped, as in
:mod:`.leakage`. Row i gives, per category and ``all``, the cumulative confirmed instances
(records, as Table 2's "Confirmed") among the first i responses, and the spend up to it in each
unit of :data:`UNITS`: ``completion_tokens`` (error responses included,
:func:`.cost.response_completion_tokens`; the x axis of Figure 1's equal-cost variant),
``test_cases`` (one per baseline response), ``tokens`` and ``usd`` (empty without a price).
:func:`write_curve` / :func:`read_curve` handle the DVC plots file
``metrics/plots/RUN_confirmed_vs_responses.csv``.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..llm.budget import cost_usd
from .cost import response_completion_tokens
from .leakage import response_of
from .records import check_attribute, confirmed_only, response_status
from .steps import response_test_cases, tokens_of

#: The budget units a run is measured (and a baseline matched) in, in report order.
UNITS = ("responses", "test_cases", "completion_tokens", "tokens", "usd")
#: The units every run has (usd needs the model's price).
COUNT_UNITS = UNITS[:4]


def cumulative_spend(responses: Iterable[Mapping], default_tests: int = 1,
                     price: Mapping | None = None) -> list[dict]:
    """Per response in file order, what the run had spent through it in every unit of
    :data:`UNITS`: tokens and usd of every response (a failed call's too), responses and test
    cases of the answered ones (``error`` responses are no model responses); ``usd`` None
    without a price. Row i also says whether response i is an ``error`` (``error``)."""
    rows = []
    n = tests = completion = both = 0
    usd: float | None = 0.0 if price else None
    for r in responses:
        c, t = response_completion_tokens(r), tokens_of(r)
        completion += c
        both += t
        if usd is not None:
            usd += cost_usd(price, t - c, c)
        error = response_status(r) == "error"
        if not error:
            n += 1
            tests += response_test_cases(r, default_tests)
        rows.append({"responses": n, "test_cases": tests, "completion_tokens": completion, "tokens": both,
                     "usd": usd, "error": error})
    return rows


def cumulative_confirmed(responses: Iterable[Mapping], confirmed: Iterable[Mapping], taxonomy,
                         candidates: Iterable[Mapping] = (), price: Mapping | None = None,
                         default_tests: int = 1) -> list[dict]:
    attrs = list(taxonomy.attributes)
    resp_by_cand = {c["id"]: c.get("response_id") for c in candidates if "id" in c}
    cat_of = {a: taxonomy.category_of(a) for a in attrs}
    per_resp: dict[str, Counter] = defaultdict(Counter)
    seen: set = set()
    for rec in confirmed_only(confirmed):
        cid = rec.get("candidate_id")
        if cid in seen:
            continue
        seen.add(cid)
        a = check_attribute(rec.get("attribute"), attrs, f"confirmed {cid!r}")
        per_resp[response_of(rec, resp_by_cand)][cat_of[a]] += 1
    cats = list(taxonomy.categories)
    responses = list(responses)
    run = Counter()
    rows = []
    for r, spent in zip(responses, cumulative_spend(responses, default_tests, price)):
        if spent["error"]:
            continue
        run.update(per_resp.get(r.get("id"), Counter()))
        row = {"responses": spent["responses"], "completion_tokens": spent["completion_tokens"],
               "test_cases": spent["test_cases"], "tokens": spent["tokens"],
               "usd": "" if spent["usd"] is None else round(spent["usd"], 6), **{c: run[c] for c in cats}}
        row["all"] = sum(run[c] for c in cats)
        rows.append(row)
    return rows


def write_curve(path: Path, rows: Sequence[Mapping], categories: Iterable[str]) -> None:
    """Write the rows of :func:`cumulative_confirmed` as the run's curve CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = ["responses", "completion_tokens", "test_cases", "tokens", "usd", *categories, "all"]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})


def read_curve(path: Path) -> list[dict]:
    """The rows of a curve CSV written by :func:`write_curve` (values as strings)."""
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))
