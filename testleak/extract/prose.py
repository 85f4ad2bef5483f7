"""Tests written as prose: the spans of an answer outside its fenced code, and the field
lines in them and in plain-text blocks (``- `username`: "ann_l"``, ``Generated Password: x``)
whose field names an attribute."""

from __future__ import annotations

import re

from ..formats import CodeBlock
from .literals import Literal, Parsed


def prose_spans(text: str, blocks: list[CodeBlock]) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each non-empty stretch of prose around the fenced blocks (none
    when the text has no fenced block: then the whole text is one block of code)."""
    if not any(b.fenced for b in blocks):
        return []
    out, pos = [], 0
    for s, e in [(b.start, b.end) for b in blocks if b.fenced] + [(len(text), len(text))]:
        if s > pos:
            out.append((pos, s))
        pos = max(pos, e)
    return out


# "- `username`: "ann_l"", "**Email:** ann@corp.io", "Generated Password: Tr0ub4dor&3": a
# field and its value on one line of prose or of a plain-text block (tests written as prose,
# expected output)
_FIELD_LINE = re.compile(r"^[ \t]*(?:[-*+][ \t]+|\d+[.)][ \t]+)?(?:\*\*|__|`)?(?P<k>[^\W\d][\w ./-]{0,40}?)(?:\*\*|__|`)?"
                         r"[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(?P<v>[^\n]{1,120}?)[ \t]*$", re.M)
_TEXT_LANGS = {None, "", "text", "txt", "plaintext", "output", "console", "markdown", "md"}
_QUOTES = {'"': '"', "'": "'", "`": "`"}


_TEST_NAME = re.compile(r"^(?:test|Test)[A-Z_]")  # "`test_login`: tests a user": a test's name
_CODE_TAIL = re.compile(r"\s=\s|[\"'`]|;\s*$")
# a description, not a value: "Tests an authorized user.", "the user's e-mail"
_SENTENCE = re.compile(r"(?:^|\s)(?:a|an|the|is|are|with|without|that|which|should|must)\s.*\w|(?:\S+\s+){2,}\w+\.$", re.I)
_FREE_TEXT = frozenset({"medical_record", "political", "biometric", "bank_statement", "address"})


# inline code in prose that assigns a value: `biometricData: "..."`, `const token = '...'`,
# `"birthday": "1979-03-14"`
_INLINE = re.compile(r"`(?:(?:const|let|var|final|String|string|str)\s+)?(?P<kq>[\"']?)(?P<k>[^\W\d][\w.]*)(?P=kq)\s*[:=]\s*"
                     r"(?P<q>[\"'])(?P<v>[^\"'`\n]*)(?P=q)[^`\n]*`")


def _inline_assignments(prose: str, attr_for) -> list[Literal]:
    """Values assigned in inline code spans of prose (:data:`_INLINE`) to a key naming an attribute."""
    return [Literal(m.group("v"), m.group("k"), m.start("v"), m.end("v")) for m in _INLINE.finditer(prose)
            if m.group("v").strip() and attr_for(m.group("k")) is not None]


# a value quoted right after the attribute it is: "with username 'mo_k77'", "# identity
# '884213570'", "password is \"x\"" (test names, comments, docstrings, prose); `=` and `:` are
# the parsers' (code)
_MENTION = re.compile(r"(?<![\w.$])(?P<w>(?:[^\W\d_]+[ \t]+)?[^\W\d_]+)(?:[ \t]+(?:is|was|as|of))?[ \t]+"
                      r"(?P<q>[\"'`])(?P<v>[^\"'`\n]{2,80}?)(?P=q)(?!\w)")


def mentions(code: str, attr_for) -> list[Literal]:
    """Values quoted right after a word (or two) naming their attribute (:data:`_MENTION`)."""
    out = []
    for m in _MENTION.finditer(code):
        words = m.group("w").split()
        key = "_".join(words) if len(words) == 2 and attr_for("_".join(words)) else words[-1]
        if attr_for(key) is not None and m.group("v").strip():
            out.append(Literal(m.group("v"), key, m.start("v"), m.end("v")))
    return out


# a field and its value in parentheses inside a line of prose: "1. **Encrypt a password
# (Password: Kettle!Moss42)**", "a user (email: ann@corp.io)"
_PAREN_FIELD = re.compile(r"\((?P<k>[^\W\d][\w .-]{0,40}?)[ \t]*:[ \t]*(?P<v>[^()\n:]{1,80}?)[ \t]*\)")


def _parenthesised(prose: str, attr_for) -> list[Literal]:
    """Values of ``(field: value)`` groups of prose (:data:`_PAREN_FIELD`) whose field names an
    attribute and whose value is one token or, for a free-text attribute, no sentence."""
    out = []
    for m in _PAREN_FIELD.finditer(prose):
        key, v, s = m.group("k").strip(), m.group("v"), m.start("v")
        attr = attr_for(key)
        if attr is None or not v.strip():
            continue
        close = _QUOTES.get(v[0])
        if close and len(v) > 1 and v.endswith(close):
            v, s = v[1:-1], s + 1
        if _CODE_TAIL.search(v) or (attr not in _FREE_TEXT and _SENTENCE.search(v)):
            continue
        out.append(Literal(v, key, s, s + len(v)))
    return out


def _plain_text(b: CodeBlock) -> bool:
    """A fenced block of plain text: tagged so, or untagged (its language only a default)."""
    tag = b.info.split()[0].lower() if b.info.strip() else ""
    return tag in _TEXT_LANGS or (b.language or "").lower() in _TEXT_LANGS


def field_lines(text: str, blocks: list[CodeBlock], attr_for) -> list:
    """Values of field lines (:data:`_FIELD_LINE`) whose field names an attribute, in the
    prose between fenced blocks and in fenced blocks of plain text."""
    segs = [CodeBlock(text[s:e], None, start=s, end=e, kind="prose") for s, e in prose_spans(text, blocks)]
    segs += [b for b in blocks if b.fenced and _plain_text(b)]
    out = []
    for seg in segs:
        lits = []
        for m in _FIELD_LINE.finditer(seg.code):
            key = m.group("k").strip()
            attr = attr_for(key)
            if attr is None or _TEST_NAME.match(key):
                continue
            v, s = m.group("v"), m.start("v")
            close = _QUOTES.get(v[0])
            if close and len(v) > 1 and v.endswith(close) and close not in v[1:-1]:
                v, s = v[1:-1], s + 1
            elif close or _CODE_TAIL.search(v) or (attr not in _FREE_TEXT and _SENTENCE.search(v)):
                continue  # a quote left open, code (``str = "x"``) or a description: not one value
            if v.strip():
                lits.append(Literal(v, key, s, s + len(v)))
        if seg.kind == "prose":
            lits += _inline_assignments(seg.code, attr_for) + mentions(seg.code, attr_for) + _parenthesised(seg.code, attr_for)
        if lits:
            out.append((seg, None, Parsed(lits, [], "fields")))
    return out
