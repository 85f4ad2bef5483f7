"""User-supplied canaries: ``canary.spec=<path to JSONL>`` (beyond the paper).

An auditing team plants its own secrets instead of Faker's. One JSON object per line::

    {"value": "AKIA2EXAMPLEKEY7QZ3X", "attribute": "secret_key"}
    {"value": "jane.roe1987@example.org", "attribute": "email", "duplication": 4,
     "context": "ADMIN = {\\"contact\\": \\"{{value}}\\", \\"active\\": True}\\n"}

``value`` has >= 6 characters (shorter strings match too much code), ``attribute`` is a taxonomy
attribute; ``context`` (optional) is a Python snippet without blank lines holding ``{{value}}`` once,
else a built-in context is used (its literals forbid quotes, backslashes and newlines in the value);
``duplication`` (optional, >= 1) else cycles ``canary.duplication``. Every bad line is reported
(``file:line: ...``) before anything is planted. Values that repeat or contain another's (also
compacted: a recovery would count twice) and values already in the untouched corpus are errors.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Mapping

from ..errors import ConfigError
from .contexts import PLACEHOLDER
from .recall import MIN_COMPACT, compact

KEYS = ("value", "attribute", "context", "duplication")
MIN_VALUE_CHARS = 6
_FORBIDDEN_BUILTIN = set("'\"\\\n\r")


def spec_error(problems: list[str]) -> ConfigError:
    return ConfigError(f"canary.spec: {len(problems)} bad line(s):\n" + "\n".join(problems))


def read_spec(path, attributes: Mapping) -> list[dict]:
    """Validated entries ``{line, value, attribute, context, duplication}`` (context and duplication
    None when not given) of the JSONL file at ``path``; ``attributes``: the taxonomy's attributes.
    Raises one :class:`ConfigError` listing every bad line."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"canary.spec={path}: no such file; expected a JSONL file of canaries "
                          f"(one {{\"value\", \"attribute\"[, \"context\", \"duplication\"]}} object per line)")
    problems: list[str] = []
    entries: list[dict] = []
    first_line: dict[str, int] = {}
    for n, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        entry, msg = _parse_line(raw)
        if msg is None:
            msg = _entry_problem(entry, attributes) or _repeat_problem(entry["value"], first_line)
        if msg is not None:
            problems.append(f"{p}:{n}: {msg}")
            continue
        first_line[entry["value"]] = n
        entries.append({"line": n, **entry})
    if problems:
        raise spec_error(problems)
    if not entries:
        raise ConfigError(f"canary.spec={path}: no canary in the file; expected at least one JSON object line")
    return entries


def _parse_line(raw: str) -> tuple[dict | None, str | None]:
    """One line as ``{value, attribute, context, duplication}`` (missing keys None), or why it is not
    a JSON object with known keys."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"not valid JSON ({e.msg}); expected one JSON object per line"
    if not isinstance(obj, dict):
        return None, f"a JSON {type(obj).__name__}; expected an object with keys value, attribute"
    bad = [k for k in obj if k not in KEYS]
    if bad:
        return None, f"unknown key(s) {', '.join(map(repr, bad))}; expected keys {', '.join(KEYS)}"
    return {"value": obj.get("value"), "attribute": obj.get("attribute"), "context": obj.get("context"),
            "duplication": obj.get("duplication")}, None


def _entry_problem(entry: Mapping, attributes: Mapping) -> str | None:
    """What is wrong with one entry on its own (value, attribute, duplication, context), or None."""
    value, attr = entry["value"], entry["attribute"]
    context, dup = entry["context"], entry["duplication"]
    if not isinstance(value, str) or len(value.strip()) < MIN_VALUE_CHARS:
        return f"value {_show(value)}; expected a string of >= {MIN_VALUE_CHARS} characters"
    if value != value.strip() or "\n" in value or "\r" in value:
        return "value has leading/trailing whitespace or a newline; expected a one-line value"
    if attr not in attributes:
        return f"attribute {attr!r}; expected one of the taxonomy's attributes ({', '.join(attributes)})"
    if dup is not None and (isinstance(dup, bool) or not isinstance(dup, int) or dup < 1):
        return f"duplication {dup!r}; expected an integer >= 1 (copies planted)"
    if context is None:
        if _FORBIDDEN_BUILTIN & set(value):
            return (f"value contains a quote or backslash, which the built-in contexts "
                    f"(string literals) cannot hold; expected a \"context\" snippet with {PLACEHOLDER}")
        return None
    return _check_context(context, value)


def _repeat_problem(value: str, first_line: Mapping[str, int]) -> str | None:
    """Whether ``value`` repeats or overlaps the value of an earlier line (``first_line``: value ->
    line), which would make one recovery count twice."""
    if value in first_line:
        return (f"value repeats line {first_line[value]}; expected every canary once "
                f"(use \"duplication\" to plant copies)")
    clash = next((m for v, m in first_line.items() if _overlap(v, value)), None)
    if clash is not None:
        return (f"value contains, or is contained in, the value of line {clash}; expected "
                f"values that do not overlap (a recovery of one would count for both)")
    return None


def _overlap(a: str, b: str) -> bool:
    """Would a recovery of one count for the other (testleak.canary.recall.match_canary: containment,
    also after removing spaces, dashes, dots and parentheses)?"""
    if a in b or b in a:
        return True
    ca, cb = compact(a), compact(b)
    return min(len(ca), len(cb)) >= MIN_COMPACT and (ca in cb or cb in ca)


def _check_context(context, value: str) -> str | None:
    if not isinstance(context, str):
        return f"context {_show(context)}; expected a string of Python code with {PLACEHOLDER} once"
    if context.count(PLACEHOLDER) != 1:
        return (f"context has {context.count(PLACEHOLDER)} {PLACEHOLDER} placeholders; expected exactly one "
                f"(where the value goes)")
    if any(not ln.strip() for ln in context.strip("\n").split("\n")):
        return "context has a blank line; expected a snippet without blank lines (planting inserts at blank lines)"
    code = context.replace(PLACEHOLDER, value)
    try:
        ast.parse(code)
    except SyntaxError as e:
        return f"context with the value in place is not valid Python ({e.msg}, snippet line {e.lineno}); expected code"
    if code.count(value) != 1:
        return (f"the value occurs {code.count(value)} times in its context; expected once (the context's "
                f"other text must not hold the value)")
    return None


def _show(v) -> str:
    """A bad value for an error message: its type and length, never the content (it may be a secret)."""
    if isinstance(v, str):
        return f"of {len(v.strip())} character(s)"
    return "missing" if v is None else f"of type {type(v).__name__}"
