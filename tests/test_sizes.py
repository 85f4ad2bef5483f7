"""Size limits a reader relies on: no module over 500 lines, no function over 60 lines
(``def`` to its last line, docstring included) unless a comment right above it says why."""

from __future__ import annotations

import ast
from pathlib import Path

from testleak.config import ROOT

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _sources() -> list[Path]:
    return sorted(p for d in ("testleak", "stages") for p in (ROOT / d).rglob("*.py"))


def _explained(lines: list[str], node: ast.AST) -> bool:
    """A comment line directly above the function (or its first decorator)."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return first >= 2 and lines[first - 2].strip().startswith("#")


def test_no_module_over_the_limit():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, f"split these modules by concept (limit {MAX_MODULE_LINES} lines):\n" + "\n".join(long)


def test_no_function_over_the_limit_without_a_reason():
    long = []
    for p in _sources():
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES and not _explained(lines, node):
                    long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, (f"split these functions (limit {MAX_FUNCTION_LINES} lines), or say in a comment right "
                      "above the def why one function reads better:\n" + "\n".join(long))


def test_the_function_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(70))
    tree = ast.parse(f"def f():\n{body}\n")
    node = tree.body[0]
    assert node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    assert not _explained(["def f():"], node)
    assert _explained(["# one table-driven loop reads better whole", "def f():"],
                      ast.parse(f"\ndef f():\n{body}\n").body[0])
