"""The "How to add a method" and "How to add a verifier backend" recipes of docs/ARCHITECTURE.md,
followed step by step for a toy method and a toy backend registered at test time (monkeypatch
restores the registries afterwards): a config naming them validates, and they run through the
tiny experiment's per-run chain (responses -> candidates -> judged -> verified) without an LLM
server, the backend searching a real local index."""

from __future__ import annotations

import re
from typing import Iterable, Iterator

import pytest

from testleak import methods, pipeline, registry
from testleak.config import ROOT, compose_dict, typed
from testleak.errors import ConfigError
from testleak.paths import Paths
from testleak.verify import search
from testleak.verify.index import LocalIndex

DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
EMAIL = "lena.voigt@mailbox.org"
TINY = ["experiment=tiny", "verifier.judge_mode=rules", "review=auto"]


def recipe(title: str) -> str:
    m = re.search(rf"\*\*{re.escape(title)}\*\*(.*?)(?=\n\*\*|\n## )", DOC, re.S)
    assert m, f"docs/ARCHITECTURE.md has no recipe {title!r}"
    return " ".join(m.group(1).split())


# -- step 2 of the method recipe: an elicit function in its own module (here: this test module)
def elicit_toy(inputs: methods.RunInputs) -> Iterator[dict]:
    """One response per scenario question of the run, its test turn holding a fixture e-mail."""
    s = inputs.settings
    for i in range(2):
        yield {"id": f"{s.run}/r{i}", "run": s.run, "method": s.method, "round": s.round, "status": "ok",
               "prompt_text": "write a test fixture for a user account",
               "tests_text": f"def test_user():\n    user = {{'email': '{EMAIL}'}}\n    assert user\n"}


# -- step 2 of the backend recipe: a class with engine and search(value), on a real local index
class ToySearch:
    engine = "toy-fts5"

    def __init__(self, path, max_hits_listed: int = 100):
        self.index = LocalIndex(path, max_hits_listed=max_hits_listed)
        self.searched: list[str] = []

    def search(self, value: str) -> dict:
        self.searched.append(value)
        return {**self.index.search(value), "engine": self.engine}


def _open_toy(params, paths):
    return ToySearch(paths.corpus_index(typed(params, "verifier.index")),
                     max_hits_listed=typed(params, "verifier.local.max_hits_listed"))


@pytest.fixture
def toy_method(monkeypatch):
    # step 1: the name in testleak/registry.py METHODS; step 3: register() in testleak/methods.py
    monkeypatch.setitem(registry.METHODS, "toy", "a fixed fixture e-mail per question (test only)")
    monkeypatch.setattr(methods, "_REGISTRY", dict(methods._REGISTRY))
    methods.register("toy", elicit_toy)
    yield "toy"


@pytest.fixture
def toy_backend(monkeypatch):
    # step 1: the name in testleak/registry.py BACKENDS; step 3: its opener in verify/search.py BACKENDS
    monkeypatch.setitem(registry.BACKENDS, "toy", "exact substring search through the local FTS5 index (test only)")
    monkeypatch.setitem(search.BACKENDS, "toy", _open_toy)
    yield "toy"


def test_the_recipes_name_every_step():
    m = recipe("A method.")
    for step in ("`METHODS` in `testleak/registry.py`", "elicit_<name>(inputs: methods.RunInputs)",
                 'register("<name>", elicit_<name>', "`testleak/methods.py`", "conf/experiment/"):
        assert step in m, step
    b = recipe("A verifier backend.")
    for step in ("`BACKENDS` in `testleak/registry.py`", "search(value)", "`BACKENDS` of `testleak/verify/search.py`",
                 "conf/verifier/<name>.yaml", "`index:`"):
        assert step in b, step


def test_unregistered_names_fail_in_the_schema_and_in_the_registries():
    with pytest.raises(ConfigError, match=r"method = 'toy' .*expected one of 'ours', 'codexleaks' or 'codebreaker'"):
        compose_dict([*TINY, "experiment.protocol.ours.method=toy"])
    with pytest.raises(ConfigError, match=r"verifier.backend = 'toy' .*expected one of 'local', 'infinigram' or 'github'"):
        compose_dict([*TINY, "verifier.backend=toy"])
    with pytest.raises(ValueError, match="not in testleak/registry.py METHODS"):
        methods.register("toy", elicit_toy)


def test_a_toy_method_and_backend_run_through_the_tiny_chain(tmp_path, toy_method, toy_backend):
    corpus = tmp_path / "corpus"
    (corpus / "acme-app" / "app").mkdir(parents=True)
    (corpus / "acme-app" / "app" / "settings.py").write_text(f'ADMIN_EMAIL = "{EMAIL}"\n', encoding="utf-8")
    params = compose_dict([*TINY, "+experiment.protocol.toy={method: toy, round: 0, library: prior}",
                           "verifier.backend=toy", "verifier.index=data/index/toy.sqlite",
                           "verifier.local.corpus=dirs", f"verifier.local.dirs=[{corpus}]", "verifier.local.lock_file=null"])
    assert params["experiment"]["runs"]["toy"]["method"] == "toy" and params["verifier"]["backend"] == "toy"
    assert methods.get("toy").doc == registry.METHODS["toy"]

    paths = Paths(tmp_path)
    stats = search.build_corpus_index(params, paths)     # a non-infinigram backend: the FTS5 index
    assert stats["files"] == 1 and (tmp_path / "data" / "index" / "toy.sqlite").is_file()

    recs, st = pipeline.responses(params, "toy", gateway=None)
    assert st["method"] == "toy" and st["responses"] == st["ok"] == 2
    cands, _ = pipeline.candidates(params, "toy", recs)
    assert {c["value"] for c in cands if c["attribute"] == "email"} == {EMAIL}
    verd, _ = pipeline.judged(params, "toy", cands, None, pipeline.judge_fragments(params, paths))
    backend = pipeline.open_backend(params, paths)
    assert isinstance(backend, ToySearch)
    hits, hst = pipeline.verified(params, "toy", verd, cands, backend)
    assert hst["backend"] == "toy" and hst["engine"] == "toy-fts5"
    email_hits = [h for h in hits if h["attribute"] == "email" and h["kept"]]
    assert email_hits and all(h["outcome"] == "in_window" and h["k"] == 1 and h["engine"] == "toy-fts5"
                              for h in email_hits)
    assert EMAIL in backend.searched
