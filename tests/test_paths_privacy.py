"""Artifact locations and masking rules."""

from __future__ import annotations

import pytest

from testleak.config import ROOT
from testleak.paths import Paths
from testleak.privacy import mask, mask_in_text, value_hash


def test_queued_experiment_shares_the_projects_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("TESTLEAK_CACHE", raising=False)
    assert Paths(tmp_path / "proj").cache == tmp_path / "proj" / ".cache"
    queued = tmp_path / "proj" / ".dvc" / "tmp" / "exps" / "run" / "a1b2c3"
    assert Paths(queued).cache == tmp_path / "proj" / ".cache"
    assert Paths(queued).llm_cache == tmp_path / "proj" / ".cache" / "llm"
    monkeypatch.setenv("TESTLEAK_CACHE", str(tmp_path / "elsewhere"))
    assert Paths(queued).models == tmp_path / "elsewhere" / "models"


def test_library_by_name_or_path(tmp_path):
    p = Paths(tmp_path)
    # a shipped resource missing from the project directory comes from the source checkout
    assert p.library("prior") == ROOT / "testleak" / "resources" / "prior_library.yaml"
    assert p.library("testleak/resources/prior_library.yaml") == p.library("prior")
    (tmp_path / "testleak" / "resources").mkdir(parents=True)
    (tmp_path / "testleak" / "resources" / "prior_library.yaml").write_text("version: 1\n")
    assert p.library("prior") == tmp_path / "testleak" / "resources" / "prior_library.yaml"
    assert p.library("ours") == tmp_path / "data" / "library" / "ours.json"
    assert p.library("data/library/ours.json") == tmp_path / "data" / "library" / "ours.json"


@pytest.mark.parametrize("value, masked", [
    ("george.thompson@outlook.com", "george.********@outlook.com"),
    ("ab@x.io", "a*@x.io"),
    ("sk-78a92b74ea55d5b5bc6fef3", "sk-78a92b" + "*" * 15 + "f3"),
    ("+86 138 1108 5305", "+86 13" + "*" * 9 + "05"),
    ("abc", "***"),
    ("", ""),
])
def test_mask_examples(value, masked):
    assert mask(value) == masked


@pytest.mark.parametrize("value", ["george.thompson@outlook.com", "+86 138 1108 5305", "sk-78a92b74ea55d5b5bc6fef3",
                                   "Sokolov1973!", "4111 1111 1111 1111", "1990-07-16", "ab", "x"])
def test_mask_hides_at_least_half_and_keeps_length(value):
    m = mask(value)
    assert len(m) == len(value)
    hidden = sum(1 for a, b in zip(value, m) if a != b or b == "*")
    if "@" in value:
        local = value.split("@")[0]
        assert m.endswith(value.split("@")[1]) and m.count("*") >= len(local) // 2
    else:
        assert hidden * 2 >= len(value)
    assert m != value or len(value) == 0


def test_mask_in_text_and_hash():
    text = "user alice.w@corp.io paid with 5500005555555559"
    out = mask_in_text(text, ["alice.w@corp.io", "5500005555555559"])
    assert "alice.w@corp.io" not in out and "5500005555555559" not in out
    assert mask("alice.w@corp.io") in out
    assert value_hash("x") == value_hash("x") and value_hash("x") != value_hash("y") and len(value_hash("x")) == 16
