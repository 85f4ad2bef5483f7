"""The import graph of testleak/ against the layer order written in docs/ARCHITECTURE.md.

Static (ast): every import counts, including lazy ones inside functions. A module may import
its own layer or lower ones; the units of one layer must not import each other in a cycle;
a stage entry point (stages/*.py) imports no other stage. A module missing from the table
fails until it is placed in a layer."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from testleak.config import ROOT

PKG = ROOT / "testleak"
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def layer_table() -> dict[str, int]:
    """``{unit: layer}`` from the table between the ``layers:begin`` / ``layers:end`` markers."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    assert m, f"{DOC} has no layer table between <!-- layers:begin --> and <!-- layers:end -->"
    out: dict[str, int] = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        for unit in re.findall(r"`([\w.]+)`", cells[1]):
            assert unit not in out, f"{unit} is in two layers of {DOC.name}"
            out[unit] = int(cells[0])
    return out


def unit_of(module: str) -> str:
    """``testleak.verify.judge`` -> ``verify``; ``testleak.pipeline`` -> ``pipeline``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "testleak"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, module: str) -> list[tuple[str, int]]:
    """Absolute names of every module ``path`` imports (any depth in the file), with line numbers."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                out += [(f"{target}.{a.name}" if not node.module else target, node.lineno) for a in node.names]
            else:
                out.append((node.module or "", node.lineno))
    return out


def unit_graph() -> tuple[dict[str, set[str]], list[str]]:
    """Unit -> imported units, and the violations of the layer order."""
    layers = layer_table()
    graph: dict[str, set[str]] = defaultdict(set)
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        mod = module_name(path, ROOT)
        src = unit_of(mod)
        assert src in layers, f"testleak/{src} is not in the layer table of docs/ARCHITECTURE.md: add it to a layer"
        for target, line in imports(path, mod):
            if not target.startswith("testleak.") or unit_of(target) == src:
                continue
            dst = unit_of(target)
            assert dst in layers, f"{path.relative_to(ROOT)}:{line} imports {target}, not in the layer table"
            graph[src].add(dst)
            if layers[dst] > layers[src]:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {src} (layer {layers[src]}) imports {target} "
                           f"(layer {layers[dst]})")
    return graph, bad


def test_the_layer_table_names_existing_modules():
    units = {unit_of(module_name(p, ROOT)) for p in PKG.rglob("*.py")}
    missing = sorted(set(layer_table()) - units)
    # homes other changes are creating may be listed before they land; everything else must exist
    assert set(missing) <= {"settings"}, f"the layer table lists modules that do not exist: {missing}"


def test_no_module_imports_a_higher_layer():
    _, bad = unit_graph()
    assert not bad, "imports against the layer order of docs/ARCHITECTURE.md:\n" + "\n".join(bad)


def test_no_import_cycle_between_units():
    graph, _ = unit_graph()
    seen, stack, cycles = {}, [], []

    def visit(u):
        seen[u] = "open"
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if seen.get(v) == "open":
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in seen:
                visit(v)
        stack.pop()
        seen[u] = "done"

    for u in sorted(graph):
        if u not in seen:
            visit(u)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_stages_import_no_other_stage():
    bad = []
    for path in sorted((ROOT / "stages").glob("*.py")):
        for target, line in imports(path, module_name(path, ROOT)):
            if target == "stages" or target.startswith("stages."):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not bad, "a stage imports another stage (move the shared part into testleak/):\n" + "\n".join(bad)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from ..baselines import run\n\ndef g():\n    from ..methods import get\n    import testleak.cli\n")
    assert sorted(t for t, _ in imports(f, "testleak.elicit.x")) == ["testleak.baselines", "testleak.cli", "testleak.methods"]
    f.write_text("from . import rules\nfrom .. import pipeline\n")
    assert sorted(t for t, _ in imports(f, "testleak.verify.x")) == ["testleak.pipeline", "testleak.verify.rules"]
