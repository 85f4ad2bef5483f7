"""Division with the real default scorer (packaged Qwen2.5-Coder-0.5B GGUF, causal surprisal)."""

import pytest

from testleak.config import compose_dict
from testleak.library.division import divide, get_scorer
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
    div = compose_dict()["library"]["division"]
    scorer = get_scorer(div, Paths().models)
    res = scorer.score([c[0] for c in CASES], ["def test_fixture():\n"] * len(CASES))
    for (line, value, slot, want), ts in zip(CASES, res):
        assert ts.rows == 1 and len(ts.scores) >= 8
        assert all(0.0 <= s < 40 for s in ts.scores)
        # spans tile the line (byte-level BPE: every character is covered once)
        assert "".join(line[a:b] for a, b in ts.spans) == line
        a = line.index(value)
        d = divide(ts, slot, div["quantile"], (a, a + len(value)), "anchor")
        assert d.template == want
        assert d.fragments[0]["text"] == value
        assert all(f["text"] in value for f in d.fragments)
        # the pure paper rule on the same scores: template tokens are exactly the lower quartile
        p = divide(ts, slot, div["quantile"], None, "score")
        n_tmp = sum(t["role"] == "template" for t in p.tokens)
        assert n_tmp == sum(s <= p.threshold for s in ts.scores) and 0 < n_tmp < len(ts.scores)
