"""Echo marking: candidates that repeat what the prompt of their own response gave the model.

An echo of a hint is no evidence of memorization (paper Sec. 4.3), and since round >= 1 libraries
are built from confirmed leaks (Sec. 5), counting echoes would count one leak once per round.
:func:`mark_echoes` sets ``echo_of`` (the source) and ``echo_match`` (how it matched); the judged
stage's rules reject the candidate with status ``echo``: a counted record, never searched or
confirmed. Sources, per response only: ``library:<attribute>:fragment`` (the fragments sampled for
it; templates are not values) and ``prompt`` (every user/system text). Both sides become NFKC,
case-folded tokens (letter/digit runs, each CJK character one token), matched as ``equal``, ``span``
or ``tokens``: an echo adds no token of its own, so a *completed* cue (``@gmail.com`` -> a full
address) is not one. Records keep raw values under data/ only; ``echo_of`` names a source, never a
value.
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
