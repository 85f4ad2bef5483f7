"""Tolerant lexer for string and number literals in any C-like / script language.

Used for JavaScript/TypeScript, Java, Kotlin, Go, PHP, C#, Ruby, Rust, JSON, YAML-ish and
unknown code, and as the fallback when Python does not parse (ExtractPII, paper section
4.2 / B.2). tree-sitter-language-pack 1.25 downloads its grammars at first use, which this
project's machines cannot do, so the lexer is the parser for these languages.

Method: one regular expression finds comments (``//``, ``/* */``, and ``#`` for
languages that use it), string literals (``"..."``, ``'...'``, backtick templates,
triple quotes, with escapes; an unterminated quote is skipped) and integer literals of
4+ digits. A *masked* copy of the code blanks strings and comments so that the
structure around a literal can be read with simple patterns:
- previous string token then ``:`` / ``=>`` / ``] =`` / ``,``  -> that string is the key
  (JSON ``"email": "v"``, PHP ``'email' => 'v'``, ``m["email"] = "v"``,
  ``put("email", "v")``; after ``,`` only when the string names an attribute);
- ``name =``, ``name :=``, ``name:``, ``Type name =``, ``name: Type =``, ``$name =``
  -> ``name`` (assignments, object and struct fields, named arguments);
- sole argument ``callee("v")`` / ``new Callee("v")`` -> the callee when it names an
  attribute (``setEmail``, ``validatePhone``), else the key the call is bound to.
Escapes are decoded for the value; the span is then the whole token.

Test cases: ``it(...)`` / ``test(...)`` calls (also ``.each``/``.only``/``.skip``), methods
marked ``@Test``/``@ParameterizedTest``/``[Test]``/``[Fact]``/``[Theory]``/``[TestMethod]``,
``func TestX(``, ``function testX(``, ``def test_x(`` (Python fallback: to the next line
indented no deeper), ``[TestCase(...)]``/``[InlineData(...)]`` rows.
"""

from __future__ import annotations

import re

from .literals import Literal, Parsed

HASH_COMMENT_LANGS = {"python", "ruby", "shell", "yaml", "toml", "r", "perl", "php", None}
C_COMMENT_LANGS_EXCLUDED = {"python", "ruby", "shell", "yaml", "toml", "r", "perl", "sql"}

_STR = (r'(?P<s3>"""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\')'
        r'|(?P<s>"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')'
        r'|(?P<bt>`(?:\\.|[^`\\])*`)')
_NUM = r'|(?P<n>(?<![\w.$])\d{4,}(?![\w.]))'
_CCOM = r'(?P<c>//[^\n]*|/\*.*?(?:\*/|\Z))|'
_HCOM = r'(?P<h>(?:(?<=\s)|^)#[^\n]*)|'
_SQLCOM = r'(?P<q>(?:(?<=\s)|^)--[^\n]*)|'

_RX_CACHE: dict[tuple[bool, bool, bool], re.Pattern] = {}


def _token_rx(lang: str | None) -> re.Pattern:
    c = lang not in C_COMMENT_LANGS_EXCLUDED
    h = lang in HASH_COMMENT_LANGS
    q = lang == "sql"
    k = (c, h, q)
    rx = _RX_CACHE.get(k)
    if rx is None:
        rx = re.compile((_CCOM if c else "") + (_HCOM if h else "") + (_SQLCOM if q else "") + _STR + _NUM,
                        re.S | re.M)
        _RX_CACHE[k] = rx
    return rx


_ESC = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "v": "\v"}


def _unescape(s: str) -> str:
    def rep(m: re.Match) -> str:
        e = m.group(1)
        if e[0] == "u":
            h = e[2:-1] if e.startswith("u{") else e[1:]
            try:
                return chr(int(h, 16))
            except ValueError:
                return m.group(0)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e == "\n":
            return ""
        return _SIMPLE_ESC.get(e, e)
    return _ESC.sub(rep, s)


_IDENT = r"(?:[^\W\d]|\$)[\w$]*"  # any script: JavaScript and Java allow Unicode names
# `name =`, `name :=`, `name:`, `Type name =`, `name: Type =`, `$name =`, `name =>` at the end
_KEY_BEFORE = re.compile(
    r"(?P<k>" + _IDENT + r")\s*(?:\?\s*)?(?::\s*[\w.<>\[\]|?]+\s*(?==))?(?P<op>:=|=>|(?<![=!<>+\-*/%&|^])=(?!=)|:)\s*$"
)
_CALL_BEFORE = re.compile(r"(?:\bnew\s+)?(?P<c>" + _IDENT + r")\s*(?:<[^<>()]*>)?\s*\(\s*$")
_BETWEEN_KEY = re.compile(r"^\s*(?::|=>|\]\s*:?=|\)\s*:?=)\s*$")
_BETWEEN_COMMA = re.compile(r"^\s*,\s*$")
_WORD = re.compile(r"^[A-Za-z_][\w.-]*$")

_TEST_MARKERS = re.compile(
    r"(?P<call>(?<![\w.$])(?:it|test)(?:\.(?:each|only|skip|concurrent))?\s*\()"
    r"|(?P<ann>@(?:Test|ParameterizedTest|RepeatedTest)\b|\[(?:Test|Fact|Theory|TestMethod)\b[^\]]*\])"
    r"|(?P<row>\[(?:TestCase|InlineData|DataRow)\s*\()"
    r"|(?P<fn>\bfunc\s+(?:\([^)]*\)\s*)?Test\w*\s*\(|\bfunction\s+test\w*\s*\(|\bfun\s+`?test[^(]*\()"
    r"|(?P<py>^[ \t]*(?:async\s+)?def\s+test\w*\s*\()",
    re.M,
)
_BRACKETS = re.compile(r"[(){}\[\]]")


def _match_close(masked: str, pos: int, open_ch: str) -> int:
    """Index after the bracket closing the first ``open_ch`` at or after pos (or len)."""
    close_ch = {"(": ")", "{": "}", "[": "]"}[open_ch]
    i = masked.find(open_ch, pos)
    if i < 0:
        return len(masked)
    depth = 0
    for m in _BRACKETS.finditer(masked, i):
        ch = m.group(0)
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return m.end()
    return len(masked)


def _py_block_end(code: str, start: int) -> int:
    line_start = code.rfind("\n", 0, start) + 1
    first = code[line_start:code.find("\n", start) if code.find("\n", start) >= 0 else len(code)]
    ind = len(first) - len(first.lstrip(" \t"))
    pos = code.find("\n", start)
    while pos >= 0:
        nxt = code.find("\n", pos + 1)
        line = code[pos + 1: nxt if nxt >= 0 else len(code)]
        if line.strip() and len(line) - len(line.lstrip(" \t")) <= ind and not line.lstrip().startswith(("#", ")", "]", "}")):
            return pos + 1
        pos = nxt
    return len(code)


def test_intervals(code: str, masked: str) -> list[tuple[int, int]]:
    out = []
    for m in _TEST_MARKERS.finditer(masked):
        s = m.start()
        kind = m.lastgroup
        if kind == "call":
            e = _match_close(masked, m.end() - 1, "(")
        elif kind == "row":
            e = _match_close(masked, m.start(), "[")
        elif kind == "py":
            s = m.start() + (len(m.group(0)) - len(m.group(0).lstrip(" \t")))
            e = _py_block_end(code, s)
        else:
            e = _match_close(masked, m.end(), "{")
        out.append((s, e))
    return out


def lex(code: str, language: str | None, attr_for, with_tests: bool = True) -> Parsed:
    """Literals of ``code`` with their keys, and the test-case intervals."""
    rx = _token_rx(language)
    toks: list[tuple[int, int, str, int, int]] = []  # (start, end, value, vstart, vend)
    pieces: list[str] = []
    last = 0
    for m in rx.finditer(code):
        g = m.lastgroup
        s, e = m.span()
        if g in ("c", "h", "q"):
            pieces.append(code[last:s])
            pieces.append(" " * (e - s) if "\n" not in code[s:e] else re.sub(r"[^\n]", " ", code[s:e]))
            last = e
            continue
        if g == "n":
            toks.append((s, e, code[s:e], s, e))
            continue
        q = 3 if g == "s3" else 1
        raw = code[s + q:e - q]
        prefix = code[s - 1] if s > 0 else ""
        fmt = (g == "bt" and "${" in raw) or (prefix in "fF$" and "{" in raw and (s < 2 or not code[s - 2].isalnum()))
        pieces.append(code[last:s])
        pieces.append(code[s] + re.sub(r"[^\n]", " ", code[s + 1:e - 1]) + code[e - 1])
        last = e
        if fmt:
            continue
        if "\\" in raw and prefix not in "rR@" and g != "bt":
            val = _unescape(raw)
            toks.append((s, e, val, s, e))
        else:
            toks.append((s, e, raw, s + q, e - q))
    pieces.append(code[last:])
    masked = "".join(pieces)

    lits: list[Literal] = []
    rows = _table_rows(masked) if "struct" in masked else []
    prev_end = 0
    prev_val: str | None = None
    prev_is_str = False
    for (s, e, val, vs, ve) in toks:
        key = None
        between = masked[prev_end:s] if prev_is_str else None
        if between is not None and prev_val is not None and len(between) < 40 and \
                (_BETWEEN_KEY.match(between) or (_BETWEEN_COMMA.match(between) and _WORD.match(prev_val)
                                                  and attr_for(prev_val))):
            if _WORD.match(prev_val) or _BETWEEN_KEY.match(between):
                key = prev_val
        if key is None and rows:
            key = _row_key(masked, s, rows)
        if key is None:
            window = masked[max(0, s - 160):s]
            key = _key_from_window(window, masked, s, e, attr_for)
        lits.append(Literal(val, key, vs, ve))
        prev_end, prev_val = e, val
        prev_is_str = code[s] in "\"'`"
    tests = test_intervals(code, masked) if with_tests else []
    return Parsed(lits, tests, "lexer")


_ADDER = re.compile(r"(?P<r>" + _IDENT + r")\s*\.\s*(?:add|addAll|push|append|Add|AddRange|offer|insert|put|set)\s*$")
_COLLECTION_CALL = re.compile(
    r"(?:\b(?:List|Set|Stream|Arrays|ImmutableList|ImmutableSet|Collections|Lists|Sets)\s*\.\s*"
    r"(?:of|asList|newArrayList|newHashSet|singletonList|listOf)"
    r"|\b(?:listOf|setOf|arrayOf|mutableListOf|mutableSetOf|Array\.of|new\s+Set|new\s+Array))\s*(?:<[^<>()]*>)?\s*$")
_COLLECTION_TYPE = re.compile(r"(?:\bnew\s*(?:[\w.]+\s*(?:<[^<>{}]*>)?)?\s*(?:\[\s*\d*\s*\])*\s*(?:\(\s*\))?"
                              r"|\[\s*\d*\s*\]\s*[\w.]+|map\[[\w.]+\][\w.]+)\s*$")
_STATEMENT_START = re.compile(r"[;{}\n][^;{}\n]*$")


_GO_TABLE = re.compile(r"\[\]\s*struct\s*\{(?P<f>[^{}]*)\}\s*\{")
_GO_FIELDS = re.compile(r"(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s+[\w.*\[\]]+\s*(?:`[^`]*`)?\s*(?:;|\n|$)")


def _open_brackets(window: str, most: int = 2) -> list[int]:
    """Positions of the innermost unclosed brackets of ``window``, innermost first."""
    out: list[int] = []
    depth = 0
    for m in reversed(list(_BRACKETS.finditer(window))):
        if m.group(0) in ")]}":
            depth += 1
        elif depth:
            depth -= 1
        else:
            out.append(m.start())
            if len(out) == most:
                break
    return out


def _table_rows(masked: str) -> list[tuple[int, int, list[str]]]:
    """Go table-driven tests: ``(start, end, fields)`` of every positional row of a
    ``[]struct{ email, phone string }{ {"a", "b"}, ... }`` literal."""
    rows = []
    for t in _GO_TABLE.finditer(masked):
        fields = [n.strip() for f in _GO_FIELDS.finditer(t.group("f")) for n in f.group("names").split(",")]
        end = _match_close(masked, t.end() - 1, "{")
        depth = 0
        for m in _BRACKETS.finditer(masked, t.end(), end):
            ch = m.group(0)
            if ch in "([{":
                depth += 1
                if depth == 1 and ch == "{":
                    rows.append((m.end(), _match_close(masked, m.start(), "{") - 1, fields))
            else:
                depth -= 1
    return rows


def _row_key(masked: str, s: int, rows: list[tuple[int, int, list[str]]]) -> str | None:
    """The struct field a positional value at ``s`` fills in its table row, else None."""
    for start, end, fields in rows:
        if start <= s < end:
            depth, index = 0, 0
            for ch in masked[start:s]:
                if ch in "([{":
                    depth += 1
                elif ch in ")]}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    index += 1
            if index >= len(fields) or (index == 0 and fields[0] == "name"):
                return None  # by Go convention the first field `name` names the test case
            return fields[index]
    return None


def _collection_key(window: str, attr_for) -> str | None:
    """The name a collection literal is bound to, for an element of it: ``emails =
    List.of("a", "b")``, ``string[] passwords = { "a" }``, ``passwords.add("a")``,
    ``phones := []string{"a"}``, a Go table row's struct field; only when that name maps
    to an attribute."""
    for start in _open_brackets(window, 1):
        ch = window[start]
        before = window[:start]
        key = None
        if ch == "(":
            a = _ADDER.search(before)
            if a:
                key = a.group("r")
            else:
                c = _COLLECTION_CALL.search(before)
                if c:
                    k = _KEY_BEFORE.search(before[:c.start()])
                    key = k.group("k") if k else None
        else:
            t = _COLLECTION_TYPE.search(before)
            k = _KEY_BEFORE.search(before[:t.start()] if t else before)
            key = k.group("k") if k and k.group("op") != ":" or (k and ch == "[") else None
        return key if key and attr_for(key) else None
    return None


def _key_from_window(window: str, masked: str, s: int, e: int, attr_for) -> str | None:
    m = _KEY_BEFORE.search(window)
    if m:
        if m.group("op") == ":":
            st = _STATEMENT_START.search(window[:m.start()])
            stmt = st.group(0)[1:] if st else window[:m.start()]
            if re.match(r"\s*assert\b", stmt) or "?" in stmt:
                return None  # Java `assert cond : "message"`, a ternary `c ? a : "b"`
        return m.group("k")
    c = _CALL_BEFORE.search(window)
    if c:
        after = masked[e:e + 40].lstrip()
        if not after.startswith(")"):
            return _collection_key(window, attr_for)  # not the sole argument
        callee = c.group("c")
        if attr_for(callee):
            return callee
        m2 = _KEY_BEFORE.search(window[:c.start()])
        return m2.group("k") if m2 else _collection_key(window, attr_for)
    return _collection_key(window, attr_for)
