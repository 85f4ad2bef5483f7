"""The committed params.yaml equals the composition of conf/ defaults; every config
group instantiates; the taxonomy reproduces the paper's Table 2 denominators."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from testleak.config import CONF_DIR, ROOT, compose, compose_dict
from testleak.errors import ConfigError
from testleak.taxonomy import Taxonomy


def test_params_yaml_equals_composition():
    committed = (ROOT / "params.yaml").read_text(encoding="utf-8")
    cfg = compose()
    OmegaConf.resolve(cfg)
    fresh = OmegaConf.to_yaml(cfg)
    assert yaml.safe_load(committed) == yaml.safe_load(fresh), (
        "params.yaml drifted from conf/: run `testleak params` and commit params.yaml")
    assert committed == fresh


def test_every_group_option_composes(tmp_path, monkeypatch):
    # review=two_reviewers needs an existing labels file: compose in a project that has one
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "labels.jsonl").write_text("", encoding="utf-8")
    monkeypatch.setenv("TESTLEAK_ROOT", str(tmp_path))
    for group in sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir()):
        for option in sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")):
            # the canary group is composed by the canary experiments only
            cfg = compose_dict(["experiment=canary_tiny"] * (group == "canary") + [f"{group}={option}"])
            assert group in cfg
    assert "canary" not in compose_dict([])   # no canary stage in the default experiment: no canary params


def test_unknown_option_fails_with_choices():
    import pytest

    from testleak.errors import ConfigError

    with pytest.raises(ConfigError) as ei:
        compose(["model=nonexistent-model"])
    assert "qwen2.5-coder-0.5b" in str(ei.value) and len(str(ei.value).splitlines()) == 1


def test_taxonomy_matches_paper_table2_denominators(params):
    t = Taxonomy.from_config(params)
    assert len(t.attributes) == 15 and len(t.scenarios) == 8
    assert {a.category for a in t.attributes.values()} == {"identifiable", "private", "secret"}
    scenarios_per_attr = {a: sum(a in s.attributes for s in t.scenarios.values()) for a in t.attributes}
    # Paper Table 2 "Number of Test Cases" = (#scenarios with the attribute) x 20 x 10.
    assert {a: n * 200 for a, n in scenarios_per_attr.items()} == {
        "name": 400, "address": 400, "email": 600, "phone": 600, "date_of_birth": 200,
        "identity": 400, "medical_record": 200, "bank_statement": 200, "political": 200,
        "password": 800, "auth_token": 400, "secret_key": 400, "credit_card": 200, "username": 800,
        "biometric": 200,
    }
    assert sum(scenarios_per_attr.values()) * 200 == 6000


def test_lexicon_lookup(params):
    t = Taxonomy.from_config(params)
    assert t.attribute_for_name("contactEmail") == "email"
    assert t.attribute_for_name("USER_PASSWORD") == "password"
    assert t.attribute_for_name("billing-address") == "address"
    assert t.attribute_for_name("dateOfBirth") == "date_of_birth"
    assert t.attribute_for_name("color") is None
    assert t.attribute_for_name("") is None


@pytest.mark.parametrize("key, what", [("taxonomy.file", "taxonomy file"),
                                       ("library.division.models_file", "scorer models file"),
                                       ("presidio.entities_file", "entity table")])
def test_a_missing_data_file_is_one_line_naming_its_key(key, what):
    """The data files params.yaml names (taxonomy, scorer models, Presidio entities) are read and
    checked at composition; a missing one is one line naming the key, the override and the file."""
    with pytest.raises(ConfigError) as e:
        compose_dict([f"{key}=nope.yaml"])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{key} = 'nope.yaml' (override '{key}=nope.yaml'): expected an existing, valid {what}")
    assert "nope.yaml not found" in msg


def test_paper_names_judge_and_questioner_and_matches_baselines_in_responses():
    from testleak.config import compose

    p = compose(["experiment=paper", "review=auto"])
    embedded = compose([])["judge"]["name"]
    assert p["judge"]["name"] == p["questioner"]["name"] == "gpt-4o" != embedded
    assert p["judge"]["name"] in {m["name"] for m in p["experiment"]["models"].values()}   # a model under test
    assert p["experiment"]["baseline_unit"] == "responses"
    assert {r["budget"]["unit"] for r in p["experiment"]["runs"].values() if r["method"] != "ours"} == {"responses"}
