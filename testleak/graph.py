"""The pipeline graph in one place: what every DVC stage reads and writes. dvc.yaml is generated
from it (``testleak dvc-yaml``, or ``python -m testleak.graph``) and a test keeps the committed
dvc.yaml equal to the generation (tests/test_pipeline_graph.py).

Per stage this module declares
- ``params``: the exact params.yaml keys the stage reads (a key covers its children; never a
  whole group "just in case": adding a run must not rerun the others, so a per-run stage reads
  ``experiment.runs.RUN`` and the few experiment sizes it uses);
- ``deps``: every file or directory the stage reads, paths taken from :class:`testleak.paths.Paths`;
- code: the stage's entry point ``stages/<name>.py`` and the transitive closure of the project
  modules it imports (found statically, imports inside functions included; see
  :func:`code_closure`), so shared modules (config, paths, records, privacy, taxonomy, ...) are
  deps of every stage that uses them. A package whose every module is needed is listed as its
  directory;
- ``outs`` / ``metrics`` / ``plots``: every file the stage writes.

dvc.yaml stays templated: per-run stages iterate ``foreach: ${experiment.runs}`` and the library
stage ``foreach: ${experiment.library_from}``, so ``dvc exp run -S experiment=paper`` works without
regenerating it. Paths below are therefore built with the DVC placeholders ``${key}`` (the run),
``${item.library}`` (the run's input library) as run names.

What ``dvc exp show`` lists, and so what params.yaml holds. Measured with DVC 3.67 on a scratch
project (2026-12-01): ``dvc exp show`` lists EVERY leaf key of params.yaml (the default params
file is collected whole, declared or not; ``--param-deps`` narrows it to the declared keys), but
of any other params file only the keys dvc.yaml declares; a list is one column. params.yaml is
what Hydra composes from conf/ (``dvc exp run -S`` writes it), so its size is the column count:
the default experiment had 619 param columns (taxonomy 115, five copies of the model config in
experiment.runs 150, model/judge/questioner 90, ...). Hence:
- data is a file, not params: the taxonomy (categories, attributes with lexicons, scenarios) lives
  in the file that ``taxonomy.file`` names (conf/taxonomy/<name>.yaml holds only ``name`` and
  ``file``); every stage that declares the ``taxonomy`` params also depends on ``${taxonomy.file}``
  (added by :func:`stage_dict`), so editing the file reruns exactly the stages that read it and
  ``-S taxonomy=<name>`` still switches it;
- a run references its model instead of copying it: ``experiment.runs.RUN`` holds ``model`` (the
  model's name) and ``model_params`` (``model``, or ``experiment.models.ID`` in a multi-model
  experiment; :func:`testleak.config.unroll_runs`), and each per-run stage that used to read the
  copy declares ``${item.model_params}`` (``RUN_MODEL``), so a model change reruns exactly the runs
  of that model, as before;
- likewise the scorer models of the library division (GGUF parts by key) are the file
  ``library.division.models_file`` names, a dep of the stages that declare ``library`` or that key;
- and Presidio's entity table is the file ``presidio.entities_file`` names, a dep of the stages
  that declare ``presidio``;
- the canary group is composed by the canary experiments only (their stages are the only readers;
  a foreach over an empty ``experiment.canary`` makes no stage, so DVC resolves none of its keys);
- every stage still declares every key it reads (tests/test_pipeline_graph.py proves it under an
  audit hook); the declarations are not what shrinks ``dvc exp show``, params.yaml is.
tests/test_graph_params.py bounds the param columns of the default params.yaml.

Not artifacts (never deps or outs; the graph test ignores them): params.yaml (read through
``testleak.stage.load_stage_params`` and checked key by key), the caches under $TESTLEAK_CACHE (LLM answers, search
answers, models: keyed by their full request), and logs/ (call logs with timestamps).

The local corpus index reads the installed Python distributions, which ``requirements.lock``
pins (scripts/bootstrap.sh installs from it; the index stage fails when they differ): index and
canary_corpus depend on it, and the index writes the distributions and versions it indexed to
data/index/manifest.json.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import yaml

from .config import ROOT
from .paths import Paths

RUN = "${key}"                    # the run of a per-run stage (foreach over experiment.runs)
RUN_LIBRARY = "${item.library}"   # that run's input library (prior YAML or data/library/<run>.json)
RUN_MODEL = "${item.model_params}"  # the params key of the run's model config: model or experiment.models.ID
TAXONOMY = "${taxonomy.file}"     # the taxonomy's data file (conf/taxonomy/*.yaml name it)
SCORERS = "${library.division.models_file}"   # the scorer models (GGUF) by key (conf/library/*.yaml name it)
ENTITIES = "${presidio.entities_file}"        # Presidio's entity table (conf/presidio/*.yaml name it)
RUN_BUDGET = "${item.budget.reads}"  # what its budget is read from (testleak/equalcost.py: ours' responses stats
                                     # for a baseline under match_ours, else the questions stats, read anyway)
PACKAGES = ("testleak", "stages")  # project code; everything else is a third-party dependency
LAUNCHER = "stages/run"           # shell launcher of every stage; it runs `python -m stages NAME`

HEADER = """\
# GENERATED by `testleak dvc-yaml` from testleak/graph.py: edit that module, then regenerate
# (tests/test_pipeline_graph.py fails when this file differs from the generation).
# The testleak pipeline (paper Fig. 2). Each stage's code: stages/<stage name>.py.
# Per-run stages (responses, candidates, judged, verified, confirmed, metrics) are unrolled
# over params experiment.runs (method x variant x round x model); library over experiment.library_from.
"""


@dataclass
class Stage:
    name: str
    params: list[str]
    deps: list[str] = field(default_factory=list)
    outs: list = field(default_factory=list)       # str, or {path: {cache: false}}
    metrics: list = field(default_factory=list)
    plots: list = field(default_factory=list)
    foreach: str | None = None                     # "${experiment.runs}" ...
    args: str = ""                                 # command-line arguments after the module
    module: str | None = None                      # stages.<module> (default: the name)
    code: list[str] = field(default_factory=list)  # extra modules imported dynamically

    @property
    def entry(self) -> str:
        return f"stages.{self.module or self.name}"

    @property
    def cmd(self) -> str:
        """``sh stages/run NAME [RUN]``: the launcher picks the project's interpreter (stages/run)."""
        return f"sh {LAUNCHER} {self.module or self.name}" + (f" {self.args}" if self.args else "")


def _rel(p: Path, paths: Paths) -> str:
    return p.relative_to(paths.root).as_posix()


def _nocache(p: str) -> dict:
    return {p: {"cache": False}}


class _Rel:
    """dvc.yaml's path strings, relative to the project root: ``r(path)`` any path of
    :class:`Paths`, ``r.res(name)`` a file shipped in testleak/resources/, ``r.run(kind)`` the
    record file and ``r.stats(kind)`` the stats file a per-run stage writes (the run: ``${key}``)."""

    def __init__(self, paths: Paths):
        self.paths = paths

    def __call__(self, p: Path) -> str:
        return _rel(p, self.paths)

    def res(self, name: str) -> str:
        return self(self.paths.resources / name)

    def run(self, kind: str, run: str = RUN) -> str:
        return self(getattr(self.paths, kind)(run))

    def stats(self, kind: str, run: str = RUN) -> str:
        return self(self.paths.run_dir(run) / f"{kind}_stats.json")


def _input_stages(paths: Paths) -> list[Stage]:
    """The stages run once per experiment before the runs: the questions and the corpus index."""
    r = _Rel(paths)
    return [
        Stage("questions",
              params=["taxonomy", "questioner", "experiment.scenarios", "experiment.questions_per_scenario",
                      "max_error_share", "budget", "answers", "experiment.name"],
              outs=[r(paths.questions), r(paths.questions_stats)]),
        Stage("index",
              params=["verifier.backend", "verifier.index", "verifier.local", "verifier.infinigram"],
              deps=["requirements.lock"],
              outs=["${verifier.index}", r(paths.index_manifest), r(paths.index_stats)]),
    ]


def _run_stages(paths: Paths) -> list[Stage]:
    """The chain of every run (foreach over experiment.runs): responses, candidates, judged,
    verified, confirmed."""
    r = _Rel(paths)
    per_run = "${experiment.runs}"
    return [
        Stage("responses", foreach=per_run, args=RUN,
              params=["seed", "taxonomy", "baselines", "max_error_share", f"experiment.runs.{RUN}", RUN_MODEL,
                      "experiment.scenarios",
                      "experiment.questions_per_scenario", "experiment.tests_per_function",
                      "experiment.functions_per_response", "experiment.hints_per_attribute",
                      "budget", "answers", "experiment.name"],
              # RUN_BUDGET: a baseline under match_ours reads the same model's ours' responses stats
              deps=[r.res("codexleaks.yaml"), r.res("codebreaker.yaml"), r(paths.questions), r(paths.questions_stats),
                    RUN_LIBRARY, RUN_BUDGET],
              outs=[r.run("responses"), r.stats("responses")]),
        Stage("candidates", foreach=per_run, args=RUN,
              params=["taxonomy", f"experiment.runs.{RUN}", RUN_MODEL, "baselines.protocol", "baselines.codexleaks.filter",
                      "presidio", "library.division.models_file", "answers.max_candidates_per_response",
                      "verifier.judge_mode"],
              deps=[r.res("placeholders.yaml"), r.run("responses"), r.stats("responses")],
              outs=[r.run("candidates"), r.stats("candidates")]),
        Stage("judged", foreach=per_run, args=RUN,
              params=["seed", "taxonomy", "judge", "verifier.judge_mode", "verifier.judge", "library.prior",
                      "max_error_share", "budget", "answers", "experiment.name", f"experiment.runs.{RUN}", RUN_MODEL,
                      "baselines.protocol"],
              deps=[r.res("placeholders.yaml"), r(paths.library("prior")), r.run("candidates"), r.stats("candidates")],
              outs=[r.run("judged"), r.stats("judged")]),
        Stage("verified", foreach=per_run, args=RUN,
              params=["verifier.backend", "verifier.index", "verifier.infinigram", "verifier.window",
                      "verifier.min_query_chars", "verifier.github", "verifier.local.max_hits_listed",
                      "max_error_share"],
              deps=["${verifier.index}", r.run("candidates"), r.stats("candidates"), r.run("judged"),
                    r.stats("judged")],
              outs=[r.run("verified"), r.stats("verified")]),
        # under review=auto the automatic reviewer of a baseline verified as published judges here
        Stage("confirmed", foreach=per_run, args=RUN,
              params=["review", "max_error_share", "seed", "taxonomy", "judge", "verifier.judge_mode", "verifier.judge",
                      "library.prior", "budget", "answers", f"experiment.runs.{RUN}", "baselines.protocol"],
              deps=[r(paths.labels_dir), r.res("placeholders.yaml"), r(paths.library("prior")), r.run("candidates"),
                    r.stats("candidates"), r.run("judged"), r.stats("judged"), r.run("verified"), r.stats("verified")],
              outs=[r.run("confirmed"), r.stats("confirmed")]),
    ]


def _summary_stages(paths: Paths) -> list[Stage]:
    """The stages over the runs' records: the libraries (foreach over experiment.library_from),
    each run's metrics and the report."""
    r = _Rel(paths)
    return [
        Stage("library", foreach="${experiment.library_from}", args="${key}",
              params=["library", "taxonomy", "seed", "experiment.library_from.${key}"],
              deps=[RUN_LIBRARY] + [r.run(k, "${key}") for k in ("responses", "candidates", "confirmed")]
              + [r.stats(k, "${key}") for k in ("responses", "candidates", "confirmed")],
              outs=[r(paths.library("${key}")), r(paths.library_divisions("${key}"))]
              + [_nocache(r(p)) for p in paths.library_figures("${key}")] + [r(paths.library_stats("${key}"))]),
        Stage("metrics", foreach="${experiment.runs}", args=RUN,
              params=["experiment.name", f"experiment.runs.{RUN}", RUN_MODEL, "experiment.scenarios",
                      "experiment.questions_per_scenario", "experiment.tests_per_function",
                      "ablation.name", "judge.name",
                      "verifier.backend", "review.policy", "taxonomy", "baselines.protocol"],
              deps=[r(paths.questions), r(paths.questions_stats)] + [r.run(k) for k in ("responses", "candidates", "judged", "verified", "confirmed")]
              + [r.stats(k) for k in ("responses", "candidates", "judged", "verified", "confirmed")],
              outs=[r(paths.run_metrics(RUN))],
              metrics=[_nocache(r(paths.metrics(RUN)))],
              plots=[{r(paths.metrics_plot(RUN)): {"x": "responses", "y": "all", "cache": False}}]),
        Stage("report",
              params=["experiment", "judge.name", "verifier", "review.policy",
                      "ablation.name", "taxonomy", "baselines.protocol"],
              deps=[r.res("paper_results.yaml"), r(paths.run_metrics(RUN).parent),
                    r(paths.metrics_plot(RUN).parent)],
              outs=[_nocache(r(paths.reports / f)) for f in (
                  "table2.md", "table2.csv", "table3.md", "table3.csv", "table4.md", "table4.csv", "table8.md", "table8.csv",
                  "rejections.md", "rejections.csv", "confirmed.md", "confirmed.csv", "figure1.csv", "figure1.png", "figure1_tokens.png", "figure1_units.png", "figure1.md", "paper_comparison.md")]),
    ]


def _canary_stages(paths: Paths) -> list[Stage]:
    """Ground truth by planted canaries (beyond the paper): enabled by experiment=canary
    (experiment.canary: [calibration]); empty in the other experiments."""
    r = _Rel(paths)
    canary = "${experiment.canary}"
    return [
        # canary.spec_dep: the user's spec file (canary.spec) or, without one, the example spec
        # (testleak/config.py, SPEC_DEP_RESOLVER): a path DVC can always hash.
        Stage("canary_corpus", foreach=canary,
              params=["canary.spec", "canary.spec_dep", "canary.duplication", "canary.n", "canary.seed",
                      "canary.files", "canary.file_bytes", "canary.attributes",
                      "canary.check_index", "taxonomy", "verifier.local.extensions"],
              deps=["requirements.lock", r(paths.index), "${canary.spec_dep}"],
              outs=[r(paths.canary / d) for d in ("corpus", "original", "ground_truth.jsonl", "stats.json")]),
        Stage("finetune", foreach=canary,
              params=["model", "canary.seed", "canary.finetune", "canary.gguf_type", "canary.exposure.alternatives",
                      "canary.exposure.batch_tokens"],
              deps=[r(paths.canary / "corpus"), r(paths.canary / "ground_truth.jsonl")],
              outs=[r(paths.canary / "model"), r(paths.canary / "memorization.jsonl")],
              metrics=[_nocache("metrics/canary_finetune.json")]),
        Stage("canary_report", foreach=canary,
              params=["experiment", "canary.models", "canary.seeds", "canary.judge_mode", "canary.max_tokens", "canary.exposure.bands",
                      "canary.prefix_probe", "canary.finetune.context_lines", "model", "questioner",
                      "judge", "verifier", "library", "baselines", "presidio", "taxonomy", "seed", "answers"],
              deps=[r.res("codexleaks.yaml"), r.res("codebreaker.yaml"), r.res("placeholders.yaml"),
                    r(paths.library("prior"))]
              + [r(paths.canary / d) for d in ("model", "corpus", "original", "ground_truth.jsonl", "memorization.jsonl")]
              + ["metrics/canary_finetune.json"],
              outs=[r(paths.canary / d) for d in ("index.sqlite", "questions", "runs")]
              + [_nocache(r(paths.reports / "canary"))],
              metrics=[_nocache("metrics/canary.json")]),
    ]


def declarations(paths: Paths | None = None) -> list[Stage]:
    """Every stage of dvc.yaml, in order."""
    paths = paths or Paths(ROOT)
    return _input_stages(paths) + _run_stages(paths) + _summary_stages(paths) + _canary_stages(paths)


# -- code dependencies -----------------------------------------------------------------------
def _module_file(name: str, root: Path) -> Path | None:
    base = root / Path(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imports(path: Path, module: str) -> set[str]:
    """Project modules named by every import statement of a file (nested ones included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)   # `from pkg import submodule`
    return {m for m in out if m.split(".")[0] in PACKAGES}


def code_closure(modules: Iterable[str], root: Path = ROOT) -> set[str]:
    """Files (relative paths) of the project modules that importing ``modules`` may execute:
    each module, its parent packages' ``__init__.py`` and, transitively, what they import."""
    seen: set[str] = set()
    files: set[str] = set()
    todo = list(modules)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        for i in range(1, len(parts)):          # parent packages run first
            todo.append(".".join(parts[:i]))
        f = _module_file(m, root)
        if f is None:
            continue                            # `from pkg import name` where name is not a module
        files.add(f.relative_to(root).as_posix())
        todo.extend(_imports(f, m))
    return files


def _collapse(files: set[str], root: Path = ROOT) -> list[str]:
    """Replace a package directory by its path when every module under it is in ``files``."""
    out = set(files)
    dirs = sorted({str(Path(f).parent.as_posix()) for f in files}, key=lambda d: d.count("/"))
    for d in dirs:
        if d in PACKAGES or "/" not in d and d == ".":
            continue
        mods = {p.relative_to(root).as_posix() for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts}
        if mods and mods <= files and not any(d.startswith(x + "/") for x in out if x in dirs):
            out -= mods
            out.add(d)
    return sorted(out)


def code_deps(stage: Stage, root: Path = ROOT) -> list[str]:
    """The launcher, then the code closure of ``stages/__main__.py`` and the stage's module."""
    return [LAUNCHER] + _collapse(code_closure(["stages.__main__", stage.entry, *stage.code], root), root)


# -- dvc.yaml ----------------------------------------------------------------------------------
def stage_dict(stage: Stage, root: Path = ROOT) -> dict:
    # a stage that reads the taxonomy (params ``taxonomy``: name and file) reads its data file too;
    # one that reads the scorer models (params ``library`` or ``library.division.models_file``) their file
    data = [TAXONOMY] if "taxonomy" in stage.params and TAXONOMY not in stage.deps else []
    if {"library", "library.division", "library.division.models_file"} & set(stage.params):
        data.append(SCORERS)
    if "presidio" in stage.params:
        data.append(ENTITIES)
    body: dict = {"cmd": stage.cmd, "deps": code_deps(stage, root) + list(stage.deps) + data,
                  "params": list(stage.params)}
    for k in ("outs", "metrics", "plots"):
        if getattr(stage, k):
            body[k] = list(getattr(stage, k))
    return {"foreach": stage.foreach, "do": body} if stage.foreach else body


def dvc_yaml(root: Path = ROOT) -> str:
    doc = {"stages": {s.name: stage_dict(s, root) for s in declarations(Paths(root))}}
    return HEADER + yaml.safe_dump(doc, sort_keys=False, width=120, default_flow_style=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = dvc_yaml()
    if argv == ["--check"]:
        same = (ROOT / "dvc.yaml").read_text(encoding="utf-8") == text
        print("dvc.yaml is up to date" if same else "dvc.yaml differs from testleak/graph.py: run `testleak dvc-yaml`")
        return 0 if same else 1
    (ROOT / "dvc.yaml").write_text(text, encoding="utf-8")
    print(f"wrote {ROOT / 'dvc.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
