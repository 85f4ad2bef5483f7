"""Every option of every config group in conf/ is composed AND what it names is built (no
network call): model gateways, verifier backends, libraries, methods from the registry,
scorer/encoder names, review policies, ablations, baseline resources, canary settings.
A new config group fails here until it gets an instantiator."""

from __future__ import annotations

import pytest

from testleak import methods, registry
from testleak.errors import ConfigError
from testleak.config import CONF_DIR, ablation_config, compose_dict, run_spec, typed
from testleak.elicit import ElicitSettings
from testleak.library import load_library
from testleak.llm.gateway import Gateway
from testleak.paths import Paths
from testleak.taxonomy import Taxonomy

OPTIONS = [(g.name, o.stem) for g in sorted(CONF_DIR.iterdir()) if g.is_dir() for o in sorted(g.glob("*.yaml"))]


def _model(cfg: dict, paths: Paths, what: str) -> None:
    from testleak.llm.local import install_command

    gw = Gateway(cfg[what], cache_dir=paths.llm_cache, log_path=paths.logs / "calls.jsonl", models_dir=paths.models)
    assert gw.name == cfg[what]["name"] and gw._client is None  # built, nothing sent
    if gw.provider == "local":
        assert "pip install" in install_command(cfg[what]["gguf"])
    else:
        assert cfg[what]["api_key_env"] and (cfg[what].get("base_url") or cfg[what].get("base_url_env"))


def _verifier(cfg: dict, paths: Paths, monkeypatch) -> None:
    from testleak.verify.search import open_backend

    ver = typed(cfg, "verifier")
    if ver.backend in ("local", "infinigram"):
        from testleak.verify.search import build_corpus_index

        corpus = paths.root / "corpus" / "repo"
        corpus.mkdir(parents=True)
        (corpus / "a.py").write_text('EMAIL = "nadia.okafor@qq.com"\n')
        local = {**cfg["verifier"]["local"], "corpus": "dirs", "dirs": [str(corpus.parent)]}
        build_corpus_index({**cfg, "verifier": {**cfg["verifier"], "local": local}}, paths)
    for env in ver.github.token_envs:
        monkeypatch.setenv(env, "ghs_test_token_not_used")
    backend = open_backend(cfg, paths)
    assert backend.engine
    if ver.backend in ("local", "infinigram"):
        assert backend.search("nadia.okafor@qq.com")["k"] == 1


def _library(cfg: dict, paths: Paths) -> None:
    from testleak.library.clustering import ENCODERS
    from testleak.library.division import SCORERS

    lib = load_library(paths.library(cfg["library"]["prior"]))
    assert set(lib) == set(Taxonomy.from_config(cfg).attributes)
    assert cfg["library"]["division"]["scorer"] in SCORERS
    assert cfg["library"]["clustering"]["encoder"] in ENCODERS


def _runs(cfg: dict, paths: Paths, key: str) -> None:
    from testleak.canary.rounds import library_source

    exp = cfg["experiment"]
    for run, spec in (exp.get(key) or {}).items():
        m = methods.get(run_spec(cfg, run, key)["method"])
        if spec.get("ablation"):
            ablation_config(spec["ablation"])
        if key == "runs":
            s = ElicitSettings.from_params(cfg, run)
            assert (s.method, s.run) == (m.name, run)
        if key == "calibration_runs" and library_source(exp[key], run) is not None:
            continue          # a library round: built from that calibration run (testleak/canary/rounds.py)
        lib = paths.library(str(spec.get("library") or "prior"))
        built = {paths.library(r) for r in exp.get("library_from") or []}  # written by stage library@r
        assert lib.exists() or lib in built, f"run {run}: library {lib} is neither shipped nor built by a library stage"
    for run in exp.get("library_from") or []:
        run_spec(cfg, run)


def _experiment(cfg: dict, paths: Paths) -> None:
    tax = Taxonomy.from_config(cfg)
    for s in cfg["experiment"]["scenarios"]:
        tax.scenario(s)
    _runs(cfg, paths, "runs")
    _runs(cfg, paths, "calibration_runs")
    assert cfg["experiment"].get("runs") or cfg["experiment"].get("calibration_runs")


def _baselines(cfg: dict, paths: Paths) -> None:
    from testleak.baselines.common import load_resource
    from testleak.baselines.templates import CodexLeaksTemplates
    from testleak.config import typed

    b = typed(cfg, "baselines")
    CodexLeaksTemplates(load_resource(b.codexleaks.resource)).check_covers(list(Taxonomy.from_config(cfg).attributes))
    assert load_resource(b.codebreaker.resource)["version"] == 1


def _review(cfg: dict, paths: Paths) -> None:
    from testleak.verify.review import confirm

    rev = cfg["review"]
    assert confirm([], [], [], rev["policy"], list(rev.get("reviewers") or [])) == []


def _canary(cfg: dict, paths: Paths) -> None:
    from testleak.canary.pipeline import canary_setting, run_names
    from testleak.settings import Finetune

    assert isinstance(canary_setting(cfg, "finetune"), Finetune)
    assert cfg["canary"]["judge_mode"] in registry.JUDGE_MODES
    run_names({**cfg, "experiment": {**cfg["experiment"], "calibration_runs": {
        "ours": {"method": "ours", "round": 0, "library": "prior"}}}})


def _presidio(cfg: dict) -> None:
    from testleak import presidio

    eng = presidio.engine(cfg["presidio"])   # the real analyzer with the configured spaCy pipeline
    assert cfg["presidio"]["language"] in eng.supported_languages
    unknown = set(presidio.mapping(cfg["presidio"])) - set(eng.get_supported_entities(cfg["presidio"]["language"]))
    assert not unknown, f"presidio.entities names entity types Presidio does not produce: {sorted(unknown)}"


INSTANTIATE = {
    "model": lambda cfg, paths, mp: _model(cfg, paths, "model"),
    "judge": lambda cfg, paths, mp: _model(cfg, paths, "judge"),
    "questioner": lambda cfg, paths, mp: _model(cfg, paths, "questioner"),
    "verifier": lambda cfg, paths, mp: _verifier(cfg, paths, mp),
    "library": lambda cfg, paths, mp: _library(cfg, paths),
    "experiment": lambda cfg, paths, mp: _experiment(cfg, paths),
    "ablation": lambda cfg, paths, mp: _ablation(cfg),
    "baselines": lambda cfg, paths, mp: _baselines(cfg, paths),
    "review": lambda cfg, paths, mp: _review(cfg, paths),
    "taxonomy": lambda cfg, paths, mp: Taxonomy.from_config(cfg),
    "canary": lambda cfg, paths, mp: _canary(cfg, paths),
    "presidio": lambda cfg, paths, mp: _presidio(cfg),
}


def _ablation(cfg):
    """The selected ablation's flags are resolved into every run of ours at composition."""
    ours = [s for s in cfg["experiment"]["runs"].values() if s["method"] == "ours"]
    assert ours and all(ablation_config(s["ablation"]) == cfg["ablation"] for s in ours)


def test_every_group_has_an_instantiator():
    assert {g for g, _ in OPTIONS} == set(INSTANTIATE), "add an instantiator for the new config group"


@pytest.mark.parametrize("group,option", OPTIONS)
def test_option_composes_and_instantiates(group, option, tmp_path, monkeypatch):
    overrides = [f"{group}={option}"]
    if group == "canary":
        overrides.append("experiment=canary")
    # composition checks the files a config names (the review policies' labels file) in the project
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "labels.jsonl").write_text("")
    monkeypatch.setenv("TESTLEAK_ROOT", str(tmp_path))
    cfg = compose_dict(overrides)
    paths = Paths(tmp_path)
    INSTANTIATE[group](cfg, paths, monkeypatch)


def test_ablation_options_match_their_names():
    import yaml

    for p in (CONF_DIR / "ablation").glob("*.yaml"):
        cfg = compose_dict([f"ablation={p.stem}"])
        assert cfg["ablation"]["name"] == p.stem and yaml.safe_load(p.read_text()) == cfg["ablation"]
        assert cfg["experiment"]["runs"]["ours"]["ablation"] == cfg["ablation"]
    with pytest.raises(ConfigError, match="resolved when params.yaml is composed"):
        ablation_config("no_fl")      # a name is never looked up in conf/ at run time
