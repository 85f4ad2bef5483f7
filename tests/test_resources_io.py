"""The one YAML reader of shipped files and params (testleak/resources_io.py)."""

from __future__ import annotations

import pytest
import yaml

from testleak.config import ROOT
from testleak.resources_io import parse_yaml

SHIPPED = sorted([*(ROOT / "testleak" / "resources").rglob("*.yaml"), *(ROOT / "conf").rglob("*.yaml"),
                  ROOT / "params.yaml"])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_shipped_yaml_file_reads_as_pyyamls_safe_loader_reads_it(path):
    text = path.read_text(encoding="utf-8")
    assert parse_yaml(text) == yaml.safe_load(text)


def test_each_caller_gets_its_own_copy_and_bad_yaml_still_raises():
    text = "a: [1, 2]\nb: {c: d}\n"
    first = parse_yaml(text)
    first["a"].append(3)
    first["b"]["c"] = "changed"
    assert parse_yaml(text) == {"a": [1, 2], "b": {"c": "d"}}
    with pytest.raises(yaml.YAMLError):
        parse_yaml("a: [1, 2\n")
