"""Equal-cost budgets of the baselines (issue 14 item 5, testleak/equalcost.py): the stop rule on
known token counts, the composition of match_ours (per model, never an ablation run), the config
errors, and the DVC dep of a baseline's responses stage on ours' responses stats."""

from __future__ import annotations

import json

import pytest

from testleak.config import compose_dict
from testleak.equalcost import MATCH_OURS, ResponseBudget, fill_budgets, reference_run
from testleak.errors import ConfigError, DataError
from testleak.pipeline import run_budget


def _drive(budget: ResponseBudget, tokens: list[int]) -> list[int]:
    """Feed answers of known completion tokens (in request order) as a baseline would: ask for
    the allowance, 'send' that many, record their tokens. Returns the batch sizes."""
    i = 0
    sizes = []
    while i < len(tokens):
        n = budget.take(len(tokens) - i)
        if n <= 0:
            break
        budget.record(tokens[i:i + n])
        sizes.append(n)
        i += n
    return sizes


def test_stop_rule_reaches_the_target_within_one_response_and_never_passes_it_by_a_batch():
    b = ResponseBudget(target_tokens=1000, max_responses=500, max_tokens_per_response=100)
    sizes = _drive(b, [37] * 500)
    # batch k asks floor((T - C) / M) requests (at least 1): no batch can cross T by more than one answer
    assert sizes[:3] == [10, 6, 4]          # (1000-0)//100, (1000-370)//100, (1000-592)//100
    assert b.completion_tokens >= 1000 and b.completion_tokens - 37 < 1000
    assert b.issued == 28 and b.completion_tokens == 28 * 37      # ceil(1000 / 37) = 28
    assert b.stop_reason == "target reached"
    s = b.summary()
    assert s["within_tolerance"] and s["ratio"] == pytest.approx(1036 / 1000, abs=1e-4)
    assert s["target_completion_tokens"] == 1000 and s["responses_issued"] == 28


def test_stop_rule_is_deterministic_given_the_answers():
    toks = [5, 90, 12, 0, 44, 100, 3, 61, 7, 28] * 20
    a = ResponseBudget(target_tokens=700, max_responses=200, max_tokens_per_response=100)
    b = ResponseBudget(target_tokens=700, max_responses=200, max_tokens_per_response=100)
    assert _drive(a, toks) == _drive(b, toks)            # a rerun from the cache replays the same counts
    assert a.issued == b.issued and a.completion_tokens == b.completion_tokens
    # the prefix it stopped at is the first one whose tokens reach the target
    cum = [sum(toks[:k]) for k in range(len(toks) + 1)]
    assert a.issued == next(k for k, c in enumerate(cum) if c >= 700)


def test_the_hard_cap_stops_a_run_that_cannot_reach_the_target():
    b = ResponseBudget(target_tokens=10_000, max_responses=12, max_tokens_per_response=100)
    _drive(b, [0] * 50)                  # e.g. every call failed: no tokens
    assert b.issued == 12 and b.completion_tokens == 0
    s = b.summary()
    assert s["stop"] == "max_responses" and s["within_tolerance"] is False


def test_without_max_tokens_the_largest_answer_seen_bounds_the_batches():
    b = ResponseBudget(target_tokens=100, max_responses=100)
    sizes = _drive(b, [10] * 100)
    assert sizes[0] == 1                 # nothing seen yet: one request
    assert sizes[1] == 9                 # (100 - 10) // 10
    assert b.completion_tokens == 100 and b.issued == 10


def test_a_fixed_budget_is_the_old_number_of_responses():
    b = ResponseBudget(responses=16)
    assert _drive(b, [50] * 40) == [16]
    assert b.summary()["stop"] == "responses" and b.kind == "responses"


def test_default_experiment_composes_match_ours_and_names_ours_stats_as_dep():
    p = compose_dict()
    exp = p["experiment"]
    assert exp["baseline_budget"] == MATCH_OURS and exp["baseline_max_responses"] >= 1
    runs = exp["runs"]
    assert runs["ours"]["budget"]["kind"] == "own"
    for r in ("codexleaks", "codebreaker"):
        b = runs[r]["budget"]
        assert b == {"kind": MATCH_OURS, "responses": None, "reference": "ours",
                     "max_responses": exp["baseline_max_responses"], "unit": "test_cases",
                     "reads": "data/runs/ours/responses_stats.json"}


def test_dvc_yaml_makes_ours_stats_a_dep_of_the_baselines_responses():
    from testleak.graph import declarations

    resp = next(s for s in declarations() if s.name == "responses")
    assert "${item.budget.reads}" in resp.deps
    assert "experiment.baseline_budget" not in resp.params   # read through the run's own entry


def test_multi_model_and_ablation_runs_match_the_same_models_final_ours():
    proto = {"ours": {"method": "ours", "round": 0, "ablation": {"name": "none"}},
             "ours_r1": {"method": "ours", "round": 1, "ablation": {"name": "none"}},
             "ours_no_fl": {"method": "ours", "round": 0, "ablation": {"name": "no_fl"}},
             "codexleaks": {"method": "codexleaks", "round": 0}}
    assert reference_run(proto, "none") == "ours_r1"            # the run reported as "ours", never an ablation
    p = compose_dict(["experiment=tiny_two_models", "experiment.baseline_budget=match_ours",
                      "experiment.baseline_max_responses=50",
                      "+experiment.protocol.codexleaks={method: codexleaks, round: 0, "
                      "library: testleak/resources/prior_library.yaml}"])
    runs = p["experiment"]["runs"]
    for mid in ("qwen-a", "qwen-b"):
        b = runs[f"codexleaks--{mid}"]["budget"]
        assert b["reference"] == f"ours--{mid}" and b["reads"] == f"data/runs/ours--{mid}/responses_stats.json"
        assert runs[f"ours--{mid}"]["budget"]["kind"] == "own"


@pytest.mark.parametrize("value", ["0", "3.7", "ten", "true"])
def test_a_bad_baseline_budget_is_one_line_naming_key_value_and_expectation(value):
    with pytest.raises(ConfigError) as ei:
        compose_dict([f"experiment.baseline_budget={value}"])
    msg = str(ei.value)
    assert len(msg.splitlines()) == 1, msg
    assert msg.startswith("experiment.baseline_budget = ") and "an integer >= 1" in msg and "match_ours" in msg
    assert f"override 'experiment.baseline_budget={value}'" in msg


def test_match_ours_needs_a_cap_and_an_ours_run():
    with pytest.raises(ConfigError, match=r"^experiment.baseline_max_responses = None .*an integer >= 1"):
        compose_dict(["experiment.baseline_max_responses=null"])


def test_run_budget_reads_the_reference_stats(tmp_path):
    p = compose_dict(["experiment.baseline_unit=completion_tokens"])
    with pytest.raises(DataError, match="dvc repro responses@ours"):
        run_budget(p, "codexleaks", tmp_path)
    f = tmp_path / "data/runs/ours/responses_stats.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps({"llm": {"calls": 29, "prompt_tokens": 8344, "completion_tokens": 11333}, "partial": False}))
    b = run_budget(p, "codexleaks", tmp_path, max_tokens_per_response=100)
    assert b.target_tokens == 11333 and b.cap == p["experiment"]["baseline_max_responses"] and b.reference == "ours"
    assert run_budget(p, "ours", tmp_path) is None
    f.write_text(json.dumps({"llm": {"completion_tokens": 5}, "partial": True}))
    with pytest.raises(DataError, match="partial"):
        run_budget(p, "codexleaks", tmp_path)
    # the default unit: ours' test cases (the tests it wrote), as its responses stats count them
    f.write_text(json.dumps({"llm": {"completion_tokens": 500}, "partial": False, "test_cases": 31,
                             "tests_requested": 40}))
    b = run_budget(compose_dict(), "codexleaks", tmp_path)
    assert (b.unit, b.target_tokens) == ("test_cases", 31)


def test_hand_written_runs_get_the_budget_composition_would_give(tmp_path):
    p = compose_dict(["experiment=tiny", "experiment.baseline_budget=3", "max_error_share=0.4"])
    p["experiment"]["runs"]["codexleaks"] = {"method": "codexleaks", "round": 0, "library": "x"}
    assert run_budget(p, "codexleaks", tmp_path).summary()["responses"] == 3   # no budget: experiment.baseline_budget
    fill_budgets(p)
    assert p["experiment"]["runs"]["codexleaks"]["budget"]["responses"] == 3
    b = run_budget(p, "codexleaks", tmp_path)        # the entry's budget, failures bounded by max_error_share
    assert (b.responses, b.max_failed) == (3, 1)


# ----------------------------------------------------------------------------- both baselines, real gateway

def _fake_params(srv) -> dict:
    p = compose_dict()
    p["model"].update({"name": "fake", "provider": "openai", "api_model": "fake-model", "base_url": srv.base_url,
                       "base_url_env": None, "api_key_env": "FAKE_KEY", "gguf": None, "server": None})
    p["model"]["limits"].update({"concurrency": 4, "max_retries": 0})
    p["baselines"]["attributes"] = ["password", "email"]
    return p


def _tokens_of(body) -> int:
    """Completion tokens the fake reports for a request: known, varied, a function of the request."""
    import hashlib

    key = json.dumps(body["messages"], sort_keys=True) + str(body.get("seed"))
    return 5 + int(hashlib.sha256(key.encode()).hexdigest(), 16) % 90


@pytest.mark.parametrize("method", ["codexleaks", "codebreaker"])
def test_baselines_spend_the_target_tokens_through_the_gateway(method, tmp_path, monkeypatch):
    """CodexLeaks and Codebreaker through the real gateway against a local OpenAI-protocol server
    whose answers have known completion tokens: they stop at the first response whose tokens reach
    the target, keep every response issued, and a rerun from the response cache sends nothing and
    stops at the same response."""
    from testleak.baselines import run_codebreaker, run_codexleaks
    from testleak.config import typed
    from testleak.llm import open_gateway
    from testleak.paths import Paths
    from tests.fake_openai import FakeOpenAI, completion_body

    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    runner = {"codexleaks": run_codexleaks, "codebreaker": run_codebreaker}[method]
    with FakeOpenAI() as srv:
        srv.answer = lambda body: completion_body("'mila.k@tutanota.de'\n", completion_tokens=_tokens_of(body))
        p = _fake_params(srv)
        results = []
        for attempt in range(2):
            before = len(srv.requests)
            budget = ResponseBudget(target_tokens=1500, max_responses=400, reference="ours")
            with open_gateway(p["model"], paths=Paths(tmp_path), cache_dir=tmp_path / "cache") as gw:
                recs = runner(typed(p, "baselines"), p["model"], ["email", "password"], gw, budget, seed=3)
            sent = len(srv.requests) - before
            toks = [r["turn1"]["usage"]["completion_tokens"] for r in recs]
            results.append((len(recs), sum(toks), sent, budget.summary()))
            assert len(recs) == budget.issued                                   # every response issued is kept
            assert sum(toks) == budget.completion_tokens >= 1500
            assert sum(toks) - toks[-1] < 1500        # stopped at the first prefix that reaches it (answers < M)
            assert sum(toks) < 1500 + 100                                       # max_tokens 100 of the baseline
            assert budget.max_tokens_per_response == 100 and budget.summary()["within_tolerance"]
    (n0, t0, sent0, s0), (n1, t1, sent1, s1) = results
    assert sent0 == n0 and sent1 == 0                 # no wasted request; the rerun is served from the cache
    assert (n1, t1) == (n0, t0) and s1 == s0           # deterministic given the cached answers


def test_the_files_budgets_are_read_from_are_where_paths_puts_them():
    from testleak.config import ROOT
    from testleak.equalcost import QUESTIONS_STATS, responses_stats_path
    from testleak.paths import Paths

    paths = Paths(ROOT)
    assert QUESTIONS_STATS == paths.questions_stats.relative_to(ROOT).as_posix()
    assert responses_stats_path("ours--m") == paths.stats("responses", "ours--m").relative_to(ROOT).as_posix()


# ----------------------------------------------------------------------------- elicitation seeds (issue 15)

def _seeded_runs(p: dict, seeds) -> dict:
    p["experiment"]["runs"] = {f"{m}_s{s}": {"method": m, "round": 0, "library": "prior", "model": p["model"]["name"], "model_params": "model",
                                             "elicitation_seed": s}
                               for m in ("ours", "codexleaks") for s in seeds}
    return p


def test_elicitation_seeds_change_keys_sampling_seed_prompts_and_hints():
    """Seed 0 keeps the cache keys of a gateway without a seed; another seed changes the key and
    the local server's sampling seed of the same request, and the rng seed of hints and baselines."""
    from testleak.elicit.responses import ElicitSettings
    from testleak.llm import ChatRequest
    from testleak.llm.gateway import SEED_STRIDE, Gateway

    p = compose_dict()       # the local embedded model: no server starts before a call
    m = [{"role": "user", "content": "write a function"}]
    prep = {s: Gateway(p["model"], cache_dir="/nonexistent", seed=s)._prepare(ChatRequest(m, 2)) for s in (0, 1, 2)}
    plain = Gateway(p["model"], cache_dir="/nonexistent")._prepare(ChatRequest(m, 2))
    assert prep[0][0] == plain[0] and prep[0][2]["seed"] == 2 == plain[2]["seed"]
    assert len({prep[s][0] for s in prep}) == 3                                   # three different cache keys
    assert [prep[s][2]["seed"] for s in (0, 1, 2)] == [2, SEED_STRIDE + 2, 2 * SEED_STRIDE + 2]
    _seeded_runs(p, [0, 1])
    st = {s: ElicitSettings.from_params(p, f"ours_s{s}") for s in (0, 1)}
    assert st[0].seed == p["seed"] and st[1].seed == p["seed"] + SEED_STRIDE and st[1].elicitation_seed == 1
    p["experiment"]["runs"]["ours_s1"]["elicitation_seed"] = -1
    with pytest.raises(ConfigError, match=r"experiment.runs.ours_s1.elicitation_seed = -1: expected an integer >= 0"):
        ElicitSettings.from_params(p, "ours_s1")


def test_each_seed_sends_its_own_requests_and_ours_under_a_token_target_repeats_questions(tmp_path, monkeypatch):
    """Through the real gateway and one shared response cache: seed 1 of ours asks the same
    questions as seed 0 but is not served seed 0's answers; CodexLeaks draws other prompts; a rerun
    of a seed sends nothing. Under a token target (the canary calibration's ablations) ours asks
    its questions again with sample index 1, 2, ... and stops by the equalcost rule."""
    from testleak import pipeline
    from testleak.llm import open_gateway
    from testleak.paths import Paths
    from tests.fake_openai import FakeOpenAI, completion_body

    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    code = "```python\ndef save_contact(email, phone):\n    db.store(email=email, phone=phone)\n```\n"
    qs = [{"id": f"q{i}", "scenario": "game", "attributes": ["email"], "text": f"Store a player's email ({i})."}
          for i in range(2)]
    with FakeOpenAI() as srv:
        srv.answer = lambda body: completion_body(code if len(body["messages"]) == 1 else "assert f('x@y.org')\n",
                                                  completion_tokens=_tokens_of(body))
        p = _seeded_runs(_fake_params(srv), [0, 1])
        p["experiment"]["baseline_budget"] = 6
        p["model"]["sampling"]["max_tokens"] = 100
        sent: dict[str, list] = {}
        recs: dict[str, list] = {}
        for run in ("ours_s0", "ours_s1", "codexleaks_s0", "codexleaks_s1", "ours_s1"):
            before = len(srv.requests)
            with open_gateway(p["model"], paths=Paths(tmp_path), cache_dir=tmp_path / "cache",
                              seed=p["experiment"]["runs"][run]["elicitation_seed"]) as gw:
                recs[run], _ = pipeline.responses(p, run, gw, qs, None)
            sent.setdefault(run, []).append(srv.requests[before:])
        assert [len(x) for x in sent["ours_s0"]] == [4] and all(r["status"] == "ok" for r in recs["ours_s0"])
        assert len(sent["ours_s1"][0]) == 4 and sent["ours_s1"][1] == []       # new answers; the rerun: cache only
        assert sorted(json.dumps(r["json"]["messages"]) for r in sent["ours_s1"][0]) == \
            sorted(json.dumps(r["json"]["messages"]) for r in sent["ours_s0"][0])   # same requests, other samples
        prompts = {run: {json.dumps(r["json"]["messages"]) for r in sent[run][0]} for run in ("codexleaks_s0", "codexleaks_s1")}
        assert len(sent["codexleaks_s0"][0]) == len(sent["codexleaks_s1"][0]) == 6
        assert prompts["codexleaks_s0"] != prompts["codexleaks_s1"]                 # another prompt plan

        # ours under a token target: 2 questions, max 2 x 100 completion tokens per response
        budget = ResponseBudget(target_tokens=600, max_responses=50, reference="ours_s0")
        with open_gateway(p["model"], paths=Paths(tmp_path), cache_dir=tmp_path / "cache", seed=1) as gw:
            got, stats = pipeline.responses(p, "ours_s1", gw, qs, None, budget)
    toks = [r["turn1"]["usage"]["completion_tokens"] + r["turn2"]["usage"]["completion_tokens"] for r in got]
    assert budget.max_tokens_per_response == 200 and sum(toks) == budget.completion_tokens >= 600 > sum(toks) - 200
    assert len(got) > len(qs) and [r["sample"] for r in got] == [i // 2 for i in range(len(got))]
    assert [r["question_id"] for r in got] == [f"q{i % 2}" for i in range(len(got))]
    assert len({r["id"] for r in got}) == len(got)                                 # repeated questions: new ids
    assert stats["budget"]["stop"] == "target reached" and stats["budget"]["reference"] == "ours_s0"


@pytest.mark.parametrize("unit, target, per_response, issued", [
    ("responses", 7, (30, 5), 7),            # one per response, whatever its tokens
    ("test_cases", 7, (30, 5), 7),           # a baseline response is one test case
    ("completion_tokens", 100, (30, 5), 4),  # 4 x 30 >= 100
    ("tokens", 100, (30, 5), 3),             # 3 x (30 + 5) >= 100
    ("usd", 1.0, (30, 5), 3),                # at 0.01 USD per token: 3 x 0.35 >= 1.0
])
def test_a_baseline_matches_ours_in_any_unit(unit, target, per_response, issued):
    from testleak.equalcost import ResponseBudget

    b = ResponseBudget(target_tokens=target, max_responses=100, max_tokens_per_response=30, unit=unit,
                       usd=lambda p, c: 0.01 * (p + c))
    while (n := b.allowance()) > 0:
        b.record([per_response[0]] * n, [False] * n, [per_response[1]] * n)
    s = b.summary()
    assert (s["stop"], s["responses_issued"], s["unit"], s["target"]) == ("target reached", issued, unit, target)
    assert target <= s["spent"] < target + max(1, (per_response[0] + per_response[1]) * (0.01 if unit == "usd" else 1))


def test_baseline_unit_composes_into_the_run_budget_and_a_bad_unit_is_one_line():
    from testleak.config import compose
    from testleak.errors import ConfigError

    runs = compose(["experiment.baseline_unit=responses"])["experiment"]["runs"]
    assert runs["codexleaks"]["budget"]["unit"] == "responses" and runs["ours"]["budget"]["kind"] == "own"
    with pytest.raises(ConfigError) as ei:
        compose(["experiment.baseline_unit=words"])
    assert "baseline_unit" in str(ei.value) and "\n" not in str(ei.value).strip()


def test_the_reference_spend_in_each_unit(tmp_path):
    from testleak.equalcost import reference_amount

    st = {"responses": 8, "test_cases": 40, "llm": {"prompt_tokens": 300, "completion_tokens": 500, "usd": 0.25}}
    assert [reference_amount(st, "data/runs/ours/responses_stats.json", u)
            for u in ("responses", "test_cases", "completion_tokens", "tokens", "usd")] == [8, 40, 500, 800, 0.25]


def test_the_common_budget_goes_on_until_ours_spend_is_reached_in_every_unit(tmp_path):
    """experiment.baseline_unit: every (issue 26 item 4): short answers reach ours' completion tokens
    long before its 40 test cases; the common budget stops only when every unit is reached."""
    from testleak.equalcost import COMMON_UNITS, EVERY, budget_of

    st = {"responses": 8, "test_cases": 40, "llm": {"prompt_tokens": 300, "completion_tokens": 500}}
    only_tokens = budget_of(st, "ours_stats.json", "completion_tokens", max_responses=200, max_tokens_per_response=100)
    common = budget_of(st, "ours_stats.json", EVERY, max_responses=200, max_tokens_per_response=100)
    assert common.targets == {"responses": 8, "test_cases": 40, "completion_tokens": 500, "tokens": 800}
    _drive(only_tokens, [25] * 200)
    _drive(common, [25] * 200)
    assert only_tokens.issued == 20                      # 20 x 25 = 500 completion tokens
    # test cases bind: 40 responses (a baseline response is one test case); tokens: 40 x 25 = 1000 >= 800
    assert common.issued == 40 and common.stop_reason == "target reached"
    assert all(common.spent_by[u] >= common.targets[u] for u in COMMON_UNITS)
    s = common.summary()
    assert s["unit"] == EVERY and s["targets"]["test_cases"] == 40 and s["spent_by"]["completion_tokens"] == 1000
    assert s["target_completion_tokens"] == 500
    # the cap still stops it, and says so
    capped = budget_of(st, "ours_stats.json", EVERY, max_responses=30, max_tokens_per_response=100)
    _drive(capped, [25] * 200)
    assert capped.issued == 30 and capped.stop_reason == "max_responses"
    # the experiment key takes it; another word is one line naming the choices
    from testleak.config import compose

    runs = compose(["experiment.baseline_unit=every"])["experiment"]["runs"]
    assert runs["codexleaks"]["budget"]["unit"] == EVERY
    from testleak.equalcost import check_unit

    with pytest.raises(ConfigError, match="or every"):
        check_unit("all")
