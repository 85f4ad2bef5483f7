"""Shared fixtures: the composed default config and the real embedded model gateway."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")

from testleak.config import ROOT, compose_dict  # noqa: E402
from testleak.paths import Paths  # noqa: E402


@pytest.fixture(scope="session")
def params() -> dict:
    """The default composition of conf/ (what params.yaml holds)."""
    return compose_dict()


@pytest.fixture(scope="session")
def taxonomy(params):
    from testleak.taxonomy import Taxonomy

    return Taxonomy.from_config(params)


@pytest.fixture(scope="session")
def local_gateway(params, tmp_path_factory):
    """The embedded Qwen2.5-Coder-0.5B model through the real gateway and xllamacpp server.

    The model file is assembled in the project's .cache/models (shared, checked by sha256);
    the response cache is fresh for the test session.
    """
    from testleak.llm import open_gateway

    cache = tmp_path_factory.mktemp("llm-cache")
    with open_gateway(params["model"], Paths(ROOT), cache_dir=cache, log_path=cache / "calls.jsonl") as gw:
        yield gw


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory):
    """One LLM and search cache ($TESTLEAK_CACHE) for the end-to-end DVC runs of a test session:
    a request one test paid for (same model, messages and sampling) is answered from the cache in
    the next, as in a user's repeated runs. Tests that count calls or resume from a cold cache
    (test_resume, test_budget, test_plan, test_faults) keep caches of their own."""
    from tests.project import shared_cache

    return shared_cache(tmp_path_factory.mktemp("session-cache"))


def pytest_collection_modifyitems(session, config, items):
    """The conversion test of the scorer model first (tests/test_llm_hf.py): the copy it keeps
    in .cache/models/hf is read by every later test and stage that loads the scorer."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_llm_hf.py::test_the_kept_copy"))
