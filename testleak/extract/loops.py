"""Keys for the values a loop binds: ``for pw, key in cases.items(): make_key(pw)``.

A literal collection that a loop iterates (inline, or the one last assigned to the name it
iterates) binds each row's elements to the loop's variables: ``for u, p in [("kim", "x1")]``,
``for (const pw of ["a", "b"])``, ``foreach (var (u, p) in rows)``, ``for (String pw : List.of(..))``,
``rows.forEach(([u, p]) => ..)``; a mapping's ``.items()`` / ``Object.entries`` / ``entrySet()``
binds its keys and values, the mapping itself its keys; a row bound to one variable whose parts
the body reads (``var user = c.Key``, ``c.Item2``, ``e.getValue()``, ``r[0]``) binds each part to
the name it is read into. A variable gives the attribute its own
name names (``for password in cases``), else the one a function of the code under test gives
where the loop's body passes it (:func:`.usekeys.call_key`). A value whose own key names an
attribute keeps it; the rest of the pipeline reads a bound value like any keyed one.
"""

from __future__ import annotations

import re

from .literals import Literal

_OPEN = {"(": ")", "{": "}", "[": "]"}
_NAME = r"[A-Za-z_$][\w$]*"
_NAMES = rf"{_NAME}(?:\s*,\s*{_NAME})*"
_PY_FOR = re.compile(rf"(?m)^(?P<indent>[ \t]*)(?:async\s+)?for\s+(?P<t>\(\s*{_NAMES}\s*\)|{_NAMES})\s+in\s+")
_C_FOR = re.compile(r"\b(?:for|foreach)\s*\(\s*(?P<decl>[^;()=]*?(?:\([^()]*\))?)\s*(?:\bof\b|\bin\b|(?<!:):(?!:))")
_FOR_EACH = re.compile(rf"\.forEach\s*\(\s*(?:\((?P<a>[^()]*)\)\s*=>|(?P<b>{_NAME})\s*=>|function\s*{_NAME}?\s*\((?P<c>[^()]*)\))")
_DECL_TARGET = re.compile(rf"(?:(?P<group>[\[({{][^\[\](){{}}]*[\])}}])|(?P<name>{_NAME}))\s*$")
_MODES = (
    (re.compile(r"^(?P<base>.+?)\s*\.\s*(?:items|entrySet)\s*\(\s*\)$", re.S), "pairs"),
    (re.compile(r"^Object\s*\.\s*entries\s*\((?P<base>.+)\)$", re.S), "pairs"),
    (re.compile(r"^(?P<base>.+?)\s*\.\s*(?:keys|keySet)\s*\(\s*\)$", re.S), "keys"),
    (re.compile(r"^Object\s*\.\s*keys\s*\((?P<base>.+)\)$", re.S), "keys"),
    (re.compile(r"^(?P<base>.+?)\s*\.\s*values\s*\(\s*\)$", re.S), "values"),
    (re.compile(r"^Object\s*\.\s*values\s*\((?P<base>.+)\)$", re.S), "values"),
)
# what may stand before a collection's bracket: a constructor or factory (``new[]``,
# ``new List<string>``, ``List.of``, ``Arrays.asList``, ``dict``, ``tuple``, ``Tuple.Create``, ...)
_MAKER = re.compile(r"^(?:new\b[\w$<>\[\], .?]*|[\w$.]*(?:of|asList|list|tuple|set|frozenset|dict|array|Array|listOf|"
                    r"arrayOf|mutableListOf|setOf|mapOf|Tuple\s*\.\s*Create|entry)\s*)?$")
_REACH = 4000  # how far before a loop its collection's assignment is looked for
_QUOTED = re.compile(r"""^[A-Za-z@$]{0,2}(?P<q>["'`])(?P=q)*[^"'`]*(?P=q)+$""")


def _match(masked: str, open_: int) -> int:
    """Index of the bracket closing the one at ``open_`` (or len(masked))."""
    depth = 0
    for i in range(open_, len(masked)):
        ch = masked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(masked)


def _parts(masked: str, start: int, end: int, sep: str = ",") -> list[tuple[int, int]]:
    """Stripped spans of ``masked[start:end]`` split at ``sep`` outside brackets."""
    out, depth, s = [], 0, start
    for i in range(start, end + 1):
        ch = masked[i] if i < end else sep
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            a, b = s, i
            while a < b and masked[a].isspace():
                a += 1
            while b > a and masked[b - 1].isspace():
                b -= 1
            if a < b:
                out.append((a, b))
            s = i + 1
    return out


def _collection(masked: str, start: int, end: int) -> tuple[int, int] | None:
    """The bracket group (open, close) that ``masked[start:end]`` builds, or None."""
    text = masked[start:end]
    for i, ch in enumerate(text):
        if ch in _OPEN:
            if not _MAKER.match(text[:i].strip()):
                return None
            open_ = start + i
            close = _match(masked, open_)
            # C#'s ``new[] { .. }`` and Java's ``new String[] { .. }``: the braces after the brackets
            rest = masked[close + 1:end].strip()
            if ch == "[" and rest.startswith("{"):
                open_ = masked.index("{", close + 1)
                close = _match(masked, open_)
                rest = masked[close + 1:end].strip()
            return (open_, close) if close < end and not rest.strip(";") else None
    return None


def _assigned(masked: str, name: str, before: int) -> tuple[int, int] | None:
    """The collection last assigned to ``name`` within :data:`_REACH` characters before ``before``."""
    base = name.split(".")[-1]
    pat = re.compile(rf"(?<![\w$]){re.escape(base)}\s*(?::[^=\n;]*)?=(?![=>])")
    found = None
    for m in pat.finditer(masked, max(0, before - _REACH), before):
        stop = re.compile(r";|\n(?=\s*\S)").search(masked, m.end())
        end = before if stop is None else min(stop.start(), before)
        open_ = next((i for i in range(m.end(), end) if masked[i] in _OPEN), None)
        if open_ is not None:
            end = max(end, _match(masked, open_) + 1)
        found = _collection(masked, m.end(), min(end, before)) or found
    return found


def _targets(raw: str) -> tuple[list[str], bool]:
    """Loop variable names, and whether each row is unpacked into them."""
    raw = raw.strip()
    if raw[:1] in "[({":
        return re.findall(_NAME, raw), True
    names = re.findall(_NAME, raw)
    return names, len(names) > 1


def _loops(masked: str):
    """``(targets, unpacked, iterable start, iterable end, body start, body end)`` per loop."""
    yield from _python_loops(masked)
    yield from _c_loops(masked)
    yield from _for_each_loops(masked)


def _python_loops(masked: str):
    for m in _PY_FOR.finditer(masked):
        names, unpacked = _targets(m.group("t"))
        colon, depth = None, 0
        for i in range(m.end(), len(masked)):
            ch = masked[i]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ":" and depth == 0:
                colon = i
                break
            elif ch == "\n" and depth == 0:
                break
        if colon is None:
            continue
        indent = len(m.group("indent").expandtabs())
        body_end = len(masked)
        for ln in re.finditer(r"\n([ \t]*)(?=\S)", masked[colon:]):
            if len(ln.group(1).expandtabs()) <= indent and colon + ln.start() > masked.find("\n", colon):
                body_end = colon + ln.start()
                break
        yield names, unpacked, m.end(), colon, colon + 1, body_end


def _c_loops(masked: str):
    for m in _C_FOR.finditer(masked):
        t = _DECL_TARGET.search(m.group("decl"))
        if t is None:
            continue
        names, unpacked = _targets(t.group(0))
        open_ = masked.index("(", m.start())
        close = _match(masked, open_)
        after = close + 1
        nxt = re.compile(r"\s*").match(masked, after).end()
        body_end = _match(masked, nxt) + 1 if masked[nxt:nxt + 1] == "{" else masked.find(";", nxt) + 1 or len(masked)
        yield names, unpacked, m.end(), close, after, body_end


def _for_each_loops(masked: str):
    for m in _FOR_EACH.finditer(masked):
        raw = next(g for g in (m.group("a"), m.group("b"), m.group("c")) if g is not None).strip()
        if raw[:1] in "[({":
            names, unpacked = re.findall(_NAME, raw[:_match(raw, 0) + 1]), True
        else:
            names, unpacked = re.findall(_NAME, raw)[:1], False  # (item, index) => ..: the item
        end = m.start()
        while end > 0 and masked[end - 1].isspace():
            end -= 1
        if end and masked[end - 1] in ")]}":
            depth, start = 0, end - 1
            for start in range(end - 1, -1, -1):
                ch = masked[start]
                depth += ch in ")]}"
                depth -= ch in "([{"
                if depth == 0:
                    break
            w = re.search(r"[\w$.]*$", masked[:start])
            start = w.start() if w else start
        else:
            w = re.search(r"[\w$.]+$", masked[:end])
            if w is None:
                continue
            start = w.start()
        call = masked.index("(", m.start())
        yield names, unpacked, start, end, m.end(), _match(masked, call) + 1


def _resolve(masked: str, start: int, end: int) -> tuple[str, tuple[int, int]] | None:
    """``(mode, collection)`` of the iterable at ``masked[start:end]``."""
    text = masked[start:end].strip()
    offset = start + masked[start:end].index(text[:1]) if text else start
    mode = "rows"
    for pat, m_ in _MODES:
        m = pat.match(text)
        if m:
            mode, offset, text = m_, offset + m.start("base"), m.group("base").strip()
            break
    if re.fullmatch(rf"(?:(?:self|this)\s*\.\s*)?{_NAME}", text):
        coll = _assigned(masked, text, start)
    else:
        coll = _collection(masked, offset, offset + len(text))
    return (mode, coll) if coll else None


def _elements(masked: str, coll: tuple[int, int], mode: str, names: list[str], unpacked: bool):
    """``(span, variable)`` for every element of a row the loop binds to a variable."""
    open_, close = coll
    for row in _parts(masked, open_ + 1, close):
        entry = _parts(masked, row[0], row[1], ":")
        if len(entry) == 2 and masked[open_] == "{":   # a mapping's ``key: value``
            if mode == "pairs" or (mode == "rows" and unpacked and len(names) == 2):
                if len(names) == 2:
                    yield entry[0], names[0]
                    yield entry[1], names[1]
            elif mode in ("rows", "keys") and not unpacked:
                yield entry[0], names[0]
            elif mode == "values" and not unpacked:
                yield entry[1], names[0]
            continue
        text = masked[row[0]:row[1]]
        inner = _collection(masked, row[0], row[1]) if text[-1:] in ")]}" else None
        if inner is None:
            if not unpacked and mode in ("rows", "values"):
                yield row, names[0]
            continue
        if unpacked or mode == "pairs":   # C#'s ``{ { "k", "v" } }``: a pair per row
            for j, part in enumerate(_parts(masked, inner[0] + 1, inner[1])):
                if j < len(names):
                    yield part, names[j]


_CONVERSION = re.compile(r"^(?:new\s+)?[A-Za-z_$][\w$.]*\s*\(\s*(?P<arg>[^,()]+?)\s*\)$")


def _literal_at(code: str, masked: str, span: tuple[int, int], lits: list[Literal]) -> tuple[int, Literal] | None:
    """The literal that is the whole element at ``span`` (index in ``lits``, or -1 for a new one),
    or the sole argument of a conversion the element is (``DateTime.Parse("...")``)."""
    text = masked[span[0]:span[1]]
    conv = _CONVERSION.match(text)
    if conv:
        span, text = (span[0] + conv.start("arg"), span[0] + conv.end("arg")), conv.group("arg")
    if not (_QUOTED.match(text) or text.isdigit()):
        return None
    for i, lit in enumerate(lits):
        if span[0] <= lit.start < span[1]:
            return i, lit
    if not _QUOTED.match(text):
        return None
    q = _QUOTED.match(text).group("q")
    a = span[0] + text.index(q)
    while a < span[1] and code[a] == q:
        a += 1
    b = span[1]
    while b > a and code[b - 1] == q:
        b -= 1
    raw = code[a:b]
    return (-1, Literal(raw, None, a, b)) if raw and "\\" not in raw else None


_ACCESS = r"\s*(?:\.\s*(?P<a>Key|Value|key|value|Item[1-7]|getKey\s*\(\s*\)|getValue\s*\(\s*\))(?![\w$])|\[\s*(?P<i>\d)\s*\])"
_POSITION = {"key": 0, "value": 1, "getkey": 0, "getvalue": 1}


def _accessed(masked: str, var: str, body: int, body_end: int) -> list[str] | None:
    """The names of a row's positions by how the body reads one variable (``var username =
    testCase.Key;``, ``row.Item2``, ``entry.getValue()``, ``row[0]``): the name the part is
    assigned to, else the access itself (a later use as an argument names it); None when the body
    reads no part."""
    names: dict[int, str] = {}
    for m in re.finditer(rf"(?<![\w$.]){re.escape(var)}{_ACCESS}", masked[body:body_end]):
        a = m.group("a")
        pos = int(m.group("i")) if a is None else int(a[4:]) - 1 if a.startswith("Item") else \
            _POSITION[re.sub(r"\W", "", a).lower()]
        bound = re.search(rf"({_NAME})\s*=\s*$", masked[body:body + m.start()])
        names.setdefault(pos, bound.group(1) if bound else masked[body + m.start():body + m.end()].replace(" ", ""))
    return [names.get(i, "") for i in range(max(names) + 1)] if names else None


def loop_keys(code: str, masked: str, lits: list[Literal], attr_for, key_of_use) -> list[Literal]:
    """``lits`` with the keys loops give (module docstring); ``key_of_use(name, after, end)``:
    the key a tested function gives where ``name`` is passed between ``after`` and ``end``."""
    out, added = list(lits), []
    for names, unpacked, it_start, it_end, body, body_end in _loops(masked):
        if not names:
            continue
        resolved = _resolve(masked, it_start, it_end)
        if resolved is None:
            continue
        mode, coll = resolved
        parts = _accessed(masked, names[0], body, body_end) if len(names) == 1 and not unpacked else None
        if parts:  # foreach (var c in cases) { var user = c.Key; ... }: each part under its own name
            names, unpacked = parts, True
        keys: dict[str, str | None] = {}
        for span, var in _elements(masked, coll, mode, names, unpacked):
            if var not in keys:
                keys[var] = None if not var else var if attr_for(var) else key_of_use(var, body, body_end)
            if not keys[var]:
                continue
            hit = _literal_at(code, masked, span, out)
            if hit is None:
                continue
            i, lit = hit
            if lit.key and (attr_for(lit.key) or lit.key.startswith("<")):
                continue
            new = Literal(lit.value, keys[var], lit.start, lit.end, lit.cut)
            if i < 0:
                if all(a.start != new.start for a in added):
                    added.append(new)
            else:
                out[i] = new
    return sorted(out + added, key=lambda lit: lit.start) if added else out
