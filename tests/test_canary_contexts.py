"""Canary contexts (issue 26 item 2): the built-in kinds, keys from the whole lexicon, the kind of
a user context, and a user spec of 45 canaries in mixed Python contexts (duplications 1, 4, 16)."""

from __future__ import annotations

import ast
import keyword
import random
from collections import Counter

import pytest

from testleak.canary.contexts import KINDS, NAME_KINDS, PLACEHOLDER, classify, draw_key, fill, template
from testleak.canary.plant import SourceFile, plant
from testleak.canary.spec import read_spec
from testleak.canary.values import ATTRIBUTES, make_value
from testleak.config import ROOT, compose_dict
from testleak.errors import ConfigError
from testleak.taxonomy import taxonomy_data

TAX = taxonomy_data(compose_dict())
MIXED = ROOT / "testleak" / "resources" / "canary_spec.mixed.jsonl"
BODY = '"""A module."""\nimport os\n\n\ndef f(x):\n    return x + 1\n\n\nclass A:\n    pass\n\n\ndef g():\n    return os.sep\n'


def _files(n):
    return [SourceFile(f"repo{i}", f"pkg/mod{i}.py", BODY.replace("A:", f"A{i}:")) for i in range(n)]


def _copies_hold_the_value_once(texts, truth):
    """Every planted file parses; every copy is the snippet at its recorded line, holding the value
    once; the corpus holds exactly ``duplication`` copies of every value."""
    for text in texts.values():
        ast.parse(text)
    for t in truth:
        assert sum(x.count(t["value"]) for x in texts.values()) == t["duplication"] == len(t["copies"])
        assert t["context"].count(t["value"]) == 1
        n = len(t["context"].splitlines())
        for c in t["copies"]:
            lines = texts[tuple(c["file"].split("/", 1))].splitlines(keepends=True)
            snippet = "".join(lines[c["line"] - 1:c["line"] - 1 + n])
            assert snippet == t["context"] and snippet.count(t["value"]) == 1
            assert any(ln.startswith(t["line_prefix"] + t["value"]) for ln in snippet.splitlines())


def test_every_builtin_kind_is_valid_python_holding_the_value_once_and_classifies_as_itself():
    rng = random.Random(0)
    for seed in range(30):
        for attr in ATTRIBUTES:
            value = make_value(attr, seed)
            for kind in KINDS:
                key = draw_key(TAX["attributes"][attr]["lexicon"], kind, rng)
                tmpl = template(kind, key, "web_shop", "web shop with checkout", rng)
                assert tmpl.count(PLACEHOLDER) == 1 and "\n\n" not in tmpl
                code, line_prefix = fill(tmpl, value)
                ast.parse(code)
                assert code.count(value) == 1 and (key in code or key.upper() in code)
                assert classify(code, value) == kind, (kind, code)
                line = next(ln for ln in code.splitlines() if value in ln)
                assert line.startswith(line_prefix) and line[len(line_prefix):].startswith(value)
    assert len(KINDS) == 9 and {"parametrize", "fixture", "assertion", "call_args", "constructor"} <= set(KINDS)
    with pytest.raises(ConfigError, match="unknown canary context kind 'yaml'"):
        template("yaml", "email", "web_shop", "web shop", rng)
    with pytest.raises(ConfigError, match="occurs 2 times"):
        fill('X = "{{value}}"  # abc123-secret\n', "abc123-secret")


def test_keys_come_from_the_whole_lexicon_and_python_names_are_never_keywords():
    lex = TAX["attributes"]["password"]["lexicon"]
    assert "pass" in lex
    rng = random.Random(3)
    drawn = {kind: {draw_key(lex, kind, rng) for _ in range(400)} for kind in KINDS}
    for kind in NAME_KINDS:
        assert drawn[kind] == {k for k in lex if not keyword.iskeyword(k)}
    assert drawn["config_dict"] == set(lex)                       # a dict key may be `pass`
    # planted Faker canaries: over seeds, the keys of one attribute go beyond its first six entries
    keys = Counter()
    for seed in range(12):
        _, truth = plant(_files(3), TAX["attributes"], TAX["scenarios"], 15, seed=seed)
        keys.update(t["key"] for t in truth if t["attribute"] == "name")
    assert len(set(keys) - set(TAX["attributes"]["name"]["lexicon"][:6])) >= 4
    assert set(keys) <= set(TAX["attributes"]["name"]["lexicon"])


@pytest.mark.parametrize("code,kind", [
    ('class T(unittest.TestCase):\n    def test_x(self):\n        self.assertEqual(f(1), "{{value}}")\n', "assertion"),
    ('@pytest.fixture(scope="module")\ndef acct():\n    return Account(token="{{value}}")\n', "fixture"),
    ('@dataclass\nclass D:\n    token: str = "{{value}}"\n', "kv_line"),
    ('send("{{value}}", retries=2)\n', "call_args"),
    ('headers = build({"Authorization": "{{value}}"})\n', "config_dict"),
    ('db.execute("insert into t (a) values (\'{{value}}\')")\n', "sql_insert"),
    ('DOC = \'[{"token": "{{value}}"}]\'\n', "json"),
    ('f = lambda: "{{value}}"\n', "other"),
])
def test_classify_names_the_kind_of_a_user_context(code, kind):
    value = "tok_7Hq2mZx9Lp"
    assert classify(code.replace(PLACEHOLDER, value), value) == kind
    assert classify(code.replace(PLACEHOLDER, value), "absent-value") == "other"


def test_faker_canaries_spread_kinds_over_attributes_and_every_copy_holds_its_value_once():
    texts, truth = plant(_files(20), TAX["attributes"], TAX["scenarios"], 45, seed=7, duplication=[1, 4, 16])
    _copies_hold_the_value_once(texts, truth)
    assert Counter(t["context_kind"] for t in truth) == {k: 5 for k in KINDS}
    assert all(t["context_source"] == "builtin" and t["key"] in TAX["attributes"][t["attribute"]]["lexicon"]
               for t in truth)
    for attr in ATTRIBUTES:                               # 3 canaries of each attribute, 3 different kinds
        assert len({t["context_kind"] for t in truth if t["attribute"] == attr}) == 3
        assert sorted(t["duplication"] for t in truth if t["attribute"] == attr) == [1, 4, 16]


def test_the_mixed_spec_example_validates_and_plants_45_canaries_in_their_own_contexts():
    spec = read_spec(MIXED, TAX["attributes"])
    assert len(spec) == 45
    for i, e in enumerate(spec):           # invented values: make_value(attribute, 900000 + i), once each
        assert e["value"] == make_value(e["attribute"], 900000 + i) and e["context"] is not None
    assert Counter(e["attribute"] for e in spec) == {a: 3 for a in ATTRIBUTES}
    assert Counter(e["duplication"] for e in spec) == {1: 15, 4: 15, 16: 15}
    files = _files(20)
    texts, truth = plant(files, TAX["attributes"], TAX["scenarios"], 1, seed=7, duplication=[1], spec=spec,
                         spec_path=str(MIXED))
    _copies_hold_the_value_once(texts, truth)
    assert [t["value"] for t in truth] == [e["value"] for e in spec]
    assert all(t["context_source"] == "spec" and t["key"] is None for t in truth)
    assert [t["context"] for t in truth] == [e["context"].replace(PLACEHOLDER, e["value"]) for e in spec]
    kinds = Counter(t["context_kind"] for t in truth)
    assert {"parametrize", "fixture", "assertion", "call_args", "constructor", "sql_insert", "json",
            "config_dict", "kv_line"} <= set(kinds) and kinds["other"] <= 3
    assert max(len({c["file"] for c in t["copies"]}) for t in truth) == 16      # k <= files: distinct files
    assert not any(t["value"] in f.text for t in truth for f in files)


def test_a_user_context_that_holds_its_value_twice_is_a_bad_spec_line(tmp_path):
    p = tmp_path / "spec.jsonl"
    p.write_text('{"value": "tok_7Hq2mZx9Lp", "attribute": "auth_token", '
                 '"context": "T = \\"{{value}}\\"  # tok_7Hq2mZx9Lp\\n"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"spec.jsonl:1: the value occurs 2 times in its context"):
        read_spec(p, TAX["attributes"])
