"""No config default is written in library code: the schema (testleak/settings/) and conf/ are
the one place. Library code reads a config value with :func:`testleak.config.typed` (the
schema's type and default) or from a typed model; a ``.get("<key>", <default>)`` (or
``.get("<key>") or <literal>``, or a ``*get(cfg, "<key>", <default>)`` helper) whose key is a
field of a settings model is flagged, unless it reads a record, not config (allowed below,
each with its reason)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from pydantic import BaseModel

import testleak.settings as schema
from testleak.config import ROOT

#: Module prefixes whose config reads are not converted yet (none left).
NOT_CONVERTED: dict[str, str] = {}

#: (module, key) -> why the read is not a config default.
ALLOWED = {
    ("testleak/baselines/codebreaker.py", "completion_tokens"): "a response record's usage",
    ("testleak/equalcost.py", "completion_tokens"): "an LLM usage record",
    ("testleak/llm/budget.py", "completion_tokens"): "usage and spend-ledger records",
    ("testleak/llm/budget.py", "max_tokens"): "a request's sampling parameters (none: no worst-case cap)",
    ("testleak/llm/callstats.py", "completion_tokens"): "call-log records",
    ("testleak/llm/gateway.py", "completion_tokens"): "an answer's usage",
    ("testleak/llm/transport.py", "max_tokens"): "a request's sampling parameters (none: no completion tokens "
                                                 "reserved in the rate limiter's estimate)",
    ("testleak/plan.py", "completion_tokens"): "call-log records",
    ("testleak/plan.py", "as_of"): "a model's price as the plan's record holds it, shown - without a date",
    ("testleak/metrics/steps.py", "completion_tokens"): "a response record's usage",
    ("testleak/equalcost.py", "round"): "experiment.protocol read at composition (a resolver), before the schema "
                                        "checks it: the schema reports a missing round",
    ("testleak/equalcost.py", "name"): "a protocol run without ablation flags (a baseline) is variant none",
    ("testleak/report/tables.py", "name"): "a run without ablation flags (a baseline) is variant none",
    ("testleak/report/tables.py", "model"): "a metrics record (the run's config only when it has none)",
    ("testleak/report/tables.py", "family"): "a metrics record (the run's config only when it has none)",
    ("testleak/report/tables.py", "responses"): "a metrics record",
    ("testleak/report/tables.py", "unit"): "a run's budget summary (metrics record)",
    ("testleak/report/comparison.py", "codexleaks"): "the paper's transcribed tables (a data file)",
    ("testleak/library/rounds.py", "language"): "a candidate record",
    ("testleak/library/rounds.py", "templates"): "a library document",
    ("testleak/library/rounds.py", "fragments"): "a library document",
    ("testleak/taxonomy.py", "categories"): "the taxonomy data file (its schema, TaxonomyData, checks it)",
    ("testleak/config.py", "name"): "shown in the unknown-run message of hand-built params",
    ("testleak/canary/exposure.py", "source"): "a ground-truth record (a hand-built canary without one is a "
                                              "Faker canary)",
    ("testleak/canary/pipeline.py", "name"): "a calibration run without ablation flags (a baseline) is variant none",
    ("testleak/canary/report.py", "duplication"): "a ground-truth record",
    ("testleak/canary/report.py", "seed"): "a calibration result record",
    ("testleak/canary/tables.py", "duplication"): "a ground-truth record",
    ("testleak/canary/tables.py", "seed"): "a calibration result record",
}

def _models(model, seen: set) -> None:
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        for sub in _inner(info.annotation):
            _models(sub, seen)


def _inner(ann) -> list:
    out = [ann] if isinstance(ann, type) and issubclass(ann, BaseModel) else []
    for a in typing.get_args(ann):
        out += _inner(a)
    return out


def config_keys() -> set[str]:
    """Every field name of every settings model."""
    seen: set = set()
    for v in vars(schema).values():
        if isinstance(v, type) and issubclass(v, BaseModel):
            _models(v, seen)
    return {name for m in seen for name in m.model_fields}


def _key(node, keys) -> str | None:
    """The config key ``node`` reads with a default written in code, or None."""
    def key_arg(arg):
        return arg.value if isinstance(arg, ast.Constant) and arg.value in keys else None

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and len(node.args) == 2:
        return key_arg(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.endswith("get") \
            and len(node.args) >= 3:
        return key_arg(node.args[1])
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        first, last = node.values[0], node.values[-1]
        if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "get" \
                and len(first.args) == 1 and isinstance(last, ast.Constant) and last.value is not None:
            return key_arg(first.args[0])
    return None


def inline_defaults(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(module, line, key) of every config read with a default in code outside testleak/settings/."""
    keys, out = config_keys(), []
    for p in sorted((root / "testleak").rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith("testleak/settings/"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            key = _key(node, keys)
            if key is not None:
                out.append((rel, node.lineno, key))
    return out


def _allowed(rel: str, key: str) -> bool:
    return any(rel.startswith(m) for m in NOT_CONVERTED) or (rel, key) in ALLOWED


def test_no_library_module_reads_a_config_key_with_an_inline_default():
    bad = [f"{rel}:{line}: .get({key!r}, <default>)" for rel, line, key in inline_defaults() if not _allowed(rel, key)]
    assert not bad, ("config defaults written in code (read the value with testleak.config.typed, whose default "
                     "is the schema's):\n" + "\n".join(bad))


def test_every_allowance_is_still_needed():
    found = {(rel, key) for rel, _, key in inline_defaults()}
    assert [a for a in ALLOWED if a not in found] == []


def test_the_scan_finds_an_inline_default(tmp_path):
    mod = tmp_path / "testleak" / "m.py"
    mod.parent.mkdir()
    mod.write_text('def f(cfg):\n    return cfg.get("quantile", 0.25), cfg.get("n_ctx") or 8192, '
                   '_cfg_get(cfg, "corpus", "x"), cfg.get("not_a_key", 1)\n', encoding="utf-8")
    assert sorted(k for _, _, k in inline_defaults(tmp_path)) == ["corpus", "n_ctx", "quantile"]
