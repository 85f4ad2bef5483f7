"""Prior privacy feature library: content of the shipped YAML, loading and hint sampling."""

import json
import random

import numpy as np
import pytest
import yaml

from testleak.config import compose_dict
from testleak.taxonomy import taxonomy_data
from testleak.errors import ConfigError, DataError
from testleak.library import load_library, sample_hints
from testleak.paths import Paths

PRIOR = Paths().library("prior")


@pytest.fixture(scope="module")
def taxonomy():
    return taxonomy_data(compose_dict())["attributes"]


@pytest.fixture(scope="module")
def prior():
    return load_library(PRIOR)


def test_prior_covers_every_attribute_with_its_slot(prior, taxonomy):
    assert sorted(prior) == sorted(taxonomy)
    for attr, body in prior.items():
        slot = taxonomy[attr]["slot"]
        assert len(body["templates"]) >= 6 and len(body["fragments"]) >= 5, attr
        for t in body["templates"]:
            assert slot in t["text"], (attr, t["text"])
            assert t["source"] and t["lang"] in {"python", "javascript", "java", "json", "yaml", "sql", "text"}
        # key-value contexts in the six code formats the brief names
        assert {"python", "javascript", "java", "json", "yaml", "sql"} <= {t["lang"] for t in body["templates"]}, attr
        for f in body["fragments"]:
            assert f["source"].startswith(("synthetic", "public")), (attr, f["source"])
            assert "<" not in f["text"] or f["text"].startswith("-----"), f["text"]  # values, not slots


def test_prior_yaml_parses_and_templates_are_unique(prior):
    raw = yaml.safe_load(PRIOR.read_text(encoding="utf-8"))
    assert raw["version"] == 1
    texts = [t["text"] for b in prior.values() for t in b["templates"]]
    assert len(texts) == len(set(texts))


def test_load_json_built_library_keeps_extra_keys(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema": "library/1", "attributes": {"email": {
        "templates": [{"text": "x = <EMAIL>", "lang": "python", "source": "run:r0", "cluster": 3}],
        "fragments": [{"text": "@qq.com", "source": "run:r0"}]}}}))
    lib = load_library(p)
    assert lib["email"]["templates"][0]["cluster"] == 3
    assert lib["email"]["fragments"] == [{"text": "@qq.com", "source": "run:r0"}]


@pytest.mark.parametrize("doc, needle", [
    ({"version": 1}, "top-level 'attributes'"),
    ({"attributes": {"email": {"template": []}}}, "unknown keys"),
    ({"attributes": {"email": {"templates": [{"lang": "python"}]}}}, "email.templates[0]"),
])
def test_bad_library_documents_say_where(tmp_path, doc, needle):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=None) as e:
        load_library(p)
    assert needle in str(e.value)


def test_missing_library_tells_what_to_run(tmp_path):
    with pytest.raises(DataError, match="stages.library"):
        load_library(tmp_path / "nope.json")


def test_sample_hints_deterministic_and_recorded(prior):
    a = sample_hints(prior, "email", 2, 3, 42)
    b = sample_hints(prior, "email", 2, 3, random.Random(42))
    assert a == b
    assert [len(a["templates"]), len(a["fragments"])] == [2, 3]
    for kind in ("templates", "fragments"):
        idx = [e["index"] for e in a[kind]]
        assert len(set(idx)) == len(idx)
        for e in a[kind]:
            assert prior["email"][kind][e["index"]]["text"] == e["text"]
    # different seeds give different draws somewhere across a few seeds
    draws = {tuple(e["index"] for e in sample_hints(prior, "email", 3, 0, s)["templates"]) for s in range(6)}
    assert len(draws) > 1
    # numpy generators are accepted and deterministic too
    g1 = sample_hints(prior, "phone", 1, 1, np.random.default_rng(5))
    g2 = sample_hints(prior, "phone", 1, 1, np.random.default_rng(5))
    assert g1 == g2


def test_sample_hints_caps_and_errors(prior):
    n = len(prior["password"]["templates"])
    got = sample_hints(prior, "password", n + 5, 0, 1)
    assert sorted(e["index"] for e in got["templates"]) == list(range(n)) and got["fragments"] == []
    with pytest.raises(ConfigError, match="known: .*email"):
        sample_hints(prior, "e-mail", 1, 1, 0)
    with pytest.raises(ConfigError, match="non-negative"):
        sample_hints(prior, "email", -1, 1, 0)
    with pytest.raises(ConfigError, match="rng"):
        sample_hints(prior, "email", 1, 1, "seed")
