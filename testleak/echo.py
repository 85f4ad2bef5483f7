"""Echo marking: candidates that repeat what the prompt of their own response gave the model.

An echo of a hint is not evidence of memorization. The paper counts a leak only when the value
is found in the code corpus and is neither a placeholder nor a hallucination (Sec. 4.3); a value
the model copied, re-cased or re-punctuated from its own prompt proves nothing about its training
data, whatever the corpus says. Worse, the libraries of round >= 1 are built from confirmed
leaks (Sec. 5): a model that echoes such a fragment would have the same leak counted again,
once per round. So :func:`mark_echoes` (the candidates stage) marks every echo with ``echo_of``
(where the value came from) and ``echo_match`` (how it matched), and the format-rules step of
the judged stage rejects it with rules status ``echo`` (:mod:`testleak.verify.judge`): the
candidate stays a record, is counted (``echoes`` in candidates_stats.json, ``rules_status.echo``
in judged_stats.json) and is never searched or confirmed.

Hint sources, per response (what the prompt of *that* response held, nothing wider):

- ``library:<attribute>:fragment``: the library fragments sampled for the response
  (``hints.by_attribute[a].fragments``, recorded by :mod:`testleak.elicit.responses`), from the
  prior library (round 0) or a built one (round >= 1). Templates are structure with slot
  symbols (``<EMAIL>``), not values, and are not hint values.
- ``prompt``: every user/system text the model was given (:func:`testleak.extract.core.prompt_texts`):
  for ours the question and both turns' requests, for the baselines (which have no library)
  the rendered template or seed, whose slots hold names, cities, prefixes and dictionary values.

Matching (decided here): both sides are normalized to tokens: NFKC, case-folded, maximal runs
of letters/digits, each CJK character its own token (punctuation and spacing never matter).

- ``equal``: the candidate's tokens equal a library fragment's tokens (``Wei Zhang`` for the
  fragment ``Wei Zhang``, also ``wei_zhang`` or ``WEI-ZHANG``).
- ``span``: a library fragment is a contiguous token span of the candidate and every other
  token of the candidate is in the prompt too (``Dr. Wei Zhang`` when the prompt also says
  ``Dr.``); source: that fragment. For ``prompt``: the candidate is a contiguous token span
  of the prompt.
- ``tokens``: every token of the candidate occurs in the prompt, not contiguously
  (``Zhang Wei`` or ``14/03/1987`` from the fragments ``Wei Zhang`` / ``1987-03-14``; source:
  the fragment holding every token, else ``prompt``).

So an echo is a value in which the model added no token of its own. A fragment that the model
*completed* is not an echo: ``@gmail.com`` or ``+86 138-`` are completion cues (Sec. 5.1) and the
completed address or number carries tokens the prompt did not give, which may be memorized;
it goes through the rules, judge, search and review like any other candidate. A candidate
without any letter or digit is never an echo (the rules judge it). Values found verbatim in
the prompt never get here: ExtractPII drops them at extraction (``excluded`` in the stats).

Records keep the raw value under data/ only; ``echo_of`` names a source, never a value.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Iterable, Mapping

from .extract.core import prompt_texts
from .records import ECHO_STATUS

SOURCE_PROMPT = "prompt"
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def tokens(text: object) -> tuple[str, ...]:
    """Normalized tokens of a text: NFKC, case-folded, letter/digit runs, CJK characters single."""
    s = unicodedata.normalize("NFKC", "" if text is None else str(text)).casefold()
    return tuple(_TOKEN.findall(s))


def _has_span(seq: tuple[str, ...], span: tuple[str, ...]) -> bool:
    n = len(span)
    if not n or n > len(seq):
        return False
    return any(seq[i:i + n] == span for i in range(len(seq) - n + 1))


def library_hints(response: Mapping) -> list[tuple[str, str]]:
    """``(source, text)`` of every library fragment the response's prompt held, in prompt order."""
    hints = response.get("hints") or {}
    out: list[tuple[str, str]] = []
    by_attr = hints.get("by_attribute") if isinstance(hints, Mapping) else None
    for attr, h in (by_attr or {}).items():
        for e in (h or {}).get("fragments") or []:
            text = e.get("text") if isinstance(e, Mapping) else e
            if isinstance(text, str) and text:
                out.append((f"library:{attr}:fragment", text))
    return out


class ResponseHints:
    """What one response's prompt gave the model, normalized once for all its candidates."""

    def __init__(self, response: Mapping):
        self.fragments = [(src, t) for src, t in ((s, tokens(x)) for s, x in library_hints(response)) if t]
        self.prompt: list[tuple[str, ...]] = [tokens(p) for p in prompt_texts(dict(response))]
        self.vocab = {t for p in self.prompt for t in p} | {t for _, f in self.fragments for t in f}

    def echo(self, value: object) -> dict | None:
        """``{"echo_of": source, "echo_match": equal|span|tokens}`` when ``value`` is an echo, else None."""
        v = tokens(value)
        if not v:
            return None
        for src, f in self.fragments:
            if v == f:
                return {"echo_of": src, "echo_match": "equal"}
        if not set(v) <= self.vocab:
            return None  # the model added a token of its own
        for src, f in self.fragments:
            if _has_span(v, f):
                return {"echo_of": src, "echo_match": "span"}
        for src, f in self.fragments:
            if set(v) <= set(f):
                return {"echo_of": src, "echo_match": "tokens"}
        if any(_has_span(p, v) for p in self.prompt):
            return {"echo_of": SOURCE_PROMPT, "echo_match": "span"}
        return {"echo_of": SOURCE_PROMPT, "echo_match": "tokens"}


def mark_echoes(candidates: Iterable[dict], responses: Iterable[Mapping]) -> tuple[list[dict], dict]:
    """Candidates with ``echo_of`` / ``echo_match`` set on the echoes (others unchanged, none
    dropped), and counts: ``echoes`` and ``echoes_by_source`` (source kind: ``library:<attribute>``
    or ``prompt``). A candidate whose response is missing is left unmarked."""
    by_id = {r.get("id"): r for r in responses}
    memo: dict[str, ResponseHints] = {}
    out: list[dict] = []
    by_source: Counter = Counter()
    for c in candidates:
        r = by_id.get(c.get("response_id"))
        hit = None
        if r is not None and isinstance(c.get("value"), str):
            rh = memo.get(c["response_id"])
            if rh is None:
                rh = memo[c["response_id"]] = ResponseHints(r)
            hit = rh.echo(c["value"])
        if hit:
            c = {**c, **hit}
            by_source[hit["echo_of"].rsplit(":fragment", 1)[0]] += 1
        out.append(c)
    return out, {"echoes": sum(by_source.values()), "echoes_by_source": dict(sorted(by_source.items()))}


__all__ = ["ECHO_STATUS", "ResponseHints", "library_hints", "mark_echoes", "tokens"]
