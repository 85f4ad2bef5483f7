"""Suffix-array corpus verifier: exact substring search with infini-gram (``verifier=infinigram``).

Teams auditing their own model search their training corpus (tens of GB to TBs), where the field's
tool is a suffix array (infini-gram, Liu et al. 2024), not a trigram index. The index is byte-level
(``--token_dtype u8``, one document per file, separator 0xff, which never occurs in UTF-8) over the
documents of the FTS5 index (:func:`testleak.verify.index.select_corpus`). A query's occurrences
map to documents by binary search over document offsets and to repositories by a per-document id
array (``repo_id.S.npy``); ``k`` counts distinct documents (files, as GitHub and FTS5 count).
Counting stops at ``max_docs_counted`` (``k_capped: true``, k a lower bound; the default is far
above the window's 100, so the window decision is exact). Values shorter than
``min_query_chars`` are ``unverifiable``.
"""

from __future__ import annotations

import json
import mmap
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

from ..errors import ConfigError, DataError
from ..privacy import mask
from ..settings import LocalSearch
from .index import MIN_QUERY_CHARS, CorpusFile, select_corpus

SCHEMA_VERSION = 1
MANIFEST = "testleak_index.json"
_SEP = 0xFF              # infini-gram's u8 document separator
_VOCAB = 255             # token ids 0..254 are content bytes for the engine's checks


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def _cpus(corpus_bytes: int) -> int:
    """Indexer processes: one for small corpora (infini-gram's parallel suffix-array builder
    splits the data into one part per process and fails on parts of a few bytes), else all cores."""
    return 1 if corpus_bytes < (16 << 20) else (os.cpu_count() or 1)


def _shards(d: Path) -> list[int]:
    return sorted(int(p.name.split(".")[1]) for p in d.glob("tokenized.*"))


def _write_sidecars(d: Path) -> dict[int, str]:
    """Per shard, ``repo_id.S.npy``: the repository id of every document (in document order),
    so a query maps occurrences to repositories without parsing metadata; returns id -> name."""
    import numpy as np

    names: dict[int, str] = {}
    for s in _shards(d):
        ids = []
        with (d / f"metadata.{s}").open(encoding="utf-8") as f:
            for line in f:
                m = json.loads(line)["metadata"]
                ids.append(int(m["repo_id"]))
                names.setdefault(int(m["repo_id"]), m["repo"])
        np.save(d / f"repo_id.{s}.npy", np.asarray(ids, dtype=np.uint32))
    return names


def build_infinigram(local: LocalSearch, out: str | os.PathLike, files: Iterable[CorpusFile] | None = None, *,
                     cpus: int | None = None, mem_gib: int | None = None, shards: int = 1) -> dict:
    """Build the infini-gram index directory ``out`` (atomically) over :func:`select_corpus`'s
    documents; return build statistics (files, bytes, repos, seconds, index_bytes).

    The corpus is written as JSONL shards (``text`` + metadata) to a temporary directory and
    indexed by ``python -m infini_gram.indexing`` (its Rust suffix-array builder). Case folding
    follows ``verifier.local.case_sensitive`` (folded text is indexed, queries are folded)."""
    try:
        import infini_gram  # noqa: F401
    except ImportError:
        raise ConfigError("verifier=infinigram needs the package infini-gram (pip install infini-gram==2.6.0; "
                          "bash scripts/bootstrap.sh installs it)") from None
    case = local.case_sensitive
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp_out, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="infinigram_", dir=out.parent))
    t0 = time.perf_counter()
    stats: dict = {}
    try:
        data = work / "data"
        data.mkdir()
        with (data / "corpus.jsonl").open("w", encoding="utf-8") as f:
            for d in select_corpus(local, files, stats):
                text = d.text if case else d.text.lower()
                f.write(json.dumps({"text": text, "repo_id": d.repo_id, "repo": d.repo, "path": d.path},
                                   ensure_ascii=False) + "\n")
        if stats["files"] == 0:
            raise DataError("the corpus is empty: check verifier.local (corpus, dirs, extensions)")
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        ulimit = hard if hard != resource.RLIM_INFINITY else 1 << 20
        cmd = [sys.executable, "-m", "infini_gram.indexing", "--data_dir", str(data), "--save_dir", str(tmp_out),
               "--temp_dir", str(work / "tmp"), "--token_dtype", "u8", "--add_metadata",
               "--shards", str(shards), "--cpus", str(cpus or _cpus(stats["bytes"])),
               "--mem", str(mem_gib or 4), "--ulimit", str(min(ulimit, 1 << 20))]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
            raise DataError(f"infini-gram indexing failed (exit {p.returncode}): {tail[0][:300]}")
        repos = _write_sidecars(tmp_out)
        manifest = {"schema_version": SCHEMA_VERSION, "engine": "infini-gram", "token_dtype": "u8",
                    "case_sensitive": case, "corpus": local.corpus,
                    "repos": {str(k): v for k, v in sorted(repos.items())},
                    "stats": {k: stats[k] for k in sorted(stats)}}
        (tmp_out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp_out, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_out, ignore_errors=True)
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    stats["index_bytes"] = _dir_bytes(out)
    return stats


class InfiniGramIndex:
    """``search(value)`` over an index built by :func:`build_infinigram`, with the answer shape
    of every corpus backend (:mod:`testleak.verify.search`)."""

    engine = "infini-gram-u8"

    def __init__(self, path: str | os.PathLike, max_hits_listed: int = 100, max_docs_counted: int = 100_000,
                 batch: int = 1 << 20):
        self.path = Path(path)
        mf = self.path / MANIFEST
        if not mf.exists():
            raise DataError(f"infini-gram index {self.path} not found: run the index stage with "
                            f"verifier=infinigram (dvc repro index)")
        self.meta = json.loads(mf.read_text(encoding="utf-8"))
        if self.meta.get("schema_version") != SCHEMA_VERSION:
            raise DataError(f"infini-gram index {self.path} has schema {self.meta.get('schema_version')}, "
                            f"expected {SCHEMA_VERSION}: rebuild it with the index stage")
        from infini_gram.engine import InfiniGramEngine

        self.case_sensitive = bool(self.meta["case_sensitive"])
        self.max_hits_listed = int(max_hits_listed)
        self.max_docs_counted = int(max_docs_counted)
        self.batch = int(batch)
        self._eng = InfiniGramEngine(index_dir=str(self.path), eos_token_id=0, vocab_size=_VOCAB, token_dtype="u8")
        self.repo_names = {int(k): v for k, v in self.meta["repos"].items()}
        self._open_shards()

    def close(self) -> None:
        for sh in getattr(self, "_shards", []):
            sh["metadata"].close()
        self._shards, self._eng = [], None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _open_shards(self) -> None:
        """Memory-map each shard's suffix array (``table.S``: pointers of ``ratio`` bytes),
        document offsets (``offset.S``) and repository ids (``repo_id.S.npy``)."""
        import numpy as np

        self._np = np
        self._shards = []
        base = 0
        for s in _shards(self.path):
            ds = (self.path / f"tokenized.{s}").stat().st_size
            ratio = int(np.ceil(np.log2(ds) / 8))
            table = np.memmap(self.path / f"table.{s}", dtype=np.uint8, mode="r").reshape(-1, ratio)
            offsets = np.fromfile(self.path / f"offset.{s}", dtype=np.uint64)
            metaoff = np.fromfile(self.path / f"metaoff.{s}", dtype=np.uint64)
            repo_ids = np.load(self.path / f"repo_id.{s}.npy", mmap_mode="r")
            with (self.path / f"metadata.{s}").open("rb") as f:
                meta = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._shards.append({"table": table, "ratio": ratio, "offsets": offsets, "metaoff": metaoff,
                                 "repo_ids": repo_ids, "metadata": meta, "base": base, "shard": s})
            base += len(offsets)

    def _pointers(self, sh: dict, lo: int, hi: int):
        np = self._np
        raw = np.zeros((hi - lo, 8), dtype=np.uint8)
        raw[:, : sh["ratio"]] = sh["table"][lo:hi]
        return raw.view(np.uint64).ravel()

    def _metadata(self, sh: dict, doc: int) -> dict:
        mm = sh["metadata"]
        start = int(sh["metaoff"][doc])
        return json.loads(mm[start:mm.find(b"\n", start)])["metadata"]

    def _docs(self, needle: bytes) -> tuple[list[tuple[dict, int]], bool]:
        """Distinct documents containing ``needle`` as (shard, local doc index), in global
        document order, and whether counting stopped at ``max_docs_counted``."""
        np = self._np
        found = self._eng.find(list(needle))
        out: list[tuple[dict, int]] = []
        for sh, (lo, hi) in zip(self._shards, found["segment_by_shard"]):
            docs = np.empty(0, dtype=np.int64)
            for start in range(lo, hi, self.batch):
                ptrs = self._pointers(sh, start, min(hi, start + self.batch))
                docs = np.union1d(docs, np.searchsorted(sh["offsets"], ptrs, side="right").astype(np.int64) - 1)
                if len(out) + len(docs) > self.max_docs_counted:
                    out += [(sh, int(d)) for d in docs[: self.max_docs_counted - len(out) + 1]]
                    return out, True
            out += [(sh, int(d)) for d in docs]
        return out, False

    def search(self, value: str) -> dict:
        """``{k, repo_ids, repos, paths, outcome, query, engine}`` (+ ``k_capped``)."""
        base = {"query": mask(value), "engine": self.engine}
        if value is None or len(value) < MIN_QUERY_CHARS:
            return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "unverifiable",
                    "reason": f"value shorter than {MIN_QUERY_CHARS} characters"}
        needle = (value if self.case_sensitive else value.lower()).encode("utf-8")
        if _SEP in needle:  # cannot occur in UTF-8; kept for safety
            return {**base, "k": None, "repo_ids": [], "repos": [], "paths": [], "outcome": "unverifiable",
                    "reason": "value contains the document separator byte"}
        docs, capped = self._docs(needle)
        repo_ids = sorted({int(sh["repo_ids"][d]) for sh, d in docs})
        paths = []
        for sh, d in docs[: self.max_hits_listed]:
            m = self._metadata(sh, d)
            paths.append(f"{m['repo']}/{m['path']}")
        out = {**base, "k": len(docs), "repo_ids": repo_ids, "repos": [self.repo_names[r] for r in repo_ids],
               "paths": paths, "outcome": "searched"}
        if capped:
            out["k_capped"] = True
        return out
