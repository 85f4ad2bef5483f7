"""Gateway behaviour against a real local HTTP server speaking the OpenAI protocol, and
against the real embedded model."""

from __future__ import annotations

import json
import time

import pytest

from testleak.errors import AuthError, ConfigError, LLMError
from testleak.llm import ChatRequest, Gateway, open_gateway
from testleak.net import RateLimiter
from testleak.verify.judge import parse_verdict, verdict_problem
from tests.fake_openai import FakeOpenAI, completion_body, model_config
from tests.loopback import closed_port

MSG = [{"role": "user", "content": "hello"}]


def make_gateway(tmp_path, base_url, *, env="FAKE_OPENAI_KEY", retries=3, timeout=5.0, concurrency=1, rpm=None,
                 tpm=None, monkeypatch=None, fields=None, check=True, **limits):
    if monkeypatch is not None:
        monkeypatch.setenv(env, "sk-test")
    cfg = model_config(base_url, key_env=env, check=check, **(fields or {}),
                       limits={"concurrency": concurrency, "requests_per_minute": rpm, "tokens_per_minute": tpm,
                               "timeout": timeout, "max_retries": retries, **limits})
    return Gateway(cfg, cache_dir=tmp_path / "cache", log_path=tmp_path / "calls.jsonl", backoff_base=0.05,
                   backoff_max=0.2)


def test_ok_then_cache_sends_nothing(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.default_text = "answer"
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        a = gw.chat(MSG)
        b = gw.chat(MSG)
        c = gw.chat(MSG, sample=1)
        assert (a.status, a.text, a.cached) == ("ok", "answer", False)
        assert (b.text, b.cached) == ("answer", True)
        assert c.cached is False
        assert len(srv.requests) == 2  # the cached request sent nothing
        sent = srv.requests[0]["json"]
        assert sent["model"] == "fake-model" and sent["temperature"] == 0.5 and sent["max_tokens"] == 16
        assert srv.requests[0]["headers"]["authorization"] == "Bearer sk-test"
        # a different sampling parameter is a different cache entry
        gw.chat(MSG, temperature=0.9)
        assert len(srv.requests) == 3
        gw.close()
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [r["cached"] for r in log] == [False, True, False, False]
    assert all("hello" not in json.dumps(r) for r in log)  # no prompt text in the call log


def retry_lines(capsys) -> list[str]:
    return [x for x in capsys.readouterr().err.splitlines() if x.startswith("retry:")]


def test_429_retry_after_is_honoured_and_shown(tmp_path, monkeypatch, capsys):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 429, "headers": {"retry-after": "1"}, "body": {"error": {"message": "slow down"}}}]
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        c = gw.chat(MSG)
        assert c.status == "ok" and c.attempts == 2
        assert len(srv.requests) == 2
        gap = srv.times[1] - srv.times[0]
        assert 0.95 <= gap < 3.0, gap  # waited the server's retry-after, not the 0.05 s backoff
        gw.close()
    # one stderr line per retry: endpoint, error kind, attempt, wait
    assert retry_lines(capsys) == [f"retry: {srv.base_url}/chat/completions: http_429 (HTTP 429), "
                                   f"attempt 1/4 failed, waiting 1.0 s"]


def test_5xx_then_success_one_line_per_retry(tmp_path, monkeypatch, capsys):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 503, "body": {"error": {"message": "busy"}}},
                      {"status": 502, "body": {"error": {"message": "bad gateway"}}}]
        srv.default_text = "finally"
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        c = gw.chat(MSG)
        assert (c.status, c.text, c.attempts) == ("ok", "finally", 3) and len(srv.requests) == 3
        gw.close()
    lines = retry_lines(capsys)
    assert len(lines) == 2
    assert "http_5xx (HTTP 503), attempt 1/4 failed, waiting" in lines[0]
    assert "http_5xx (HTTP 502), attempt 2/4 failed, waiting" in lines[1]
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(r["status"], r["attempts"]) for r in log] == [("ok", 3)]


def test_refused_connection_fails_fast_naming_the_url(tmp_path, monkeypatch, capsys):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    gw = make_gateway(tmp_path, url, retries=6, monkeypatch=monkeypatch)
    gw.policy.backoff_base = 5.0  # a refused connection does not wait out the normal backoff
    t = time.monotonic()
    c = gw.chat(MSG)
    took = time.monotonic() - t
    assert c.status == "error" and c.error_kind == "connection_refused"
    assert c.attempts == 2 and took < 3.0, (c.attempts, took)
    assert f"{url}/chat/completions" in c.error and "refused" in c.error
    assert len(retry_lines(capsys)) == 1
    gw.close()


def test_total_deadline_across_retries(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"delay": 0.6, "body": completion_body("late")}] * 20
        gw = make_gateway(tmp_path, srv.base_url, timeout=0.3, retries=20, deadline=1.2, monkeypatch=monkeypatch)
        t = time.monotonic()
        c = gw.chat(MSG)
        took = time.monotonic() - t
        assert c.status == "error" and c.error_kind == "deadline", c
        assert "deadline of 1.2 s" in c.error and srv.base_url in c.error
        assert 2 <= c.attempts < 10 and took < 3.0, (c.attempts, took)
        gw.close()


@pytest.mark.parametrize("key,value", [("timeout", 0), ("deadline", 0), ("deadline", -5), ("max_retries", -1),
                                       ("timeout", "abc")])
def test_bad_limits_are_rejected_not_replaced(tmp_path, key, value):
    cfg = model_config("http://127.0.0.1:9/v1")
    cfg["limits"][key] = value
    with pytest.raises(ConfigError) as ei:
        Gateway(cfg, cache_dir=tmp_path)
    msg = str(ei.value)
    assert f"limits.{key} = {value!r}" in msg and "conf/model/fake.yaml" in msg and "\n" not in msg


def test_credentials_in_base_url_never_shown(tmp_path, monkeypatch, capsys):
    """A URL with credentials comes from the variable base_url_env names (never params); every
    message masks its user-info."""
    secret = "s3cretPW"

    def from_env(url):
        monkeypatch.setenv("FAKE_BASE_URL", url)
        return make_gateway(tmp_path, None, retries=1, monkeypatch=monkeypatch, fields={"base_url_env": "FAKE_BASE_URL"})

    with FakeOpenAI() as srv:
        base = srv.base_url.replace("http://", f"http://alice:{secret}@")
        masked = srv.base_url.replace("http://", "http://***@")
        srv.script = [{"status": 500, "body": {"error": {"message": "boom"}}},
                      {"status": 500, "body": {"error": {"message": "boom"}}}]
        gw = from_env(base)
        failed = gw.chat(MSG)                      # two 500s: retry line, then an error record
        assert failed.status == "error" and masked in failed.error
        srv.script = [{"status": 404, "body": {"error": {"message": "no such model"}}}]
        with pytest.raises(LLMError) as ei:        # the 404 message names the endpoint
            gw.chat(MSG, sample=1)
        assert masked in str(ei.value)
        gw.close()
    refused = from_env(f"http://alice:{secret}@127.0.0.1:{closed_port()}/v1")
    r = refused.chat(MSG)
    assert r.error_kind == "connection_refused" and "***@127.0.0.1" in r.error
    refused.close()
    # in the model config itself user-info is refused, in one line that shows none of it
    with pytest.raises(ConfigError) as bad:
        make_gateway(tmp_path, base, monkeypatch=monkeypatch, check=False)
    assert "without user-info" in str(bad.value) and "\n" not in str(bad.value)
    err = capsys.readouterr().err
    assert "retry:" in err and masked in err
    texts = [err, failed.error, str(ei.value), r.error, str(bad.value), (tmp_path / "calls.jsonl").read_text()]
    assert not any(secret in t or "alice" in t for t in texts)


def test_call_log_attributes_stage_run_and_purpose(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test")
    with FakeOpenAI() as srv:
        cfg = model_config(srv.base_url)
        with open_gateway(cfg, cache_dir=tmp_path / "c", log_path=tmp_path / "calls.jsonl",
                          attribution={"stage": "judged", "run": "ours"}) as gw:
            gw.chat_many([ChatRequest(MSG), ChatRequest(MSG, sample=1, purpose="second opinion")], purpose="judge")
            gw.chat(MSG, purpose="cli")
            gw.chat(MSG, sample=2)
        assert len(srv.requests) == 3
        assert "purpose" not in json.dumps(srv.requests[0]["json"])   # attribution is never sent
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(x["stage"], x["run"], x["purpose"], x["cached"]) for x in log] == [
        ("judged", "ours", "judge", False), ("judged", "ours", "second opinion", False),
        ("judged", "ours", "cli", True), ("judged", "ours", None, False)]
    assert all(x["prompt_tokens"] == 7 and x["completion_tokens"] == 3 for x in log)


def test_identical_requests_in_a_batch_are_sent_once(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"delay": 0.3, "body": completion_body(f"r{i}")} for i in range(3)]
        gw = make_gateway(tmp_path, srv.base_url, concurrency=4, monkeypatch=monkeypatch)
        other = [{"role": "user", "content": "other"}]
        reqs = [ChatRequest(MSG), ChatRequest(other), ChatRequest(MSG), ChatRequest(MSG, sample=1), ChatRequest(MSG)]
        out = gw.chat_many(reqs)
        assert len(srv.requests) == 3                 # MSG/0, other/0, MSG/1
        assert out[0].text == out[2].text == out[4].text and out[0] is not out[2]
        assert len({out[0].text, out[1].text, out[3].text}) == 3
        assert gw.stats["shared"] == 2
        gw.close()
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert sorted(r["shared"] for r in log) == [False, False, False, True, True]
    sent = [r for r in log if not r["shared"]]
    assert len({r["key"] for r in sent}) == 3 and all(r["attempts"] == 1 for r in sent)


def test_500_retried_then_clear_error_record(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 500, "body": {"error": {"message": "boom"}}}] * 3
        gw = make_gateway(tmp_path, srv.base_url, retries=2, monkeypatch=monkeypatch)
        c = gw.chat(MSG)
        assert c.status == "error" and c.error_kind == "http_5xx"
        assert c.attempts == 3 and len(srv.requests) == 3
        assert "3 attempts" in c.error and "500" in c.error
        # failures are not cached: the next call asks again and succeeds
        c2 = gw.chat(MSG)
        assert c2.status == "ok" and len(srv.requests) == 4
        gw.close()


def test_401_not_retried_names_env_var(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 401, "body": {"error": {"message": "bad key"}}}] * 3
        gw = make_gateway(tmp_path, srv.base_url, env="MY_SECRET_KEY_VAR", monkeypatch=monkeypatch)
        with pytest.raises(AuthError) as ei:
            gw.chat(MSG)
        assert "MY_SECRET_KEY_VAR" in str(ei.value)
        assert "sk-test" not in str(ei.value)
        assert len(srv.requests) == 1
        gw.close()


def test_404_names_model(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 404, "body": {"error": {"message": "no such model"}}}]
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        with pytest.raises(LLMError) as ei:
            gw.chat(MSG)
        assert "fake-model" in str(ei.value) and len(srv.requests) == 1
        gw.close()


def test_missing_key_is_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("UNSET_KEY_VAR", raising=False)
    with FakeOpenAI() as srv:
        gw = make_gateway(tmp_path, srv.base_url, env="UNSET_KEY_VAR")
        with pytest.raises(AuthError, match="UNSET_KEY_VAR"):
            gw.chat(MSG)
        assert srv.requests == []
        gw.close()


def test_slow_reply_hits_timeout(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"delay": 1.5, "body": completion_body("late")}] * 2
        gw = make_gateway(tmp_path, srv.base_url, timeout=0.4, retries=1, monkeypatch=monkeypatch)
        t = time.monotonic()
        c = gw.chat(MSG)
        assert c.status == "error" and c.error_kind == "timeout" and c.attempts == 2
        assert time.monotonic() - t < 2.5
        gw.close()


def test_malformed_json_is_error_record(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"status": 200, "body": "{not json"}, {"status": 200, "body": {"unexpected": True}}]
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        a, b = gw.chat(MSG), gw.chat(MSG, sample=1)
        assert a.status == "error" and a.error_kind == "malformed"
        assert b.status == "error" and b.error_kind == "malformed"
        assert gw.stats["errors"] == 2
        gw.close()


def test_concurrency_and_order(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"delay": 0.4, "body": completion_body(f"r{i}")} for i in range(4)]
        gw = make_gateway(tmp_path, srv.base_url, concurrency=4, monkeypatch=monkeypatch)
        t = time.monotonic()
        out = gw.chat_many([ChatRequest(MSG, sample=i) for i in range(4)])
        took = time.monotonic() - t
        assert sorted(c.text for c in out) == ["r0", "r1", "r2", "r3"]
        assert took < 1.2, took  # four 0.4 s requests in flight together
        gw.close()


def test_logprobs_exposed(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        srv.script = [{"body": completion_body("abc", logprobs=[-0.5, -1.25])}]
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        c = gw.chat(MSG, logprobs=True)
        assert c.logprobs == [-0.5, -1.25]
        assert srv.requests[0]["json"]["logprobs"] is True
        gw.close()


def test_rate_limiter_requests_per_window():
    now = [0.0]
    slept = []

    def sleep(d):
        slept.append(d)
        now[0] += d

    rl = RateLimiter(requests=2, tokens=None, window=10, clock=lambda: now[0], sleep=sleep)
    assert rl.acquire() == 0 and rl.acquire() == 0
    assert rl.acquire() == pytest.approx(10.0)
    rl2 = RateLimiter(requests=None, tokens=100, window=60, clock=lambda: now[0], sleep=sleep)
    rl2.acquire(60)
    waited = rl2.acquire(60)
    assert waited == pytest.approx(60.0)


def test_unknown_provider_lists_known(tmp_path):
    with pytest.raises(ConfigError, match="local, openai"):
        Gateway({"name": "x", "provider": "grpc"}, cache_dir=tmp_path)


def test_every_model_config_builds_a_gateway(tmp_path, params):
    from testleak.config import CONF_DIR, compose_dict

    names = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
    assert {"gpt-4o", "gpt-4.1", "gpt-oss-120b", "deepseek-v3", "deepseek-r1", "qwen2.5-coder-0.5b",
            "qwen2.5-coder-1.5b"} <= set(names)
    for n in names:
        cfg = compose_dict([f"model={n}", f"judge={n}"])
        assert cfg["model"] == cfg["judge"]
        gw = Gateway(cfg["model"], cache_dir=tmp_path / n)
        assert gw.identity["api_model"]
        gw.close()


@pytest.mark.slow
def test_embedded_model_answers(local_gateway):
    c = local_gateway.chat([{"role": "user", "content": "Reply with the word pong."}], max_tokens=8)
    assert c.status == "ok", c.error
    assert c.text.strip() and c.usage["completion_tokens"] > 0
    again = local_gateway.chat([{"role": "user", "content": "Reply with the word pong."}], max_tokens=8)
    assert again.cached and again.text == c.text


def test_call_log_counts_prompt_tokens_served_from_the_server_prompt_cache(tmp_path, monkeypatch):
    """llama.cpp reports the prompt tokens it took from a slot's KV cache
    (usage.prompt_tokens_details.cached_tokens): the call log records them per call (None when a
    server does not say, or the answer came from the gateway's response cache); response records
    do not carry them."""
    def body(req):
        b = completion_body("answer", prompt_tokens=40, completion_tokens=3)
        if req["messages"][0]["content"] == "warm":
            b["usage"]["prompt_tokens_details"] = {"cached_tokens": 32}
        return b

    with FakeOpenAI() as srv:
        srv.answer = body
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        warm = gw.chat([{"role": "user", "content": "warm"}])
        gw.chat([{"role": "user", "content": "cold"}])
        gw.chat([{"role": "user", "content": "warm"}])
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(x["prompt_tokens"], x["prompt_cached_tokens"], x["cached"]) for x in log] == [
        (40, 32, False), (40, None, False), (40, None, True)]
    assert warm.prompt_cached_tokens == 32 and "prompt_cached_tokens" not in warm.to_record()


def test_embedded_requests_go_to_a_free_server_of_the_pool_one_at_a_time(tmp_path, monkeypatch):
    """Embedded model (here two fake servers stand in for llama.cpp replicas): every request takes
    a free server, no server computes two at once (one slot each, so no batching), every request
    asks for no prompt cache, and the cache identity holds the numerics but not the replicas."""
    import threading

    from testleak.llm import local

    class Endpoint:              # a running server of the pool (start/stop are the pool's business)
        n_parallel = 1

        def __init__(self, srv):
            self.base_url, self.busy, self.most = srv.base_url, 0, 0

        def start(self):
            return self

        def stop(self):
            pass

    lock = threading.Lock()

    def answer_of(ep):
        def answer(body):
            with lock:
                ep.busy += 1
                ep.most = max(ep.most, ep.busy)
            time.sleep(0.05)
            with lock:
                ep.busy -= 1
            return completion_body("answer " + body["messages"][0]["content"])
        return answer

    def cfg(replicas):
        return model_config(None, name="m", provider="local", api_model="m", key_env=None, sampling={"max_tokens": 8},
                            limits={"concurrency": 4},
                            gguf={"file": "m.gguf", "packages": ["m-part1"], "version": "1", "sha256": "0" * 64},
                            server={"n_ctx": 2048, "n_parallel": 1, "n_threads": 1, "cache_prompt": False,
                                    "replicas": replicas, "startup_timeout": 120})

    with FakeOpenAI() as a, FakeOpenAI() as b:
        eps = [Endpoint(a), Endpoint(b)]
        a.answer, b.answer = answer_of(eps[0]), answer_of(eps[1])
        monkeypatch.setattr(local, "acquire_server", lambda *_: (local.ServerPool(eps).start(), ("k",)))
        gw = Gateway(cfg(2), cache_dir=tmp_path / "c", log_path=tmp_path / "calls.jsonl")
        assert gw.concurrency == 2                     # min(limits.concurrency, replicas x slots)
        outs = gw.chat_many([ChatRequest([{"role": "user", "content": f"q{i}"}]) for i in range(8)])
        sent = [r["json"] for r in a.requests + b.requests]
    assert [o.text for o in outs] == [f"answer q{i}" for i in range(8)]
    assert len(a.requests) >= 1 and len(b.requests) >= 1 and len(sent) == 8
    assert max(ep.most for ep in eps) == 1
    assert all(body["cache_prompt"] is False for body in sent)
    one = Gateway(cfg(1), cache_dir=tmp_path / "d")
    assert one.concurrency == 1 and one.identity == gw.identity and "n_threads" in gw.identity["server"]


def test_an_error_body_echoing_the_prompt_shows_only_a_masked_excerpt(tmp_path, monkeypatch):
    """A 400 whose body quotes the request: the failure record has the status, the kind and a
    masked excerpt, never the prompt's words."""
    prompt = [{"role": "user", "content": "Is lena.voigt@mailbox.org a plausible e-mail address?"}]
    with FakeOpenAI() as srv:
        srv.mode = "echo_error"
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        c = gw.chat(prompt)
        gw.close()
    assert (c.status, c.error_kind) == ("error", "bad_request") and c.error.startswith("HTTP 400: ")
    assert "cannot process request" in c.error
    for part in ("lena", "voigt", "mailbox", "plausible"):
        assert part not in c.error, c.error


def test_an_answer_that_is_not_one_is_resampled_never_cached_and_a_cached_one_is_asked_again(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        gw.cfg["sampling"]["seed"] = 7             # a request that names its seed gets another one per sample
        srv.script = [{"body": completion_body("")}, {"body": completion_body("two")}]
        c = gw.chat(MSG, purpose="test turn")
        assert (c.status, c.text, c.attempts) == ("ok", "two", 2)
        assert [q["json"]["seed"] for q in srv.requests][0] == 7 and srv.requests[1]["json"]["seed"] != 7
        assert gw.stats["resampled"] == 1 and gw.failure_counts() == {}
        # both samples empty: a failed call, nothing cached, the next call sends again
        srv.script = [{"body": completion_body(" ")}, {"body": completion_body("\n")}]
        bad = gw.chat(MSG, sample=1, purpose="test turn")
        assert (bad.status, bad.error_kind, bad.text) == ("error", "empty", "")
        assert bad.error == "empty answer (1 characters, all whitespace) (2 samples)"
        assert len(gw.cache) == 1 and gw.failure_counts() == {"empty": 1}
        # a greedy request would answer the same: asked once
        srv.script = [{"body": completion_body("")}]
        n = len(srv.requests)
        assert gw.chat(MSG, sample=2, temperature=0.0).error_kind == "empty" and len(srv.requests) == n + 1
        # an empty answer cached by an older version is no answer: asked again, then replaced
        key = gw._prepare(ChatRequest(MSG, 3))[0]
        gw.cache.put(key, {"text": "", "status": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 0}})
        srv.default_text = "fresh"
        c = gw.chat(MSG, sample=3)
        assert (c.text, c.cached) == ("fresh", False) and gw.cache.get(key)["text"] == "fresh"
        gw.close()


def test_a_cut_answer_is_data_except_where_the_purpose_needs_a_whole_one(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        gw = make_gateway(tmp_path, srv.base_url, monkeypatch=monkeypatch)
        srv.script = [{"body": completion_body("def test_x():\n    assert", finish_reason="length")}]
        c = gw.chat(MSG, purpose="test turn")
        assert (c.status, c.finish_reason) == ("ok", "length")       # a cut test turn is still read
        # a judge answer cut in its reason after a whole verdict is that verdict; cut before it, no answer
        srv.script = [{"body": completion_body('{"plausible": false, "reason": "a made-up', finish_reason="length")}]
        j = gw.chat(MSG, sample=1, purpose="judge", accept=verdict_problem)
        assert (j.status, j.finish_reason, parse_verdict(j.text)["ok"]) == ("ok", "length", False)
        srv.script = [{"body": completion_body('{"plausible": tr', finish_reason="length")}] * 2
        j = gw.chat(MSG, sample=2, purpose="judge", accept=verdict_problem)
        assert (j.status, j.error_kind, j.finish_reason) == ("error", "truncated", "length")
        assert j.error.startswith("answer cut by max_tokens (finish_reason: length) before it held a judge answer")
        # the policy is config: `answers.whole` names the purposes whose cut answers are never data
        strict = Gateway(gw.cfg, cache_dir=tmp_path / "c2", answers={"whole": ["judge", "test turn"]})
        srv.script = [{"body": completion_body("def test_x():", finish_reason="length")}] * 2
        assert strict.chat(MSG, purpose="test turn").error_kind == "truncated"
        srv.script = [{"body": completion_body("x" * 5000)}] * 2
        big = strict.chat(MSG, sample=1, purpose="judge")
        assert big.error_kind == "oversized" and big.error.startswith("answer of 5000 characters, above answers.max_chars judge=4096")
        strict.close()
        gw.close()


def test_the_circuit_breaker_stops_sending_after_consecutive_failures(tmp_path, monkeypatch):
    with FakeOpenAI() as srv:
        gw = make_gateway(tmp_path, srv.base_url, retries=0, monkeypatch=monkeypatch, max_consecutive_failures=3)
        srv.mode = "error_500"
        srv.fault_when = lambda body: body["messages"][0]["content"] != "fine"
        assert [gw.chat(MSG, sample=i).error_kind for i in range(2)] == ["http_5xx"] * 2
        assert gw.chat([{"role": "user", "content": "fine"}]).status == "ok"     # a success: the count restarts
        out = [gw.chat(MSG, sample=i).error_kind for i in range(2, 8)]
        assert out == ["http_5xx"] * 3 + ["circuit_open"] * 3
        assert len(srv.requests) == 6 and gw.stats["not_sent_breaker"] == 3
        assert gw.breaker.reason.startswith(f"3 calls in a row to {srv.base_url}/chat/completions failed (last: http_5xx")
        assert gw.failure_counts() == {"circuit_open": 3, "http_5xx": 5}
        gw.close()
