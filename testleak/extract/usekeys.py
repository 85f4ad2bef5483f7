"""Keys from how the code uses a value, for literals whose own key names no attribute.

- **Call sites of the code under test.** ``string test1 = "kim_77"; ... IsValidUsername(test1)``:
  the variable is passed, as a whole argument, to a function that the code under test defines
  (the code turn's answer, the selected functions); the value takes the name of the parameter
  at that position when it names an attribute, else the function's own name when that names
  one (``IsValidUsername``, ``hash_password``). Only definitions of the code under test count,
  so an answer with no such code (a baseline's completion) reads as before.
- **A bare ``id`` beside a person's fields.** ``{ Name = "...", DOB = "...", Id = "A0123" }``:
  in a record (the innermost bracket group) whose other keys name a person's attributes, the
  ``id`` is that person's identity number, when the value has an identity number's shape.
- **Values a loop binds** (:mod:`.loops`): a row's elements take the keys of the loop's variables.
"""

from __future__ import annotations

import re

from ..taxonomy import normalize_identifier
from .detect import AMBIGUOUS_BARE
from .keys import produces
from .lexkeys import _match_close
from .literals import Literal
from .loops import loop_keys

_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_CALLEE = re.compile(r"([A-Za-z_$][\w$]*)\s*$")
_OPEN = {"(": ")", "{": "}", "[": "]"}
_CLOSE = {v: k for k, v in _OPEN.items()}
# attributes that describe a person: a record holding one of them is a person's record
PERSON = frozenset({"name", "email", "phone", "address", "date_of_birth", "username"})
IDENTITY_KEY = "id_number"   # a key the paper taxonomy's identity lexicon holds
_STATEMENT_END = re.compile(r"[;\n]")
_LOOP = re.compile(r"\bfor(?:each)?\b|\.forEach\b")


def _enclosing_open(masked: str, pos: int, limit: int = 2000) -> int | None:
    """Index of the innermost unmatched opening bracket before ``pos`` (within ``limit``)."""
    depth: dict[str, int] = {")": 0, "}": 0, "]": 0}
    for i in range(pos - 1, max(-1, pos - 1 - limit), -1):
        ch = masked[i]
        if ch in _CLOSE:
            depth[ch] += 1
        elif ch in _OPEN:
            if depth[_OPEN[ch]]:
                depth[_OPEN[ch]] -= 1
            else:
                return i
    return None


def _argument_index(masked: str, open_: int, pos: int, end: int) -> int | None:
    """Position of the argument at ``pos:end`` in the call opened at ``open_``, or None when
    the text there is only part of an argument (``f(x + test1)``, ``f(test1.strip())``)."""
    inner = masked[open_ + 1:pos]
    depth, start, idx = 0, 0, 0
    for i, ch in enumerate(inner):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            idx, start = idx + 1, i + 1
    if depth or inner[start:].strip():
        return None
    after = masked[end:].lstrip()
    return idx if after[:1] in (",", ")") else None


def _call_key(code: str, var: str, after: int, tested: dict[str, list[str]], attr_for) -> str | None:
    """The key a later use of ``var`` as a whole argument of a tested function gives. Read on
    the raw code: a call inside an interpolation slot (``$"{IsValid(test1)}"``) is a use."""
    for m in re.finditer(rf"(?<![\w$.]){re.escape(var)}(?![\w$])", code[after:]):
        pos, end = after + m.start(), after + m.end()
        open_ = _enclosing_open(code, pos)
        if open_ is None or code[open_] != "(":
            continue
        c = _CALLEE.search(code, 0, open_)
        name = c.group(1) if c else None
        if name not in tested:
            continue
        idx = _argument_index(code, open_, pos, end)
        if idx is None:
            continue
        params = tested[name]
        param = params[idx] if idx < len(params) else None
        if param and attr_for(param) and not (normalize_identifier(param) in AMBIGUOUS_BARE and attr_for(name)):
            return param  # validateUsername(name): the function's name says which name
        if param and produces(name):
            continue  # GenerateSecureToken(data): the name says what it returns; its input is `data`
        if attr_for(name) and (idx == 0 or len(params) <= 1):  # a function's name names its first input
            return name
    return None


def _record_of_person(masked: str, lit: Literal, lits: list[Literal], attr_for) -> bool:
    """True when the innermost bracket group around ``lit`` holds another literal whose key
    names a person's attribute."""
    open_ = _enclosing_open(masked, lit.start)
    if open_ is None:
        return False
    close = _match_close(masked, open_, masked[open_])
    return any(o is not lit and open_ < o.start < close and o.key and attr_for(o.key) in PERSON for o in lits)


def use_keys(code: str, mask, lits: list[Literal], attr_for, identity_shape,
             tested: dict[str, list[str]]) -> list[Literal]:
    """``lits`` with keys from how the code uses their values (module docstring). ``mask()``:
    ``code`` with string bodies and comments blanked, asked for only when a bare ``id`` needs
    its record; ``identity_shape(value, key)``: whether a value has an identity number's shape;
    ``tested``: function name -> parameter names of the code under test."""
    out = list(lits)
    masked = None
    for i, lit in enumerate(lits):
        k = lit.key
        if not k or attr_for(k) or not _IDENT.match(k):
            continue
        new = None
        if normalize_identifier(k) == "id":
            if identity_shape(lit.value, IDENTITY_KEY):
                masked = mask() if masked is None else masked
                if len(masked) == len(code) and _record_of_person(masked, lit, lits, attr_for):
                    new = IDENTITY_KEY
        elif tested:
            new = _call_key(code, k, lit.end, tested, attr_for)  # raw: calls in ${...} slots count
        if new:
            out[i] = Literal(lit.value, new, lit.start, lit.end, lit.cut)
    if _LOOP.search(code):
        masked = mask() if masked is None else masked
        if len(masked) == len(code):
            out = loop_keys(code, masked, out, attr_for, lambda var, after, end: _call_key(
                code[:end], var, after, tested, attr_for) if tested else None)
    return out
