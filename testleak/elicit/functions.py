"""G(c): the functions of a code answer that handle privacy fields (paper Sec. 4.2).

A code block is split into top-level units (functions; a class is one unit, its attributes the
union over its methods and fields), and each unit's identifiers are mapped to taxonomy attributes
(``Taxonomy.attribute_for_name``). Python uses ``ast`` (names, attributes, keyword arguments,
identifier-like string constants; code cut by ``max_tokens`` is retried without its broken tail);
JS/TS, Java, Go, C# and PHP use tree-sitter; anything else is one regex-scanned unit. As in the
paper, imports, global constants and placeholder units (``pass``, ``...``, ``raise
NotImplementedError``, ...) are discarded. :func:`select_functions` keeps the units with at least
one attribute, most attributes first (ties: order of appearance), at most ``k``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..taxonomy import Taxonomy
from .code import CodeBlock

_IDENT_STR = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,60}$")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT_LINE = re.compile(r"^\s*(?:import\b|from\s+\S+\s+import\b|#include\b|using\s+[\w.]+\s*;|package\s+[\w.]+\s*;?\s*$|require(?:_once)?\b|use\s+[\w\\]+\s*;)")
_DEF_NAME = re.compile(r"\b(?:def|function|func|fn|sub|class|struct)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)")


@dataclass
class FunctionUnit:
    name: str
    kind: str  # function | class
    language: str
    source: str
    attributes: list[str]
    placeholder: bool = False
    block: int = 0
    order: int = 0
    identifiers: list[str] = field(default_factory=list, repr=False)

    def to_record(self) -> dict:
        return {"name": self.name, "kind": self.kind, "language": self.language, "source": self.source,
                "attributes": list(self.attributes)}


def _attributes(names, taxonomy: Taxonomy) -> list[str]:
    found: list[str] = []
    for n in names:
        a = taxonomy.attribute_for_name(n)
        if a and a not in found:
            found.append(a)
    order = list(taxonomy.attributes)
    return sorted(found, key=order.index)


# --------------------------------------------------------------------------- Python
def _is_placeholder_stmt(s: ast.stmt) -> bool:
    if isinstance(s, ast.Pass):
        return True
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and (
            s.value.value is Ellipsis or isinstance(s.value.value, str)):
        return True
    if isinstance(s, ast.Raise) and s.exc is not None:
        e = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
        return isinstance(e, ast.Name) and e.id == "NotImplementedError"
    return False


def _py_placeholder(node, source: str) -> bool:
    if isinstance(node, ast.ClassDef):
        members = [s for s in node.body if not _is_placeholder_stmt(s)]
        if not members:
            return True
        funcs = [s for s in members if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        others = [s for s in members if s not in funcs]
        return not others and all(_py_placeholder(f, source) for f in funcs)
    body = [s for s in node.body if not _is_placeholder_stmt(s)]
    if not body:
        return True
    if "TODO" in source and all(isinstance(s, ast.Return) and (s.value is None or (
            isinstance(s.value, ast.Constant) and s.value.value is None)) for s in body):
        return True
    return False


def _py_names(node) -> list[str]:
    names: list[str] = [node.name]
    for n in ast.walk(node):
        if isinstance(n, ast.arg):
            names.append(n.arg)
        elif isinstance(n, ast.Name):
            names.append(n.id)
        elif isinstance(n, ast.Attribute):
            names.append(n.attr)
        elif isinstance(n, ast.keyword) and n.arg:
            names.append(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and _IDENT_STR.match(n.value):
            names.append(n.value)
    return names


def _parse_tolerant(code: str) -> tuple[ast.Module, str] | None:
    lines = code.split("\n")
    for cut in range(0, min(len(lines), 80)):
        src = "\n".join(lines[: len(lines) - cut]) if cut else code
        try:
            return ast.parse(src), src
        except (SyntaxError, ValueError):
            continue
    return None


def _python_units(block: CodeBlock, taxonomy: Taxonomy) -> list[FunctionUnit] | None:
    parsed = _parse_tolerant(block.code)
    if parsed is None:
        return None
    tree, src = parsed
    lines = src.split("\n")
    units = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        text = "\n".join(lines[start - 1: node.end_lineno])
        names = _py_names(node)
        units.append(FunctionUnit(
            name=node.name, kind="class" if isinstance(node, ast.ClassDef) else "function",
            language="python", source=text, attributes=_attributes(names, taxonomy),
            placeholder=_py_placeholder(node, text), identifiers=names))
    return units


# --------------------------------------------------------------------------- tree-sitter
_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "java": ("tree_sitter_java", "language"),
    "go": ("tree_sitter_go", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "php_only": ("tree_sitter_php", "language_php_only"),
}

_FUNC_TYPES = {"function_declaration", "generator_function_declaration", "method_declaration",
               "constructor_declaration", "function_definition", "local_function_statement"}
_CLASS_TYPES = {"class_declaration", "abstract_class_declaration", "record_declaration",
                "struct_declaration", "enum_declaration"}
_FUNC_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_IDENT_TYPES = {"identifier", "property_identifier", "field_identifier", "shorthand_property_identifier",
                "shorthand_property_identifier_pattern", "private_property_identifier", "name"}
_STRING_TYPES = {"string_fragment", "string_content", "string_literal_content", "interpreted_string_literal_content",
                 "raw_string_literal_content", "string_value", "encapsed_string", "string"}
_TS_PLACEHOLDER = re.compile(
    r"^(?:throw\s+new\s+(?:UnsupportedOperationException|NotImplementedException|NotImplementedError|Error)\s*\([^)]*\)\s*;?|panic\(\s*\"(?:not implemented|TODO)[^\"]*\"\s*\)|return\s*(?:null|nil|undefined)?\s*;?|)$",
    re.I)
_COMMENT = re.compile(r"//[^\n]*|/\*[\s\S]*?\*/|#[^\n]*")


@lru_cache(maxsize=None)
def _parser(lang: str):
    """A tree-sitter parser for a language, or None when its grammar wheel is missing."""
    import importlib

    spec = _GRAMMARS.get(lang)
    if spec is None:
        return None
    try:
        import tree_sitter as ts

        mod = importlib.import_module(spec[0])
        return ts.Parser(ts.Language(getattr(mod, spec[1])()))
    except (ImportError, AttributeError, ValueError):
        return None


def _text(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _unit_of(node, src: bytes):
    """(kind, name) when node is a unit, else None."""
    t = node.type
    if not node.is_named:
        return None
    if t in _CLASS_TYPES or t in _FUNC_TYPES:
        n = node.child_by_field_name("name")
        name = _text(n, src) if n is not None else "<anonymous>"
        if t == "method_declaration":
            recv = node.child_by_field_name("receiver")
            if recv is not None:  # Go method: (u *User) Save -> User.Save
                types = [c for c in _walk(recv) if c.type == "type_identifier"]
                if types:
                    name = f"{_text(types[0], src)}.{name}"
        return ("class" if t in _CLASS_TYPES else "function"), name
    if t in ("lexical_declaration", "variable_declaration"):
        for d in node.named_children:
            if d.type == "variable_declarator":
                v = d.child_by_field_name("value")
                n = d.child_by_field_name("name")
                if v is not None and v.type in _FUNC_VALUES | {"class"} and n is not None:
                    return ("class" if v.type == "class" else "function"), _text(n, src)
    if t == "expression_statement" and node.named_child_count == 1:
        a = node.named_children[0]
        if a.type == "assignment_expression":
            r = a.child_by_field_name("right")
            left = a.child_by_field_name("left")
            if r is not None and r.type in _FUNC_VALUES and left is not None:
                return "function", _text(left, src)
    return None


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _ts_names(node, src: bytes) -> list[str]:
    out = []
    for n in _walk(node):
        if n.child_count == 0 or n.type in _STRING_TYPES:
            if n.type in _IDENT_TYPES:
                out.append(_text(n, src).lstrip("#$"))
            elif n.type in _STRING_TYPES:
                s = _text(n, src).strip("'\"`")
                if _IDENT_STR.match(s):
                    out.append(s)
        elif n.type == "variable_name":  # PHP $email
            out.append(_text(n, src).lstrip("$"))
    return out


def _ts_placeholder(node, src: bytes, kind: str) -> bool:
    if kind == "class":
        body = node.child_by_field_name("body")
        if body is None:
            return True
        members = [c for c in body.named_children if c.type not in ("comment", "line_comment", "block_comment")]
        if not members:
            return True
        funcs = [m for m in members if _unit_of(m, src) is not None or m.type == "method_definition"]
        if len(funcs) == len(members):
            return all(_ts_placeholder(f, src, "function") for f in funcs)
        return False
    body = node.child_by_field_name("body")
    if body is None and node.type in ("lexical_declaration", "variable_declaration", "expression_statement"):
        for d in _walk(node):
            if d.type in _FUNC_VALUES:
                body = d.child_by_field_name("body")
                break
    if body is None:
        return True  # abstract or interface method: no body to test
    inner = _text(body, src).strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    had_todo = "TODO" in inner
    inner = _COMMENT.sub("", inner).strip()
    if not inner:
        return True
    if _TS_PLACEHOLDER.match(inner):
        return had_todo or not inner.lower().startswith("return")
    return False


def _treesitter_units(block: CodeBlock, taxonomy: Taxonomy) -> list[FunctionUnit] | None:
    lang = block.language
    if lang == "php" and "<?php" not in block.code:
        lang = "php_only"
    parser = _parser(lang)
    if parser is None:
        return None
    src = block.code.encode("utf-8")
    tree = parser.parse(src)
    units: list[FunctionUnit] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        u = _unit_of(node, src)
        if u is not None:
            kind, name = u
            names = [name.split(".")[-1]] + _ts_names(node, src)
            units.append(FunctionUnit(name=name, kind=kind, language=block.language, source=_text(node, src),
                                      attributes=_attributes(names, taxonomy),
                                      placeholder=_ts_placeholder(node, src, kind), identifiers=names))
            continue
        stack.extend(reversed(node.children))
    return units


# --------------------------------------------------------------------------- fallback
def _fallback_units(block: CodeBlock, taxonomy: Taxonomy) -> list[FunctionUnit]:
    kept = [ln for ln in block.code.split("\n") if not _IMPORT_LINE.match(ln)]
    body = "\n".join(kept).strip("\n")
    if not _COMMENT.sub("", body).strip():
        return []
    m = _DEF_NAME.search(body)
    name = m.group(1) if m else "snippet"
    names = _IDENT_RE.findall(_COMMENT.sub("", body))
    placeholder = bool(re.fullmatch(r"[\s\S]*?\{\s*\}\s*", body)) and len(names) < 4
    return [FunctionUnit(name=name, kind="snippet", language=block.language, source=body + "\n",
                         attributes=_attributes(names, taxonomy), placeholder=placeholder, identifiers=names)]


def find_units(block: CodeBlock, taxonomy: Taxonomy) -> list[FunctionUnit]:
    """All top-level units of a block, placeholders included (flagged)."""
    units = None
    if block.language == "python":
        units = _python_units(block, taxonomy)
    elif block.language in _GRAMMARS:
        units = _treesitter_units(block, taxonomy)
    if units is None or (not units and block.language not in ("python",) and block.language not in _GRAMMARS):
        units = _fallback_units(block, taxonomy)
    for i, u in enumerate(units):
        u.block, u.order = block.index, i
    return units


def select_functions(blocks: list[CodeBlock], taxonomy: Taxonomy, k: int | None) -> list[FunctionUnit]:
    """G(c) truncated to ``k`` (None: all of G(c)): non-placeholder units touching >= 1
    attribute, most attributes first, ties in order of appearance."""
    cands = [u for b in blocks for u in find_units(b, taxonomy) if not u.placeholder and u.attributes]
    cands.sort(key=lambda u: (-len(u.attributes), u.block, u.order))
    return cands if k is None else cands[: max(0, int(k))]
