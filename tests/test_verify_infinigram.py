"""infini-gram (suffix array) verifier: same documents, same hit counts and repository ids
as the FTS5 index on every query; case folding; unverifiable short values; capped counting."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import email_validator
from testleak.errors import DataError
from testleak.verify.index import LocalIndex, build_index
from tests.project import local_search
from testleak.verify.infinigram import InfiniGramIndex, build_infinigram
from tests.test_verify_index import FILES as INDEX_FILES

# the FTS5 tests' corpus, with a value repeated 51 times in one file (it counts once)
FILES = {**INDEX_FILES, "beta/d.py": INDEX_FILES["beta/d.py"] + "ana.k@corp.io\n" * 50}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    # a real third-party package as a third repository (many files, real code)
    shutil.copytree(Path(email_validator.__file__).parent, root / "email_validator",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _cfg(corpus, **kw):
    return local_search(dirs=[str(corpus)], **kw)


@pytest.fixture(scope="module")
def both(corpus, tmp_path_factory):
    d = tmp_path_factory.mktemp("idx")
    s_fts = build_index(_cfg(corpus), d / "corpus.sqlite")
    s_ig = build_infinigram(_cfg(corpus), d / "infinigram", cpus=1, mem_gib=1)
    assert s_ig["files"] == s_fts["files"] > 5 and s_ig["repos"] == s_fts["repos"] == 3
    assert s_ig["index_bytes"] > 0
    with LocalIndex(d / "corpus.sqlite") as fts, InfiniGramIndex(d / "infinigram") as ig:
        yield fts, ig


@pytest.mark.parametrize("value,k", [
    ("ana.k@corp.io", 2),          # a.py and d.py (51 occurrences in d.py count once)
    ("Ana.K@corp.io", 1),
    ("Zoë Ångström", 1),
    ("tab\tsep", 1),
    ("+86 138-1108-5305", 1),
    ("not in the corpus at all", 0),
    ("aaaa", 2),
])
def test_counts_documents_exactly(both, value, k):
    fts, ig = both
    r = ig.search(value)
    assert r["outcome"] == "searched" and r["k"] == k
    assert r["engine"] == "infini-gram-u8" and "k_capped" not in r
    f = fts.search(value)
    assert (r["k"], r["repo_ids"], r["repos"]) == (f["k"], f["repo_ids"], f["repos"])
    assert sorted(r["paths"]) == sorted(f["paths"])


def test_agrees_with_fts5_on_random_substrings_of_real_code(both, corpus):
    fts, ig = both
    rng = random.Random(3)
    texts = [p.read_text(encoding="utf-8") for p in sorted((corpus / "email_validator").rglob("*.py"))]
    queries = []
    while len(queries) < 150:
        t = rng.choice(texts)
        n = rng.randint(3, 30)
        if len(t) <= n:
            continue
        i = rng.randrange(0, len(t) - n)
        queries.append(t[i:i + n])
    disagree = [(q, ig.search(q)["k"], fts.search(q)["k"]) for q in queries]
    disagree = [d for d in disagree if d[1] != d[2]]
    assert not disagree, disagree[:5]
    assert sum(ig.search(q)["k"] > 1 for q in queries) > 10   # the sample has shared substrings


def test_short_values_are_unverifiable_not_zero(both):
    _, ig = both
    r = ig.search("ab")
    assert r["outcome"] == "unverifiable" and r["k"] is None


def test_case_insensitive_index_folds(corpus, tmp_path):
    build_infinigram(_cfg(corpus, case_sensitive=False), tmp_path / "ig", cpus=1, mem_gib=1)
    with InfiniGramIndex(tmp_path / "ig") as ig:
        assert ig.search("ANA.K@CORP.IO")["k"] == 3


def test_counting_stops_at_the_cap(corpus, tmp_path):
    build_infinigram(_cfg(corpus), tmp_path / "ig", cpus=1, mem_gib=1)
    with InfiniGramIndex(tmp_path / "ig", max_docs_counted=2) as ig:
        r = ig.search("import")
        assert r["k_capped"] is True and r["k"] == 3


def test_missing_index_says_what_to_run(tmp_path):
    with pytest.raises(DataError, match="verifier=infinigram"):
        InfiniGramIndex(tmp_path / "nope")


def test_index_build_is_deterministic(corpus, tmp_path):
    build_infinigram(_cfg(corpus), tmp_path / "a", cpus=1, mem_gib=1)
    build_infinigram(_cfg(corpus), tmp_path / "b", cpus=1, mem_gib=1)
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name


@pytest.mark.slow
def test_verifier_infinigram_through_dvc_repro_agrees_with_fts5(tmp_path_factory, session_cache):
    """`verifier=infinigram` end to end: the index stage builds the suffix array over the
    bounded corpus, verified@ours searches it; every searched candidate's hit count and
    repository ids equal the FTS5 index's over the same corpus."""
    import json as _json

    from testleak.records import read_jsonl
    from tests.project import SMALL, env_for, make_project, run

    base = tmp_path_factory.mktemp("ig_e2e")
    cache = session_cache
    small = [*SMALL, "verifier.judge_mode=rules"]
    proj = make_project(base / "p", ["experiment=tiny", "verifier=infinigram", *small])
    run(["dvc", "repro", "verified@ours"], proj, env_for(cache))
    assert (proj / "data/index/infinigram/testleak_index.json").exists()
    assert not (proj / "data/index/corpus.sqlite").exists()
    rs = read_jsonl(proj / "data/runs/ours/responses.jsonl", kind="response")
    assert any(r["status"] == "ok" for r in rs)
    cands = {c["id"]: c for c in read_jsonl(proj / "data/runs/ours/candidates.jsonl", kind="candidate")}
    hits = read_jsonl(proj / "data/runs/ours/verified.jsonl", kind="hit")
    assert len(hits) == len(cands) > 0
    params = _json.loads(_json.dumps(__import__("yaml").safe_load((proj / "params.yaml").read_text())))
    build_index(params["verifier"]["local"], base / "fts.sqlite")
    searched = [h for h in hits if h["outcome"] in ("in_window", "out_of_window")]
    with LocalIndex(base / "fts.sqlite") as fts, InfiniGramIndex(proj / "data/index/infinigram") as ig:
        for h in searched:
            assert h["engine"] == "infini-gram-u8"
            f = fts.search(cands[h["candidate_id"]]["value"])
            assert (h["k"], h["repo_ids"]) == (f["k"], f["repo_ids"])
        # the suffix array answers for a value known to be in the corpus, through the stage's index
        assert ig.search("def __init__(self")["k"] == fts.search("def __init__(self")["k"] > 0
    stats = _json.loads((proj / "data/index/stats.json").read_text())
    assert stats["engine"] == "infini-gram" and stats["files"] > 0 and "seconds" not in stats
