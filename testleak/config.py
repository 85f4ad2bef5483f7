"""Configuration: compose conf/ with Hydra, or read the params.yaml that DVC stages use.

Stages read only params.yaml (``load_params``). ``compose`` builds the same structure from
conf/ with overrides (what `dvc exp run -S` does), used by tests and the CLI.

Both validate against the typed schema (:mod:`testleak.settings`): a bad value, an unknown
key or option, or a malformed override raises :class:`ConfigError` with one line per
problem naming key, value, expectation and the conf/ file or override it came from.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Mapping, Sequence

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from . import registry
from .errors import ConfigError
from .resources_io import parse_yaml

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"


def project_root() -> Path:
    """The project directory: $TESTLEAK_ROOT, else the current directory when it holds
    params.yaml, else the source checkout."""
    env = os.environ.get("TESTLEAK_ROOT")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd()
    if (cwd / "params.yaml").exists():
        return cwd
    return ROOT


def _groups(conf_dir: Path) -> dict[str, list[str]]:
    return {p.name: sorted(x.stem for x in p.glob("*.yaml")) for p in sorted(conf_dir.iterdir()) if p.is_dir()}


def _check_overrides(overrides: Sequence[str], conf_dir: Path) -> None:
    """One-line errors for overrides Hydra would answer with a traceback: a group option
    that does not exist, a key that does not exist, a malformed override."""
    groups = _groups(conf_dir)
    for o in overrides:
        if "=" not in o:
            raise ConfigError(f"override {o!r}: expected KEY=VALUE (e.g. experiment=tiny or "
                              f"experiment.questions_per_scenario=3)")
        key, value = o.split("=", 1)
        key = key.lstrip("+~")
        if key in groups and value not in groups[key]:
            raise ConfigError(f"override {o!r}: unknown {key} option {value!r}; known: {', '.join(groups[key])} "
                              f"(conf/{key}/*.yaml)")


def _hydra_line(e: Exception, overrides: Sequence[str]) -> str:
    """Hydra's multi-line composition error as one line."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip() and not x.strip().startswith(("See https", "Config search"))]
    msg = "; ".join(lines[:3])
    if "override" not in msg.lower():
        msg = f"cannot parse the overrides {' '.join(overrides)!r}: {msg}"
    m = re.match(r"Could not override '([^']+)'", lines[0] if lines else "")
    if m and m.group(1).split(".")[0] == "canary":
        return (f"override {next((o for o in overrides if o.lstrip('+~').startswith('canary')), 'canary')!r}: the "
                "canary group is composed by the canary experiments only (add experiment=canary or "
                "experiment=canary_tiny)")
    if m:
        key = m.group(1)
        from .settings import _known_keys

        parent = key.split(".")[:-1]
        known = _known_keys(parent)
        msg = (f"override {next((o for o in overrides if o.lstrip('+~').startswith(key + '=')), key)!r}: "
               f"no key {key.split('.')[-1]!r} in {'.'.join(parent) or 'the config'}"
               + (f" (known keys: {', '.join(known)})" if known else "") + "; check the spelling")
    return msg


# -- validation at composition, also inside `dvc exp run` ---------------------------------------
# conf/config.yaml holds ``validated_by: ${testleak_settings:}``. Resolving the composition (what
# `dvc exp run -S ...` does before it writes params.yaml) calls this resolver, which validates the
# whole config against testleak.settings, so a bad override fails the experiment at composition,
# before any stage runs. DVC imports hydra_plugins/ from the repository root (its
# `hydra.plugins_path`), whose module registers the resolver by importing this one.
RESOLVER = "testleak_settings"
_composing = 0   # > 0 while `compose` runs: it validates itself, with each value's override
# The exception the resolver raises for a composition another program made (hydra_plugins/ sets a
# type that program prints as its own one-line error: DVC's DvcException for `dvc exp run -S`).
COMPOSITION_ERROR: type[Exception] = ConfigError


def _settings_resolver(*, _root_) -> str:
    from .settings import SCHEMA_VERSION, validate as _validate

    if not _composing:
        data = OmegaConf.to_container(_root_, resolve=False)
        data.pop("validated_by", None)
        try:
            try:
                data = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
            except OmegaConfBaseException as e:
                raise ConfigError(f"cannot resolve the composed config: {str(e).splitlines()[0]}") from None
            _validate(data, file="conf/ composed with the -S overrides", root=project_root())
        except ConfigError as e:
            if COMPOSITION_ERROR is ConfigError:
                raise
            raise COMPOSITION_ERROR("; ".join(str(e).splitlines())) from None
    return f"testleak.settings v{SCHEMA_VERSION}"


# -- runs unrolled over the experiment's test models, at composition ---------------------------
# conf/experiment/*.yaml write ``runs: ${testleak_runs:runs}`` and ``library_from:
# ${testleak_runs:library_from}``: this resolver builds them from ``experiment.protocol`` (the runs of
# one model: method x variant x round) and ``experiment.models`` (model id -> model config, composed
# from conf/model/ by the experiment's defaults). A run entry names its model (``model``: the model's
# name) and the params key of the model's config (``model_params``: ``model`` for the ``model`` group,
# ``experiment.models.ID`` for an entry of experiment.models), and carries its ablation flags; it
# does not copy the model config (``dvc exp show`` lists every key of params.yaml: a copy per run
# made ~30 columns per run). A per-run stage declares its own entry and ``${item.model_params}``
# (testleak/graph.py), so changing one model reruns exactly the runs of that model.
RUNS_RESOLVER = "testleak_runs"
MODEL_SEP = "--"   # run name = <protocol run>--<model id> when the experiment lists several models


def model_params_key(model_id: str | None) -> str:
    """The params key of a run's model config: ``model`` (the group; experiments that list no
    models) or ``experiment.models.<id>``."""
    return "model" if model_id is None else f"experiment.models.{model_id}"


def run_name(protocol_run: str, model_id: str | None) -> str:
    """``ours`` with one model (the ``model`` group: names as before), ``ours--gpt-4o`` with several."""
    return protocol_run if model_id is None else f"{protocol_run}{MODEL_SEP}{model_id}"


def unroll_runs(protocol: dict, models: dict, default_model: dict, libraries: Sequence[str],
                budget: Mapping | None = None) -> dict:
    """``{"runs": ..., "library_from": ...}``: every protocol run for every model of ``models``
    (``{}``: the ``model`` group's ``default_model`` alone, run names unchanged). A protocol run's
    ``library`` that is a library file named after another protocol run (``data/library/ours.json``)
    becomes that run's file for the same model (``data/library/ours--gpt-4o.json``).
    ``libraries``: the protocol runs whose confirmed leaks build a library (stage library@RUN).
    ``budget``: ``{baseline_budget, baseline_max_responses, baseline_unit, ablation}`` of the experiment: every run
    carries its ``budget`` (:func:`testleak.equalcost.run_budgets`; a baseline under ``match_ours``
    names the same model's run of ours it matches). None: runs carry no budget."""
    from .equalcost import run_budgets

    ids = list(models) or [None]
    runs: dict = {}
    budgets = (run_budgets(protocol, budget.get("baseline_budget"), budget.get("baseline_max_responses"),
                           budget.get("ablation"), run_name, budget.get("baseline_unit")) if budget is not None else None)
    for name, spec in protocol.items():
        for mid in ids:
            lib = str(spec["library"])
            stem = Path(lib).stem
            if mid is not None and stem in protocol and Path(lib).suffix == ".json":
                lib = Path(lib).with_name(f"{run_name(stem, mid)}.json").as_posix()
            mcfg = models[mid] if mid is not None else default_model
            runs[run_name(name, mid)] = {**spec, "library": lib, "model": str(mcfg.get("name")),
                                         "model_params": model_params_key(mid)}
            if budgets is not None:
                runs[run_name(name, mid)]["budget"] = budgets[name](mid)
    unknown = [r for r in libraries if r not in protocol]
    if unknown:
        raise ConfigError(f"experiment.libraries = {unknown}: expected names of experiment.protocol "
                          f"({', '.join(protocol)})")
    library_from = {run_name(r, mid): {"library": runs[run_name(r, mid)]["library"]} for r in libraries for mid in ids}
    return {"runs": runs, "library_from": library_from}


def _runs_resolver(what: str, *, _root_):
    if what not in ("runs", "library_from"):
        raise ConfigError(f"${{{RUNS_RESOLVER}:{what}}}: expected runs or library_from")
    exp = _root_.experiment
    try:
        protocol = OmegaConf.to_container(exp.protocol, resolve=True) if "protocol" in exp else {}
        models = OmegaConf.to_container(exp.models, resolve=True) if "models" in exp else {}
        libraries = OmegaConf.to_container(exp.libraries, resolve=True) if "libraries" in exp else []
        default_model = OmegaConf.to_container(_root_.model, resolve=True)
        budget = {"baseline_budget": exp.get("baseline_budget"),
                  "baseline_max_responses": exp.get("baseline_max_responses"),
                  "baseline_unit": exp.get("baseline_unit"),
                  "ablation": OmegaConf.select(_root_, "ablation.name", default=None)}
    except OmegaConfBaseException as e:
        raise ConfigError(f"cannot resolve the experiment's protocol or models: {str(e).splitlines()[0]}") from None
    try:
        from .equalcost import run_budgets

        run_budgets(protocol or {}, budget["baseline_budget"], budget["baseline_max_responses"], budget["ablation"],
                    run_name, budget["baseline_unit"])
    except ConfigError:
        budget = None   # a bad baseline budget: the schema reports it with where it came from (testleak.settings)
    return OmegaConf.create(unroll_runs(protocol or {}, models or {}, default_model, libraries or [], budget)[what])


# -- the canary spec file as a DVC dep ------------------------------------------------------------
# conf/canary/default.yaml writes ``spec_dep: ${testleak_spec_dep:${canary.spec}}``: the spec file
# when ``canary.spec`` is set, else the example spec shipped with testleak (a file that always
# exists: DVC needs a path, and dvc.yaml is templated, not regenerated per experiment). Stage
# canary_corpus depends on ``${canary.spec_dep}`` (testleak/graph.py), so editing the spec file
# reruns the corpus and everything after it.
SPEC_DEP_RESOLVER = "testleak_spec_dep"
SPEC_EXAMPLE = "testleak/resources/canary_spec.example.jsonl"


def _spec_dep_resolver(spec) -> str:
    return str(spec) if spec not in (None, "") else SPEC_EXAMPLE


def register_resolvers() -> None:
    if not OmegaConf.has_resolver(SPEC_DEP_RESOLVER):
        OmegaConf.register_new_resolver(SPEC_DEP_RESOLVER, _spec_dep_resolver)
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, _settings_resolver)
    if not OmegaConf.has_resolver(RUNS_RESOLVER):
        OmegaConf.register_new_resolver(RUNS_RESOLVER, _runs_resolver)


register_resolvers()


def compose(overrides: Sequence[str] = (), conf_dir: str | os.PathLike | None = None,
            validate: bool = True, check_files: bool = True) -> DictConfig:
    """Compose conf/ like `dvc exp run` does, validate it, and return the config
    (``check_files=False``: do not require the files it names, e.g. the labels file, to exist yet)."""
    from hydra import compose as h_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    d = Path(conf_dir or CONF_DIR).resolve()
    overrides = list(overrides)
    _check_overrides(overrides, d)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(d), version_base=None):
            cfg = h_compose(config_name="config", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(_hydra_line(e, overrides)) from None
    choices = dict(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    if validate:
        from .settings import validate as _validate

        global _composing
        _composing += 1
        try:
            data = OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as e:
            raise ConfigError(f"cannot resolve the composed config: {str(e).splitlines()[0]}") from None
        finally:
            _composing -= 1
        _validate(data, overrides=overrides, choices=choices, root=project_root(), check_files=check_files)
    return cfg


def compose_dict(overrides: Sequence[str] = (), conf_dir=None, check_files: bool = True) -> dict:
    """:func:`compose` resolved to plain containers (``validated_by`` does not validate again:
    ``compose`` just did, with ``check_files``)."""
    global _composing
    cfg = compose(overrides, conf_dir, check_files=check_files)
    _composing += 1
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    finally:
        _composing -= 1


def dump_params(cfg: DictConfig | dict, path: str | os.PathLike) -> None:
    """Write params.yaml exactly as `dvc exp run` does (resolve, then OmegaConf YAML)."""
    c = OmegaConf.create(cfg) if isinstance(cfg, dict) else cfg
    OmegaConf.resolve(c)
    Path(path).write_text(OmegaConf.to_yaml(c), encoding="utf-8")


def load_params(path: str | os.PathLike | None = None, validate: bool = True) -> DictConfig:
    """Read params.yaml (the composed config) as an OmegaConf object, validated against
    the schema (:mod:`testleak.settings`) unless ``validate`` is false."""
    p = Path(path) if path else project_root() / "params.yaml"
    if not p.exists():
        raise ConfigError(f"{p} not found: run from the project root, or `testleak params` to compose it")
    try:
        data = parse_yaml(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{p} is not valid YAML ({str(e).splitlines()[0]}): recompose it with `testleak params`") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} is not a mapping: recompose it with `testleak params`")
    if validate:
        from .settings import validate as _validate

        _validate(data, file=p.name, root=p.parent, check_files=False)
    return OmegaConf.create(data)


def typed(params, key: str):
    """The config value at dotted ``key`` (``verifier.window``, ``seed``) of the composed
    ``params``, typed by its field of the schema (:mod:`testleak.settings`: a model such as
    :class:`~testleak.settings.Window`, or a scalar); a key the params leave out is its schema
    default, so no default is written outside the schema. ``params`` is the params mapping
    (params.yaml as a stage loaded it, or the canary calibration's in-memory params) or a
    :class:`~testleak.settings.Settings`. Only ``key`` is read: what a stage reads stays what
    dvc.yaml declares for it (testleak/graph.py)."""
    from pydantic import ValidationError

    from .settings import Settings

    if isinstance(params, Settings):
        out = params
        for part in key.split("."):
            out = getattr(out, part)
        return out
    _, adapter = _key_adapter(key)
    node, parts = params, key.split(".")
    for i, part in enumerate(parts):
        try:               # a lookup, not a membership test: a recording mapping sees one read
            child = node[part]
        except (KeyError, TypeError, IndexError):
            child = _MISSING
        if child is _MISSING or (child is None and i < len(parts) - 1):
            default = _schema_default(key)
            if default is _MISSING:
                raise ConfigError(f"{key}: missing from params.yaml (a required key of testleak.settings): "
                                  "recompose it with `testleak params`")
            return default
        node = child
    value = node
    value = _plain(value)
    try:
        return adapter.validate_python(value, strict=True, context={"check_files": False})
    except ValidationError as e:
        from .settings.messages import error_lines

        raise ConfigError("; ".join(error_lines(e, value, parts, lambda k: "params.yaml"))) from None


_MISSING = object()


@functools.lru_cache(maxsize=None)
def _key_adapter(key: str):
    """(field info, TypeAdapter) of dotted ``key``: the schema fields walked from Settings."""
    from pydantic import BaseModel, TypeAdapter

    from .settings import Settings
    from .settings.messages import _model_of

    model, info = Settings, None
    for part in key.split("."):
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            raise ConfigError(f"no config key {key!r} in the schema (testleak.settings)")
        info = model.model_fields[part]
        model = _model_of(info.annotation)
    return info, TypeAdapter(info.annotation)


def _schema_default(key: str):
    """The schema default of dotted ``key``: the field's default, or the attribute of its
    parent's default (``answers.max_chars`` when ``answers`` is left out); _MISSING when the
    key (or a parent without a default) is required."""
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        info, _ = _key_adapter(".".join(parts[:i]))
        if info.is_required():
            continue
        out = info.get_default(call_default_factory=True)
        for part in parts[i:]:
            if out is None:
                return _MISSING
            out = getattr(out, part)
        return out
    return _MISSING


def _plain(value):
    """A config value as plain containers: OmegaConf nodes converted, other mappings (a dict
    subclass too) copied through their own ``keys``, so a mapping that records what is read
    sees the whole value read."""
    if OmegaConf.is_config(value):
        return OmegaConf.to_container(value, resolve=True)
    return dict(value) if isinstance(value, Mapping) and type(value) is not dict else value


def select(cfg, key: str, known: Sequence[str], what: str) -> str:
    """Validate a name chosen by config against the known implementations."""
    if key not in known:
        raise ConfigError(f"unknown {what} {key!r}; known: {', '.join(sorted(known))}")
    return key


def ablation_config(value) -> dict:
    """The ablation flags of a run, as composed into params.yaml (``experiment.runs.R.ablation``).

    Ablations are resolved at composition (conf/experiment/*.yaml write ``ablation: '${ablation}'``
    or ``'${experiment.ablations.NAME}'``), so stages read flags from params.yaml only and DVC
    reruns exactly the runs whose flags changed. A bare name is refused: conf/ is not read at
    run time."""
    if isinstance(value, str):
        raise ConfigError(f"ablation {value!r} given by name: a run's ablation must be its flags, resolved when "
                          f"params.yaml is composed (write ablation: '${{experiment.ablations.{value}}}' with "
                          f"`/ablation@ablations.{value}: {value}` in the experiment's defaults)")
    return dict(value)


def run_model(params, run: str) -> dict:
    """The config of the model under test of ``run``: the params key its entry names
    (``experiment.runs.RUN.model_params``: ``model`` or ``experiment.models.ID``, resolved at
    composition), checked against the model name the entry carries (``experiment.runs.RUN.model``).
    An entry that carries a model config itself (the canary calibration builds such runs in
    memory) is that config."""
    spec = run_spec(params, run)
    ref = spec.get("model")
    if isinstance(ref, Mapping):
        return dict(ref)
    key = spec.get("model_params")
    if not ref or not key:
        raise ConfigError(f"run {run!r} names no model (experiment.runs.{run}.model / model_params): recompose "
                          "params.yaml with `testleak params`")
    cfg = params
    for part in str(key).split("."):
        cfg = cfg.get(part) if isinstance(cfg, Mapping) or hasattr(cfg, "get") else None
        if cfg is None:
            raise ConfigError(f"experiment.runs.{run}.model_params = {key!r}: no such key in params.yaml; recompose "
                              "it with `testleak params`")
    cfg = dict(cfg)
    if cfg.get("name") != ref:
        raise ConfigError(f"experiment.runs.{run}.model = {ref!r} but {key}.name = {cfg.get('name')!r}: recompose "
                          "params.yaml with `testleak params`")
    return cfg


BASELINE_PROTOCOLS, BASELINE_METHODS = registry.BASELINE_PROTOCOLS, registry.BASELINE_METHODS


def run_protocol(params, run: str) -> str:
    """``published`` or ``shared`` for ``run``: ``shared`` for method ``ours``; for a baseline,
    the run entry's ``verification`` if set, else ``baselines.protocol`` (default published)."""
    spec = run_spec(params, run)
    if spec.get("method") not in BASELINE_METHODS:
        return "shared"
    p = spec.get("verification") or typed(params, "baselines.protocol")
    if p not in BASELINE_PROTOCOLS:
        raise ConfigError(f"baselines.protocol = {p!r}: expected one of {', '.join(BASELINE_PROTOCOLS)}")
    return p


def run_spec(params, run: str, runs_key: str = "runs") -> dict:
    """The entry ``experiment.<runs_key>.<run>`` of the composed params: the one check of a run
    name (stages, elicitation settings, metrics and the canary calibration all go through it)."""
    exp = params["experiment"]
    runs = exp.get(runs_key) or {}
    if run not in runs:
        raise ConfigError(f"unknown run {run!r}; experiment {exp.get('name', '?')!r} defines: "
                          f"{', '.join(runs) or '(none)'} (experiment.{runs_key} in params.yaml)")
    return dict(runs[run] or {})
