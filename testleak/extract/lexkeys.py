"""Keys :func:`.lexer.lex` reads from the masked code around a literal: assignments and calls
before it, positional arguments by the signatures in the code (:func:`collect_c_signatures`),
Go table rows, assertions and collections."""

from __future__ import annotations

import re

from .keys import callee_arg_key, compared_name_key, result_key
from .literals import ASSERT_CALLS, MESSAGE_THIRD_CALLS, TRANSFORMED_KEY

_IDENT = r"(?:[^\W\d]|\$)[\w$]*"  # any script: JavaScript and Java allow Unicode names
# `name =`, `name :=`, `name:`, `Type name =`, `name: Type =`, `$name =`, `name =>`, `name +=` (a
# part appended to the value: ``password += "!@#"``) at the end
_KEY_BEFORE = re.compile(
    r"(?P<k>" + _IDENT + r")\s*(?:\?\s*)?(?::\s*[\w.<>\[\]|?]+\s*(?==))?(?P<op>:=|=>|\+=|(?<![=!<>+\-*/%&|^])=(?!=)|:)\s*$"
)
_CALL_BEFORE = re.compile(r"(?:\bnew\s+)?(?P<c>" + _IDENT + r")\s*(?:<[^<>()]*>)?\s*\(\s*$")
_WORD = re.compile(r"^[A-Za-z_][\w.-]*$")

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


_C_SIGNATURE = re.compile(
    r"(?:\bfunc\s+(?:\([^()]*\)\s*)?|\bfunction\s+|\bdef\s+|\bfun\s+|[\w>\]]\s+)?"
    r"(?P<name>(?:[^\W\d]|\$)[\w$]*)\s*\((?P<params>[^()]*)\)\s*(?:throws\s+[\w., ]+)?\s*(?::\s*[\w<>\[\]|. ]+)?"
    r"\s*(?:[\w.*\[\]]+|\([^()]*\))?\s*\{",  # Go result types
    re.M)
_CLASS_OPEN = re.compile(r"\bclass\s+(?P<c>[A-Za-z_]\w*)[^{;]*\{")
_PARAM_NAME = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
_NOT_CALLABLE = {"if", "for", "while", "switch", "catch", "return", "function", "synchronized", "using", "foreach"}


def _param_names(params: str, go: bool) -> list[str]:
    names = []
    for p in params.split(","):
        p = re.sub(r"=.*$|@\w+(?:\([^)]*\))?", "", p).strip()  # defaults, annotations
        words = _PARAM_NAME.findall(p)
        if not words:
            continue
        names.append(words[0] if go or ":" in p else words[-1])  # Go/TS/Kotlin: name first
    return names


def collect_c_signatures(code: str, into: dict[str, list[str]]) -> None:
    """Function / method / constructor name -> parameter names, for C-like languages
    (Java, C#, JavaScript/TypeScript, Go, Kotlin, PHP); a JavaScript ``constructor`` is
    recorded under its class's name. First definition wins."""
    go = bool(re.search(r"^\s*func\s", code, re.M))
    classes = [(m.start(), m.group("c")) for m in _CLASS_OPEN.finditer(code)]
    for m in _C_SIGNATURE.finditer(code):
        name = m.group("name")
        if name in _NOT_CALLABLE:
            continue
        if name == "constructor" or name == "__construct":
            owner = [c for pos, c in classes if pos < m.start()]
            if not owner:
                continue
            name = owner[-1]
        names = _param_names(m.group("params").replace("$", ""), go)
        if names:
            into.setdefault(name, names)


def _position(args: str) -> int:
    """Index of the argument that follows ``args`` (the masked text after an open bracket):
    the number of commas outside nested brackets."""
    depth, index = 0, 0
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            index += 1
    return index


def _positional_key(window: str, sigs: dict[str, list[str]]) -> str | None:
    """The parameter a positional argument fills: ``new Customer("a", "b")`` with
    ``Customer(String email, String phone)`` defined in the answer or the code under test."""
    for start in _open_brackets(window, 1):
        if window[start] != "(":
            return None
        c = _CALL_BEFORE.search(window[:start + 1])
        if not c or c.group("c") not in sigs:
            return None
        index = _position(window[start + 1:])
        params = sigs[c.group("c")]
        return params[index] if index < len(params) else None
    return None


# a data row of a parameterised test: [TestCase("ann", "pw")], [InlineData(...)], [DataRow(...)]
_ROW_ATTRIBUTE = re.compile(r"\[\s*(?:TestCase|InlineData|DataRow)\s*\(")
_METHOD_AFTER = re.compile(r"(?P<name>(?:[^\W\d]|\$)[\w$]*)\s*\((?P<params>[^()]*)\)\s*(?:\{|=>)")


def row_parameter_key(masked: str, s: int) -> str | None:
    """The parameter a value of a test's data row fills: ``[TestCase("ann", "pw")] public void
    Login(string username, string password)`` binds ``"pw"`` to ``password``."""
    lo = max(0, s - 600)
    rows = list(_ROW_ATTRIBUTE.finditer(masked, lo, s))
    if not rows:
        return None
    open_ = rows[-1].end() - 1
    close = _match_close(masked, open_, "(")
    if close <= s:
        return None
    m = _METHOD_AFTER.search(masked, close, close + 1500)
    if m is None or m.group("name") in _NOT_CALLABLE:
        return None
    params = _param_names(m.group("params"), False)
    index = _position(masked[open_ + 1:s])
    return params[index] if index < len(params) else None


def _opening(text: str) -> int:
    """Index of the bracket that the ``)`` ending ``text`` closes (or -1)."""
    return next(iter(_open_brackets(text[:-1], 1)), -1)


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
            index = _position(masked[start:s])
            if index >= len(fields) or (index == 0 and fields[0] == "name"):
                return None  # by Go convention the first field `name` names the test case
            return fields[index]
    return None


def _names_attribute(value: str, attr_for) -> bool:
    """A string value that is a field name of an attribute (``"email"`` in ``put("email", v)``),
    not a numbered value such as ``"user123"`` (numbered *keys* map: ``username2``)."""
    return bool(_WORD.match(value)) and not value[-1].isdigit() and attr_for(value) is not None


_IS_KEY = re.compile(r"\s*:(?!:)")  # a string token followed by `:` is a key itself (JSON, dicts)
_BRACE = re.compile(r"[{}]")
_SUBJECT = re.compile(  # expect(x).toBe(, assertThat(x).isEqualTo(, when(m.getName()).thenReturn(
    r"\b(?:expect|assertThat|assert_that|when|verify)\s*\((?P<subj>[^()]*(?:\([^()]*\)[^()]*)?)\)"
    r"(?:\s*\.\s*[\w$]+)+\s*\(\s*$")
_ARG_NAME = re.compile(r"^\s*(?:[\w$]+\s*\.\s*)*(?P<n>(?:[^\W\d]|\$)[\w$]*)\s*(?:\(\s*\))?"
                       r"(?:\[\s*[\"'](?P<k>[^\"']+)[\"']\s*\])?\s*$")
_NOT_NAMES = {"t", "this", "self", "true", "false", "null", "nil", "None", "True", "False", "undefined"}


def _arg_name(text: str) -> str | None:
    """The name an argument expression ends in (``user.email``, ``getPhone()``, ``r["email"]``)."""
    m = _ARG_NAME.match(text)
    if not m:
        return None
    n = m.group("k") or m.group("n")
    return None if n in _NOT_NAMES else n


def _call_result(arg: str) -> str | None:
    """:func:`.keys.result_key` of an argument that is one call (``generatePassword("u")``)."""
    text = arg.strip()
    if not text.endswith(")"):
        return None
    o = _opening(text)
    m = _NAME_START.fullmatch(text[:o + 1]) if o > 0 else None
    return _operand_key(m.group("n"), True) if m and m.group("call") else None


def _assert_key(code: str, masked: str, s: int, attr_for) -> str | None:
    """The name a literal is compared with: another argument of an equality assertion
    (``assertEquals(List.of("v"), transactions)``, :data:`.literals.ASSERT_CALLS`), or the
    subject of a matcher chain (``expect(user.email).toBe("v")``, ``when(m.getName()).thenReturn("v")``);
    only a name that maps to an attribute."""
    lo = max(0, s - 160)
    window = masked[lo:s]
    for start in _open_brackets(window, 3):
        if window[start] != "(":
            continue
        c = _CALL_BEFORE.search(window[:start + 1])
        if c and c.group("c") in ASSERT_CALLS:
            end = _match_close(masked, lo + start, "(") - 1
            args, depth, a0 = [], 0, lo + start + 1
            for i in range(lo + start + 1, end):
                ch = masked[i]
                if ch in "([{":
                    depth += 1
                elif ch in ")]}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    args.append((a0, i))
                    a0 = i + 1
            args.append((a0, end))
            for a, b in args:
                if not a <= s < b:
                    n = _arg_name(code[a:b]) or _call_result(masked[a:b])
                    if n and (n == TRANSFORMED_KEY or attr_for(n)):
                        return n
            return None
        m = _SUBJECT.search(window[:start + 1]) if ")" in window[:start] else None
        if m:
            n = _arg_name(code[lo + m.start("subj"):lo + m.end("subj")])
            return n if n and attr_for(n) else None
    return None


_CMP_BEFORE = re.compile(r"(?<![=!<>])(?:===?|!==?)\s*$")
_CMP_AFTER = re.compile(r"\s*(?:===?|!==?)(?!=)")
_EQUALS = r"(?:equals|Equals|equalsIgnoreCase|EqualsIgnoreCase|contentEquals|SequenceEqual)"
_EQUALS_AFTER = re.compile(r"\s*\.\s*" + _EQUALS + r"\s*\(")
_EQUALS_BEFORE = re.compile(r"\.\s*" + _EQUALS + r"\s*\(\s*$")
_NAME_END = re.compile(r"(?P<n>(?:[^\W\d]|\$)[\w$]*)\s*$")
_NAME_START = re.compile(r"\s*!?\s*(?:new\s+)?(?:[\w$]+\s*(?:\(\s*\))?\s*\.\s*)*(?P<n>(?:[^\W\d]|\$)[\w$]*)\s*(?P<call>\()?")
# calls whose arguments after the first are a message (``Debug.Assert(ok, "Test 3 failed")``)
_MESSAGE_CALL = re.compile(r"(?:\b(?:Debug|Trace)\s*\.\s*Assert|\bconsole\s*\.\s*assert"
                           r"|\bAssert\s*\.\s*(?:True|False|IsTrue|IsFalse)|\bassert\s*\.\s*ok|(?<![\w.$])assert)\s*\(\s*$")


def _operand_key(name: str | None, call: bool) -> str | None:
    if not name or name in _NOT_NAMES:
        return None
    return result_key(name) if call else compared_name_key(name)


def _operand_before(masked: str, pos: int) -> str | None:
    """The key of the operand that ends at ``pos``: a name (``user.email``) or a call's result."""
    text = masked[max(0, pos - 300):pos].rstrip()
    if text.endswith(")"):
        o = _opening(text)
        m = _NAME_END.search(text[:o]) if o > 0 else None
        return _operand_key(m.group("n"), True) if m else None
    m = _NAME_END.search(text)
    return _operand_key(m.group("n"), False) if m else None


def _operand_after(masked: str, pos: int) -> str | None:
    m = _NAME_START.match(masked, pos)
    return _operand_key(m.group("n"), bool(m.group("call"))) if m else None


def compare_key(masked: str, s: int, e: int, attr_for) -> str | None:
    """The key of a literal compared with a name or a call's result: ``x.email == "v"``,
    ``"v" === getToken()``, ``GenerateSecretKey() == "v"``, ``"v".Equals(authToken)``,
    ``token.equals("v")``; :data:`.literals.TRANSFORMED_KEY` beside a transform's result;
    only a key that names an attribute."""
    key = None
    if _CMP_AFTER.match(masked, e):
        key = _operand_after(masked, _CMP_AFTER.match(masked, e).end())
    elif _EQUALS_AFTER.match(masked, e):
        key = _operand_after(masked, _EQUALS_AFTER.match(masked, e).end())
    if key is None:
        window = masked[max(0, s - 200):s]
        m = _CMP_BEFORE.search(window) or _EQUALS_BEFORE.search(window)
        if m:
            key = _operand_before(masked, s - len(window) + m.start())
    return key if key and (key == TRANSFORMED_KEY or attr_for(key)) else None


def is_message(masked: str, s: int, value: str = "") -> bool:
    """A literal passed as the message of an assertion: an argument after the first of
    :data:`_MESSAGE_CALL`, or the third of a :data:`.literals.MESSAGE_THIRD_CALLS` assertion with
    three arguments (the first, in JUnit 4's order, when it is text with a space): the test's own
    text, never a value."""
    lo = max(0, s - 400)
    window = masked[lo:s]
    for start in _open_brackets(window, 1):
        if window[start] != "(":
            return False
        head, pos = window[:start + 1], _position(window[start + 1:])
        if _MESSAGE_CALL.search(head):
            return pos >= 1
        c = _CALL_BEFORE.search(head)
        if c and c.group("c") in MESSAGE_THIRD_CALLS:
            close = _match_close(masked, lo + start, "(")
            if _position(masked[lo + start + 1:close - 1]) != 2:
                return False  # (expected, actual): no message
            return pos == 2 or (pos == 0 and " " in value.strip())
        return False
    return False


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


_RETURN_BEFORE = re.compile(r"\breturn\s*$")
# the object a method is called on: ``dob = LocalDate.parse("1990-05-01")`` binds the sole
# argument of a qualified call (a parse, a constructor of a value) to ``dob`` as of a plain one
_RECEIVER = re.compile(r"(?:(?:[^\W\d]|\$)[\w$]*\s*\.\s*)+$")


def _returning_function(masked: str, s: int) -> str | None:
    """The key of a literal a C-like function returns (``String getUserId() { return "u1"; }``):
    the innermost function around ``s`` by :func:`.keys.result_key` of its name."""
    lo = max(0, s - 3000)
    for m in reversed(list(_C_SIGNATURE.finditer(masked, lo, s))):
        brace = m.end() - 1  # still open at s: the scan of brace..s finds no closing bracket
        if m.group("name") not in _NOT_CALLABLE and _match_close(masked[brace:s], 0, "{") == s - brace:
            return result_key(m.group("name"))
    return None


def _key_from_window(window: str, masked: str, s: int, e: int, attr_for) -> str | None:
    if _RETURN_BEFORE.search(window):
        return _returning_function(masked, s)
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
        m2 = _KEY_BEFORE.search(_RECEIVER.sub("", window[:c.start()]))
        return callee_arg_key(c.group("c"), attr_for, m2.group("k") if m2 else _collection_key(window, attr_for))
    return _collection_key(window, attr_for)
