"""Tolerant lexer for string and number literals in any C-like / script language.

The parser for JavaScript/TypeScript, Java, Kotlin, Go, PHP, C#, Ruby, Rust, JSON, YAML-ish and
unknown code, and the fallback for Python that does not parse (ExtractPII, paper 4.2 / B.2):
tree-sitter-language-pack downloads its grammars at first use, which these machines cannot do.
One regular expression finds comments, string literals (escapes decoded for the value; the span is
the whole token) and integers of 4+ digits; a masked copy with strings and comments blanked lets
simple patterns read the structure around a literal: a key string before it, an assignment or
field name, a callee that names an attribute, the other side of an equality or assertion, a
matcher chain's subject (:mod:`.lexkeys`). Assertion messages and ``typeof`` type names are no
values; beside a transform's output a literal is derived data (:data:`.literals.TRANSFORMED_KEY`).
:func:`comment_keys` then binds keyless literals to an attribute their line's comment names. Test
cases: ``it()``/``test()`` calls, ``@Test``-style methods, ``func TestX(``, ``def test_x(``,
``[TestCase]`` rows.
"""

from __future__ import annotations

import re

from ..taxonomy import normalize_identifier as _norm
from .lexkeys import (_BRACE, _IS_KEY, _WORD, _assert_key, _key_from_window, _match_close, _names_attribute,
                      _positional_key, _row_key, _table_rows, compare_key, is_message, row_parameter_key)
from .lexkeys import collect_c_signatures  # noqa: F401 (re-exported: one home, .lexkeys)
from .literals import DISCRIMINATORS, FIELD_WORD, Literal, Parsed

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


_BETWEEN_KEY = re.compile(r"^\s*(?::|=>|\]\s*:?=|\)\s*:?=)\s*$")
_BETWEEN_COMMA = re.compile(r"^\s*,\s*$")
_ENTRY_START = re.compile(r"[{,]\s*$")  # where a mapping entry starts: `{ "k": v`, `, "k": v`
_TYPEOF = re.compile(r"\btypeof\s+[\w.$\[\]]+\s*[!=]==?\s*$")
_TYPEOF_AFTER = re.compile(r"\s*[!=]==?\s*typeof\b")
_OPENS = re.compile(r"[(\[]\s*$")  # a field name then its value open the brackets: put("email", v), ("email", v)

_TEST_MARKERS = re.compile(
    r"(?P<call>(?<![\w.$])(?:it|test)(?:\.(?:each|only|skip|concurrent))?\s*\()"
    r"|(?P<ann>@(?:Test|ParameterizedTest|RepeatedTest)\b|\[(?:Test|Fact|Theory|TestMethod)\b[^\]]*\])"
    r"|(?P<row>\[(?:TestCase|InlineData|DataRow)\s*\()"
    r"|(?P<fn>\bfunc\s+(?:\([^)]*\)\s*)?Test\w*\s*\(|\bfunction\s+test\w*\s*\(|\bfun\s+`?test[^(]*\()"
    r"|(?P<py>^[ \t]*(?:async\s+)?def\s+test\w*\s*\()",
    re.M,
)


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


_Token = tuple[int, int, str, int, int]  # (start, end, value, vstart, vend)


def _scan(code: str, language: str | None) -> tuple[list[_Token], str]:
    """The literal tokens of ``code`` and its masked copy (string bodies and comments blanked,
    newlines kept). A formatted string (``f"{x}"``, a ``${x}`` template) is masked but is no
    token; an escaped value is decoded and spans its whole token."""
    toks: list[_Token] = []
    pieces: list[str] = []
    last = 0
    for m in _token_rx(language).finditer(code):
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
    return toks, "".join(pieces)


def masked_code(code: str, language: str | None) -> str:
    """``code`` with string bodies and comments blanked (the same length, newlines kept)."""
    return _scan(code, language)[1]


def _bind_keys(code: str, masked: str, toks: list[_Token], attr_for,
               sigs: dict[str, list[str]] | None) -> list[Literal]:
    """Each token as a :class:`Literal` bound to the key the masked code around it gives (see the
    module docstring): the string before it, a table row, the code before it, a positional
    parameter; else a sibling field discriminator or an equality assertion."""
    lits: list[Literal] = []
    rows = _table_rows(masked) if "struct" in masked else []
    prev_start = prev_end = 0
    prev_val: str | None = None
    prev_is_str = False
    disc: tuple[str, int] | None = None  # (attribute name, end) of the last `field: "password"`
    # Debug.Assert, console.assert, assert.ok, assertEquals, Assert.AreEqual: calls with a message
    asserts = "ssert" in masked or "AreEqual" in masked or "AreNot" in masked
    typeofs = "typeof" in masked
    row_attrs = "TestCase" in masked or "InlineData" in masked or "DataRow" in masked
    for (s, e, val, vs, ve) in toks:
        if asserts and is_message(masked, s, val):
            prev_start, prev_end, prev_val, prev_is_str = s, e, val, code[s] in "\"'`"
            continue
        if typeofs and (_TYPEOF.search(masked, max(0, s - 80), s) or _TYPEOF_AFTER.match(masked, e)):
            prev_start, prev_end, prev_val, prev_is_str = s, e, None, False
            continue  # `typeof token === "string"`: a type's name
        if _IS_KEY.match(masked, e) and _ENTRY_START.search(masked, max(0, s - 40), s):
            lits.append(Literal(val, None, vs, ve))  # `{"name": ...}`: a mapping's key names its value, holds none
            prev_start, prev_end, prev_val, prev_is_str = s, e, val, True
            continue
        key, by_comma = None, False
        between = masked[prev_end:s] if prev_is_str else None
        if between is not None and prev_val is not None and len(between) < 40 and \
                (_BETWEEN_KEY.match(between) or (_BETWEEN_COMMA.match(between) and _names_attribute(prev_val, attr_for)
                                                  and _OPENS.search(masked, max(0, prev_start - 40), prev_start) and not _IS_KEY.match(masked, e))):
            if _WORD.match(prev_val) or _BETWEEN_KEY.match(between):
                key, by_comma = prev_val, not _BETWEEN_KEY.match(between)
        if key is None and rows:
            key = _row_key(masked, s, rows)
        if key is None:
            window = masked[max(0, s - 160):s]
            key = _key_from_window(window, masked, s, e, attr_for)
        if (key is None or not attr_for(key)) and row_attrs:
            key = row_parameter_key(masked, s) or key
        if (key is None or by_comma or not attr_for(key)) and sigs:  # the signature outranks a value read as a field name
            pk = _positional_key(masked[max(0, s - 600):s], sigs)
            key = pk if key is None or (pk and attr_for(pk)) else key
        if key is not None and _norm(key) in DISCRIMINATORS:
            if FIELD_WORD.match(val) and attr_for(val):
                disc = (val, e)
                key = None  # `name: "email"` names a field: not a value of `name`
        elif key is None or not attr_for(key):
            if disc and s - disc[1] < 160 and not _BRACE.search(masked, disc[1], s) and not _IS_KEY.match(masked, e):
                key = disc[0]
            else:
                key = _assert_key(code, masked, s, attr_for) or compare_key(masked, s, e, attr_for) or key
        lits.append(Literal(val, key, vs, ve))
        prev_start, prev_end, prev_val = s, e, val
        prev_is_str = code[s] in "\"'`"
    return lits


def lex(code: str, language: str | None, attr_for, with_tests: bool = True,
        sigs: dict[str, list[str]] | None = None) -> Parsed:
    """Literals of ``code`` with their keys, and the test-case intervals. ``sigs``: callable
    name -> parameter names (:func:`collect_c_signatures`) for positional arguments."""
    toks, masked = _scan(code, language)
    lits = _bind_keys(code, masked, toks, attr_for, sigs)
    tests = test_intervals(code, masked) if with_tests else []
    return Parsed(lits, tests, "lexer")


_QUOTED = re.compile(r'"([^"\n]+)"|\'([^\'\n]+)\'|`([^`\n]+)`')
_COMMENT_WORD = re.compile(r"[^\W\d_]+")


def _comment_markers(language: str | None) -> tuple[str, ...]:
    if language is None:
        return ("#", "//")
    return ("#",) if language in C_COMMENT_LANGS_EXCLUDED else ("//", "#") if language == "php" else ("//",)


def _attribute_words(words: list[str], attr_for) -> str | None:
    """The first word (or two words: ``Credit card``) of ``words`` that names an attribute."""
    for i, w in enumerate(words):
        if i + 1 < len(words) and attr_for(w + "_" + words[i + 1]):
            return w + "_" + words[i + 1]
        if attr_for(w):
            return w
    return None


def _comment_key(comment: str, values: set[str], attr_for) -> str | None:
    """The attribute word of a comment that quotes one of ``values``: before the quote
    (``# Username is "v"``), else among the four words after it (``# 'ab' as the password``)."""
    for q in _QUOTED.finditer(comment):
        if (q.group(1) or q.group(2) or q.group(3)) in values:
            return (_attribute_words(_COMMENT_WORD.findall(comment[:q.start()]), attr_for)
                    or _attribute_words(_COMMENT_WORD.findall(comment[q.end():])[:4], attr_for))
    return None


def comment_keys(code: str, lits: list[Literal], language: str | None, attr_for) -> list[Literal]:
    """Keys from trailing comments: the literals of a line whose own key names no attribute
    take the attribute a comment at the end of that line names *and* quotes one of them
    with (``("alice87", "alice87"),  # Username is "alice87"``, ``# Credit card is "..."``).
    A comment that does not repeat a value of its line binds nothing (``"ok"  # login
    succeeded`` stays keyless)."""
    markers = _comment_markers(language)
    if not lits or not any(m in code for m in markers):
        return lits
    lines: dict[int, list[int]] = {}
    for i, lit in enumerate(lits):
        if not (lit.key and attr_for(lit.key)):
            ls = code.rfind("\n", 0, lit.start) + 1
            lines.setdefault(ls, [])
    if not lines:
        return lits
    for i, lit in enumerate(lits):
        ls = code.rfind("\n", 0, lit.start) + 1
        if ls in lines:
            lines[ls].append(i)
    out = list(lits)
    for ls, idx in lines.items():
        le = code.find("\n", ls)
        le = len(code) if le < 0 else le
        last = max(lits[i].end for i in idx)
        if last > le:  # a literal spanning lines
            continue
        cpos = min((p for p in (code.find(m, last, le) for m in markers) if p >= 0), default=-1)
        if cpos < 0:
            continue
        key = _comment_key(code[cpos:le], {lits[i].value for i in idx}, attr_for)
        if key:
            for i in idx:
                if not (lits[i].key and attr_for(lits[i].key)):
                    out[i] = Literal(lits[i].value, key, lits[i].start, lits[i].end)
    return out


def cut_literal(code: str, language: str | None, attr_for, sigs: dict[str, list[str]] | None = None) -> Literal | None:
    """The value of a string literal left open by the end of ``code`` (an answer cut at its
    token limit inside a literal), bound to its key as if it were closed; None when the code
    does not end inside a one-line literal."""
    body = code.rstrip()
    last = body[body.rfind("\n") + 1:]
    for q in ('"', "'", "`"):
        if last.count(q) % 2 == 0:
            continue
        shut = ")" * max(0, last[:last.rfind(q)].count("(") - last[:last.rfind(q)].count(")"))
        closed = lex(body + q + shut, language, attr_for, with_tests=False, sigs=sigs).literals
        if not closed:
            continue
        lit = closed[-1]
        if lit.end >= len(body) and "\n" not in code[lit.start:len(body)]:
            before = {(l.start, l.value) for l in lex(body, language, attr_for, with_tests=False, sigs=sigs).literals}
            if (lit.start, lit.value) not in before and lit.value.strip():
                return Literal(lit.value, lit.key, lit.start, min(lit.end, len(body)), cut=True)
    return None
