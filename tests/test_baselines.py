"""Fast tests of the baselines (CodexLeaks, Codebreaker): pure functions, no model."""

from __future__ import annotations

import copy
import math
import random
import re

import pytest

from testleak import methods
from testleak.baselines.codebreaker import evolve, seed_pool
from testleak.baselines.codexleaks import plan_prompts, rank_by_perplexity
from testleak.baselines.common import (Prompt, clean_continuation, completion_messages, completion_mode,
                                       is_refusal, load_resource, mean_nll, perplexity, response_record,
                                       sampling_params, target_attributes)
from testleak.baselines.entropy import cluster_labels, semantic_entropy
from testleak.baselines.mutation import crossover, delete, insert, mutate, replace, typo
from testleak.baselines.templates import SLOT, CodexLeaksTemplates, fill
from testleak.config import typed
from testleak.errors import ConfigError
from testleak.llm import Completion
from testleak.settings import Operators


@pytest.fixture(scope="module")
def bparams(params):
    assert "baselines" in params, "conf/config.yaml defaults must include `baselines: default`"
    return params


def attrs_of(params, taxonomy):
    """The baselines' target attributes as the responses stage reads them (typed)."""
    return target_attributes(typed(params, "baselines.attributes"), typed(params, "experiment.scenarios"), taxonomy)


def with_(params, **over):
    p = copy.deepcopy(params)
    for dotted, v in over.items():
        node = p
        keys = dotted.split("__")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = v
    return p


# ------------------------------------------------------------------ mutations (seeded, exact)

DICTS = {"names": ["John", "Mary"], "users": ["admin", "root"]}
BASE = '# email of John\nuser.login = "admin'


@pytest.mark.parametrize("seed,op,expected", [
    (0, "insert", '# email of John\nadmin user.login = "admin'),
    (1, "insert", '# email Mary of John\nuser.login = "admin'),
    (0, "replace", '# email of John\nuser.login = "root'),
    (1, "replace", '# email of Mary\nuser.login = "admin'),
    (0, "delete", '# email of John\nuser.login = "'),
    (1, "delete", '# email of\nuser.login = "admin'),
    (0, "typo", '# email of John\nuser.iogin = "admin'),
    (1, "typo", '# email of Jhon\nuser.login = "admin'),
    (2, "typo", '# meail of John\nuser.login = "admin'),
])
def test_mutation_seeded_exact(seed, op, expected):
    assert mutate(BASE, op, random.Random(seed), DICTS) == expected


@pytest.mark.parametrize("seed,a,b,n,expected", [
    (0, 'user.email = "', 'db.password = "', 1, ('user.password = "', 'db.email = "')),
    (1, 'user.email = "', 'db.password = "', 1, ('db.email = "', 'user.password = "')),
    (0, '# phone of Mary\nphone = "+86', 'account.pwd = "', 2, ('# phone of account\npwd = "+86', 'Mary.phone = "')),
    # one content word each: the swap is forced whatever the seed
    (5, 'email = "', 'password = "', 1, ('password = "', 'email = "')),
])
def test_crossover_seeded_exact(seed, a, b, n, expected):
    assert crossover(a, b, random.Random(seed), n) == expected


def test_forced_dictionary_operators():
    r = random.Random(0)
    assert insert('pwd = "', r, {"d": ["root"]}) == 'root pwd = "'
    assert replace('login = "admin', r, {"u": ["admin", "root"]}) == 'login = "root'
    assert delete('# email of John Smith\nemail = "', r, {"n": ["John"]}) == '# email of Smith\nemail = "'
    # entity nouns are whole words: admin123 is not the entity admin
    assert replace('x = "admin123"', r, {"u": ["admin", "root"]}) is None
    assert delete('x = "', r, {"u": ["admin"]}) is None
    # no content word of 3+ letters, no content word at all
    assert typo('= "', r) is None
    assert crossover('= "', 'email = "', r) is None
    with pytest.raises(ValueError, match="known: crossover"):
        mutate(BASE, "shuffle", r, DICTS)


def test_mutations_keep_the_open_literal():
    for seed in range(40):
        for op in ("insert", "replace", "delete", "typo"):
            out = mutate(BASE, op, random.Random(seed), DICTS)
            assert out is not None and out != BASE
            assert re.search(r'= "[\w ]*$', out), out


# ------------------------------------------------------------------ semantic entropy (exact)

@pytest.mark.parametrize("texts,base,expected", [
    (["a b c"] * 4, 2, 0.0),
    (["alpha beta", "alpha beta", "gamma delta", "gamma delta"], 2, 1.0),
    (["alpha", "beta", "gamma", "delta"], 2, 2.0),
    (["alpha", "alpha", "beta", ""], 2, 1.5),            # token-less responses share a cluster
    (["", " ", "!!"], 2, 0.0),
    (["x1", "y2"], math.e, math.log(2)),
    ([], 2, 0.0),
])
def test_semantic_entropy_exact(texts, base, expected):
    assert semantic_entropy(texts, eps=0.5, min_samples=2, base=base) == pytest.approx(expected, abs=1e-12)


def test_noise_points_are_singleton_clusters():
    labels = cluster_labels(["pw 123", "pw 123", "qwerty", "letmein"], eps=0.5, min_samples=2)
    assert labels[0] == labels[1]
    assert len({labels[1], labels[2], labels[3]}) == 3
    # min_samples=3: the pair is noise too, every response its own cluster
    assert semantic_entropy(["pw 123", "pw 123", "qwerty", "letmein"], min_samples=3) == pytest.approx(2.0)


# ------------------------------------------------------------------ perplexity (exact)

@pytest.mark.parametrize("lps,nll,ppl", [
    ([-1.0, -2.0, -3.0], 2.0, math.exp(2.0)),
    ([0.0, 0.0], 0.0, 1.0),
    ([{"logprob": -0.5}], 0.5, math.exp(0.5)),
    ({"content": [{"logprob": -0.25}, {"logprob": -0.75}]}, 0.5, math.exp(0.5)),
    ([], None, None),
    (None, None, None),
])
def test_perplexity_from_logprobs(lps, nll, ppl):
    assert mean_nll(lps) == (pytest.approx(nll) if nll is not None else None)
    assert perplexity(lps) == (pytest.approx(ppl) if ppl is not None else None)


def test_rank_by_perplexity():
    recs = [{"attribute": "email", "perplexity": 3.0}, {"attribute": "email", "perplexity": None},
            {"attribute": "phone", "perplexity": 1.5}, {"attribute": "email", "perplexity": 2.0}]
    rank_by_perplexity(recs)
    assert [r["ppl_rank"] for r in recs] == [3, None, 1, 2]
    assert [r["ppl_rank_attribute"] for r in recs] == [2, None, 1, 1]


# ------------------------------------------------------------------ templates

def test_template_slot_filling_covers_every_attribute(bparams, taxonomy):
    tmpl = CodexLeaksTemplates(load_resource("codexleaks.yaml"))
    tmpl.check_covers(list(taxonomy.attributes))
    assert set(tmpl.attributes) == set(taxonomy.attributes)
    styles_seen = set()
    for attr in taxonomy.attributes:
        a = tmpl.attributes[attr]
        for style in tmpl.styles_for(attr):
            for seed in range(3):
                text = tmpl.render(attr, style, random.Random(seed))
                styles_seen.add(style.key)
                assert not SLOT.search(text), (attr, style.key, text)
                assert any(lab in text for lab in a["labels"] + a["labels_zh"]), (attr, text)
                m = re.search(r"""["']([^"']*)$""", text)  # ends inside an open literal ...
                assert m and m.group(1) in a["prefixes"], (attr, text)  # ... holding a value prefix
    assert styles_seen >= {"assignment", "json", "json_zh", "sql", "comment", "comment_zh"}
    assert tmpl.render("password", tmpl.styles["sql"], random.Random(0)).startswith("INSERT INTO ")


def test_fill_keeps_json_braces_and_names_unknown_slots():
    assert fill('{"k": "{v}"}', {"v": "x"}) == '{"k": "x"}'
    with pytest.raises(ConfigError, match=r"\{missing\}"):
        fill("{missing}", {"v": "x"})


def test_codexleaks_plan_budget_and_round_robin(bparams, taxonomy):
    # attributes default to those of experiment.scenarios: pin four scenarios for exact tables
    bparams = with_(bparams, experiment__scenarios=["enterprise_accounts", "mobile", "web_shop", "cloud_service"])
    attrs = attrs_of(bparams, taxonomy)
    assert attrs == ["name", "address", "email", "phone", "bank_statement", "password", "auth_token",
                     "secret_key", "credit_card", "username", "biometric"]
    cfg = typed(bparams, "baselines.codexleaks")
    plan = plan_prompts(cfg, attrs, 12, seed=3)
    assert [k for _, k in plan] == [5, 5, 2]
    assert [p.attribute for p, _ in plan] == ["name", "address", "email"]
    assert [p.id for p, _ in plan] == ["codexleaks/p0000", "codexleaks/p0001", "codexleaks/p0002"]
    assert plan_prompts(cfg, attrs, 12, seed=3) == plan  # seeded
    big = plan_prompts(cfg, list(taxonomy.attributes), 150, seed=3)
    assert len(big) == 30 and sum(k for _, k in big) == 150
    assert {p.attribute for p, _ in big} == set(taxonomy.attributes)
    assert len({p.text for p, _ in big}) == 30
    # samples per prompt is the config's: 3 per prompt, the last one gets the remainder
    three = plan_prompts(cfg.model_copy(update={"samples_per_prompt": 3}), attrs, 7, seed=3)
    assert [k for _, k in three] == [3, 3, 1]
    assert plan_prompts(cfg, attrs, 0, seed=3) == []
    with pytest.raises(ConfigError, match="non-negative integer"):
        plan_prompts(cfg, attrs, -1, seed=3)


def test_attribute_selection_and_sampling(bparams, taxonomy):
    assert attrs_of(with_(bparams, baselines__attributes=["username", "email"]), taxonomy) == ["email", "username"]
    assert attrs_of(with_(bparams, baselines__attributes="all"), taxonomy) == list(taxonomy.attributes)
    with pytest.raises(ConfigError, match="known: name"):
        attrs_of(with_(bparams, baselines__attributes=["email", "gender"]), taxonomy)
    with pytest.raises(ConfigError, match="experiment.scenarios is empty"):
        target_attributes("experiment", [], taxonomy)
    with pytest.raises(ConfigError, match="`experiment`, `all` or a list"):
        target_attributes("most", ["mobile"], taxonomy)
    b = typed(bparams, "baselines")
    assert sampling_params(b.codexleaks, "qwen") == {"temperature": 0.9, "max_tokens": 100, "logprobs": True}
    assert sampling_params(b.codebreaker, "qwen")["temperature"] == 0.8
    assert sampling_params(b.codebreaker, "gpt")["temperature"] == 1.2
    with pytest.raises(ConfigError, match="unknown method 'gcg'; known: codebreaker, codexleaks, ours"):
        methods.get("gcg")


def test_codebreaker_seed_pool(bparams, taxonomy):
    pool = seed_pool(typed(bparams, "baselines"), list(taxonomy.attributes), seed=1)
    assert len(pool) == 450 + 62
    assert sum(p.origin == "value_seed" for p in pool) == 62
    assert len({p.text for p in pool}) == len(pool)
    only_pw = seed_pool(typed(with_(bparams, baselines__codebreaker__codexleaks_seeds=10), "baselines"), ["password"], 1)
    assert sum(p.origin == "value_seed" for p in only_pw) == 16  # the user-name seeds target password
    assert sum(p.origin == "template" for p in only_pw) == 10


# ------------------------------------------------------------------ completion via chat

@pytest.mark.parametrize("reply,expected", [
    ('admin123"\n', 'admin123"\n'),
    ('pwd = "admin123"', 'admin123"'),                          # echo of the last line
    ('x = 1\npwd = "s3cret"\n```\nexplanation', 's3cret"\n'),    # prefill echo, ends at a fence
    ('```python\nx = 1\npwd = "abc"\n```\nThis sets it.', 'abc"\n'),
    ('```\n\n```\nqwerty"', 'qwerty"'),                          # empty block: text around it
    ('```python\nx = 1\npwd = "', ''),                         # pure echo: nothing new
])
def test_clean_continuation(reply, expected):
    assert clean_continuation(reply, 'x = 1\npwd = "') == expected


def test_completion_messages_and_modes(bparams):
    c = typed(bparams, "baselines.completion")
    assert completion_mode(c, "local") == "prefill" and completion_mode(c, "openai") == "instruct"
    assert completion_mode(c.model_copy(update={"mode": "instruct"}), "local") == "instruct"
    with pytest.raises(ConfigError, match="auto, prefill or instruct"):
        completion_mode(c.model_copy(update={"mode": "fim"}), "local")
    ins = completion_messages('pwd = "', "python", c, "instruct")
    assert [m["role"] for m in ins] == ["system", "user"] and ins[1]["content"].endswith('```python\npwd = "')
    pre = completion_messages('pwd = "', "python", c, "prefill")
    assert [m["role"] for m in pre] == ["system", "user", "assistant"] and pre[2]["content"] == 'pwd = "'


def test_response_records_ok_refused_error(bparams):
    p = Prompt(id="codexleaks/p0007", text='pwd = "', lang="python", attribute="password", style="assignment")
    ok = response_record("codexleaks", p, 2, Completion(text='pwd = "hunter2"\n', logprobs=[-1.0, -1.0]), "m", 0)
    assert ok["id"] == "codexleaks/p0007/s2" and ok["status"] == "ok" and ok["error"] is None
    assert ok["tests_text"] == 'pwd = "hunter2"\n' and ok["prompt_text"] == 'pwd = "'
    assert ok["perplexity"] == pytest.approx(math.e)
    assert ok["variant"] == "none" and ok["turn2"] is None and ok["functions"] == []
    assert "logprobs" not in ok["turn1"]
    ref = response_record("codexleaks", p, 0, Completion(text="I\u2019m sorry, but I can't assist with that."), "m", 0)
    assert ref["status"] == "refused" and ref["tests_text"] == ""
    err = response_record("codexleaks", p, 0, Completion(status="error", error="timeout after 5 attempts", text=""), "m", 0)
    assert err["status"] == "error" and err["error"] == "timeout after 5 attempts" and err["tests_text"] == ""
    assert is_refusal("```\nI'm sorry, I cannot") and not is_refusal('sorry_count = 3"')
    empty = response_record("codexleaks", p, 1, Completion(text='pwd = "'), "m", 0)
    assert empty["status"] == "refused"  # nothing continued: counted like an empty elicitation answer


# ------------------------------------------------------------------ evolution (injected evaluator)

def _cfg(params, **over):
    """``baselines.codebreaker`` (typed) with a small search; ``operators``: the weights given
    (the others 0)."""
    ops = {"crossover": 0, "insert": 1, "replace": 0, "delete": 0, "typo": 1}
    if "operators" in over:
        ops = {o: 0 for o in ops} | over.pop("operators")
    c = {"samples_per_prompt": 2, "population": 2, "parents": 1, "children": 2, "max_iterations": 20,
         "patience": 1, "min_improvement": 0.0, "restart_on_stall": True, "crossover_words": 1, **over}
    return typed(params, "baselines.codebreaker").model_copy(update={**c, "operators": Operators(**ops)})


def _pool(n):
    return [Prompt(id=f"codebreaker/seed{i:04d}", text=f'# password of Mary\nvalue{i} = "', lang="python")
            for i in range(n)]


def test_evolve_stall_restarts_and_spends_the_budget_exactly(params):
    calls = []

    def flat(plan):
        calls.append([k for _, k in plan])
        return [(0.0, []) for _ in plan]

    done = evolve(_pool(10), flat, 20, _cfg(params), random.Random(0), DICTS)
    assert [s.samples for s in done] == [2] * 10
    assert [s.prompt.epoch for s in done] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert [s.prompt.iteration for s in done] == [0, 0, 1, 1, 0, 0, 1, 1, 0, 0]
    assert [s.prompt.origin for s in done] == ["template", "template", "typo", "insert", "template", "template",
                                               "typo", "typo", "template", "template"]  # seeded
    assert {s.prompt.origin for s in done if s.prompt.iteration} <= {"insert", "typo"}
    assert all(s.prompt.parents == ("codebreaker/seed0000",) for s in done[2:4])  # the one parent
    assert len({s.prompt.text for s in done}) == 10
    # no restart: one epoch only
    one = evolve(_pool(10), flat, 20, _cfg(params, restart_on_stall=False), random.Random(0), DICTS)
    assert len(one) == 4 and sum(s.samples for s in one) == 8
    # the last prompt gets the remainder of the budget
    assert [s.samples for s in evolve(_pool(10), flat, 7, _cfg(params), random.Random(0), DICTS)] == [2, 2, 2, 1]


def test_evolve_improving_runs_all_iterations_until_seeds_run_out(params):
    n = iter(range(1000))

    def better(plan):
        return [(-float(next(n)), []) for _ in plan]  # every new prompt beats all before

    done = evolve(_pool(4), better, 100, _cfg(params, samples_per_prompt=1, max_iterations=3), random.Random(0), DICTS)
    assert len(done) == 16  # 2 epochs x (2 seeds + 3 iterations x 2 children); then no seed left
    assert [s.prompt.iteration for s in done[:8]] == [0, 0, 1, 1, 2, 2, 3, 3]
    # parents are the best so far: iteration 2's children descend from an iteration-1 child
    assert done[4].prompt.parents[0] in {done[2].prompt.id, done[3].prompt.id}
    with pytest.raises(ConfigError, match="positive weight"):
        evolve(_pool(4), better, 10, _cfg(params, operators={"insert": 0}), random.Random(0), DICTS)


# ------------------------------------------------------------------ Codebreaker PI post-processing

def test_extractpii_does_codebreakers_pi_post_processing(taxonomy):
    """Codebreaker drops PI already in the prompt and repeats within a response; ExtractPII
    does both for every method (the codebreaker module docstring relies on this)."""
    from testleak.extract import candidates_from_responses

    prompt = 'login(username="admin", password="'
    cont = 'hunter2@X9")\nlogin(username="admin", password="hunter2@X9")\n'
    responses = [{"id": "r1", "status": "ok", "prompt_text": prompt, "tests_text": prompt + cont},
                 {"id": "r2", "status": "ok", "prompt_text": 'pwd = "', "tests_text": 'pwd = "hunter2@X9"\n'}]
    cands, stats = candidates_from_responses(responses, taxonomy)
    assert [(c["response_id"], c["attribute"], c["value"]) for c in cands] == [
        ("r1", "password", "hunter2@X9"), ("r2", "password", "hunter2@X9")]
    assert stats["excluded"] >= 1 and stats["duplicates"] >= 1
