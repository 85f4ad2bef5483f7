"""Killing a stage halfway and rerunning it repeats no completed LLM call.

The responses stage runs as a real subprocess against a local server speaking the OpenAI
protocol (each answer takes 0.3 s); it is killed with SIGKILL after a few answers, then
rerun to completion. Every request answered well before the kill must not be sent again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from testleak.records import write_jsonl
from tests.fake_openai import FakeOpenAI, completion_body
from tests.project import env_for, make_project, shared_cache

CODE = "```python\ndef save_user(email, password):\n    return {'email': email, 'password': password}\n```"
TESTS = ("```python\ndef test_save_user():\n    assert save_user('mila.k@tutanota.de', 'Hx7#pq2!')['email']"
         " == 'mila.k@tutanota.de'\n```")


def test_killed_stage_resumes_without_repeating_calls(tmp_path):
    questions = [{"id": f"q{i}", "scenario": "game", "attributes": ["username", "password"],
                  "text": f"Task {i}: store a player's login and password", "generator_model": "x", "sample": 0}
                 for i in range(8)]

    with FakeOpenAI() as srv:
        answered: list[tuple[float, str]] = []
        def do_post(handler):  # code for turn-1 prompts, tests for turn-2 prompts, 0.3 s each
            n = int(handler.headers.get("content-length") or 0)
            raw = handler.rfile.read(n)
            body = json.loads(raw)
            user = body["messages"][-1]["content"]
            text = TESTS if "unit test" in user.lower() else CODE
            data = json.dumps(completion_body(text)).encode()
            time.sleep(0.3)
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
            answered.append((time.monotonic(), json.dumps(body, sort_keys=True)))

        srv.httpd.RequestHandlerClass.do_POST = do_post

        def edit(p):
            p["model"].update({"name": "fake", "provider": "openai", "api_model": "fake-model",
                               "base_url": srv.base_url, "base_url_env": None, "api_key_env": "FAKE_KEY",
                               "gguf": None, "server": None})
            p["model"]["limits"].update({"concurrency": 1, "max_retries": 0, "timeout": 30})
            p["experiment"]["runs"] = {"ours": {"method": "ours", "round": 0, "model": p["model"]["name"], "model_params": "model",
                                                "library": "testleak/resources/prior_library.yaml"}}

        proj = make_project(tmp_path / "proj", ["experiment=tiny"], edit=edit, git=False)
        write_jsonl(proj / "data/questions/questions.jsonl", questions, kind="question")
        env = env_for(shared_cache(tmp_path))
        env["FAKE_KEY"] = "sk-fake"
        cmd = [sys.executable, "-m", "stages.responses", "ours"]

        p = subprocess.Popen(cmd, cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(answered) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        p.send_signal(signal.SIGKILL)
        p.wait()
        killed_at = time.monotonic()
        assert not (proj / "data/runs/ours/responses.jsonl").exists()  # it was really cut short
        first = list(answered)
        assert 5 <= len(first) < 16

        p2 = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
        assert p2.returncode == 0, p2.stderr[-2000:]
        second = answered[len(first):]

    safely_done = {b for t, b in first if t < killed_at - 0.25}
    resent = [b for _, b in second if b in safely_done]
    assert resent == [], f"{len(resent)} completed calls were sent again"
    # every request was answered exactly once overall, except at most the one in flight at the kill
    bodies = [b for _, b in answered]
    assert len(bodies) - len(set(bodies)) <= 1
    # 8 questions -> 8 code turns + 8 test turns
    assert len(set(bodies)) == 16
    recs = [json.loads(x) for x in (proj / "data/runs/ours/responses.jsonl").read_text().splitlines()]
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs)
