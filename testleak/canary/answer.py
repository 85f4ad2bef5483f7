"""The canary report's answer: one sentence computed from the method and
test tables, ours against every baseline on the tuned model, its budget unit named and every
other unit beside it (recall within ours' spend per unit), and the bullets saying what would
change it. Nothing here is written by hand; :mod:`.report` places it first in canary.md."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..equalcost import TOLERANCE
from ..metrics.stats import holm_adjust
from .probe import PREFIX

ALPHA = 0.05            # the level the one-sentence answer calls a difference significant at
METHOD_NAMES = {"ours": "ours", "codebreaker": "Codebreaker", "codexleaks": "CodexLeaks"}


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def headline(methods: Sequence[Mapping], tests: Sequence[Mapping], control: Sequence[Mapping],
             memorized: Mapping | None = None, readings: Sequence[Mapping] = ()) -> tuple[str, list[str]]:
    """The one-sentence answer and what would change it, computed from the method and test tables:
    ours against every baseline on the tuned model (CodexLeaks, Codebreaker: whichever ran; a
    sentence that named one baseline would hide the other). With two or more baselines the
    p-values are also given Holm-adjusted over the baselines (:func:`holm_adjust`), and
    "significant" in the bullets means adjusted p < ALPHA. ``readings`` (:func:`recall_at_reference`):
    every method's recall within ours' spend per budget unit, given beside the sentence's unit."""
    tuned = [m for m in methods if m["model"] == "tuned"]
    ours, others = _ours_and_baselines(tuned)
    if ours is None or not others:
        return ("No answer: the calibration has no run of ours and of a baseline on the tuned model "
                "(experiment.calibration_runs, canary.models).", [])
    names = [METHOD_NAMES.get(c["kind"], c["method"]) for c in others]
    pair, ps, adjusted = _baseline_tests(ours, others, tests)
    cond, matched = _spend_condition(names, others)
    sentence = _answer_sentence(cond, ours, others, names, ps, adjusted) + _units_clause(readings, ours, others, names)
    change = [_difference_bullet(name, t, p, q, ours, len(others) > 1)
              for name, t, p, q in zip(names, pair, ps, adjusted) if t is not None]
    change += _caveat_bullets(tuned, matched, memorized, control) + _ceiling_bullet(methods)
    return sentence, change


def _ours_and_baselines(tuned: Sequence[Mapping]) -> tuple[Mapping | None, list[Mapping]]:
    """Ours (the reference run, else the run without ablation) and the baselines among the
    tuned-model method rows (CodexLeaks and Codebreaker, else any other kind)."""
    ours = next((m for m in tuned if m["kind"] == "ours" and m["stop"].startswith("reference")), None) \
        or next((m for m in tuned if m["kind"] == "ours" and m["variant"] == "none"), None)
    others = [m for m in tuned if m["kind"] in ("codexleaks", "codebreaker")] \
        or [m for m in tuned if m["kind"] not in ("ours", None, PREFIX)]
    return ours, others


def _baseline_tests(ours: Mapping, others: Sequence[Mapping], tests: Sequence[Mapping]) -> tuple[list, list, list]:
    """Per baseline: the paired test against ours on the tuned model (None when absent), its p and
    its p Holm-adjusted over the baselines that have one."""
    pair = [next((x for x in tests if x["model"] == "tuned" and {x["method_a"], x["method_b"]} == {ours["method"], c["method"]}),
                 None) for c in others]
    ps = [None if t is None else t["p"] for t in pair]
    known = [i for i, p in enumerate(ps) if p is not None]
    adjusted: list = [None] * len(others)
    for i, q in zip(known, holm_adjust([ps[i] for i in known])):
        adjusted[i] = q
    return pair, ps, adjusted


def _spend_condition(names: Sequence[str], others: Sequence[Mapping]) -> tuple[str, bool]:
    """The budget clause of the answer (equal, unequal or unrecorded completion tokens against
    ours) and whether every baseline matched ours' tokens within TOLERANCE."""
    spends = [(c["tokens_vs_reference_min"], c["tokens_vs_reference_max"]) for c in others]
    matched = all(lo is not None and abs(lo - 1) <= TOLERANCE and abs(hi - 1) <= TOLERANCE for lo, hi in spends)
    spent = ", ".join(f"{n} {lo:.0%}-{hi:.0%}" for n, (lo, hi) in zip(names, spends) if lo is not None)
    spent = f"{names[0]} spent {spent.removeprefix(names[0] + ' ')}" if len(others) == 1 else f"spent: {spent}"
    common = all(c.get("budget_unit") == "every" for c in others)
    if any(lo is None for lo, _ in spends):
        cond = "at the budgets of experiment.baseline_budget (spend not recorded)"
    elif common:
        cond = f"at a common budget that covers ours' spend in every unit (completion tokens {spent} of ours' per seed)"
    elif matched:
        cond = f"at equal completion tokens ({spent} of ours' per seed)"
    else:
        cond = f"at UNEQUAL completion tokens ({spent} of ours' per seed)"
    return cond, matched


def _fmt_p(p) -> str:
    return "n/a" if p is None else f"{p:.3g}"


def _recall_ci(m: Mapping) -> str:
    """A method row's recall with its 95 % interval, e.g. ``70% [45%, 90%]``."""
    return f"{_pct(m['recall'])} [{_pct(m['recall_ci_low'])}, {_pct(m['recall_ci_high'])}]"


def _answer_sentence(cond: str, ours: Mapping, others: Sequence[Mapping], names: Sequence[str],
                     ps: Sequence, adjusted: Sequence) -> str:
    """The one sentence: ours' recall against each baseline's under ``cond``, with the p-values
    (and Holm-adjusted ones when there are several baselines)."""
    size = f"{ours['planted']} canaries x {ours['seeds']} seed{'s' if ours['seeds'] != 1 else ''}, tuned model"
    if len(others) == 1:
        return (f"{cond[0].upper()}{cond[1:]}, ours recovers {_recall_ci(ours)} of the planted canaries vs {names[0]} "
                f"{_recall_ci(others[0])} ({size}), p = {_fmt_p(ps[0])} (exact paired sign-flip test over canaries).")
    vs = [f"{n} {_recall_ci(c)} (p = {_fmt_p(p)}, Holm {_fmt_p(q)})" for n, c, p, q in zip(names, others, ps, adjusted)]
    return (f"{cond[0].upper()}{cond[1:]}, ours recovers {_recall_ci(ours)} of the planted canaries vs "
            f"{', '.join(vs[:-1])} and {vs[-1]} ({size}; exact paired sign-flip tests over canaries, "
            f"Holm-adjusted over the {len(others)} baselines).")


UNIT_NAMES = {"responses": "responses", "test_cases": "test cases", "completion_tokens": "completion tokens",
              "tokens": "total tokens"}


def _units_clause(readings: Sequence[Mapping], ours: Mapping, others: Sequence[Mapping], names: Sequence[str]) -> str:
    """Beside the sentence: per budget unit, recall within what ours spent in it (per seed), ours
    first; a method whose runs spent less than ours in that unit is marked "(short)": its
    recall there is a lower bound (``experiment.baseline_unit: every`` gives a common budget)."""
    parts = []
    for unit, label in UNIT_NAMES.items():
        row = {r["method"]: r for r in readings if r["unit"] == unit}
        if ours["method"] not in row:
            continue
        vs = [f"{n} {_pct(row[c['method']]['recall'])}{'' if row[c['method']]['covers'] else ' (short)'}"
              for n, c in zip(names, others) if c["method"] in row]
        parts.append(f"{label} (ours {row[ours['method']]['reference_mean']:g} per seed): "
                     f"ours {_pct(row[ours['method']]['recall'])} vs {', '.join(vs)}")
    return (" In every budget unit, recall within ours' spend: " + "; ".join(parts) + ".") if parts else ""


def _difference_bullet(name: str, t: Mapping, p, q, ours: Mapping, several: bool) -> str:
    """What would change the order of ours and one baseline: the cells that would reverse a
    significant difference, or what could separate a non-significant one (``several``: more than
    one baseline, so the Holm-adjusted ``q`` decides)."""
    diff = t["cells_a"] - t["cells_b"] if t["method_a"] == ours["method"] else t["cells_b"] - t["cells_a"]
    sig = q if several else p
    level = f"{ALPHA:.0%}" + (" after Holm's adjustment" if several else "")
    if sig is not None and sig < ALPHA:
        return (f"Ours vs {name}: the difference ({diff:+d} cells of {ours['cells']}) is significant at {level}; "
                f"{abs(diff) + 1} more (canary, seed) cells recovered by "
                f"{'%s alone' % name if diff > 0 else 'ours alone'} would reverse the order.")
    return (f"Ours vs {name}: the difference ({diff:+d} cells of {ours['cells']}) is not significant at "
            f"{level}: {t['discordant_canaries']} of {ours['planted']} canaries differ between the two; "
            f"more canaries or seeds (narrower intervals) could separate them"
            + (", and one more cell for either side breaks the tie." if diff == 0 else
               f"; {abs(diff) + 1} more cells for the other side would reverse the order."))


def _caveat_bullets(tuned: Sequence[Mapping], matched: bool, memorized: Mapping | None,
                    control: Sequence[Mapping]) -> list[str]:
    """The bullets after the pairwise ones: runs cut short by the response cap (or that all
    matched), the memorization ceiling per duplication level, and the control check."""
    change = []
    short = [m for m in tuned if m["stop"] and "max_responses" in m["stop"]]
    if short:
        change.append("Runs that hit baseline_max_responses before reaching ours' tokens (a higher cap gives them "
                      "more budget): " + ", ".join(f"{m['method']} ({m['stop']})" for m in short) + ".")
    elif matched:
        change.append("Every token-matched run reached ours' completion tokens (stop rule of testleak/equalcost.py).")
    if memorized:
        change.append("Recall is bounded by what the fine-tune memorized (greedy completion from the canary's prefix), "
                      "per duplication level: " + ", ".join(f"{k} cop{'y' if str(k) == '1' else 'ies'} {_pct(v)}"
                                                         for k, v in memorized.items())
                      + "; a stronger fine-tune raises every method's ceiling and may change the gap.")
    bad = sum(c["false_recoveries"] for c in control)
    change.append(f"The control model recovered {bad} (canary, seed) cells"
                  + (" (must be 0): the comparison is void until that bug is fixed." if bad else
                     "; any false recovery there would void the comparison."))
    return change


def _ceiling_bullet(methods: Sequence[Mapping]) -> list[str]:
    """The bullet that reads the tuned model's methods against the ceiling (the prefix probe), or a
    failed positive control (none without a probe run)."""
    ceil = {m["model"]: m for m in methods if m["method"] == PREFIX}
    if "tuned" not in ceil:
        return []
    on_control = f" ({_pct(ceil['control']['recall'])} on the control model)" if "control" in ceil else ""
    if not ceil["tuned"]["recovered_cells"]:
        return [f"Ceiling: the prefix probe recovered no canary from its own context prefix on the tuned model"
                f"{on_control}: the positive control failed, so no method's recall can be read against what the "
                f"model memorized (a stronger fine-tune: canary.finetune, more copies)."]
    others = [m for m in methods if m["model"] == "tuned" and m["method"] != PREFIX]
    return [f"Ceiling: the prefix probe (the tuned model continuing each canary's own context prefix, Carlini et al. "
            f"2021) recovers {_recall_ci(ceil['tuned'])} of the canaries{on_control}; the black-box methods "
            + ", ".join(f"{m['method']} {_pct(m['recall'])}" for m in others)
            + ": the distance to the ceiling is what a method's prompts leave of what the model gives back."]
