"""GitHub code-search backend against a real local HTTP server speaking GitHub's protocol."""

from __future__ import annotations

import json
import time

import pytest

from testleak.errors import ConfigError
from testleak.config import typed
from testleak.settings import GitHubSearch as GitHubSettings, Window
from testleak.verify.github import GitHubSearch, github_query
from testleak.verify.search import verify_candidates
from tests.fake_github import FakeGitHub
from tests.loopback import closed_port


#: verifier.github as conf/verifier/local.yaml composes it
BASE = {"api_url": "https://api.github.com", "token_envs": ["GITHUB_TOKEN"], "requests_per_minute": 10,
        "window_seconds": 60, "per_page": 100, "max_pages": 1, "max_hits": 100, "timeout": 30, "deadline": 900,
        "max_retries": 5, "max_wait_seconds": 3600}


def github(**over):
    """``verifier.github`` (BASE with ``over``), checked by the schema."""
    return typed({"verifier": {"github": {**BASE, **over}}}, "verifier.github")


def make(srv, tmp_path, **over):
    env = over.pop("env", None) or {"GH_A": "tok-a"}
    log_path = over.pop("log_path", None)
    cfg = github(**{"api_url": srv.url, "token_envs": ["GH_A", "GH_B"], "max_pages": 3, "timeout": 5, "max_retries": 3,
                    **over})
    return GitHubSearch(cfg, tmp_path / "search", min_query_chars=3, env=env, log_path=log_path)


@pytest.mark.parametrize("value,query", [
    ("wei.zhang83@qq.com", '"wei zhang83 qq com"'),
    ("+86 138-1108-5305", '"86 138-1108-5305"'),
    ('say "hi"', '"say hi"'),
    ("...", None),
    ("a" * 300, '"' + "a" * 254 + '"'),
    ("word " * 60, '"' + ("word " * 51).strip() + '"'),
    ("wordy " * 60, '"' + ("wordy " * 42).strip() + '"'),
])
def test_github_query_normalisation(value, query):
    q = github_query(value)
    assert q == query
    assert q is None or len(q) <= 256


def test_missing_token_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="GH_A or GH_B"):
        GitHubSearch(github(token_envs=["GH_A", "GH_B"]), tmp_path, min_query_chars=3, env={})


def test_repo_ids_pagination_and_cache(tmp_path):
    q = '"wei zhang83 qq com"'
    hits = [(1000 + i % 7, f"owner{i % 7}/repo", f"src/f{i}.py") for i in range(130)]
    with FakeGitHub({q: hits}) as srv:
        gh = make(srv, tmp_path, per_page=50)
        r = gh.search("wei.zhang83@qq.com")
        assert (r["outcome"], r["k"], r["cached"]) == ("searched", 130, False)
        assert r["repo_ids"] == list(range(1000, 1007))
        assert len(r["paths"]) == 100 and r["paths"][0] == "owner0/repo/src/f0.py"
        assert [x["page"] for x in srv.requests] == [1, 2]        # 100 hits collected: stop
        assert srv.requests[0]["auth"] == "Bearer tok-a"
        again = gh.search("wei.zhang83@qq.com")
        assert len(srv.requests) == 2 and again["cached"] is True and again["k"] == 130
        # a fresh client on the same cache directory repeats nothing either
        assert make(srv, tmp_path, per_page=50).search("wei.zhang83@qq.com")["k"] == 130 and len(srv.requests) == 2
    cache_files = list((tmp_path / "search" / "github").iterdir())
    assert cache_files and all(b"zhang83" not in p.read_bytes() for p in cache_files)
    assert r["query"] not in ("wei.zhang83@qq.com",)


def test_ten_per_window_through_the_shared_limiter(tmp_path):
    from testleak.net import RateLimiter

    with FakeGitHub() as srv:
        gh = make(srv, tmp_path, requests_per_minute=10, window_seconds=0.5)
        assert [type(x) for x in gh.limiters] == [RateLimiter]   # the one limiter of testleak.net
        for i in range(25):
            assert gh.search(f"value number {i}")["k"] == 0
        ts = [x["t"] for x in srv.requests]
        assert len(ts) == 25
        for j in range(len(ts) - 10):      # never 11 requests within one window
            assert ts[j + 10] - ts[j] >= 0.5 - 0.06  # server receipt times jitter under load
        assert 1.0 - 0.06 <= ts[-1] - ts[0] < 4.0


def test_client_side_rate_limit_and_token_rotation(tmp_path):
    with FakeGitHub() as srv:
        gh = make(srv, tmp_path, requests_per_minute=2, window_seconds=0.3, env={"GH_A": "tok-a", "GH_B": "tok-b"})
        for i in range(9):
            assert gh.search(f"value number {i}")["k"] == 0
        reqs = srv.requests
        assert len(reqs) == 9
        for tok in ("Bearer tok-a", "Bearer tok-b"):
            ts = [x["t"] for x in reqs if x["auth"] == tok]
            assert len(ts) >= 4
            for j in range(len(ts) - 2):     # never 3 requests of one token within 0.3 s
                assert ts[j + 2] - ts[j] >= 0.3 - 0.06  # server receipt times jitter under load
        span = reqs[-1]["t"] - reqs[0]["t"]
        assert 0.55 < span < 2.0   # 9 requests at 2 tokens x 2 per 0.3 s need >= 2 full windows


def test_403_with_reset_header_waits_and_resumes(tmp_path, capsys):
    q = '"li wei 1985"'
    with FakeGitHub({q: [(7, "o/r", "a.py")]}) as srv:
        reset = int(time.time()) + 2   # >= 1 s ahead even when the first request arrives late
        srv.script = [{"status": 403, "body": {"message": "You have exceeded a secondary rate limit"},
                       "headers": {"x-ratelimit-remaining": 0, "x-ratelimit-reset": reset}}]
        gh = make(srv, tmp_path, log_path=tmp_path / "calls.jsonl")
        r = gh.search("li.wei 1985")
        assert (r["outcome"], r["k"], r["repo_ids"]) == ("searched", 1, [7])
        assert len(srv.requests) == 2 and gh.stats["rate_limited"] == 1
        assert srv.requests[0]["wall"] < reset <= srv.requests[1]["wall"]  # retried only after the reset time
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("retry:")]
    assert len(lines) == 1 and lines[0].startswith(f"retry: {srv.url}/search/code: rate_limited (HTTP 403), attempt 1/4")
    assert "wei" not in lines[0] and "1985" not in lines[0]   # the query (a raw value) is never shown
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(x["backend"], x["status"], x["attempts"], x["cached"]) for x in log] == [("github", "ok", 2, False)]
    assert "wei" not in json.dumps(log)


def test_429_retry_after_and_give_up_becomes_error_record(tmp_path):
    with FakeGitHub() as srv:
        srv.script = [{"status": 429, "headers": {"retry-after": "0.3"}}] * 2
        gh = make(srv, tmp_path, max_retries=1)
        t0 = time.monotonic()
        r = gh.search("somebody@corp.cn")
        assert time.monotonic() - t0 >= 0.3
        assert r["outcome"] == "error" and "gave up after 2 attempts" in r["reason"]
        assert len(srv.requests) == 2


def test_refused_connection_and_deadline_become_error_records(tmp_path, capsys):
    url = f"http://bob:hunter22@127.0.0.1:{closed_port()}"
    # an api_url with credentials, which the schema refuses (constructed unchecked): the records still mask it
    gh = GitHubSearch(GitHubSettings.model_construct(**{**BASE, "api_url": url}), tmp_path, min_query_chars=3,
                      env={"GITHUB_TOKEN": "t"})
    t0 = time.monotonic()
    r = gh.search("somebody@corp.cn")
    assert time.monotonic() - t0 < 3.0
    assert r["outcome"] == "error" and "connection refused after 2 attempts" in r["reason"]
    assert "http://***@127.0.0.1" in r["reason"] and "hunter22" not in r["reason"] + capsys.readouterr().err
    with FakeGitHub() as srv:
        srv.script = [{"status": 502}] * 20
        gh = make(srv, tmp_path, max_retries=20, deadline=1.0)
        gh.policy.backoff_base = 0.2
        t0 = time.monotonic()
        r = gh.search("somebody@corp.cn")
        assert r["outcome"] == "error" and "deadline of 1 s exceeded" in r["reason"]
        assert time.monotonic() - t0 < 2.5 and 2 <= len(srv.requests) < 10


@pytest.mark.parametrize("key,value", [("timeout", 0), ("deadline", 0), ("requests_per_minute", -1)])
def test_bad_github_limits_are_rejected(key, value):
    with pytest.raises(ConfigError, match=f"verifier.github.{key} = {value!r}"):
        github(**{key: value})


def test_bad_token_is_a_config_error(tmp_path):
    with FakeGitHub(tokens={"good"}) as srv:
        with pytest.raises(ConfigError, match="401"):
            make(srv, tmp_path).search("anything here")


def test_window_outcomes_over_github(tmp_path):
    idx = {'"one hit com"': [(1, "a/b", "x.py")],
           '"many hits com"': [(i, f"o{i}/r", "y.py") for i in range(101)]}
    cands = [{"id": f"c{i}", "attribute": "email", "value": v} for i, v in
             enumerate(["one@hit.com", "many@hits.com", "zero@none.com", "@@", "judge@dropped.com"])]
    verdicts = [{"candidate_id": c["id"], "run": "ours", "attribute": "email", "value_hash": "h", "kept": i != 4}
                for i, c in enumerate(cands)]
    with FakeGitHub(idx) as srv:
        gh = make(srv, tmp_path, max_pages=1)
        hits = verify_candidates(verdicts, cands, gh, Window(min=1, max=100), "github")
        assert len(srv.requests) == 3   # "@@" is unverifiable, the dropped one is not searched
    assert [h["outcome"] for h in hits] == ["in_window", "out_of_window", "out_of_window", "unverifiable", "filtered"]
    assert [h["k"] for h in hits] == [1, 101, 0, None, None]
    assert hits[0]["repo_ids"] == [1] and len(hits[1]["repo_ids"]) == 100
    assert "one@hit.com" not in json.dumps(hits)


@pytest.mark.parametrize("status", [422, 400])
def test_an_error_body_quoting_the_query_shows_only_a_masked_excerpt(tmp_path, status):
    """The value searched for is in the query; GitHub's error message may quote it. The record's
    reason and the call log carry the status and a masked excerpt only."""
    value = "wei.zhang83@qq.com"
    log = tmp_path / "calls.jsonl"
    with FakeGitHub() as srv:
        srv.echo_error = status
        r = make(srv, tmp_path, log_path=log).search(value)
    assert r["outcome"] == "error" and r["reason"].startswith(f"HTTP {status}")
    assert "Validation Failed" in r["reason"]          # GitHub's own words stay readable
    assert value not in json.dumps(r)               # the record holds the value's mask only
    shown = r["reason"] + log.read_text()
    for part in ("wei", "zhang83", "qq"):
        assert part not in shown, part


@pytest.mark.parametrize("step", [{"raw": "<html><body>proxy error for {q}</body></html>"},
                                  {"body": "not a search result"}, {"body": {"items": "none"}}])
def test_a_200_that_is_not_a_search_result_is_an_error_record(tmp_path, step):
    """An HTML page of a proxy (quoting the query) or a JSON body of another shape: an ``error``
    record of kind malformed, no traceback, nothing of the body shown, nothing cached."""
    value = "wei.zhang83@qq.com"
    log = tmp_path / "calls.jsonl"
    with FakeGitHub(index={github_query(value): [(1, "a/b", "x.py")]}) as srv:
        srv.script = [{"status": 200, **step}]
        s = make(srv, tmp_path, log_path=log)
        r = s.search(value)
        assert r["outcome"] == "error" and r["reason"] == "HTTP 200: unparsable response (not a code-search result)"
        assert json.loads(log.read_text().splitlines()[-1])["error_kind"] == "malformed"
        assert "wei" not in log.read_text() and "proxy" not in json.dumps(r)
        assert s.search(value)["outcome"] == "searched"        # not cached: asked again
