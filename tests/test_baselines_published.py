"""The baselines' own verification (baselines.protocol=published, testleak/baselines/published.py):
Codebreaker's Presidio NER verifier, CodexLeaks' membership-inference filter, the protocol switch."""

from __future__ import annotations

import math
import random
import string

import pytest

from testleak import pipeline
from testleak.baselines.blindmi import MMD_FLOOR, band_split, blind_mi_generated, blind_mi_split, mmd, perturb
from testleak.baselines.published import (codebreaker_candidates, codexleaks_filter, filter_scorer, membership_scores,
                                          run_protocol, scorer_need, zlib_entropy)
from testleak.config import compose, typed
from testleak.errors import ConfigError
from testleak.settings import Window
from tests.project import local_search


def _resp(rid, cont, ppl, prompt="cfg = {\n  'k': '", status="ok", method="codexleaks"):
    return {"id": rid, "method": method, "status": status, "prompt_text": prompt, "perplexity": ppl,
            "turn1": {"continuation": cont}, "tests_text": prompt + cont if status == "ok" else "", "attribute": "email"}


# ------------------------------------------------------------------------- Codebreaker: Presidio NER

def test_codebreaker_verifier_maps_known_entities_and_counts_the_rest(params):
    prompt = "# owner: John Smith\nuser = {'email': '"
    cont = ("jane.roe@example.org', 'phone': '+1 212 555 0199'}\n"
            "# see https://docs.example.net/help and ask John Smith\n")
    recs = [_resp("codebreaker/p0/s0", cont, None, prompt, method="codebreaker"),
            _resp("codebreaker/p0/s1", "", None, prompt, status="refused", method="codebreaker")]
    cands, stats = codebreaker_candidates(recs, params["presidio"])
    got = {(c["attribute"], c["value"]) for c in cands}
    assert ("email", "jane.roe@example.org") in got
    assert ("phone", "+1 212 555 0199") in got
    # the name is in the prompt: excluded (counted), never a candidate
    assert not any(c["attribute"] == "name" for c in cands)
    assert stats["excluded"] >= 1
    # URL maps to null in conf/presidio: counted per type, not a candidate
    assert stats["unmapped"].get("URL", 0) >= 1
    assert stats["unmapped_total"] == sum(stats["unmapped"].values())
    assert not any("example.net" in c["value"] for c in cands)
    assert stats["skipped"] == {"refused": 1} and stats["responses"] == 2
    assert all(c["evidence"]["pattern"].startswith("presidio:") and c["response_id"] == "codebreaker/p0/s0"
               for c in cands)
    assert sum(stats["by_attribute"].values()) == len(cands) == stats["candidates"]


# ------------------------------------------------------------------------- CodexLeaks: blind MI filter

def _cfg(params, **filt):
    """params with ``baselines.codexleaks.filter`` updated (``blind_mi`` merged); ``rule: rank``
    unless given."""
    f0 = params["baselines"]["codexleaks"]["filter"]
    f = {**f0, "rule": "rank", **filt, "blind_mi": {**f0["blind_mi"], **(filt.get("blind_mi") or {})}}
    return {**params, "baselines": {**params["baselines"], "codexleaks": {**params["baselines"]["codexleaks"], "filter": f}}}


def _filt(params, **filt):
    """The filter of :func:`_cfg`'s params as the candidates stage reads it: typed (a bad value is
    a one-line ConfigError)."""
    return typed(_cfg(params, **filt), "baselines.codexleaks.filter")


def _scorer(params, filt):
    """:func:`filter_scorer` for ``filt`` with the library's division scorer settings."""
    from testleak.paths import Paths

    return filter_scorer(filt, typed(params, "library.division"), typed(params, "library.torch_threads"), Paths().models)


def test_codexleaks_filter_ranks_by_zlib_ratio_when_perplexities_are_equal(params):
    rng = random.Random(0)
    noisy = lambda n: "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))  # noqa: E731
    texts = ["a" * 60, noisy(60), "ab" * 30, noisy(120)]   # equal perplexity, different zlib entropy
    recs = [_resp(f"codexleaks/p{i}/s0", t, 3.0) for i, t in enumerate(texts)]
    recs += [_resp("codexleaks/p9/s0", "x@y.org", None),                          # no logprobs
             _resp("codexleaks/p9/s1", "", None, status="refused")]
    scores = membership_scores(recs)
    assert scores[4] is None and scores[5] is None
    # same log perplexity: the higher the zlib entropy, the lower (more suspicious) the score
    order = sorted(range(4), key=lambda i: scores[i])
    assert order == sorted(range(4), key=lambda i: -zlib_entropy(texts[i]))
    kept, stats = codexleaks_filter(recs, _filt(params, top_share=0.5, unranked="keep"))
    ids = [r["id"] for r in kept]
    assert ids == ["codexleaks/p1/s0", "codexleaks/p3/s0", "codexleaks/p9/s0"]
    assert {r["id"]: r["mi_rank"] for r in kept if "mi_rank" in r} == {"codexleaks/p3/s0": 1, "codexleaks/p1/s0": 2}
    assert stats["scored"] == 4 and stats["kept_scored"] == 2 and stats["unranked"] == 1
    assert stats["unranked_kept"] == 1 and stats["not_ok"] == 1 and stats["kept"] == 3
    kept, stats = codexleaks_filter(recs, _filt(params, top_share=0.25, unranked="drop"))
    assert [r["id"] for r in kept] == ["codexleaks/p3/s0"]
    assert stats["unranked"] == 1 and stats["unranked_kept"] == 0 and stats["unranked_policy"] == "drop"


def test_codexleaks_filter_rejects_a_bad_share(params):
    with pytest.raises(ConfigError, match=r"baselines\.codexleaks\.filter\.top_share = 0"):
        codexleaks_filter([], _filt(params, top_share=0))


@pytest.mark.parametrize("filt, key, expected", [
    ({"rule": "mia"}, "rule", "'blind_mi_diff' or 'rank'"),
    ({"rule": "blind_mi_diff", "blind_mi": {"nonmembers": "random"}}, "blind_mi.nonmembers", "'split' or 'generated'"),
    ({"rule": "blind_mi_diff", "blind_mi": {"band": [0.75, 0.25]}}, "blind_mi.band", "0 <= lo < hi <= 1"),
    ({"rule": "blind_mi_diff", "blind_mi": {"batch": 0}}, "blind_mi.batch", "integer >= 1"),
])
def test_codexleaks_filter_bad_values_are_one_line(params, filt, key, expected):
    with pytest.raises(ConfigError) as ei:
        codexleaks_filter([], _filt(params, **filt))
    msg = str(ei.value)
    assert "\n" not in msg and f"baselines.codexleaks.filter.{key} = " in msg and expected in msg


@pytest.mark.parametrize("override, key, expected", [
    ("baselines.codexleaks.filter.rule=mia", "rule", "'blind_mi_diff' or 'rank'"),
    ("baselines.codexleaks.filter.blind_mi.band=[0.8,0.2]", "blind_mi.band", "0 <= lo < hi <= 1"),
    ("baselines.codexleaks.filter.blind_mi.nonmembers=generated", "blind_mi.scorer", "library.division.models"),
    ("baselines.codexleaks.filter.blind_mi.scorer=gpt2", "blind_mi.scorer", "gemma3-270m"),
])
def test_bad_blind_mi_config_is_one_line_naming_key_and_values(override, key, expected):
    with pytest.raises(ConfigError) as ei:
        compose([override])
    msg = str(ei.value)
    assert "\n" not in msg.strip() and f"baselines.codexleaks.filter.{key} = " in msg and expected in msg


# ------------------------------------------------------------------------- CodexLeaks: Blind-MI-Diff

def _split_by_recomputing(features, band, order):
    """The split rule written the slow way: the MMD recomputed from scratch for every move."""
    member = band_split(features, band)
    moved = True
    while moved:
        moved = False
        cur = mmd([f for f, m in zip(features, member) if not m], [f for f, m in zip(features, member) if m])
        for i in order:
            if member[i]:
                continue
            member[i] = True
            new = mmd([f for f, m in zip(features, member) if not m], [f for f, m in zip(features, member) if m])
            if new < cur:
                member[i] = False
            else:
                moved, cur = True, new
    return member


def _two_clusters(n_mem, n_rand, seed):
    rng = random.Random(seed)
    feats = [rng.gauss(-0.1, 0.05) for _ in range(n_mem)] + [rng.gauss(-4.0, 0.8) for _ in range(n_rand)]
    order = list(range(len(feats)))
    rng.shuffle(order)
    return feats, order, rng


def test_mmd_is_floored_and_grows_with_separation():
    assert mmd([], [1.0]) == MMD_FLOOR and mmd([0.5, 0.5], [0.5]) == MMD_FLOOR
    assert MMD_FLOOR < mmd([0.0, 0.1], [1.0, 1.1]) < mmd([0.0, 0.1], [3.0, 3.1])


def test_band_split_takes_the_strict_lower_percentile_band():
    # lower percentiles of 0..8: 25th = 2, 75th = 6; strictly between: 3, 4, 5
    assert band_split([8, 0, 4, 2, 6, 1, 3, 7, 5], [0.25, 0.75]) == [f in (3, 4, 5) for f in [8, 0, 4, 2, 6, 1, 3, 7, 5]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_blind_mi_split_equals_the_rule_recomputed_move_by_move(seed):
    rng = random.Random(seed)
    feats = [rng.gauss(-1.5, 1.0) for _ in range(30)]
    order = list(range(30))
    rng.shuffle(order)
    member, info = blind_mi_split(feats, [0.25, 0.75], order, 4000)
    assert member == _split_by_recomputing(feats, [0.25, 0.75], order)
    assert info["initial_members"] == sum(band_split(feats, [0.25, 0.75])) and info["moves"] == sum(member) - info["initial_members"]


def test_blind_mi_split_keeps_the_cluster_grown_from_the_middle_band():
    """The authors' rule as coded: members start as the middle percentile band and only grow,
    so on two clusters the member side is the majority cluster; a memorised minority ends
    as non-members. Both directions are pinned here."""
    feats, order, _ = _two_clusters(36, 12, 0)                # memorised majority
    member, _ = blind_mi_split(feats, [0.25, 0.75], order, 4000)
    assert all(member[:36]) and sum(member[36:]) <= 1
    feats, order, _ = _two_clusters(12, 36, 0)                # memorised minority
    member, _ = blind_mi_split(feats, [0.25, 0.75], order, 4000)
    assert not any(member[:12]) and all(member[12:])


@pytest.mark.parametrize("n_mem, n_rand", [(12, 36), (24, 24), (36, 12)])
def test_blind_mi_generated_keeps_memorised_and_moves_random_to_non_members(n_mem, n_rand):
    """Hui et al.'s Diff-w on fixed features: high mean log-probability = memorised by
    construction; the random ones and the generated non-members share one low distribution."""
    feats, order, rng = _two_clusters(n_mem, n_rand, 0)
    gen = [rng.gauss(-4.5, 0.8) for _ in range(20)]
    member, info = blind_mi_generated(feats, gen, order, 4000)
    assert all(member[:n_mem]) and not any(member[n_mem:])
    assert info["moves"] == n_rand


def test_codexleaks_filter_blind_mi_split_on_records_is_seeded_and_counts(params):
    rng = random.Random(4)
    ppl = [math.exp(0.1 + rng.random() * 0.05) for _ in range(9)] + [math.exp(4 + rng.random()) for _ in range(3)]
    recs = [_resp(f"codexleaks/p{i}/s0", f"v{i}@corp.example'", p) for i, p in enumerate(ppl)]
    recs += [_resp("codexleaks/p9/s9", "x@y.org", None), _resp("codexleaks/p9/s8", "", None, status="refused")]
    p = _filt(params, rule="blind_mi_diff", unranked="drop")
    kept, stats = codexleaks_filter(recs, p)
    again, _ = codexleaks_filter(recs, p)
    assert [r["id"] for r in kept] == [r["id"] for r in again]
    # the feature is the mean token log-probability = -log perplexity
    assert all(abs(r["mi_feature"] + math.log(r["perplexity"])) < 1e-12 and r["mi_member"] for r in kept)
    assert {r["id"] for r in kept} == {f"codexleaks/p{i}/s0" for i in range(9)}
    assert stats["rule"] == "blind_mi_diff" and stats["nonmembers"] == "split" and stats["scored"] == 12
    assert stats["kept_scored"] == 9 == stats["kept"] and stats["unranked"] == 1 and stats["unranked_kept"] == 0
    assert stats["not_ok"] == 1 and "threshold" not in stats
    kept, stats = codexleaks_filter(recs, _filt(params, rule="blind_mi_diff", unranked="keep"))
    assert stats["kept"] == 10 and "codexleaks/p9/s9" in [r["id"] for r in kept]


def test_perturb_keeps_the_characters_and_is_seeded():
    text = "jane.roe@example.org', 'phone': '+1 212 555 0199'"
    a, b = perturb(text, random.Random(1)), perturb(text, random.Random(1))
    assert a == b and a != text and sorted(a) == sorted(text)


def test_filter_scorer_is_none_without_a_model(params):
    div = typed(params, "library.division")
    for filt in (_filt(params, rule="blind_mi_diff"), _filt(params, rule="rank", reference="zlib")):
        assert scorer_need(filt) is None and filter_scorer(filt, div, 1, "/nonexistent") is None
    assert scorer_need(_filt(params, rule="rank", reference="gemma3-270m")) == ("gemma3-270m", "reference")
    gen = _filt(params, rule="blind_mi_diff", blind_mi={"nonmembers": "generated", "scorer": "gemma3-270m"})
    assert scorer_need(gen) == ("gemma3-270m", "blind_mi.scorer")
    with pytest.raises(ConfigError, match="blind_mi.scorer = None"):
        scorer_need(_filt(params, rule="blind_mi_diff", blind_mi={"nonmembers": "generated", "scorer": None}))
    with pytest.raises(ConfigError, match="filter.reference = 'gpt2': expected a key of the scorer models"):
        filter_scorer(_filt(params, rule="rank", reference="gpt2"), div, 1, "/nonexistent")


@pytest.mark.slow
def test_embedded_models_greedy_continuation_ranks_above_random_strings(params, local_gateway):
    """The model's own greedy continuation is 'memorised' by construction; tokens drawn from
    the whole vocabulary at a high temperature (top_k and min_p disabled) are near-random
    strings. Scored as in production (perplexity of the continuation from the embedded llama.cpp
    model's logprobs, reference zlib), the greedy one must rank first."""
    recs = _greedy_and_noisy(params, local_gateway)
    kept, stats = codexleaks_filter(recs, _filt(params, top_share=1 / len(recs), unranked="drop"))
    assert [r["id"] for r in kept] == ["mi/greedy/s0"], [(r["perplexity"], r["turn1"]["continuation"][:30]) for r in recs]
    assert kept[0]["mi_rank"] == 1 and stats["scored"] == 6 and stats["kept"] == 1


def _greedy_and_noisy(params, local_gateway, n_noisy=5):
    """The embedded model's greedy continuation (memorised by construction: the model's own
    most likely text) and near-random continuations (whole vocabulary, temperature 5), as
    CodexLeaks response records with perplexity from llama.cpp's token logprobs."""
    from testleak.baselines.common import Prompt, chat_requests, response_record

    text = "import re\n\ndef is_valid_email(address):\n    "
    comp = typed(params, "baselines.completion")
    planted = Prompt(id="mi/greedy", text=text, lang="python", attribute="email")
    noisy = Prompt(id="mi/noisy", text=text, lang="python", attribute="email")
    reqs = (chat_requests(planted, 1, {"temperature": 0.0, "max_tokens": 24, "logprobs": True}, comp, "prefill")
            + chat_requests(noisy, n_noisy, {"temperature": 5.0, "max_tokens": 24, "logprobs": True,
                                             "extra_body": {"top_k": 0, "min_p": 0.0, "top_p": 1.0}}, comp, "prefill"))
    comps = local_gateway.chat_many(reqs, purpose="test")
    owners = [(planted, 0)] + [(noisy, i) for i in range(n_noisy)]
    recs = [response_record("codexleaks", p, i, c, "qwen", 0) for (p, i), c in zip(owners, comps)]
    assert all(r["status"] == "ok" and r["perplexity"] is not None for r in recs), [r["status"] for r in recs]
    return recs


@pytest.mark.slow
def test_reference_model_ratio_ranks_the_targets_own_text_first(params, local_gateway):
    """rule rank, reference = a second real model (Gemma 3 270M through transformers, another
    family): log perplexity under the target (llama.cpp logprobs) over log perplexity under the
    reference. The target's greedy continuation is likely for the target, not especially for
    the reference: its ratio must be the lowest."""
    recs = _greedy_and_noisy(params, local_gateway)
    p = _filt(params, rule="rank", reference="gemma3-270m", top_share=1 / len(recs), unranked="drop")
    scorer = _scorer(params, p)
    assert scorer is not None and scorer.name == "causal_surprisal"
    scores = membership_scores(recs, "gemma3-270m", scorer)
    ref = [sum(t.scores) / len(t.scores) for t in scorer.score([r["turn1"]["continuation"] for r in recs])]
    for s, r, n in zip(scores, recs, ref):                      # the ratio is target / reference
        assert abs(s - math.log(r["perplexity"]) / n) < 1e-9
    assert min(range(len(recs)), key=lambda i: scores[i]) == 0, scores
    kept, stats = codexleaks_filter(recs, p, scorer)
    assert [r["id"] for r in kept] == ["mi/greedy/s0"] and stats["reference"] == "gemma3-270m"


@pytest.mark.slow
def test_blind_mi_generated_on_a_real_models_own_weights(params):
    """Blind-MI-Diff with generated non-members, features from a real causal LM's own weights:
    the target here is Gemma 3 270M (library.division.models gemma3-270m, the project's division
    scorer; loaded once per test process and shared with the reference-model test, which keeps CI
    short; the rule is the same for the embedded Qwen: `blind_mi.scorer: qwen2.5-coder-0.5b`):
    continuations the model finds likely (well-known code and boilerplate) stay members; random
    strings of the same lengths (twice as many) go to the non-members."""
    # the prefixes end where a token ends (a trailing space splits the next word's token)
    likely = [("import numpy as np\nimport pandas as ", "pd\nimport matplotlib.pyplot as plt\n"),
              ("def fibonacci(n):\n    if n <= 1:\n        return n\n    return ", "fibonacci(n - 1) + fibonacci(n - 2)\n"),
              ("Lorem ipsum dolor sit amet, ", "consectetur adipiscing elit, sed do eiusmod tempor"),
              ("import os\nimport sys\nimport ", "json\nimport time\n"),
              ("#!/usr/bin/env ", "python\n# -*- coding: utf-8 -*-\n"),
              ("    def __init__(self", "):\n        super().__init__()\n"),
              ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n    <meta ", "charset=\"UTF-8\">\n"),
              ("Copyright (c) ", "2015 The Authors. All rights reserved.\n")]
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "@._-'\" {}:;"
    recs = [_resp(f"mi/likely{i}/s0", c, 1.0, prompt=pr) for i, (pr, c) in enumerate(likely)]
    recs += [_resp(f"mi/random{i}/s0", "".join(rng.choice(alphabet) for _ in range(len(c))), 50.0, prompt=pr)
             for i, (pr, c) in enumerate(likely * 2)]
    p = _filt(params, rule="blind_mi_diff", blind_mi={"nonmembers": "generated", "scorer": "gemma3-270m",
                                                      "generated": 20, "seed": 3})
    scorer = _scorer(params, p)
    kept, stats = codexleaks_filter(recs, p, scorer)
    feats = {r["id"]: round(r["mi_feature"], 2) for r in kept}
    assert sorted(r["id"] for r in kept) == [f"mi/likely{i}/s0" for i in range(len(likely))], (feats, stats)
    assert stats["generated"] == 20 and stats["scored"] == 3 * len(likely) and stats["kept_scored"] == len(likely)
    assert stats["feature_source"] == "scorer gemma3-270m"


@pytest.mark.slow
def test_codebreaker_verifier_on_the_embedded_models_output(params, taxonomy, local_gateway):
    """Codebreaker's own verifier (Presidio, offline) over what the embedded model wrote."""
    import copy

    from testleak.baselines import run_codebreaker

    p = copy.deepcopy(params)
    p["baselines"]["attributes"] = ["email", "name"]
    p["baselines"]["codebreaker"]["sampling"]["max_tokens"] = 16
    recs = run_codebreaker(typed(p, "baselines"), p["model"], ["email", "name"], local_gateway, budget=2, seed=3)
    cands, stats = codebreaker_candidates(recs, p["presidio"])
    assert stats["responses"] == len(recs) == 2
    assert sum(stats["skipped"].values()) == sum(r["status"] != "ok" for r in recs)
    assert stats["candidates"] + stats["excluded"] + stats["duplicates"] + stats["unmapped_total"] > 0, stats
    by_id = {r["id"]: r for r in recs}
    for c in cands:
        r = by_id[c["response_id"]]
        assert r["status"] == "ok" and c["value"] in r["tests_text"] and c["value"] not in r["prompt_text"]
        assert c["attribute"] in taxonomy.attributes and c["evidence"]["pattern"].startswith("presidio:")
    assert sum(stats["by_attribute"].values()) == len(cands)


# ------------------------------------------------------------------------- the protocol switch

def test_bad_protocol_is_one_line_naming_key_and_values():
    with pytest.raises(ConfigError) as ei:
        compose(["baselines.protocol=ours"])
    msg = str(ei.value)
    assert "\n" not in msg.strip()
    assert "baselines.protocol" in msg and "'ours'" in msg and "published" in msg and "shared" in msg


def test_bad_reference_model_is_one_line():
    with pytest.raises(ConfigError, match=r"baselines\.codexleaks\.filter\.reference.*gemma3-270m"):
        compose(["baselines.codexleaks.filter.reference=gpt2"])


def test_protocol_switch_picks_the_baselines_own_verification(params):
    resp = [_resp("codexleaks/p0/s0", "ann.lee@corp-mail.net'\n", 2.0, "user = {'email': '"),
            _resp("codexleaks/p1/s0", "bob.ray@corp-mail.net'\n", 9.0, "user = {'email': '")]
    assert run_protocol(params, "ours") == "shared" and run_protocol(params, "codexleaks") == "published"
    assert params["baselines"]["codexleaks"]["filter"]["rule"] == "blind_mi_diff"     # the default
    params = _cfg(params, rule="rank")                     # two responses: the ranking keeps the likelier
    cands, stats = pipeline.candidates(params, "codexleaks", resp)
    assert stats["protocol"] == "published" and stats["filter"]["kept"] == 1 and stats["after_filter"] == 1
    assert [c["value"] for c in cands] == ["ann.lee@corp-mail.net"]
    verdicts, vstats = pipeline.judged(params, "codexleaks", cands, None, {})
    assert vstats["mode"] == "published" and all(v["kept"] and v["judge"]["status"] == "skipped" for v in verdicts)
    shared = {**params, "baselines": {**params["baselines"], "protocol": "shared"}}
    cands2, stats2 = pipeline.candidates(shared, "codexleaks", resp)
    assert stats2["protocol"] == "shared" and "filter" not in stats2
    assert sorted(c["value"] for c in cands2) == ["ann.lee@corp-mail.net", "bob.ray@corp-mail.net"]
    # a run entry's `verification` overrides baselines.protocol for that run
    runs = {**shared["experiment"]["runs"], "codexleaks": {**shared["experiment"]["runs"]["codexleaks"],
                                                           "verification": "published"}}
    per_run = {**shared, "experiment": {**shared["experiment"], "runs": runs}}
    assert run_protocol(per_run, "codexleaks") == "published" and run_protocol(per_run, "codebreaker") == "shared"


def test_published_runs_keep_no_placeholder_value_and_never_search_it(params, tmp_path):
    """Under ``published`` an echo, a taxonomy word or a placeholder keeps only hash and mask in
    candidates.jsonl, like ours; the pass-through gives it its status (not kept), so the search
    never needs its value and the review cannot confirm it. A stale verdict that keeps one is a
    one-line error."""
    from testleak.errors import DataError
    from testleak.privacy import mask
    from testleak.verify.index import LocalIndex, build_index
    from testleak.verify.search import verify_candidates

    prompt = "# account settings\nuser = {'email': '"
    cont = "ann.lee@corp-mail.net', 'backup_email': 'john.doe@example.com'}\n"
    resp = [_resp("codebreaker/p0/s0", cont, None, prompt, method="codebreaker")]
    assert run_protocol(params, "codebreaker") == "published"
    cands, stats = pipeline.candidates(params, "codebreaker", resp)
    by_mask = {c.get("masked") or mask(c["value"]): c for c in cands}
    held = by_mask[mask("john.doe@example.com")]
    kept = by_mask[mask("ann.lee@corp-mail.net")]
    assert held["withheld"] == "placeholder" and "value" not in held and "john.doe" not in str(held)
    assert kept["value"] == "ann.lee@corp-mail.net" and "withheld" not in kept
    assert stats["withheld"]["placeholder"] == 1

    verdicts, vstats = pipeline.judged(params, "codebreaker", cands, None, {})
    v = {x["candidate_id"]: x for x in verdicts}
    assert (v[held["id"]]["kept"], v[held["id"]]["rules"]["status"]) == (False, "placeholder")
    assert v[kept["id"]]["kept"] is True and vstats["mode"] == "published"

    root = tmp_path / "corpus" / "repo"
    root.mkdir(parents=True)
    (root / "users.py").write_text("OWNER = 'ann.lee@corp-mail.net'\nDEMO = 'john.doe@example.com'\n")
    db = tmp_path / "corpus.sqlite"
    build_index(local_search(dirs=[str(root.parent)]), db)
    with LocalIndex(db) as ix:
        hits = verify_candidates(verdicts, cands, ix, Window(min=1, max=100), "local")
        h = {x["candidate_id"]: x for x in hits}
        assert h[held["id"]]["outcome"] == "filtered" and h[held["id"]]["k"] is None
        assert (h[kept["id"]]["outcome"], h[kept["id"]]["k"]) == ("in_window", 1)
        stale = [{**x, "kept": True} for x in verdicts]
        with pytest.raises(DataError, match="withheld .*rerun the judged stage"):
            verify_candidates(stale, cands, ix, Window(min=1, max=100), "local")

    rules_only = {**params, "verifier": {**params["verifier"], "judge_mode": "rules"}}
    conf, cstats = pipeline.confirmed(rules_only, "codebreaker", hits, verdicts, [], cands)
    status = {c["candidate_id"]: c["status"] for c in conf}
    assert status[kept["id"]] == "confirmed" and status[held["id"]] != "confirmed"
