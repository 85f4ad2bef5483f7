"""Credentials never reach the tree: `dvc repro` of a tiny project's chain (questions ->
responses -> candidates -> judged -> verified -> confirmed) against a real local OpenAI-protocol
server and a real local GitHub code-search server, with sentinel credentials only in the
environment (an API key, a base URL with user-info, a GitHub token, the value key). Afterwards no
file under the project (git objects, `.dvc/` with DVC's run cache, logs, data, the LLM and
search caches, params.yaml, dvc.lock) and no output of DVC holds a sentinel, in clear or base64."""

from __future__ import annotations

import base64
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub
from tests.fake_openai import FakeOpenAI
from tests.project import env_for, make_project, run

pytestmark = pytest.mark.slow

# made at import, so that no file of the project (this one is copied too) holds them
API_KEY = "sk-" + secrets.token_hex(12)
URL_PASSWORD = "pw" + secrets.token_hex(8)
GH_TOKEN = "ghp_" + secrets.token_hex(12)
VALUE_KEY = secrets.token_hex(16)
SENTINELS = (API_KEY, URL_PASSWORD, GH_TOKEN, VALUE_KEY)

QUESTIONS = ("1. Write a function that registers a player account with a username, an email address and "
             "a password, and stores it.\n"
             "2. Write a function that updates a player's profile: display name, email address and phone number.\n")
CODE = ("```python\ndef register(username, email, password):\n    db.save({'username': username, 'email': email, "
        "'password': password})\n```")
TESTS = ("```python\ndef test_register():\n    assert register('mila.k', 'mila.kowalska@tutanota.de', 'Hx7#pq2!vR')"
         "\n    assert update_profile('Mila K', 'mila.kowalska@tutanota.de', '+48 512 345 678')\n```")


def _answer(body: dict) -> str:
    text = " ".join(str(m.get("content", "")) for m in body["messages"]).lower()
    if "unit test" in body["messages"][-1]["content"].lower():
        return TESTS
    if "function" in text and ("task" in text or "question" in text) and "```" not in text:
        return QUESTIONS if "write a function" not in text else CODE
    return CODE


def _encodings(s: str) -> set[bytes]:
    b = s.encode()
    return {b, base64.b64encode(b), base64.b64encode(f"auditor:{s}".encode())}


def test_no_sentinel_credential_anywhere_after_dvc_repro(tmp_path):
    with FakeOpenAI() as llm, FakeGitHub(tokens={GH_TOKEN}) as gh:
        llm.answer = _answer
        hosted = {"name": "fake", "family": "gpt", "provider": "openai", "api_model": "fake-model",
                  "base_url": None, "base_url_env": "SENTINEL_BASE_URL", "api_key_env": "SENTINEL_API_KEY",
                  "gguf": None, "server": None}

        def edit(p):
            for role in ("model", "questioner"):
                p[role].update(hosted)
                p[role]["limits"].update({"concurrency": 1, "max_retries": 0, "timeout": 30})
            # the model by its API key; the questioner behind a URL with user-info (HTTP basic auth)
            p["model"].update({"base_url": llm.base_url, "base_url_env": None})
            for spec in p["experiment"]["runs"].values():
                if spec.get("model_params") == "model":
                    spec["model"] = "fake"
            p["verifier"]["backend"] = "github"
            p["verifier"]["judge_mode"] = "rules"
            p["verifier"]["github"].update({"api_url": gh.url, "token_envs": ["GITHUB_TOKEN"], "timeout": 10,
                                            "max_retries": 0})
            p["verifier"]["local"]["max_bytes"] = 3_000_000

        proj = make_project(tmp_path / "p", ["experiment=tiny"], edit=edit)
        env = env_for(proj / ".cache")       # caches inside the project: searched too
        (proj / ".cache" / "models").mkdir(parents=True, exist_ok=True)
        env.update({"SENTINEL_API_KEY": API_KEY, "GITHUB_TOKEN": GH_TOKEN, "TESTLEAK_VALUE_KEY": VALUE_KEY,
                    "SENTINEL_BASE_URL": llm.base_url.replace("http://", f"http://auditor:{URL_PASSWORD}@")})
        r = run(["dvc", "repro", "confirmed@ours"], proj, env)
        outputs = r.stdout + r.stderr
        # the credentials were used: the servers saw them, and the chain produced records
        assert any(q["auth"] == f"Bearer {GH_TOKEN}" for q in gh.requests), "no search reached the fake GitHub"
        auths = {q["headers"].get("authorization") for q in llm.requests}
        assert f"Bearer {API_KEY}" in auths and f"Basic {base64.b64encode(f'auditor:{URL_PASSWORD}'.encode()).decode()}" \
            in auths, "the model key or the questioner's URL credentials were not sent"
        confirmed = (proj / "data/runs/ours/confirmed.jsonl").read_text(encoding="utf-8")
        assert confirmed.strip() and "mila.kowalska@tutanota.de" in (proj / "data/runs/ours/candidates.jsonl").read_text()
        run(["git", "add", "-A"], proj)
        run(["git", "commit", "-qm", "after repro"], proj)
        run(["git", "gc", "-q", "--prune=now"], proj)   # packed objects: zlib-compressed, searched unpacked below

    assert (proj / ".dvc" / "cache" / "runs").is_dir(), "DVC's run cache was not written"
    found = _scan(proj, SENTINELS)
    # the scan reaches data/ and DVC's cache: it finds a raw candidate value there (and git has none)
    where = {f.split("/")[0] + ("/" + f.split("/")[1] if f.startswith(".dvc/") else "")
             for f, _ in _scan(proj, ["mila.kowalska@tutanota.de"])}
    assert {"data", ".dvc/cache"} <= where, where
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=proj, capture_output=True,
                             check=True).stdout
    found += [f"git object: {SENTINELS.index(s)}" for s in SENTINELS if any(e in objects for e in _encodings(s))]
    found += [f"dvc output: {SENTINELS.index(s)}" for s in SENTINELS if s in outputs]
    assert not found, found


def _scan(root: Path, values) -> list[tuple[str, int]]:
    """(file, index of the value) for every file under ``root`` holding a value in clear or base64."""
    out = []
    for f in sorted(x for x in root.rglob("*") if x.is_file() and not x.is_symlink()):
        data = f.read_bytes()
        out += [(str(f.relative_to(root)), i) for i, s in enumerate(values) if any(e in data for e in _encodings(s))]
    return out
