"""Codebreaker prompt mutations (Han et al., IEEE S&P 2025; paper Sec. 6.1, App. A.2),
re-implemented from the published description: crossover (swap content words), dictionary
insert / replace / delete of entity nouns, and character typos.

Operators are pure functions of (text, ``random.Random``): the same seed gives the same mutant.
They touch only word tokens (letters/digits/underscores starting with a letter, CJK included),
never punctuation, so the open literal ending a prompt (``password = "``) survives. Content words
have 2+ characters and are not in :data:`STOPWORDS`; entity nouns are dictionary values delimited
by non-word characters. An operator that cannot apply returns None and the caller picks another.
"""

from __future__ import annotations

import keyword
import random
import re
import string
from typing import Mapping, Sequence

WORD = re.compile(r"[^\W\d_]\w*")
STOPWORDS = frozenset(
    {k.lower() for k in keyword.kwlist}
    | {"insert", "into", "values", "select", "from", "where", "update", "set", "table", "create",
       "of", "the", "a", "an", "in", "at", "to", "for", "and", "or", "on", "by", "with", "is", "be",
       "this", "that", "true", "false", "null", "none", "self", "const", "let", "var", "new", "return"}
)
OPERATORS = ("crossover", "insert", "replace", "delete", "typo")


def words(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in WORD.finditer(text)]


def content_words(text: str) -> list[tuple[int, int]]:
    return [(s, e) for s, e in words(text) if e - s >= 2 and text[s:e].lower() not in STOPWORDS]


def entity_spans(text: str, dictionaries: Mapping[str, Sequence[str]]) -> list[tuple[int, int, str]]:
    """Non-overlapping occurrences of dictionary values as (start, end, dictionary), in text
    order; longer values win over values they contain."""
    found: list[tuple[int, int, str]] = []
    for d, values in dictionaries.items():
        for v in values:
            for m in re.finditer(r"(?<!\w)" + re.escape(v) + r"(?!\w)", text):
                found.append((m.start(), m.end(), d))
    found.sort(key=lambda t: (t[0], -(t[1] - t[0])))
    out: list[tuple[int, int, str]] = []
    for s, e, d in found:
        if out and s < out[-1][1]:
            continue
        out.append((s, e, d))
    return out


def _splice(text: str, s: int, e: int, new: str) -> str:
    return text[:s] + new + text[e:]


def crossover(a: str, b: str, rng: random.Random, n_words: int = 1) -> tuple[str, str] | None:
    """Swap ``n_words`` content words between two prompts: the i-th chosen word of ``a``
    trades places with the i-th chosen word of ``b``. Returns the two children."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return None
    k = max(1, min(n_words, len(wa), len(wb)))
    sa = sorted(rng.sample(wa, k))
    sb = sorted(rng.sample(wb, k))
    ta = [a[s:e] for s, e in sa]
    tb = [b[s:e] for s, e in sb]
    ca, cb = a, b
    for (s, e), w in sorted(zip(sa, tb), reverse=True):
        ca = _splice(ca, s, e, w)
    for (s, e), w in sorted(zip(sb, ta), reverse=True):
        cb = _splice(cb, s, e, w)
    return ca, cb


def insert(text: str, rng: random.Random, dictionaries: Mapping[str, Sequence[str]]) -> str | None:
    """Insert a dictionary value (and a space) before a randomly chosen word token."""
    ws = words(text)
    dicts = [d for d in sorted(dictionaries) if dictionaries[d]]
    if not ws or not dicts:
        return None
    s, _ = rng.choice(ws)
    d = rng.choice(dicts)
    v = rng.choice(list(dictionaries[d]))
    return _splice(text, s, s, v + " ")


def replace(text: str, rng: random.Random, dictionaries: Mapping[str, Sequence[str]]) -> str | None:
    """Replace an entity noun by another value of the same dictionary."""
    ents = entity_spans(text, dictionaries)
    if not ents:
        return None
    s, e, d = rng.choice(ents)
    others = [v for v in dictionaries[d] if v != text[s:e]]
    if not others:
        return None
    return _splice(text, s, e, rng.choice(others))


def delete(text: str, rng: random.Random, dictionaries: Mapping[str, Sequence[str]]) -> str | None:
    """Delete an entity noun with one adjacent space (the following one, else the preceding)."""
    ents = entity_spans(text, dictionaries)
    if not ents:
        return None
    s, e, _ = rng.choice(ents)
    if e < len(text) and text[e] == " ":
        e += 1
    elif s > 0 and text[s - 1] == " ":
        s -= 1
    return _splice(text, s, e, "")


TYPO_KINDS = ("swap", "drop", "double", "substitute")


def typo(text: str, rng: random.Random) -> str | None:
    """One character typo in a content word of 3+ characters: swap two adjacent characters,
    drop one, double one, or substitute one by another lowercase ASCII letter."""
    ws = [(s, e) for s, e in content_words(text) if e - s >= 3]
    if not ws:
        return None
    s, e = rng.choice(ws)
    w = text[s:e]
    kind = rng.choice(TYPO_KINDS)
    if kind == "swap":
        i = rng.randrange(len(w) - 1)
        new = w[:i] + w[i + 1] + w[i] + w[i + 2:]
    elif kind == "drop":
        i = rng.randrange(len(w))
        new = w[:i] + w[i + 1:]
    elif kind == "double":
        i = rng.randrange(len(w))
        new = w[:i] + w[i] + w[i:]
    else:
        i = rng.randrange(len(w))
        new = w[:i] + rng.choice([c for c in string.ascii_lowercase if c != w[i].lower()]) + w[i + 1:]
    return _splice(text, s, e, new)


def mutate(text: str, op: str, rng: random.Random, dictionaries: Mapping[str, Sequence[str]],
           other: str | None = None, n_words: int = 1) -> str | None:
    """Apply one operator by name; crossover needs ``other`` and returns its first child."""
    if op == "crossover":
        if other is None:
            return None
        r = crossover(text, other, rng, n_words)
        return r[0] if r else None
    if op == "insert":
        return insert(text, rng, dictionaries)
    if op == "replace":
        return replace(text, rng, dictionaries)
    if op == "delete":
        return delete(text, rng, dictionaries)
    if op == "typo":
        return typo(text, rng)
    raise ValueError(f"unknown mutation operator {op!r}; known: {', '.join(OPERATORS)}")
