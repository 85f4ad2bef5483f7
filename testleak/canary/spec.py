"""User-supplied canaries: ``canary.spec=<path to JSONL>`` (beyond the paper; issue 15 item 1).

An auditing team plants its own secrets instead of Faker's. One JSON object per line::

    {"value": "AKIA2EXAMPLEKEY7QZ3X", "attribute": "secret_key"}
    {"value": "jane.roe1987@example.org", "attribute": "email", "duplication": 4,
     "context": "ADMIN = {\\"contact\\": \\"{{value}}\\", \\"active\\": True}\\n"}

Keys: ``value`` (string, >= 6 characters: shorter strings match too much code to count as a
recovery), ``attribute`` (a taxonomy attribute), optional ``context`` (a Python snippet with the
placeholder ``{{value}}`` exactly once, without blank lines; without it the value goes into one of the
built-in contexts of :mod:`testleak.canary.plant`, whose string literals forbid quotes,
backslashes and newlines in the value), optional ``duplication`` (an integer >= 1: copies
planted; without it the lines cycle through ``canary.duplication`` in file order). Blank lines are
skipped; any other line that is not a valid entry is an error.

Validation reads the whole file and reports every bad line, one per line of the message
(``file:line: what is wrong; expected ...``), before anything is planted. Values that repeat
or contain another line's value (also after removing spaces, dashes, dots and parentheses, as
the recall matcher compares) are errors (a recovery would count twice), and so are values
already present in the untouched corpus (checked by the planting step, which knows the corpus).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Mapping

from ..errors import ConfigError
from .recall import MIN_COMPACT, compact

PLACEHOLDER = "{{value}}"
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
        where = f"{p}:{n}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            problems.append(f"{where}: not valid JSON ({e.msg}); expected one JSON object per line")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: a JSON {type(obj).__name__}; expected an object with keys value, attribute")
            continue
        bad = [k for k in obj if k not in KEYS]
        if bad:
            problems.append(f"{where}: unknown key(s) {', '.join(map(repr, bad))}; expected keys {', '.join(KEYS)}")
            continue
        value, attr = obj.get("value"), obj.get("attribute")
        context, dup = obj.get("context"), obj.get("duplication")
        if not isinstance(value, str) or len(value.strip()) < MIN_VALUE_CHARS:
            problems.append(f"{where}: value {_show(value)}; expected a string of >= {MIN_VALUE_CHARS} characters")
            continue
        if value != value.strip() or "\n" in value or "\r" in value:
            problems.append(f"{where}: value has leading/trailing whitespace or a newline; expected a one-line value")
            continue
        if attr not in attributes:
            problems.append(f"{where}: attribute {attr!r}; expected one of the taxonomy's attributes "
                            f"({', '.join(attributes)})")
            continue
        if dup is not None and (isinstance(dup, bool) or not isinstance(dup, int) or dup < 1):
            problems.append(f"{where}: duplication {dup!r}; expected an integer >= 1 (copies planted)")
            continue
        if context is None:
            if _FORBIDDEN_BUILTIN & set(value):
                problems.append(f"{where}: value contains a quote or backslash, which the built-in contexts "
                                f"(string literals) cannot hold; expected a \"context\" snippet with {PLACEHOLDER}")
                continue
        else:
            msg = _check_context(context, value)
            if msg:
                problems.append(f"{where}: {msg}")
                continue
        if value in first_line:
            problems.append(f"{where}: value repeats line {first_line[value]}; expected every canary once "
                            f"(use \"duplication\" to plant copies)")
            continue
        clash = next((m for v, m in first_line.items() if _overlap(v, value)), None)
        if clash is not None:
            problems.append(f"{where}: value contains, or is contained in, the value of line {clash}; expected "
                            f"values that do not overlap (a recovery of one would count for both)")
            continue
        first_line[value] = n
        entries.append({"line": n, "value": value, "attribute": attr, "context": context, "duplication": dup})
    if problems:
        raise spec_error(problems)
    if not entries:
        raise ConfigError(f"canary.spec={path}: no canary in the file; expected at least one JSON object line")
    return entries


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
    return None


def _show(v) -> str:
    """A bad value for an error message: its type and length, never the content (it may be a secret)."""
    if isinstance(v, str):
        return f"of {len(v.strip())} character(s)"
    return "missing" if v is None else f"of type {type(v).__name__}"
