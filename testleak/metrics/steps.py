"""Step-wise counts per attribute and category (paper Sec. 6.2, Table 2; App. C, Tables 6-8) and
the refusal rate (Sec. 6.2 (1); Table 4 "Reject Rate"); the report repeats each definition.

A response carries attribute ``a`` when its question names it; ``error`` responses carry no test
cases. Per attribute: ``test_cases`` (the tests the model wrote, :func:`tests_written`, with
``tests_requested`` beside; a baseline response is one), ``accepted`` (test cases of ``ok`` responses
whose functions handle ``a``), ``candidates``, ``judge``, ``in_window``, ``confirmed`` (distinct
(attribute, value) pairs; ``confirmed_instances`` counts records) and ``permille`` = confirmed /
test_cases x 1000. Category and total rows sum the attribute counts (a test case about two
attributes counts for each); ``permille_mean_attr`` averages attributes with test cases.
``refusal_rate`` = refused / answered responses (no-code and truncated rates beside it);
:func:`refusal_rate` is the paper's 1 - accepted / test cases, for its published counts.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..errors import DataError
from ..methods import response_test_cases, tests_written, with_tests_written  # noqa: F401 (re-exported)
from ..records import ECHO_STATUS, GENERIC_STATUS, rules_status
from .rates import permille, ratio
from .records import STATUSES, check_attribute, confirmed_only, key_of, response_attributes, response_status

STEPS = ("test_cases", "accepted", "candidates", "judge", "in_window", "confirmed", "confirmed_instances")
# Where the judged step left each candidate (:func:`judged_outcome`): kept, or the rejection reason.
JUDGED_OUTCOMES = ("kept", ECHO_STATUS, GENERIC_STATUS, "placeholder", "format", "judge_rejected", "judge_unparsable", "judge_error")


def nominal_test_cases(taxonomy, scenarios: Sequence[str], questions_per_scenario: int, tests: int) -> dict[str, int]:
    """The paper's "Number of Test Cases" per attribute: (scenarios holding it) x q x t."""
    out = {a: 0 for a in taxonomy.attributes}
    for s in scenarios:
        for a in taxonomy.scenario(s).attributes:
            out[a] += questions_per_scenario * tests
    return out


def refusal_rate(accepted: float, test_cases: float) -> float:
    """Refusal (reject) rate = 1 - accepted / test cases (0.0 without test cases)."""
    return 1.0 - ratio(accepted, test_cases) if test_cases else 0.0


def category_mean(values: Iterable[float]) -> float:
    """Mean of attribute permilles (the paper's category average, Sec. 6.2 (3)); 0.0 if empty."""
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def tested_attributes(response: Mapping, carried: Sequence[str]) -> set[str]:
    """The attributes an answer's tests were written for: those of the functions the test turn
    tested (``functions[].attributes``, within what the question carried), else all carried."""
    fns = [f for f in response.get("functions") or [] if isinstance(f, Mapping) and f.get("attributes")]
    own = {a for f in fns for a in f["attributes"]} & set(carried)
    return own or set(carried)


def truncated(response: Mapping) -> bool:
    """The answer the response's test cases come from was cut at max_tokens (finish_reason length)."""
    turn = response.get("turn2") if isinstance(response.get("turn2"), Mapping) else response.get("turn1")
    return isinstance(turn, Mapping) and turn.get("finish_reason") == "length"


def tokens_of(response: Mapping) -> int:
    """Prompt + completion tokens over the response's LLM turns (``turn1``, ``turn2``)."""
    total = 0
    for turn in ("turn1", "turn2"):
        usage = (response.get(turn) or {}).get("usage") or {}
        total += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return total


def refusal_stats(responses: Iterable[Mapping], default_tests: int = 1) -> dict:
    """Status counts, test cases (the tests written where a test turn was parsed) and the tests
    requested beside them, accepted test cases (of ``ok`` answers), tokens, and the reject rate
    ``refusal_rate`` = refused / answered responses (refusals only; ``no_code_rate`` and
    ``truncated_rate``, answers cut at max_tokens, beside it; errors are no answers)."""
    counts = {s: 0 for s in STATUSES}
    tests = accepted = tokens = requested = cut = 0
    for r in responses:
        s = response_status(r)
        counts[s] += 1
        n = response_test_cases(r, default_tests)
        tests += n
        accepted += n if s == "ok" else 0
        tokens += tokens_of(r)
        if s != "error":
            q = r.get("tests_requested")
            requested += default_tests if q is None else int(q)
            cut += truncated(r)
    total = sum(counts.values())
    answered = total - counts["error"]
    return {
        "responses": total,
        **counts,
        "truncated": cut,
        "test_cases": tests,
        "tests_requested": requested,
        "accepted": accepted,
        "tokens": tokens,
        "refusal_rate": ratio(counts["refused"], answered),
        "no_code_rate": ratio(counts["no_code"], answered),
        "truncated_rate": ratio(cut, answered),
    }


def _row(counts: Mapping[str, float]) -> dict:
    row = {k: counts.get(k, 0) for k in STEPS}
    row["permille"] = permille(row["confirmed"], row["test_cases"])
    return row


def step_counts(
    responses: Iterable[Mapping],
    candidates: Iterable[Mapping],
    judged: Iterable[Mapping],
    verified: Iterable[Mapping],
    confirmed: Iterable[Mapping],
    taxonomy,
    questions: Mapping[str, Mapping] | None = None,
    default_tests: int = 1,
) -> dict:
    """Counts of Table 2 per attribute, per category and in total.

    Returns ``{"attributes": {a: row}, "categories": {c: row}, "total": row}`` with
    row = ``{test_cases, accepted, candidates, judge, in_window, confirmed,
    confirmed_instances, permille}`` (categories also ``permille_mean_attr``).
    Raises DataError when a record refers to an unknown candidate or attribute.
    """
    attrs = list(taxonomy.attributes)
    c = {a: dict.fromkeys(STEPS, 0) for a in attrs}
    for r in responses:
        ok = response_status(r) == "ok"
        n = response_test_cases(r, default_tests)
        carried = response_attributes(r, questions)
        tested = tested_attributes(r, carried)
        for a in carried:
            check_attribute(a, attrs, f"response {r.get('id')!r}")
            c[a]["test_cases"] += n
            c[a]["accepted"] += n if ok and a in tested else 0
    cand_attr: dict[str, str] = {}
    for cand in candidates:
        a = check_attribute(cand.get("attribute"), attrs, f"candidate {cand.get('id')!r}")
        cand_attr[cand["id"]] = a
        c[a]["candidates"] += 1

    def attr_of(rec, what):
        cid = rec.get("candidate_id")
        if cid not in cand_attr:
            raise DataError(f"{what} record refers to candidate {cid!r} missing from candidates.jsonl: rerun the {what} stage")
        return cand_attr[cid]

    kept: set[str] = set()
    for v in judged:
        a = attr_of(v, "judged")
        if v.get("kept"):
            kept.add(v["candidate_id"])
            c[a]["judge"] += 1
    for h in verified:
        a = attr_of(h, "verified")
        if h.get("outcome") == "in_window" and h["candidate_id"] in kept:
            c[a]["in_window"] += 1
    _count_confirmed(confirmed, cand_attr, attrs, c)
    by_attr = {a: _row(c[a]) for a in attrs}
    cats = {}
    for cat, members in taxonomy.by_category().items():
        row = _row({k: sum(c[a][k] for a in members) for k in STEPS})
        row["permille_mean_attr"] = category_mean(by_attr[a]["permille"] for a in members if by_attr[a]["test_cases"])
        cats[cat] = row
    total = _row({k: sum(c[a][k] for a in attrs) for k in STEPS})
    return {"attributes": by_attr, "categories": cats, "total": total}


def _count_confirmed(confirmed: Iterable[Mapping], cand_attr: Mapping[str, str], attrs: Sequence[str],
                     c: dict[str, dict]) -> None:
    """Add per attribute the confirmed instances (one per candidate) and the distinct
    (attribute, value_hash) pairs to the counters ``c``."""
    seen: set[str] = set()
    distinct: set[tuple[str, str]] = set()
    for rec in confirmed_only(confirmed):
        cid = rec.get("candidate_id")
        a = cand_attr.get(cid) or check_attribute(rec.get("attribute"), attrs, f"confirmed {cid!r}")
        if cid in seen:
            continue  # one confirmed instance per candidate
        seen.add(cid)
        c[a]["confirmed_instances"] += 1
        k = (a, key_of(rec)[1])
        if k not in distinct:
            distinct.add(k)
            c[a]["confirmed"] += 1


def judged_outcome(verdict: Mapping) -> str:
    """Where the judged step left a candidate (:data:`JUDGED_OUTCOMES`): ``kept``, or why not:
    the rules status (``echo``: the value repeats its own prompt's hints, testleak/echo.py;
    ``generic``: a word of the taxonomy; ``placeholder``; ``format``), else the judge's (``judge_rejected``: it said implausible,
    ``judge_unparsable``, ``judge_error``: the call failed)."""
    if verdict.get("kept"):
        return "kept"
    rs = rules_status(verdict.get("rules") or {})
    if rs in (ECHO_STATUS, GENERIC_STATUS, "placeholder", "format"):
        return rs
    status = (verdict.get("judge") or {}).get("status")
    return {"error": "judge_error", "unparsable": "judge_unparsable"}.get(status, "judge_rejected")


def judged_outcomes(judged: Iterable[Mapping], candidates: Iterable[Mapping], taxonomy) -> dict:
    """Rejection reasons of the judged step (:func:`judged_outcome`) per attribute (the
    candidate's, else the verdict's) and in total: ``{"attributes": {a: {outcome: n}}, "total":
    {outcome: n}}``, every outcome present (0 when none); per attribute they sum to its verdicts."""
    attrs = list(taxonomy.attributes)
    cand_attr = {c.get("id"): c.get("attribute") for c in candidates}
    by = {a: dict.fromkeys(JUDGED_OUTCOMES, 0) for a in attrs}
    for v in judged:
        a = check_attribute(cand_attr.get(v.get("candidate_id")) or v.get("attribute"), attrs,
                            f"judged {v.get('candidate_id')!r}")
        by[a][judged_outcome(v)] += 1
    return {"attributes": by, "total": {k: sum(by[a][k] for a in attrs) for k in JUDGED_OUTCOMES}}
