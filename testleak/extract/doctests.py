"""Doctest sessions (``>>>`` lines and their ``...`` continuations) in docstrings, comments,
prose and ``.. doctest::`` blocks, read as Python code."""

from __future__ import annotations

import re

from .literals import Literal
from .pyparse import parse_python, parse_tree


_DOCTEST = re.compile(r"^(?P<ind>[ \t]*)>>>(?: |$)", re.M)


def doctest_sessions(code: str) -> list[tuple[int, int, str]]:
    """``(start, end, source)`` of every doctest session of ``code`` (``>>>`` lines and their
    ``...`` continuations, in a docstring, a comment, prose or a ``.. doctest::`` block): the
    source is the code of those lines with the prompts blanked, offsets as in ``code``."""
    out = []
    pos = 0
    while True:
        m = _DOCTEST.search(code, pos)
        if not m:
            return out
        ind = m.group("ind")
        start, lines = m.start(), []
        at = start
        while at < len(code):
            nl = code.find("\n", at)
            line = code[at:nl if nl >= 0 else len(code)]
            body = line[len(ind):]
            if not line.startswith(ind) or not (body.startswith((">>> ", "... ")) or body in (">>>", "...")):
                break
            lines.append(ind + "    " + body[4:] if len(body) > 3 else ind + "   ")
            at = nl + 1 if nl >= 0 else len(code)
        end = start + sum(len(x) + 1 for x in lines) - 1
        out.append((start, min(end, len(code)), "\n".join(lines)))
        pos = max(at, m.end())


def doctest_literals(code: str, sigs: dict[str, list[str]], attr_for) -> tuple[list[Literal], list[tuple[int, int]]]:
    """Literals of the doctest sessions of ``code`` read as Python code (the lexer for a
    session that does not parse), offsets as in ``code``, and the sessions' spans."""
    from .lexer import lex  # the lexer imports this module's callers

    lits: list[Literal] = []
    spans: list[tuple[int, int]] = []
    for start, end, src in doctest_sessions(code):
        spans.append((start, end))
        t = parse_tree(src)
        parsed = parse_python(src, t, sigs, attr_for) if t is not None else lex(src, "python", attr_for, with_tests=False)
        lits += [Literal(l.value, l.key, l.start + start, l.end + start) for l in parsed.literals]
    return lits, spans
