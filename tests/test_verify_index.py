"""Local exact-substring index (SQLite FTS5 trigram): exact counts, case, unicode,
agreement with grep -rlF on a real package directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import email_validator
from testleak.errors import ConfigError, DataError
from testleak.verify.index import CorpusFile, LocalIndex, build_index
from tests.project import local_search

FILES = {
    "alpha/a.py": 'EMAIL = "ana.k@corp.io"\nx = "aaaa"\n',
    "alpha/sub/b.py": 'contact = "Ana.K@corp.io"  # upper case\nq = \'say "hi" now\'\n',
    "beta/c.py": "name = 'Zoë Ångström'\nkey = 'tab\tsep'\nphone = '+86 138-1108-5305'\n",
    "beta/d.py": "aaaaaa\n'ana.k@corp.io'\n",
    "gamma/e.txt": "ana.k@corp.io in a text file (extension filtered out)\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def index(corpus, tmp_path_factory):
    db = tmp_path_factory.mktemp("idx") / "corpus.sqlite"
    stats = build_index(local_search(dirs=[str(corpus)]), db)
    assert (stats["files"], stats["repos"]) == (4, 2)
    with LocalIndex(db) as ix:
        yield ix


@pytest.fixture(scope="module")
def index_ci(corpus, tmp_path_factory):
    db = tmp_path_factory.mktemp("idx") / "ci.sqlite"
    build_index(local_search(dirs=[str(corpus)], case_sensitive=False, compress=False), db)
    with LocalIndex(db) as ix:
        yield ix


@pytest.fixture(scope="module")
def index_z(corpus, tmp_path_factory):
    db = tmp_path_factory.mktemp("idx") / "z.sqlite"
    build_index(local_search(dirs=[str(corpus)], compress=True), db)
    with LocalIndex(db) as ix:
        yield ix


# value, k (case-sensitive), repos, k (case-insensitive)
CASES = [
    ("ana.k@corp.io", 2, ["alpha", "beta"], 3),
    ("Ana.K@corp.io", 1, ["alpha"], 3),
    ("aaaa", 2, ["alpha", "beta"], 2),          # overlapping occurrences count once per file
    ("aaaaa", 1, ["beta"], 1),
    ('say "hi" now', 1, ["alpha"], 1),          # double quotes inside the value
    ("Zoë Ångström", 1, ["beta"], 1),           # unicode
    ("zoë ångström", 0, [], 1),
    ("tab\tsep", 1, ["beta"], 1),               # whitespace is part of the match
    ("138-1108-5305", 1, ["beta"], 1),
    ("corp.io'", 1, ["beta"], 1),
    ("not in corpus", 0, [], 0),
    ("in a text file", 0, [], 0),               # .txt not indexed
]


@pytest.mark.parametrize("value,k,repos,k_ci", CASES)
def test_exact_counts(index, index_ci, index_z, value, k, repos, k_ci):
    r = index.search(value)
    assert (r["outcome"], r["k"], r["repos"]) == ("searched", k, repos)
    assert len(r["repo_ids"]) == len(repos) and len(r["paths"]) == k
    assert value not in r["query"] or len(value) < 4
    assert index_ci.search(value)["k"] == k_ci
    assert index_z.search(value)["paths"] == r["paths"]   # zlib-compressed content, same hits


def test_paths_name_repository_and_file(index):
    r = index.search("ana.k@corp.io")
    assert r["paths"] == ["alpha/a.py", "beta/d.py"]
    assert r["engine"] == "local-fts5-trigram"


@pytest.mark.parametrize("value", ["", "a", "io"])
def test_short_values_are_unverifiable(index, value):
    r = index.search(value)
    assert (r["outcome"], r["k"]) == ("unverifiable", None)


def test_lines_returns_matching_lines(index):
    assert [(l["path"], l["line"]) for l in index.lines("corp.io")] == [
        ("alpha/a.py", 1), ("alpha/sub/b.py", 1), ("beta/d.py", 2)]


def test_missing_index_and_bad_config(tmp_path):
    with pytest.raises(DataError, match="run the index stage"):
        LocalIndex(tmp_path / "none.sqlite")
    with pytest.raises(ConfigError, match="does not exist"):
        build_index(local_search(dirs=[str(tmp_path / "nope")]), tmp_path / "x.sqlite")
    with pytest.raises(ConfigError, match="known: dirs, site-packages"):
        build_index(local_search(corpus="everything"), tmp_path / "x.sqlite")


def test_corpus_bounds_and_large_files(corpus, tmp_path):
    s = build_index(local_search(dirs=[str(corpus)], max_files=2), tmp_path / "a.sqlite")
    assert (s["files"], s["truncated"]) == (2, True)
    s = build_index(local_search(dirs=[str(corpus)], max_file_bytes=40), tmp_path / "b.sqlite")
    assert (s["files"], s["skipped_large"]) == (2, 2)  # a.py (35 B) and d.py (23 B) fit


def test_agrees_with_grep_on_a_real_package(tmp_path):
    pkg = Path(email_validator.__file__).parent
    files = [CorpusFile("email_validator", str(p.relative_to(pkg)), p) for p in sorted(pkg.rglob("*.py"))]
    assert len(files) >= 5
    db = tmp_path / "pkg.sqlite"
    build_index(local_search(), db, files=files)
    checked = 0
    with LocalIndex(db) as ix:
        for q in ["def validate_email(", "EmailSyntaxError", "ascii", '"""', "xn--", "nonexistent_zz_q", "@"]:
            r = ix.search(q)
            if len(q) < 3:
                assert r["outcome"] == "unverifiable"
                continue
            grep = subprocess.run(["grep", "-rlF", "--include=*.py", "--", q, str(pkg)], capture_output=True, text=True)
            want = sorted(str(Path(p).relative_to(pkg.parent)) for p in grep.stdout.split())
            assert sorted(r["paths"]) == want, q
            assert r["k"] == len(want)
            checked += bool(want)
    assert checked >= 4


def test_the_default_corpus_excludes_synthetic_data_generators_and_records_them():
    from testleak.config import compose, typed
    from testleak.verify.index import corpus_files, corpus_manifest, excluded_by, select_corpus

    local = typed(compose([]), "verifier.local")
    exclude = [e.model_dump() for e in local.exclude]
    names = {e.name for e in local.exclude}
    assert {"faker", "mimesis", "factory-boy", "hypothesis"} <= names and all(e.why for e in local.exclude)
    assert excluded_by("Faker", exclude) == "faker" and excluded_by("faker_web", exclude) == "faker-*"
    assert excluded_by("numpy", exclude) is None
    repos = {f.repo for f in corpus_files(local.model_copy(update={"max_files": 0}))}
    assert "Faker" not in repos and "hypothesis" not in repos and "numpy" in repos   # Faker is installed here
    m = corpus_manifest(local)
    ex = {e["name"]: e for e in m["excluded"]}
    assert ex["Faker"]["pattern"] == "faker" and ex["Faker"]["version"] and "fake" in ex["Faker"]["why"]
    assert "Faker" not in {d["name"] for d in m["distributions"]} and m["exclude"][0]["name"] == "faker"
    # without the list the generator's provider files are in the corpus (what the list keeps out)
    files = [f for f in corpus_files(local.model_copy(update={"exclude": []})) if f.repo == "Faker"]
    assert any("providers" in f.path for f in files)
    docs = list(select_corpus(local.model_copy(update={"max_files": 50})))
    assert docs and not any(d.repo == "Faker" for d in docs)


def test_an_exclusion_without_a_reason_is_one_line():
    from testleak.config import compose
    from testleak.errors import ConfigError

    with pytest.raises(ConfigError) as ei:
        compose(["verifier.local.exclude=[{name: faker}]"])
    assert "\n" not in str(ei.value).strip() and "why" in str(ei.value)
