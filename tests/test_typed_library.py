"""Library functions take typed settings, not the params mapping (issue #29 item 1).

In the converted modules no function or method takes a parameter named ``params`` (the composed
config, params.yaml as a stage loaded it) unless it is listed in :data:`BOUNDARY` with the reason
it reads the mapping itself: the stage boundaries that read each declared key typed
(:func:`testleak.config.typed`) and pass schema models and scalars down, the run lookups, and
``params`` that are not the config (an LLM request's sampling). The per-run chain
(``testleak/pipeline.py``), the stage helpers (``testleak/stage.py``) and the search backends'
openers (``testleak/verify/search.py``) are the stage boundary layer itself and are not scanned;
testleak/extract/ and testleak/canary/ are converted elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

from testleak.config import ROOT

#: Modules (prefixes) whose functions take typed settings.
CONVERTED = ("testleak/baselines/", "testleak/report/", "testleak/metrics/", "testleak/elicit/", "testleak/plan.py",
             "testleak/equalcost.py", "testleak/llm/answers.py", "testleak/llm/budget.py", "testleak/privacy_check.py",
             "testleak/methods.py", "testleak/config.py")

#: (module, qualified function name) -> why it takes ``params``.
BOUNDARY = {
    ("testleak/config.py", "typed"): "the typed read itself: one dotted key of the params mapping as its schema type",
    ("testleak/config.py", "run_spec"): "the one lookup of a run's entry (experiment.runs.RUN); entries the canary "
                                        "calibration builds in memory, or tests by hand, are no schema Run",
    ("testleak/config.py", "run_model"): "the model config a run names by its params key (model_params: model or "
                                         "experiment.models.ID), a key typed() cannot address",
    ("testleak/config.py", "run_protocol"): "a run's verification: its entry's, else baselines.protocol (a run lookup)",
    ("testleak/equalcost.py", "fill_budgets"): "writes the budgets composition gives into hand-written params "
                                               "(tests/project.py): a params writer, not a reader",
    ("testleak/elicit/responses.py", "ElicitSettings.from_params"): "the responses stage's boundary: the run's typed "
                                                                    "view of the keys the stage declares",
    ("testleak/elicit/responses.py", "elicit"): "params= is an LLM request's sampling parameters, not the config",
    ("testleak/elicit/questions.py", "generate_questions"): "params= is an LLM request's sampling parameters",
    ("testleak/report/inputs.py", "ReportSettings.from_params"): "the report stage's boundary: the typed view of the "
                                                                 "keys it declares",
    ("testleak/baselines/published.py", "codexleaks_published"): "a baseline's own verification as pipeline.candidates "
                                                                 "calls it (PUBLISHED): reads the filter, and the division "
                                                                 "scorer only when the filter scores with a model",
    ("testleak/baselines/published.py", "codebreaker_published"): "a baseline's own verification as "
                                                                  "pipeline.candidates calls it (PUBLISHED): presidio",
    ("testleak/plan.py", "plan"): "the entry of `testleak plan`: dry-runs the stages' own functions on the composed params",
    ("testleak/plan.py", "DryRunGateway._one"): "overrides testleak.llm.gateway.Gateway._one: params is an LLM request's "
                                                "sampling parameters",
    ("testleak/plan.py", "_Planner.__init__"): "the plan being built holds the params to call pipeline.responses and "
                                               "the run lookups as the stages do",
    ("testleak/llm/answers.py", "answer_settings"): "kept for testleak/canary/pipeline.py, which calls it; stages and "
                                                    "the per-run chain pass typed(params, 'answers')",
}


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def params_takers(root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(module, qualified name, line) of every function of the converted modules with a parameter
    named ``params``."""
    out = []
    for p in sorted((root / "testleak").rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if not rel.startswith(CONVERTED):
            continue
        for name, fn in _functions(ast.parse(p.read_text(encoding="utf-8"))):
            a = fn.args
            if any(x.arg == "params" for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)):
                out.append((rel, name, fn.lineno))
    return out


def test_library_functions_take_typed_settings_not_the_params_mapping():
    bad = [f"{rel}:{line}: {name}(params, ...)" for rel, name, line in params_takers() if (rel, name) not in BOUNDARY]
    assert not bad, ("library functions that take the params mapping: read the keys at the stage boundary with "
                     "testleak.config.typed and pass the schema models / values down (or list a boundary in "
                     "BOUNDARY with its reason):\n" + "\n".join(bad))


def test_every_boundary_is_still_one():
    found = {(rel, name) for rel, name, _ in params_takers()}
    assert [b for b in BOUNDARY if b not in found] == []


def test_the_scan_finds_params_in_functions_methods_and_keyword_arguments(tmp_path):
    mod = tmp_path / "testleak" / "plan.py"
    mod.parent.mkdir()
    mod.write_text("def f(params, run):\n    pass\n\nclass C:\n    def m(self, x, params):\n        def inner(*, params=None):\n"
                   "            pass\n\ndef g(cfg, run):\n    pass\n", encoding="utf-8")
    (tmp_path / "testleak" / "pipeline.py").write_text("def h(params):\n    pass\n", encoding="utf-8")   # not scanned
    assert [(n, line) for _, n, line in params_takers(tmp_path)] == [("f", 1), ("C.m", 5), ("C.m.inner", 6)]


def test_the_baselines_take_their_schema_sections():
    """What the converted signatures name: the schema's models of the baselines group."""
    import inspect

    from testleak.baselines.codebreaker import evolve, run_codebreaker, seed_pool
    from testleak.baselines.codexleaks import plan_prompts, run_codexleaks
    from testleak.settings import Baselines, CodeBreaker, CodexLeaks

    assert inspect.signature(plan_prompts).parameters["cfg"].annotation in (CodexLeaks, "CodexLeaks")
    for fn in (seed_pool, run_codexleaks, run_codebreaker):
        assert inspect.signature(fn).parameters["cfg"].annotation in (Baselines, "Baselines")
    assert inspect.signature(evolve).parameters["cfg"].annotation in (CodeBreaker, "CodeBreaker")
