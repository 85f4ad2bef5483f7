"""Local exact-substring corpus index (offline stand-in for GitHub code search, paper Sec. 4.3).

The paper keeps candidates with 1 <= k <= 100 GitHub hits (files); offline we search the Python
sources of the installed distributions, each distribution one "repository" (its id feeds IL-L as
GitHub's ``repository.id`` would). SQLite FTS5 (``trigram``, ``detail=none``, contentless, contents
stored beside it, optionally zlib-compressed): a query ANDs the value's rarest trigrams (up to 16)
and confirms each candidate file by an exact substring test, so counts are exact (case-sensitive
unless ``case_sensitive: false``). Values under 3 characters have no trigram: they are
``unverifiable``, never zero hits.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata as md
import json
import os
import sqlite3
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..config import typed
from ..errors import ConfigError, DataError
from ..privacy import mask
from ..settings import LocalSearch
from .envlock import PROJECT, normalize

SCHEMA_VERSION = 1
MIN_QUERY_CHARS = 3


@dataclass(frozen=True)
class CorpusFile:
    repo: str          # repository name (distribution name, or the top directory name)
    path: str          # path inside the repository
    abspath: Path


def local_settings(local) -> LocalSearch:
    """``verifier.local`` typed: a :class:`~testleak.settings.LocalSearch`, or its mapping as the
    canary calibration (not converted yet) hands it to :func:`build_index`."""
    return local if isinstance(local, LocalSearch) else typed({"verifier": {"local": local}}, "verifier.local")


def _exclude(local: LocalSearch) -> list[dict]:
    return [e.model_dump() for e in local.exclude]


def excluded_by(name: str, exclude: Iterable) -> str | None:
    """The ``verifier.local.exclude`` pattern (a distribution name or glob, compared in
    normalized form: lower case, runs of ``-_.`` as ``-``) that excludes distribution ``name``
    from the site-packages corpus, else None."""
    n = normalize(name)
    for pat, _ in _exclusions(exclude):
        if fnmatch.fnmatchcase(n, normalize(pat)):
            return pat
    return None


def _exclusions(exclude: Iterable) -> list[tuple[str, str | None]]:
    """``verifier.local.exclude`` entries as (pattern, why); an entry may be a bare name."""
    return [(str(e.get("name")), e.get("why")) if hasattr(e, "get") else (str(e), None) for e in exclude or ()]


def iter_site_packages(extensions: Iterable[str], exclude: Iterable = ()) -> Iterator[CorpusFile]:
    """Files of every installed distribution (``importlib.metadata``), one repository each,
    in a deterministic order (distribution name, then path), except the distributions that
    ``exclude`` names (:func:`excluded_by`: synthetic-data generators). A file claimed by two
    distributions is listed once."""
    exts = tuple(extensions)
    seen: set[str] = set()
    dists = sorted(md.distributions(), key=lambda d: ((d.metadata["Name"] or "").lower(), d.version or ""))
    for d in dists:
        name = d.metadata["Name"] or "unknown"
        if normalize(name) == PROJECT:   # our own code (and its editable finder, which holds a path)
            continue
        if excluded_by(name, exclude):
            continue
        for f in sorted(d.files or [], key=str):
            s = str(f)
            if not s.endswith(exts) or s.startswith(".."):
                continue
            p = Path(d.locate_file(f))
            key = str(p.resolve()) if p.exists() else None
            if key is None or key in seen:
                continue
            seen.add(key)
            yield CorpusFile(f"{name}", s, p)


def iter_dirs(dirs: Iterable[str | os.PathLike], extensions: Iterable[str]) -> Iterator[CorpusFile]:
    """Files under configured directories; each immediate subdirectory is one repository
    (files directly in a configured directory belong to a repository named after it)."""
    exts = tuple(extensions)
    for d in dirs:
        root = Path(d)
        if not root.is_dir():
            raise ConfigError(f"corpus directory {root} does not exist: fix verifier.local.dirs")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames):
                if exts and not fn.endswith(exts):
                    continue
                p = Path(dirpath) / fn
                rel = p.relative_to(root)
                repo = rel.parts[0] if len(rel.parts) > 1 else root.name
                path = str(Path(*rel.parts[1:])) if len(rel.parts) > 1 else fn
                yield CorpusFile(repo, path, p)


def corpus_files(local: LocalSearch) -> Iterator[CorpusFile]:
    corpus, exts = local.corpus, list(local.extensions)
    if corpus == "site-packages":
        yield from iter_site_packages(exts, _exclude(local))
        yield from iter_dirs(local.dirs, exts)
    elif corpus == "dirs":
        dirs = list(local.dirs)
        if not dirs:
            raise ConfigError("verifier.local.corpus is 'dirs' but verifier.local.dirs is empty: list the directories to index")
        yield from iter_dirs(dirs, exts)
    else:
        raise ConfigError(f"unknown verifier.local.corpus {corpus!r}; known: dirs, site-packages")


@dataclass(frozen=True)
class CorpusDoc:
    """One document of the bounded corpus, as every index engine stores it."""
    repo_id: int       # 1-based, in order of first appearance (identical across engines)
    repo: str
    path: str
    size: int          # bytes on disk
    text: str          # UTF-8 decoded (undecodable bytes replaced, counted)


def _read_text(raw: bytes, stats: dict) -> str:
    """UTF-8 text of a file; undecodable bytes are replaced and counted."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        stats["decode_errors"] += 1
        return raw.decode("utf-8", errors="replace")


def select_corpus(local: LocalSearch, files: Iterable[CorpusFile] | None = None,
                  stats: dict | None = None) -> Iterator[CorpusDoc]:
    """The documents an index holds: the corpus files of ``verifier.local`` in their
    deterministic order, files over ``max_file_bytes`` skipped (GitHub indexes files under
    384 KB), stopped at ``max_files`` / ``max_bytes``. Every engine (FTS5 here, infini-gram
    in :mod:`.infinigram`) indexes exactly these documents, so their hit counts agree.
    ``stats`` (if given) is filled with files, bytes, repos, skipped and truncation counts."""
    max_file = local.max_file_bytes
    max_files, max_bytes = local.max_files or None, local.max_bytes or None     # 0: no limit
    files = corpus_files(local) if files is None else files
    st = stats if stats is not None else {}
    st.update({"files": 0, "bytes": 0, "repos": 0, "skipped_large": 0, "skipped_unreadable": 0,
               "decode_errors": 0, "truncated": False})
    repo_ids: dict[str, int] = {}
    for f in files:
        try:
            size = f.abspath.stat().st_size
            if size > max_file:
                st["skipped_large"] += 1
                continue
            if max_files and st["files"] >= max_files or max_bytes and st["bytes"] + size > max_bytes:
                st["truncated"] = True
                break
            raw = f.abspath.read_bytes()
        except OSError:
            st["skipped_unreadable"] += 1
            continue
        text = _read_text(raw, st)
        rid = repo_ids.setdefault(f.repo, len(repo_ids) + 1)
        st["files"] += 1
        st["bytes"] += len(raw)
        st["repos"] = len(repo_ids)
        yield CorpusDoc(rid, f.repo, f.path, len(raw), text)


def _create_schema(con: sqlite3.Connection, case: bool) -> None:
    con.executescript(f"""
        PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=4096;
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE repos(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
        CREATE TABLE files(id INTEGER PRIMARY KEY, repo_id INTEGER, path TEXT, size INTEGER, content BLOB);
        CREATE VIRTUAL TABLE grams USING fts5(body, tokenize="trigram case_sensitive {1 if case else 0}",
                                             detail=none, content='');
    """)


def _insert_docs(con: sqlite3.Connection, docs: Iterable[CorpusDoc], compress: bool, batch_size: int = 500) -> None:
    """Insert the selected documents (in order) into the repos/files/grams tables."""
    batch: list[tuple] = []
    seen_repos: set[int] = set()

    def flush():
        con.executemany("INSERT INTO files(id, repo_id, path, size, content) VALUES (?,?,?,?,?)",
                        [(i, r, p, s, c) for i, r, p, s, c, _ in batch])
        con.executemany("INSERT INTO grams(rowid, body) VALUES (?, ?)", [(i, t) for i, *_x, t in batch])
        batch.clear()

    for n, d in enumerate(docs, 1):
        if d.repo_id not in seen_repos:
            seen_repos.add(d.repo_id)
            con.execute("INSERT INTO repos(id, name) VALUES (?, ?)", (d.repo_id, d.repo))
        enc = d.text.encode("utf-8")
        batch.append((n, d.repo_id, d.path, d.size, zlib.compress(enc, 6) if compress else enc, d.text))
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()


def corpus_manifest(local: LocalSearch) -> dict:
    """What the corpus is built from, for data/index/manifest.json: the installed distributions
    with their versions (corpus ``site-packages``), the installed ones the exclude list kept out
    (``excluded``: name, version, the pattern and why) with the list itself (``exclude``), and
    the configured directories."""
    corpus, exclude = local.corpus, _exclude(local)
    dists, excluded = [], []
    if corpus == "site-packages":
        every = sorted({((d.metadata["Name"] or "unknown"), d.version or "") for d in md.distributions()
                        if normalize(d.metadata["Name"] or "") != PROJECT},
                       key=lambda x: (x[0].lower(), x[1]))
        why = dict(_exclusions(exclude))
        for n, v in every:
            pat = excluded_by(n, exclude)
            if pat is None:
                dists.append({"name": n, "version": v})
            else:
                excluded.append({"name": n, "version": v, "pattern": pat, "why": why.get(pat)})
    return {"corpus": corpus, "distributions": dists, "excluded": excluded,
            "exclude": [{"name": n, "why": w} for n, w in _exclusions(exclude)],
            "dirs": [str(d) for d in local.dirs]}


def _remove_db(db: Path) -> None:
    """Delete an SQLite database file and its journal files."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


def build_index(local: LocalSearch, out: str | os.PathLike, files: Iterable[CorpusFile] | None = None) -> dict:
    """Build the index database at ``out`` (atomically) and return its build statistics.

    Config keys (``verifier.local``): corpus, dirs, extensions, case_sensitive,
    max_file_bytes, max_files, max_bytes, compress (document selection: :func:`select_corpus`).
    """
    local = local_settings(local)
    case, compress = local.case_sensitive, local.compress
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    _remove_db(tmp)          # left by a build killed with SIGKILL (SIGINT and SIGTERM clean up below)
    con = sqlite3.connect(tmp)
    t0 = time.perf_counter()
    stats: dict = {}
    try:
        _create_schema(con, case)
        _insert_docs(con, select_corpus(local, files, stats), compress)
        con.execute("INSERT INTO grams(grams) VALUES ('optimize')")
        # No build time or absolute path in the database: the same corpus gives the same bytes,
        # so DVC skips the stages downstream of a rebuilt but unchanged index.
        meta = {"schema_version": SCHEMA_VERSION, "case_sensitive": case, "compress": compress,
                "corpus": local.corpus, "stats": stats}
        con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        con.commit()
        con.execute("VACUUM")
        con.close()
        os.replace(tmp, out)
    except BaseException:
        con.close()
        _remove_db(tmp)
        raise
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    stats["db_bytes"] = out.stat().st_size
    return stats


def trigrams(value: str) -> list[str]:
    return [value[i:i + 3] for i in range(len(value) - 2)]


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class LocalIndex:
    """Exact substring search over an index built by :func:`build_index`."""

    engine = "local-fts5-trigram"

    def __init__(self, path: str | os.PathLike, max_hits_listed: int = 100, probe_terms: int = 16):
        self.path = Path(path)
        if not self.path.exists():
            raise DataError(f"corpus index {self.path} not found: run the index stage (dvc repro index, "
                            f"or python -m stages.index)")
        self.con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        meta = {k: json.loads(v) for k, v in self.con.execute("SELECT key, value FROM meta")}
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise DataError(f"corpus index {self.path} has schema {meta.get('schema_version')}, expected "
                            f"{SCHEMA_VERSION}: rebuild it with the index stage")
        self.meta = meta
        self.case_sensitive = bool(meta["case_sensitive"])
        self.compress = bool(meta["compress"])
        self.max_hits_listed = max_hits_listed
        self.probe_terms = probe_terms
        self.con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, grams, 'row')")
        self.repo_names = dict(self.con.execute("SELECT id, name FROM repos"))

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _norm(self, s: str) -> str:
        return s if self.case_sensitive else s.lower()

    def _doc_freq(self, term: str) -> int:
        row = self.con.execute("SELECT doc FROM temp.vocab WHERE term = ?", (term,)).fetchone()
        return row[0] if row else 0

    def search(self, value: str) -> dict:
        """``{k, repo_ids, repos, paths, outcome, query, engine, searched_at}``; ``outcome`` is
        ``searched`` or ``unverifiable`` (value shorter than 3 characters). ``searched_at`` is
        None: a local answer is determined by the index (a DVC dep), not by the time asked."""
        base = {"query": mask(value), "engine": self.engine, "searched_at": None}
        if value is None or len(value) < MIN_QUERY_CHARS:
            return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "unverifiable",
                    "reason": f"value shorter than {MIN_QUERY_CHARS} characters: no trigram to search"}
        needle = self._norm(value)
        grams = sorted(set(trigrams(needle)))
        # sqlite folds case itself when case_sensitive=0; the vocab holds folded trigrams
        freqs = [(self._doc_freq(g), g) for g in grams]
        freqs.sort()
        if freqs[0][0] == 0:
            return {**base, "k": 0, "repo_ids": [], "repos": [], "paths": [], "outcome": "searched"}
        probe = [g for _, g in freqs[: self.probe_terms]]
        q = " AND ".join(_phrase(g) for g in probe)
        if self.case_sensitive and not self.compress:
            # confirm inside SQLite: byte-wise instr on the stored UTF-8 content
            hits = self.con.execute(
                "SELECT repo_id, path FROM files WHERE id IN (SELECT rowid FROM grams WHERE grams MATCH ?) "
                "AND instr(content, ?) > 0 ORDER BY id", (q, needle.encode("utf-8"))).fetchall()
        else:
            hits = []
            for repo_id, path, content in self.con.execute(
                    "SELECT repo_id, path, content FROM files WHERE id IN "
                    "(SELECT rowid FROM grams WHERE grams MATCH ?) ORDER BY id", (q,)):
                text = (zlib.decompress(content) if self.compress else content).decode("utf-8")
                if needle in self._norm(text):
                    hits.append((repo_id, path))
        repo_ids = sorted({r for r, _ in hits})
        return {**base, "k": len(hits), "repo_ids": repo_ids, "repos": [self.repo_names[r] for r in repo_ids],
                "paths": [f"{self.repo_names[r]}/{p}" for r, p in hits[: self.max_hits_listed]],
                "outcome": "searched"}

    def lines(self, value: str, limit: int = 5) -> list[dict]:
        """The matching lines of the first hits (raw: mask them before display)."""
        res = self.search(value)
        out = []
        needle = self._norm(value)
        for full in res["paths"]:
            repo, _, path = full.partition("/")
            rid = next(k for k, v in self.repo_names.items() if v == repo)
            content = self.con.execute("SELECT content FROM files WHERE repo_id = ? AND path = ?",
                                       (rid, path)).fetchone()[0]
            text = (zlib.decompress(content) if self.compress else content).decode("utf-8")
            for n, line in enumerate(text.splitlines(), 1):
                if needle in self._norm(line):
                    out.append({"path": full, "line": n, "text": line.strip()[:300]})
                    if len(out) >= limit:
                        return out
        return out
