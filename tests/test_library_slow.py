"""Division with the real default scorer (packaged Gemma 3 270M base GGUF, causal surprisal)."""

import math

import pytest
import yaml

from testleak.config import compose_dict, typed
from testleak.llm.local import sha256_file
from testleak.library.division import divide, get_scorer, scorer_gguf_path, scorer_model_cfg
from testleak.paths import Paths

CASES = [  # (line, value, slot, expected template)
    ('user.email = "jane.roe@corp.io"', "jane.roe@corp.io", "<EMAIL>", 'user.email = "<EMAIL>"'),
    ('contact = {"phone": "+1 415-555-0134"}', "+1 415-555-0134", "<PHONE>", 'contact = {"phone": "<PHONE>"}'),
    ('API_KEY = "sk-4fT9qLmZ2xWv8RbN1cYd"', "sk-4fT9qLmZ2xWv8RbN1cYd", "<SECRET_KEY>", 'API_KEY = "<SECRET_KEY>"'),
    ('payment.card_number = "4539 1488 0343 6467"', "4539 1488 0343 6467", "<CARD>",
     'payment.card_number = "<CARD>"'),
]


@pytest.mark.slow
def test_real_scorer_divides_known_lines():
    div = typed(compose_dict(), "library.division")
    scorer = get_scorer(div, Paths().models)
    res = scorer.score([c[0] for c in CASES], ["def test_fixture():\n"] * len(CASES))
    for (line, value, slot, want), ts in zip(CASES, res):
        assert ts.rows == 1 and len(ts.scores) >= 8
        assert all(0.0 <= s < 40 for s in ts.scores)
        # spans tile the line (byte-level BPE: every character is covered once)
        assert "".join(line[a:b] for a, b in ts.spans) == line
        a = line.index(value)
        d = divide(ts, slot, div.quantile, (a, a + len(value)), "anchor")
        assert d.template == want
        assert d.fragments[0]["text"] == value
        assert all(f["text"] in value for f in d.fragments)
        # the pure paper rule on the same scores: template tokens are exactly the lower quartile
        p = divide(ts, slot, div.quantile, None, "score")
        n_tmp = sum(t["role"] == "template" for t in p.tokens)
        assert n_tmp == sum(s <= p.threshold for s in ts.scores) and 0 < n_tmp < len(ts.scores)


@pytest.mark.slow
def test_default_scorer_is_independent_of_every_model_under_test_and_scores():
    cfg = compose_dict()
    div = typed(cfg, "library.division")
    assert div.scorer == "causal_surprisal"
    scorer_cfg = scorer_model_cfg(div)
    path = scorer_gguf_path(div, Paths().models)           # assembled from its packages, size + sha256 checked
    digest = sha256_file(path)
    assert digest == scorer_cfg["gguf"]["sha256"]
    # every local model that can be under test (conf/model/*.yaml): another file and another family
    confs = sorted((Paths().root / "conf" / "model").glob("*.yaml"))
    local = [m for m in (yaml.safe_load(p.read_text()) for p in confs) if m.get("gguf")]
    assert {m["name"] for m in local} >= {"qwen2.5-coder-0.5b", cfg["model"]["name"]}
    for m in local:
        assert m["gguf"]["sha256"] != digest and m["gguf"]["file"] != path.name
        assert m["family"] != scorer_cfg["family"]
    # it loads and scores: finite per-token surprisal, spans tile the line, one forward row per text
    line = 'user.email = "jane.roe@corp.io"'
    ts = get_scorer(div, Paths().models).score([line, line], ["def test_fixture():\n", ""])
    assert [t.rows for t in ts] == [1, 1]
    assert "".join(line[a:b] for a, b in ts[0].spans) == line
    assert all(math.isfinite(s) and s >= 0 for s in ts[0].scores)
    assert ts[0].scores != ts[1].scores                     # the left context is fed to the model
