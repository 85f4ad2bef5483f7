"""Python literals via the standard library ``ast`` (ExtractPII, paper section 4.2 / B.2).

Each literal is bound to the key the attribute lexicon reads: an assignment target, a keyword
argument or parameter default, a dict key, the parameter of a callee defined in the same answer
(else a one-argument callee that names an attribute, or the key the call is bound to), the other
side of a comparison or equality assertion (:data:`.literals.ASSERT_CALLS`), a parametrize argname,
a fixture's name, an SQL insert's column; containers pass their key to their elements. Beside a
transform's output (``hash_password(p) == "v"``) a literal is derived data
(:data:`.literals.TRANSFORMED_KEY`). ``date(1990, 5, 17)`` becomes ``1990-05-17``, integers of 4+
digits keep their source text, a sum of string constants is one literal, f-strings are skipped.
Docstrings are no values, but their doctest sessions are read as code (:func:`doctest_literals`).
Test cases: ``test*`` functions (first decorator to last line) and each parametrize row.
"""

from __future__ import annotations

import ast
import sys

from ..taxonomy import normalize_identifier
from .keys import callee_arg_key, compared_name_key, result_key
from .literals import ASSERT_CALLS, DISCRIMINATORS, FIELD_WORD, TRANSFORMED_KEY, Literal, Parsed
from .multivalue import sql_parameter_columns

_DATE_CALLS = {"date", "datetime"}


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        sl = node.slice
        if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
            return sl.value
        return _name_of(node.value)
    if isinstance(node, ast.Starred):
        return _name_of(node.value)
    return None


def _callee(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, drop_self: bool) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if drop_self and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def collect_signatures(tree: ast.AST, into: dict[str, list[str]]) -> None:
    """Function name / class name -> positional parameter names (first definition wins)."""
    stack = list(getattr(tree, "body", []))
    while stack:  # statements only: definitions never hide inside expressions
        node = stack.pop()
        for f in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, f, None)
            if isinstance(sub, list):
                stack.extend(sub)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            into.setdefault(node.name, _params(node, drop_self=True))
        elif isinstance(node, ast.ClassDef):
            init = next((b for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and b.name == "__init__"), None)
            if init is not None:
                into.setdefault(node.name, _params(init, drop_self=True))
            else:
                fields = [b.target.id for b in node.body if isinstance(b, ast.AnnAssign)
                          and isinstance(b.target, ast.Name)]
                if fields:
                    into.setdefault(node.name, fields)


def _is_parametrize(dec: ast.AST) -> bool:
    return isinstance(dec, ast.Call) and _callee(dec) == "parametrize"


def _is_fixture(dec: ast.AST) -> bool:
    d = dec.func if isinstance(dec, ast.Call) else dec
    return _name_of(d) == "fixture"


class _Offsets:
    """Convert ast (line, utf-8 byte column) positions to character offsets."""

    def __init__(self, code: str, indent: int = 0):
        self.lines = code.splitlines(keepends=True)
        self.starts = []
        pos = 0
        for ln in self.lines:
            self.starts.append(pos)
            pos += len(ln)
        self.total = pos
        self.indent = indent
        self._ascii = [ln.isascii() for ln in self.lines]

    def at(self, lineno: int, col: int) -> int:
        i = lineno - 1
        if i < 0:
            return 0
        if i >= len(self.lines):
            return self.total
        ln = self.lines[i]
        if self.indent and ln.strip():
            ln_body = ln[self.indent:]
        else:
            ln_body = ln
        shift = len(ln) - len(ln_body)
        if self._ascii[i]:
            c = col
        else:
            c = len(ln_body.encode("utf-8")[:col].decode("utf-8", "ignore"))
        return self.starts[i] + shift + c


class _Visitor:
    def __init__(self, code: str, off: _Offsets, sigs: dict[str, list[str]], attr_for):
        self.code = code
        self.off = off
        self.sigs = sigs
        self.attr_for = attr_for
        self.out: list[Literal] = []
        self.tests: list[tuple[int, int]] = []
        self.strings: dict[str, str] = {}  # name -> the string constant last assigned to it

    # -- helpers ---------------------------------------------------------------
    def span(self, node: ast.AST) -> tuple[int, int]:
        s = self.off.at(node.lineno, node.col_offset)
        e = self.off.at(node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)
        return s, e

    def emit(self, value: str, key: str | None, node: ast.AST) -> None:
        s, e = self.span(node)
        i = self.code.find(value, s, e) if value else -1
        if i >= 0:
            s, e = i, i + len(value)
        self.out.append(Literal(value, key, s, e))

    # -- traversal -------------------------------------------------------------
    def body(self, stmts, ret_key=None):
        for st in stmts:
            self.stmt(st, ret_key)

    def stmt(self, st: ast.stmt, ret_key=None):
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            return  # docstring / bare string
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.function(st)
        if isinstance(st, ast.ClassDef):
            for d in st.decorator_list:
                self.expr(d, None)
            for b in st.bases:
                self.expr(b, None)
            return self.body(st.body)
        if isinstance(st, ast.Assign):
            if len(st.targets) == 1 and isinstance(st.targets[0], (ast.Tuple, ast.List)) and \
                    isinstance(st.value, (ast.Tuple, ast.List)) and len(st.targets[0].elts) == len(st.value.elts):
                for t, v in zip(st.targets[0].elts, st.value.elts):
                    self.expr(v, _name_of(t))
                return
            for t in st.targets:
                if isinstance(t, ast.Subscript):
                    self.expr(t.value, None)
            text = _folded(st.value)
            if text is not None and isinstance(st.targets[-1], ast.Name):
                self.strings[st.targets[-1].id] = text
            return self.expr(st.value, _name_of(st.targets[-1]))
        if isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.expr(st.value, _name_of(st.target))
            return
        if isinstance(st, ast.AugAssign):
            return self.expr(st.value, _name_of(st.target))
        if isinstance(st, ast.Return):
            if st.value is not None:
                self.expr(st.value, ret_key)
            return
        for child in ast.iter_child_nodes(st):
            if isinstance(child, ast.stmt):
                self.stmt(child, ret_key)
            elif isinstance(child, ast.expr):
                self.expr(child, None)
            else:
                for g in ast.iter_child_nodes(child):  # excepthandler, withitem, match_case, ...
                    if isinstance(g, ast.stmt):
                        self.stmt(g, ret_key)
                    elif isinstance(g, ast.expr):
                        self.expr(g, None)

    def function(self, fn):
        is_test = fn.name.startswith("test")
        first = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
        s = self.off.at(first, 0)
        e = self.off.at(fn.end_lineno or fn.lineno, fn.end_col_offset or 0)
        if is_test:
            self.tests.append((s, e))
        fixture = False
        for d in fn.decorator_list:
            if _is_parametrize(d):
                self.parametrize(d)
            else:
                fixture = fixture or _is_fixture(d)
                self.expr(d, None)
        a = fn.args
        pos = a.posonlyargs + a.args
        for arg, dflt in zip(pos[len(pos) - len(a.defaults):], a.defaults):
            self.expr(dflt, arg.arg)
        for arg, dflt in zip(a.kwonlyargs, a.kw_defaults):
            if dflt is not None:
                self.expr(dflt, arg.arg)
        # a helper's or a fixture's returned literal is what its name says (get_api_key)
        self.body(fn.body, result_key(fn.name) if fixture or not is_test else None)

    def parametrize(self, dec: ast.Call):
        args = list(dec.args)
        kw = {k.arg: k.value for k in dec.keywords}
        names_node = args[0] if args else kw.get("argnames")
        rows_node = args[1] if len(args) > 1 else kw.get("argvalues")
        names: list[str] = []
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, (ast.List, ast.Tuple)):
            names = [n.value for n in names_node.elts if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for k in dec.keywords:
            if k.arg not in ("argnames", "argvalues"):
                self.expr(k.value, None)
        if not isinstance(rows_node, (ast.List, ast.Tuple)):
            if rows_node is not None:
                self.expr(rows_node, names[0] if len(names) == 1 else None)
            return
        for row in rows_node.elts:
            self.tests.append(self.span(row))
            elts = None
            if isinstance(row, ast.Call) and _callee(row) == "param":
                elts = row.args
                for k in row.keywords:
                    self.expr(k.value, None)
            elif isinstance(row, (ast.Tuple, ast.List)) and len(names) > 1:
                elts = row.elts
            if elts is None:
                self.expr(row, names[0] if len(names) == 1 else None)
                continue
            for i, v in enumerate(elts):
                self.expr(v, names[i] if i < len(names) else None)

    def expr(self, node: ast.AST, key: str | None):
        t = type(node)
        if t is ast.Name or t is ast.JoinedStr:  # no literal; f-strings are skipped
            return
        if t is ast.Attribute:
            return self.expr(node.value, None)
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, str):
                self.emit(v, key, node)
            elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 1000:
                s, e = self.span(node)
                seg = self.code[s:e]
                if seg.isdigit():
                    self.out.append(Literal(seg, key, s, e))
            return
        if isinstance(node, ast.Dict):
            return self.mapping(node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for e in node.elts:
                self.expr(e, key)
            return
        if isinstance(node, ast.Call):
            return self.call(node, key)
        if isinstance(node, ast.Compare):
            operands = [node.left] + list(node.comparators)
            names = [compared_name_key(_name_of(o)) or (result_key(_callee(o)) if isinstance(o, ast.Call) else None)
                     for o in operands]
            for i, o in enumerate(operands):
                other = next((names[j] for j in (i - 1, i + 1) if 0 <= j < len(names) and names[j]), None)
                self.expr(o, other if _name_of(o) is None else None)
            return
        if isinstance(node, ast.NamedExpr):
            return self.expr(node.value, _name_of(node.target))
        if t is ast.BinOp and isinstance(node.op, ast.Add):
            text = _folded(node)
            if text is not None:  # "INSERT ... " + "VALUES (...)": one literal
                s, e = self.span(node)
                self.out.append(Literal(text, key, s, e))
                return
        if isinstance(node, (ast.BinOp, ast.IfExp, ast.BoolOp, ast.Starred, ast.UnaryOp)):
            for c in ast.iter_child_nodes(node):  # a number in arithmetic ("A" * 1024) is an operand
                if isinstance(c, ast.expr):
                    operand = t is ast.BinOp and isinstance(c, ast.Constant) and not isinstance(c.value, str)
                    self.expr(c, None if operand else key)
            return
        if isinstance(node, (ast.Lambda,)):
            return self.expr(node.body, None)
        for c in ast.iter_child_nodes(node):
            if isinstance(c, ast.expr):
                self.expr(c, None)
            elif isinstance(c, ast.comprehension):
                self.expr(c.iter, key)

    def mapping(self, node: ast.Dict):
        """A dict literal: each value under its string key or name, or under the attribute a sibling
        discriminator names (``{"field": "password", "input": "v"}``)."""
        names = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else
                 (_name_of(k) if k is not None else None) for k in node.keys]
        disc = self.discriminator(names, node.values) if len(names) > 1 else None
        for k, v, name in zip(node.keys, node.values, names):
            if name is None:
                if k is not None:  # a computed key (k is None: a ``**spread``)
                    self.expr(k, None)
            elif normalize_identifier(name) in DISCRIMINATORS:
                if disc and v is not None and isinstance(v, ast.Constant) and v.value == disc:
                    name = None  # {"name": "email", ...} names a field: not a value of `name`
            elif disc and not self.attr_for(name):
                name = disc
            self.expr(v, name)

    def sql_parameters(self, sql_node: ast.AST, params: ast.AST) -> bool:
        """``execute("INSERT INTO t (a, b) VALUES (?, ?)", ("x", "y"))`` (also ``executemany``
        with rows, and the statement held in a variable): each parameter takes its column."""
        sql = _folded(sql_node)
        if sql is None and isinstance(sql_node, ast.Name):
            sql = self.strings.get(sql_node.id)
        cols = sql_parameter_columns(sql) if sql else None
        if not cols or not isinstance(params, (ast.Tuple, ast.List)):
            return False
        rows = params.elts if params.elts and all(isinstance(r, (ast.Tuple, ast.List)) for r in params.elts) \
            else [params]
        for row in rows:
            for i, v in enumerate(row.elts):
                self.expr(v, cols[i] if i < len(cols) else None)
        return True

    def discriminator(self, names: list, values: list) -> str | None:
        """The attribute name a sibling ``field``/``type``/... key holds (``DISCRIMINATORS``)."""
        for n, v in zip(names, values):
            if n and isinstance(v, ast.Constant) and isinstance(v.value, str) and FIELD_WORD.match(v.value) and \
                    normalize_identifier(n) in DISCRIMINATORS and self.attr_for(v.value):
                return v.value
        return None

    def call(self, node: ast.Call, key: str | None):
        name = _callee(node)
        args = node.args
        if name in _DATE_CALLS and 3 <= len(args) and all(
                isinstance(a, ast.Constant) and type(a.value) is int for a in args[:3]):
            y, m, d = (a.value for a in args[:3])
            if 1 <= m <= 12 and 1 <= d <= 31 and 1000 <= y <= 9999:
                s, e = self.span(node)
                self.out.append(Literal(f"{y:04d}-{m:02d}-{d:02d}", key, s, e))
                return
        if isinstance(node.func, ast.Attribute):
            self.expr(node.func.value, None)
        elif not isinstance(node.func, ast.Name):
            self.expr(node.func, None)
        if name in ASSERT_CALLS and len(args) >= 2:
            names = [_name_of(a) for a in args]
            results = [result_key(_callee(a)) if isinstance(a, ast.Call) else None for a in args]
            for i, a in enumerate(args):
                others = [n for j, n in enumerate(names) if j != i and n and n not in ("self", "t")]
                other = None if names[i] else next((n for n in others if self.attr_for(n)), None)
                if other is None and not names[i] and not results[i]:  # assertEqual(make_token(u), "v")
                    other = next((r for j, r in enumerate(results) if j != i and r and
                                  (r == TRANSFORMED_KEY or self.attr_for(r))), None)
                self.expr(a, other)
            for kw in node.keywords:
                self.expr(kw.value, kw.arg)
            return
        if len(args) >= 2 and self.sql_parameters(args[0], args[1]):
            self.expr(args[0], None)
            for a in args[2:]:
                self.expr(a, None)
            for kw in node.keywords:
                self.expr(kw.value, kw.arg)
            return
        params = self.sigs.get(name or "")
        single = len(args) + len(node.keywords) == 1
        for i, a in enumerate(args):
            k = None
            if params is not None and i < len(params) and not isinstance(a, ast.Starred):
                k = params[i]
            elif single:
                k = callee_arg_key(name, self.attr_for, key)
            elif i > 0:
                prev = args[i - 1]
                if isinstance(prev, ast.Constant) and isinstance(prev.value, str) and \
                        prev.value.isidentifier() and not prev.value[-1].isdigit() and self.attr_for(prev.value):
                    k = prev.value
            self.expr(a, k)
        for kw in node.keywords:
            self.expr(kw.value, kw.arg)


def _folded(node: ast.AST) -> str | None:
    """The text of a string constant or of a sum of string constants, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _folded(node.left), _folded(node.right)
        return a + b if a is not None and b is not None else None
    return None


def _common_indent(code: str) -> int:
    widths = [len(ln) - len(ln.lstrip(" \t")) for ln in code.splitlines() if ln.strip()]
    return min(widths) if widths else 0


def parse_tree(code: str) -> tuple[ast.AST, int] | None:
    """``(tree, indent)`` for Python source (dedenting a uniformly indented block), or None."""
    try:
        return ast.parse(code), 0
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    w = _common_indent(code)
    if w:
        ded = "".join(ln[w:] if ln.strip() else ln.lstrip(" \t") for ln in code.splitlines(keepends=True))
        try:
            return ast.parse(ded), w
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    return None


def parse_python(code: str, tree_indent: tuple[ast.AST, int], sigs: dict[str, list[str]], attr_for) -> Parsed:
    tree, indent = tree_indent
    off = _Offsets(code, indent)
    v = _Visitor(code, off, sigs, attr_for)
    old = sys.getrecursionlimit()
    try:
        v.body(tree.body)  # type: ignore[attr-defined]
    except RecursionError:
        pass  # keep what was collected before the (pathologically deep) node
    finally:
        sys.setrecursionlimit(old)
    return Parsed(v.out, v.tests, "ast")
