"""Literals that hold many values: a JSON document, an SQL ``INSERT ... VALUES``, a CSV/TSV
block or multi-line text in one string constant (common in test fixtures).

:func:`split_values` turns such a literal into one :class:`Literal` per value, each bound
to its own key: the JSON object key (array elements take the key of the array), the SQL
column (``INSERT INTO t (cols) VALUES (...), (...)``; the parameters bound to placeholders
of such an insert: :func:`sql_parameter_columns`), the CSV/TSV header cell (when the
first row is a header of names), a ``key: value`` / ``key = value`` line's key; a value
without a key of its own keeps the key the whole literal is bound to; the parameters of a URL's
query string take their names; a person's record in one line, its first cell a full name,
splits into its cells (:func:`_record_values`). A PEM block stays one value. Spans point at
the value inside the literal when the literal is verbatim in the source, else at the whole
literal.
"""

from __future__ import annotations

import csv
import io
import json
import re

from ..formats import PEM
from .detect import DATE_ONLY, STREET
from .literals import Literal
from .names import is_full_name

_SQL_INSERT = re.compile(r"\binsert\s+(?:ignore\s+)?into\s+[\w.\"`\[\]]+\s*(?:\((?P<cols>[^()]*)\))?\s*values\s*",
                         re.I)
_SQL_TOKEN = re.compile(r"\s*(?:'(?P<s>(?:[^']|'')*)'|(?P<n>[-+]?\d[\w.+-]*)|(?P<null>null|true|false|default)"
                        r"|(?P<call>\w+\s*\([^()]*\)))\s*(?P<sep>[,)])", re.I)
_LINE_KV = re.compile(r"^\s*(?P<k>[^\W\d][\w .-]{0,40}?)\s*(?::|=)\s*(?P<v>\S.*?)\s*$")
_HEADER_CELL = re.compile(r"^[^\W\d][\w .-]{0,40}$")
_DELIMS = ",\t;|"
_MAX_VALUES = 2000


def part_span(lit: Literal, raw: str, cursor: int, value: str) -> tuple[int, int, int]:
    """Span of ``value`` found in ``raw`` from ``cursor`` (the whole literal if absent)."""
    verbatim = lit.end - lit.start == len(raw)
    i = raw.find(value, cursor) if verbatim and value else -1
    if i < 0:
        return lit.start, lit.end, cursor
    return lit.start + i, lit.start + i + len(value), i + len(value)


def _json_values(lit: Literal, doc) -> list[Literal]:
    out: list[Literal] = []
    cursor = 0

    def walk(node, key):
        nonlocal cursor
        if len(out) >= _MAX_VALUES:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, (str, int)) and not isinstance(node, bool):
            val = str(node)
            s, e, cursor = part_span(lit, lit.value, cursor, val)
            out.append(Literal(val, key or lit.key, s, e))

    walk(doc, None)
    return out


def _sql_values(lit: Literal, m: re.Match) -> list[Literal]:
    raw = lit.value
    cols = [c.strip().strip('"`[]') for c in (m.group("cols") or "").split(",") if c.strip()]
    out: list[Literal] = []
    pos = m.end()
    while pos < len(raw) and len(out) < _MAX_VALUES:
        op = raw.find("(", pos)
        if op < 0:
            break
        pos, i = op + 1, 0
        while True:
            t = _SQL_TOKEN.match(raw, pos)
            if not t:
                pos = raw.find(")", pos) + 1 or len(raw)
                break
            val = t.group("s").replace("''", "'") if t.group("s") is not None else t.group("n")
            if val is not None:
                s, e = (lit.start + t.start("s"), lit.start + t.end("s")) if t.group("s") is not None and \
                    lit.end - lit.start == len(raw) and "''" not in t.group("s") else (lit.start, lit.end)
                if t.group("n") is not None and lit.end - lit.start == len(raw):
                    s, e = lit.start + t.start("n"), lit.start + t.end("n")
                out.append(Literal(val, cols[i] if i < len(cols) else lit.key, s, e))
            i += 1
            pos = t.end()
            if t.group("sep") == ")":
                break
    return out


def _statement_end(code: str, pos: int) -> int:
    """Where the SQL statement whose values start at ``pos`` ends: its ``;`` outside quotes,
    a blank line, or the end of ``code`` (an answer cut off inside it)."""
    quote = False
    while pos < len(code):
        ch = code[pos]
        if ch == "'":
            quote = not quote
        elif not quote and (ch == ";" or code.startswith("\n\n", pos)):
            return pos
        pos += 1
    return pos


def sql_statements(code: str, lits: list[Literal]) -> list[Literal]:
    """An ``INSERT INTO t (cols) VALUES (...)`` written as code (an SQL file, a ```sql block,
    a bare statement, a comment) rather than inside a string becomes one literal, which
    :func:`split_values` binds column by column; the quoted values the lexer found inside it
    are dropped (they would come back without their column)."""
    if "values" not in code.lower():
        return lits
    spans = [(l.start, l.end) for l in lits]
    out, inside = [], []
    for m in _SQL_INSERT.finditer(code):
        if any(s <= m.start() < e for s, e in spans) or any(s <= m.start() < e for s, e in inside):
            continue  # in a string literal (split_values reads it there) or a statement already taken
        end = _statement_end(code, m.end())
        inside.append((m.start(), end))
        out.append(Literal(code[m.start():end], None, m.start(), end))
    if not out:
        return lits
    kept = [l for l in lits if not any(s <= l.start and l.end <= e for s, e in inside)]
    return sorted(kept + out, key=lambda l: (l.start, l.end))


_PLACEHOLDER = re.compile(r"\s*(?:\?|%s|%\((?P<pn>\w+)\)s|:(?P<cn>\w+)|\$\d+|@(?P<an>\w+))\s*(?P<sep>[,)])")


def sql_parameter_columns(sql: str) -> list[str] | None:
    """The column each bound parameter of an ``INSERT INTO t (cols) VALUES (?, %s, :x, $1,
    @x)`` fills, in order of the placeholders of its first row (a literal in the row takes
    its column's place), or None when ``sql`` is no such insert."""
    m = _SQL_INSERT.search(sql) if "values" in sql[:4000].lower() else None
    if not m or not m.group("cols"):
        return None
    cols = [c.strip().strip('"`[]') for c in m.group("cols").split(",") if c.strip()]
    op = sql.find("(", m.end())
    if op < 0:
        return None
    pos, i, out = op + 1, 0, []
    while pos < len(sql):
        p = _PLACEHOLDER.match(sql, pos)
        t = None if p else _SQL_TOKEN.match(sql, pos)
        if not p and not t:
            break
        if p:
            out.append(cols[i] if i < len(cols) else None)
        i += 1
        pos = (p or t).end()
        if (p or t).group("sep") == ")":
            break
    return out if any(out) else None


def _table_values(lit: Literal, lines: list[str]) -> list[Literal] | None:
    """Rows of a CSV/TSV block (every line with the same number >= 1 of one delimiter)."""
    for d in _DELIMS:
        counts = {ln.count(d) for ln in lines}
        if len(counts) == 1 and counts != {0}:
            break
    else:
        return None
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=d, skipinitialspace=True))
    header = rows[0]
    keys = [h.strip() for h in header] if all(_HEADER_CELL.match(h.strip() or "0") for h in header) else None
    out: list[Literal] = []
    cursor = 0
    for row in rows[1:] if keys else rows:
        for j, cell in enumerate(row):
            val = cell.strip()
            if not val:
                continue
            s, e, cursor = part_span(lit, lit.value, cursor, val)
            out.append(Literal(val, keys[j] if keys and j < len(keys) else lit.key, s, e))
    return out


def _line_values(lit: Literal, lines: list[str]) -> list[Literal]:
    out: list[Literal] = []
    cursor = 0
    for ln in lines:
        m = _LINE_KV.match(ln)
        key, val = (m.group("k").strip(), m.group("v")) if m else (lit.key, ln.strip())
        s, e, cursor = part_span(lit, lit.value, cursor, val)
        out.append(Literal(val, key, s, e))
    return out


# a string that holds code: a call or assignment whose arguments are quoted literals
# ("client.login(username='ann', password='x')", "user = User(email=\"a@b.io\")")
_CODE_HEAD = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\s*(?:\(|=(?!=))|[A-Za-z_][\w.]*\s*=\s*[A-Za-z_][\w.]*\s*\()")
_KW_ARG = re.compile(r"""(?<![\w.])(?P<k>[A-Za-z_]\w*)\s*[=:]\s*(?P<q>['"])(?P<v>(?:(?!(?P=q))[^\\\n])*)(?P=q)""")


def _code_values(lit: Literal) -> list[Literal] | None:
    """The keyword arguments and assignments of a string that holds code, each bound to its
    own name (the string as a whole is no value)."""
    raw = lit.value
    if not _CODE_HEAD.match(raw):
        return None
    verbatim = lit.end - lit.start == len(raw)
    out = [Literal(m.group("v"), m.group("k"), *((lit.start + m.start("v"), lit.start + m.end("v"))
                                                  if verbatim else (lit.start, lit.end)))
           for m in _KW_ARG.finditer(raw)]
    return out or None


# a URL or path with a query string: "/device-unlock?account=ann_l", "https://x.io/a?user=u&token=t"
_QUERY = re.compile(r"^[^\s?#]*\?(?P<q>[^\s#]+)(?:#\S*)?$")
_PARAM = re.compile(r"(?:^|(?<=&))(?P<k>[A-Za-z_][\w.\-\[\]]*)=(?P<v>[^&]*)")


def _query_values(lit: Literal) -> list[Literal] | None:
    """The parameter values of a URL's query string, each bound to its parameter's name (the
    URL as a whole is no value)."""
    m = _QUERY.match(lit.value)
    if m is None:
        return None
    verbatim = lit.end - lit.start == len(lit.value)
    base = m.start("q")
    out = [Literal(p.group("v"), p.group("k"), *((lit.start + base + p.start("v"), lit.start + base + p.end("v"))
                                                  if verbatim else (lit.start, lit.end)))
           for p in _PARAM.finditer(m.group("q")) if p.group("v")]
    return out or None


def _record_values(lit: Literal, s: str) -> list[Literal] | None:
    """A person's record packed into one line, its first cell a full name (``"Jonas Berg, 58
    Alder Way, Brookfield, USA"``, ``"Ines Moreau, 1979-03-14, EMP-55120"``): the name, then
    the rest as one address when it starts as a street does, else each cell, a date cell under
    ``date_of_birth`` (a date in a person's record); the other parts take no key, so that
    only their own shape names them."""
    cells = [c.strip() for c in s.split(",")]
    if len(cells) < 2 or not all(cells) or not is_full_name(cells[0]):
        return None
    rest = s[s.index(",") + 1:].strip()
    parts = [(cells[0], None)] + ([(rest, None)] if STREET.match(rest) else
                                   [(c, "date_of_birth" if DATE_ONLY.match(c) else None) for c in cells[1:]])
    out, cursor = [], 0
    for val, key in parts:
        st, e, cursor = part_span(lit, lit.value, cursor, val)
        out.append(Literal(val, key, st, e, lit.cut))
    return out


def split_values(lit: Literal) -> list[Literal] | None:
    """The values a literal holds when it holds many (module docstring), else None."""
    raw = lit.value
    s = raw.strip()
    if len(s) < 5:
        return None
    code = _code_values(lit) or _query_values(lit)
    if code:
        return code
    if s[0] in "{[" and s[-1] in "}]":
        try:
            doc = json.loads(s)
        except ValueError:
            doc = None
        if isinstance(doc, (dict, list)):
            return _json_values(lit, doc)
    if "values" in s[:4000].lower():
        m = _SQL_INSERT.search(raw)
        if m:
            return _sql_values(lit, m)
    if "\n" not in s and "," in s and len(s) <= 200:
        return _record_values(lit, s)
    if "\n" not in s or ("PRIVATE KEY" in s and PEM.search(s)):
        return None
    lines = [ln for ln in s.splitlines() if ln.strip()][:_MAX_VALUES]
    if len(lines) < 2:
        return None
    return _table_values(lit, lines) or _line_values(lit, lines)
